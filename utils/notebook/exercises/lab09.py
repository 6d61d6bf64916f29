"""Lab 09's checks (what you verify): STaR's verified filter, and an episode's row for the trainer (which tokens the
model reads and which it is trained on, and the ids as written, with a character tokenizer and a BPE)."""
import functools

import torch

from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _note,
    _said_if_reference,
    _short,
    _worked_then_generated,
    learner_check,
)
from utils.rl.selftrain import verified_pairs
from utils.tasks.tools import ALPHABET, bpe_tokenizer, episode_tensors

# (what the case tests, prompts, texts: k completions a prompt in order, answers, k)
VERIFIED_CASES = [
    ("k = 2: the second prompt's first sample is the right one", ["478+356:", "12+3:"],
     ["8+6+0=14 7+5+1=13 4+3+1=8 >834", ">835", ">15", "2+3+0=5 >16"], ["834", "15"], 2),
    ("k = 3: a prompt with none right keeps nothing; two right samples of one prompt are both kept",
     ["5+5:", "9+1:"], [">10", ">10", ">11", ">1", ">01", ">100"], ["10", "10"], 3),
    ("the answer is the number after the LAST '>', whole: '>1834' is not 834, '>834 >835' is 835",
     ["478+356:"], [">1834", ">834 >835", ">835 >834", "834"], ["834"], 4),
    ("nothing right at all", ["1+1:", "2+2:"], [">3", ">5", ">", ""], ["2", "4"], 2),
]


@learner_check("(prompts, texts, answers, k)", "a list of (prompt, completion) pairs")
def check_verified_pairs(fn):
    """Check fn(prompts, texts, answers, k) -> the (prompt, text) pairs whose answer is right (selftrain.
    verified_pairs) on VERIFIED_CASES: grouping by i // k, the last '>' whole, none right, order kept."""
    try:
        fn(*VERIFIED_CASES[0][1:])
    except NotImplementedError:
        return _note("my_verified_pairs", verified_pairs)
    generated = _verified_cases(_generator("check_verified_pairs"))
    _worked_then_generated(lambda: _worked_verified(fn), lambda: _agree(
        "my_verified_pairs", _as_pairs(fn), verified_pairs, generated,
        lambda p, t, a, k: f"my_verified_pairs(prompts={p}, texts={t}, answers={a}, k={k})",
        "completion i belongs to prompt i // k; keep it when its answer, the digits right after its LAST '>' (the "
        "whole number, no leading zero, no space inside, nothing after it), equals answers[i // k] "
        "(utils.verifiers.traces.outcome_reward reads it for you); keep the order."))
    _said_if_reference("my_verified_pairs", fn, verified_pairs, *VERIFIED_CASES[0][1:])
    print(f"OK: my_verified_pairs keeps what the verifier passes on {len(VERIFIED_CASES)} worked cases and "
          f"{len(generated)} generated ones.")
    return fn


def _as_pairs(f):
    """f's result with each pair as a tuple (a list of lists reads the same)."""
    def run(*args):
        got = f(*args)
        return [tuple(p) for p in got] if isinstance(got, (list, tuple)) else got
    return run


