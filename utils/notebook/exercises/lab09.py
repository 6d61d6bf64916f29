"""Lab 09's checks (what you verify): STaR's verified filter, and an episode's row for the trainer (which tokens the
model reads and which it is trained on)."""
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
from utils.tasks.tools import episode_tensors

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


# (what the case tests, segments, max_len, pad_id); ids: 1-9 the policy's, 20-29 the calculator's, 0 EOS, 99 padding
EPISODE_CASES = [
    ("a call, the calculator's answer, the policy's answer and its EOS", [("policy", [1, 2, 3]), ("env", [21, 22]),
                                                                         ("policy", [4, 5, 0])], 10, 99),
    ("a runaway episode cut by the cap: the EOS is the environment's, so it carries no loss",
     [("policy", [1, 2]), ("env", [21]), ("policy", [3, 4]), ("env", [0])], 8, 99),
    ("no call at all (a trace): every token the policy's", [("policy", [1, 2, 3, 0])], 5, 99),
    ("longer than max_len: cut at max_len", [("policy", [1, 2]), ("env", [21, 22, 23]), ("policy", [4, 0])], 4, 99),
]


@learner_check("(segments, max_len, pad_id)", "(ids, completion_mask, loss_mask), three tensors [max_len]")
def check_episode_tensors(fn):
    """Check fn(segments, max_len, pad_id) -> (ids, completion_mask, loss_mask) [max_len] each (tools.episode_tensors)
    on EPISODE_CASES, and that the gradient of a loss over the row reaches only the policy's tokens."""
    try:
        fn(*EPISODE_CASES[0][1:])
    except NotImplementedError:
        return _note("my_episode_tensors", episode_tensors)
    names = ("ids", "completion_mask", "loss_mask")
    hints = {"ids": "the ids are every segment's tokens in order, the environment's included (the model must read "
                    "the tool's answer), then pad_id; never decode and re-encode them",
             "completion_mask": "completion_mask is 1 on every token of the episode, whoever wrote it (the model "
                                "reads them all), 0 on the padding",
             "loss_mask": "loss_mask is 1 only on the tokens the policy wrote (its own EOS included), 0 on the "
                          "environment's tokens (the tool's answer, the EOS of a cut) and on the padding"}
    generated = _episode_cases(_generator("check_episode_tensors"))
    _worked_then_generated(lambda: _worked_episode(fn, names, hints), lambda: _agree(
        "my_episode_tensors", _three(fn), _three(episode_tensors), generated,
        lambda seg, m, pad: f"my_episode_tensors(segments={seg}, max_len={m}, pad_id={pad})"
                            + (" (the pad id is also a real token here)" if any(pad in s for _, s in seg) else ""),
        "the ids are every segment's tokens in order, cut at max_len, then pad_id; completion_mask is 1 on every "
        "token of the episode and loss_mask on the policy's own tokens, both 0 on the padding. Build the masks "
        "from who wrote each token and from the episode's length, never by comparing ids with pad_id: the pad id "
        "can be a real token (GPT-2's pad is its EOS)."))
    _said_if_reference("my_episode_tensors", fn, episode_tensors, *EPISODE_CASES[0][1:])
    print(f"OK: my_episode_tensors builds the trainer's row on {len(EPISODE_CASES)} worked cases and "
          f"{len(generated)} generated ones; the gradient reaches the policy's tokens only.")
    return fn


def _three(f):
    """f's (ids, completion_mask, loss_mask) as three long tensors (lists read the same)."""
    def run(*args):
        got = f(*args)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            return got
        return tuple(torch.as_tensor(g).long() for g in got)
    return run


def _episode_cases(rng, n=40):
    """Generated (segments, max_len, pad_id), shortest first: 1-5 segments of 1-3 ids (0 is EOS), the policy's and the
    environment's in any order, max_len below, at or above the episode's length, and a pad id that is also a real
    token (EOS, or an id the episode holds) as often as not."""
    out = []
    for _ in range(n):
        segments = [(rng.choice(["policy", "policy", "env"]), [rng.choice([0, 1, 2, 3, 21, 22, 0])
                                                               for _ in range(rng.randint(1, 3))])
                    for _ in range(rng.randint(1, 5))]
        length = sum(len(s) for _, s in segments)
        pad = rng.choice([0, 0, 99, rng.choice([t for _, s in segments for t in s])])
        out.append((segments, max(1, length + rng.randint(-2, 3)), pad))
    return sorted(out, key=lambda c: c[1])


def _worked_episode(fn, names, hints):
    """EPISODE_CASES and the gradient through the loss mask, each with its message."""
    for what, segments, max_len, pad in EPISODE_CASES:
        want = episode_tensors(segments, max_len, pad)
        got = fn([(w, list(s)) for w, s in segments], max_len, pad)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            raise ExerciseError(f"my_episode_tensors on {what}: return three tensors (ids, completion_mask, "
                                f"loss_mask), got {_short(got)}")
        for name, g, w in zip(names, got, want):
            g = torch.as_tensor(g).long() if not torch.is_tensor(g) else g.long()
            if g.shape != w.shape or not torch.equal(g, w):
                raise ExerciseError(f"my_episode_tensors on {what}, {name}:\n  segments {segments}, max_len "
                                    f"{max_len}, pad_id {pad}\n  expected {w.tolist()}\n  got      {g.tolist()}\n"
                                    f"Hint: {hints[name]}.")
    # the point of the loss mask: the policy-gradient loss's gradient reaches the policy's tokens and no others
    segments, max_len, pad = EPISODE_CASES[1][1:]
    _, _, loss_mask = fn(segments, max_len, pad)
    logp = torch.zeros(max_len, requires_grad=True)
    (-(logp * torch.as_tensor(loss_mask).float()).sum()).backward()
    env_pos = [i for i, (who, _) in enumerate((w, t) for w, s in segments for t in s) if who == "env"]
    if logp.grad[env_pos].abs().sum() > 0:
        raise ExerciseError("my_episode_tensors: the loss's gradient reaches the environment's tokens")