def _verified_cases(rng, n=40):
    """Generated (prompts, texts, answers, k), fewest texts first: 1-3 prompts, k 1-4, answers written right and
    wrong: leading zeros, a space inside, a later or earlier second answer, text after the answer, words, nothing."""
    out = []
    for _ in range(n):
        P, k = rng.randint(1, 3), rng.randint(1, 4)
        sums = [(rng.randint(1, 500), rng.randint(0, 500)) for _ in range(P)]
        prompts, answers = [f"{a}+{b}:" for a, b in sums], [str(a + b) for a, b in sums]
        texts = []
        for i in range(P * k):
            ans, other = answers[i // k], str(int(answers[i // k]) + rng.choice([1, -1, 10]))
            texts.append(rng.choice([
                f">{ans}", f">{ans}", f"1+2+0=3 >{ans}", f">0{ans}", f">{ans[:1]} {ans[1:]}", f">{ans} >{other}",
                f">{other} >{ans}", f">{ans}abc", f">{ans}>", ">", "", f"{ans}", f">{other}", ">abc", f" >{ans} ",
                f">{ans}.", f">+{ans}"]))
        out.append((prompts, texts, answers, k))
    return sorted(out, key=lambda c: len(c[1]))


def _worked_verified(fn):
    """VERIFIED_CASES, each with its message."""
    for what, prompts, texts, answers, k in VERIFIED_CASES:
        want = verified_pairs(prompts, texts, answers, k)
        got = fn(list(prompts), list(texts), list(answers), k)
        got = [tuple(p) for p in got] if isinstance(got, (list, tuple)) else got
        if got != want:
            hint = ("keep a completion only if its answer is right (this keeps wrong ones too): the answer is the "
                    "whole number after the last '>', so use utils.verifiers.traces.outcome_reward"
                    if isinstance(got, list) and len(got) > len(want) else
                    "texts holds k completions of each prompt in order: completion i belongs to prompt i // k, and "
                    "its answer is answers[i // k]; the answer is the whole number after the last '>' "
                    "(utils.verifiers.traces.outcome_reward reads it for you)")
            raise ExerciseError(f"my_verified_pairs on {what}:\n  texts {texts}, answers {answers}, k={k}\n"
                                f"  expected {want}\n  got      {_short(got, 300)}\nHint: {hint}.")


# (what the case tests, the tokenizer: "chars" (the calculator's, char_tokenizer(ALPHABET): <pad> 0, <eos> 1) or "bpe"
# (tools.bpe_tokenizer(): '34' and ' >' merged, <eos> 0 and also the padding, as GPT-2's), segments as each
# segment's tokens, max_len)
EPISODE_CASES = [
    ("a call, the calculator's answer, the policy's answer and its EOS", "chars",
     [("policy", list("?12+3=")), ("env", list("15 ")), ("policy", [">", "1", "5", "<eos>"])], 15),
    ("a runaway episode cut by the cap: the EOS is the environment's, so it carries no loss", "chars",
     [("policy", list("?5+5=")), ("env", list("10 ")), ("policy", list("?5+5=")), ("env", ["<eos>"])], 16),
    ("no call at all (a trace): every token the policy's", "chars", [("policy", list("1+2+0=3 >3") + ["<eos>"])], 12),
    ("longer than max_len: cut at max_len", "chars",
     [("policy", list("?12+3=")), ("env", list("15 ")), ("policy", [">", "1", "5", "<eos>"])], 8),
    ("a BPE tokenizer (GPT-2's kind, its pad its EOS): the calculator wrote '834 ' as '8', '34', ' ' and the policy "
     "sampled '>', '8', '3', '4' one token at a time, so the text encoded again is other tokens", "bpe",
     [("policy", list("?478+356=")), ("env", ["8", "34", " "]), ("policy", [">", "8", "3", "4", "<eos>"])], 19),
]


@functools.cache
def _tokenizer(kind):
    """The check's two tokenizers, built once: "chars" (the calculator's characters) or "bpe" (a small BPE)."""
    from utils.models.policy import char_tokenizer

    return char_tokenizer(ALPHABET) if kind == "chars" else bpe_tokenizer()


def _case(kind, tokens, max_len):
    """(segments as ids, max_len, tokenizer) from a case's tokens."""
    tok = _tokenizer(kind)
    return [(who, tok.convert_tokens_to_ids(list(t))) for who, t in tokens], max_len, tok


def _named(tok):
    """A tokenizer as a message names it."""
    return (f"the course's small BPE (pad_token_id {tok.pad_token_id}, also its EOS)" if tok.pad_token_id ==
            tok.eos_token_id else f"the calculator's character tokenizer (pad_token_id {tok.pad_token_id})")


def _as_tokens(segments, tok):
    """segments with each id shown as its token: [('policy', ['?', '1', ...]), ...]."""
    return [(who, tok.convert_ids_to_tokens(list(ids))) for who, ids in segments]


def _encoded_again(segments, max_len, tok):
    """The ids a trainer that decodes and encodes again would build: the whole text, and each segment on its own, each
    cut at max_len and padded."""
    def row(ids):
        ids = ids[:max_len]
        return ids + [tok.pad_token_id] * (max_len - len(ids))
    enc = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    whole = enc(tok.decode([t for _, ids in segments for t in ids]))
    each = [t for _, ids in segments for t in enc(tok.decode(list(ids)))]
    return row(whole), row(each)


REENCODED_HINT = ("your ids are the episode's text decoded and encoded again. With a BPE tokenizer that gives other "
                  "tokens than were written: a merge across the calculator's ' ' and the policy's '>' into ' >', "
                  "which neither wrote, and '34' where the policy sampled '3' then '4'. The sampler's log-probs "
                  "belong to the tokens as written: take every segment's ids as they are (token in, token out)")


@learner_check("(segments, max_len, tokenizer)", "(ids, completion_mask, loss_mask), three tensors [max_len]")
def check_episode_tensors(fn):
    """Check fn(segments, max_len, tokenizer) -> (ids, completion_mask, loss_mask) [max_len] each
    (tools.episode_tensors) on EPISODE_CASES, one of them with a BPE tokenizer on which decoding and encoding again
    gives other tokens, and that the gradient of a loss over the row reaches only the policy's tokens."""
    first = _case(*EPISODE_CASES[0][1:])
    try:
        fn(*first)
    except NotImplementedError:
        return _note("my_episode_tensors", episode_tensors)
    names = ("ids", "completion_mask", "loss_mask")
    hints = {"ids": "the ids are every segment's tokens in order, the environment's included (the model must read "
                    "the tool's answer), then tokenizer.pad_token_id; never decode and re-encode them",
             "completion_mask": "completion_mask is 1 on every token of the episode, whoever wrote it (the model "
                                "reads them all), 0 on the padding. Build it from the episode's length, never by "
                                "comparing ids with the pad id: the pad id can be a real token (this tokenizer's "
                                "pad is its EOS, as GPT-2's is)",
             "loss_mask": "loss_mask is 1 only on the tokens the policy wrote (its own EOS included), 0 on the "
                          "environment's tokens (the tool's answer, the EOS of a cut) and on the padding"}
    generated = _episode_cases(_generator("check_episode_tensors"))

    def hint(args, got, want):
        got_ids = got[0].tolist() if isinstance(got, tuple) and len(got) == 3 and torch.is_tensor(got[0]) else None
        if got_ids is not None and got_ids != want[0].tolist() and got_ids in _encoded_again(*args):
            return REENCODED_HINT + "."
        return ("the ids are every segment's tokens in order, as they are (never decoded and encoded again), cut at "
                "max_len, then tokenizer.pad_token_id; completion_mask is 1 on every token of the episode and "
                "loss_mask on the policy's own tokens, both 0 on the padding. Build the masks from who wrote each "
                "token and from the episode's length, never by comparing ids with the pad id: the pad id can be a "
                "real token (GPT-2's pad is its EOS).")

    _worked_then_generated(lambda: _worked_episode(fn, names, hints), lambda: _agree(
        "my_episode_tensors", _three(fn), _three(episode_tensors), generated,
        lambda seg, m, tok: f"my_episode_tensors(segments={seg}, max_len={m}, tokenizer={_named(tok)}); the tokens: "
                            f"{_as_tokens(seg, tok)}"
                            + (" (the pad id is also a real token here)" if any(tok.pad_token_id in s for _, s in seg)
                               else ""),
        hint))
    _said_if_reference("my_episode_tensors", fn, episode_tensors, *first)
    print(f"OK: my_episode_tensors builds the trainer's row on {len(EPISODE_CASES)} worked cases (one with a BPE "
          f"tokenizer) and {len(generated)} generated ones; the gradient reaches the policy's tokens only.")
    return fn


def _three(f):
    """f's (ids, completion_mask, loss_mask) as three long tensors (lists read the same)."""
    def run(*args):
        got = f(*args)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            return got
        return tuple(torch.as_tensor(g).long() for g in got)
    return run


POOLS = {"chars": ["1", "2", "3", "+", "=", ">", " ", "<eos>", "<eos>"],   # <pad> is never written
         "bpe": ["3", "4", "34", " ", ">", " >", "8", "<eos>", "<eos>"]}   # merges written and not, side by side


def _episode_cases(rng, n=40):
    """Generated (segments, max_len, tokenizer), shortest first: the character tokenizer or the BPE (whose pad is its
    EOS, so the pad id is a real token), 1-5 segments of 1-3 tokens, the policy's and the environment's in any order,
    drawn so that the BPE's merges are written both merged and not ('34' and '3', '4'), and max_len below, at or
    above the episode's length."""
    out = []
    for _ in range(n):
        kind = rng.choice(["chars", "bpe", "bpe"])
        tokens = [(rng.choice(["policy", "policy", "env"]), [rng.choice(POOLS[kind]) for _ in range(rng.randint(1, 3))])
                  for _ in range(rng.randint(1, 5))]
        length = sum(len(t) for _, t in tokens)
        out.append(_case(kind, tokens, max(1, length + rng.randint(-2, 3))))
    return sorted(out, key=lambda c: c[1])


def _worked_episode(fn, names, hints):
    """EPISODE_CASES and the gradient through the loss mask, each with its message."""
    for what, kind, tokens, max_len in EPISODE_CASES:
        segments, max_len, tok = _case(kind, tokens, max_len)
        want = episode_tensors(segments, max_len, tok)
        got = fn([(w, list(s)) for w, s in segments], max_len, tok)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise ExerciseError(f"my_episode_tensors on {what}: return three tensors (ids, completion_mask, "
                                f"loss_mask), got {_short(got)}")
        for name, g, w in zip(names, got, want):
            g = torch.as_tensor(g).long() if not torch.is_tensor(g) else g.long()
            if g.shape != w.shape or not torch.equal(g, w):
                hint = REENCODED_HINT if name == "ids" and g.tolist() in _encoded_again(segments, max_len, tok) \
                    else hints[name]
                raise ExerciseError(f"my_episode_tensors on {what}, {name}:\n  segments {segments}\n  (the tokens: "
                                    f"{_as_tokens(segments, tok)}), max_len {max_len}, tokenizer {_named(tok)}\n"
                                    f"  expected {w.tolist()}\n  got      {g.tolist()}\nHint: {hint}.")
    # the point of the loss mask: the policy-gradient loss's gradient reaches the policy's tokens and no others
    segments, max_len, tok = _case(*EPISODE_CASES[1][1:])
    _, _, loss_mask = fn(segments, max_len, tok)
    logp = torch.zeros(max_len, requires_grad=True)
    (-(logp * torch.as_tensor(loss_mask).float()).sum()).backward()
    env_pos = [i for i, (who, _) in enumerate((w, t) for w, s in segments for t in s) if who == "env"]
    if logp.grad[env_pos].abs().sum() > 0:
        raise ExerciseError("my_episode_tensors: the loss's gradient reaches the environment's tokens")
