"""Tools a policy can call in the middle of its completion (Lab 09: an open loop). A tool is an environment for
utils.models.policy.sample(env=...): after each token the policy writes, the environment may answer with tokens
of its own, which the policy then reads and does not train on.

The calculator's protocol, in the scratchpad task's characters plus CALL and ERROR:

    478+356: ?478+356=834 >834
             ^^^^^^^^^         the policy's call: CALL, two numbers and '+' or '-', then '='
                      ^^^^     the calculator's answer and a space (environment tokens: no loss)
                          ^^^^ the policy's answer

The call is read with a strict pattern, never evaluated as code; anything else between CALL and '=' gets ERROR
back ('?4x8=! '), which the policy sees as it would see any answer. A '=' outside an open call (a trace's
'8+6+0=14') is not a call. After max_calls calls the next one ends the episode: the environment writes EOS, and
the row is marked cut (a runaway episode, visible in the step's record). Nothing here ever raises on what the
policy writes.
"""
import random
import re

from utils import checks

CALL, ERROR, END = "?", "!", "="
ALPHABET = "0123456789+=>: -" + CALL + ERROR   # the scratchpad task's characters, '-', and the tool's two
_EXPR = re.compile(r"([0-9]{1,12})([+-])([0-9]{1,12})", re.ASCII)


def calculate(expr):
    """The calculator: '478+356' -> '834', '3-5' -> '-2'; anything else (another operator, spaces, a number over 12
    digits, not a str) -> ERROR."""
    m = _EXPR.fullmatch(expr) if isinstance(expr, str) else None
    if not m:
        return ERROR
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    return str(a + b if op == "+" else a - b)


class Calculator:
    """The calculator as an episode's environment for sample(env=...), one per batch of n_rows rows. Per row it
    counts calls (every call answered, errors included), errors (calls answered with ERROR) and cut (the episode
    ended by the cap: a call past max_calls). noise > 0 makes it a stochastic environment: each answer has one
    digit changed with that probability (seeded by `seed`), so the same written call can be paid or not. table
    ({key: int}, utils.tasks.lookup.world) makes it a lookup too: a call whose expression starts with '#' gets
    that key's fact ('?#37=' -> '615 '), or ERROR for a key the table lacks; table={} is the lookup switched off
    (every lookup ERROR, the calculator still on)."""

    def __init__(self, tokenizer, n_rows, max_calls=2, noise=0.0, seed=0, table=None):
        checks.tokenizer("Calculator", "tokenizer", tokenizer)
        self.n_rows = checks.number("Calculator", "n_rows", n_rows, lo=1, integer=True)
        self.max_calls = checks.number("Calculator", "max_calls", max_calls, lo=0, hi=100, integer=True)
        self.noise = checks.number("Calculator", "noise", noise, lo=0, hi=1)
        self.rng = random.Random(checks.number("Calculator", "seed", seed, lo=0, hi=2**63 - 1, integer=True))
        vocab = tokenizer.get_vocab()
        missing = [c for c in (CALL, ERROR, END, " ") if c not in vocab]
        if missing:
            raise ValueError(f"Calculator: the tokenizer has no token for {missing}: build it with the tool alphabet "
                             f"(char_tokenizer(utils.tasks.tools.ALPHABET))")
        if table is not None and not (isinstance(table, dict) and all(isinstance(v, int) for v in table.values())):
            raise ValueError("Calculator: table must be a dict {key: int} (utils.tasks.lookup.world()), or None")
        self.table = table
        self.tok, self.end_id, self.eos = tokenizer, vocab[END], tokenizer.eos_token_id
        self.calls, self.errors, self.cut = [0] * n_rows, [0] * n_rows, [False] * n_rows

    def __call__(self, row, ids):
        """The tokens to append to row `row` after the policy wrote `ids` (its completion so far), or [] for none."""
        if not ids or ids[-1] != self.end_id:
            return []
        text = self.tok.decode(ids, skip_special_tokens=True)
        start = text.rfind(CALL)
        expr = text[start + 1:-1] if start >= 0 else None
        if expr is None or END in expr or " " in expr:   # a '=' outside an open call
            return []
        if self.calls[row] >= self.max_calls:
            self.cut[row] = True
            return [self.eos]
        self.calls[row] += 1
        if self.table is not None and expr.startswith("#"):
            answer = str(self.table[expr]) if expr in self.table else ERROR
        else:
            answer = calculate(expr)
        self.errors[row] += answer == ERROR
        if answer != ERROR and self.noise and self.rng.random() < self.noise:
            answer = ("-" if answer.startswith("-") else "") + _slip(self.rng, answer.lstrip("-"))
        return self.tok(answer + " ", add_special_tokens=False)["input_ids"]

    def stats(self):
        """The batch's tool numbers for a step's record: mean calls a completion, the share of calls answered with
        ERROR, the share of episodes cut by the cap."""
        n_calls = sum(self.calls)
        return {"tool_calls": n_calls / self.n_rows, "tool_error_frac": sum(self.errors) / n_calls if n_calls else 0.0,
                "tool_cut_frac": sum(self.cut) / self.n_rows}


# a call and the calculator's reply (its space included). The expression holds no '?', '=' or space, as in
# Calculator.__call__: a '=' after one of those gets no reply, so what follows it is the policy's own text
_CALL = re.compile(r"\?([^?= ]*)=([^ ]*) ", re.ASCII)
_ANSWER = re.compile(r">(-?[0-9]+)$", re.ASCII)
MAX_CHARS = 400


def parse_episode(text):
    """A calculator episode's parts: dict(calls: [(expr, reply), ...] in order, answer: the digits after the last
    '>' at the end or None), or None for a non-string or a text over MAX_CHARS characters. A call is CALL, the
    expression, END and the reply up to its space; a call cut before its reply is not a call, and neither is one
    the calculator does not answer (a space in the expression): every reply read here is one the calculator wrote."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    m = _ANSWER.search(text)
    return {"calls": _CALL.findall(text), "answer": m.group(1) if m else None}


WHO = ("policy", "env")


def episode_tensors(segments, max_len, tokenizer):
    """One episode's row as a trainer needs it: segments [(who, token ids), ...] in the order written, who "policy"
    (the model sampled them) or "env" (the environment appended them: a tool's answer, or the EOS of a cut), as
    ids of `tokenizer`. Returns (ids [max_len] long, completion_mask [max_len] long: 1 on every token of the
    episode, read by the model, loss_mask [max_len] long: 1 on the policy's own tokens only). The ids are the
    segments' ids as they are, never decoded and re-encoded (token in, token out: with a BPE tokenizer the text
    encoded again can be other tokens, see retokenised); an episode over max_len tokens is cut there; the rest is
    the tokenizer's pad_token_id (its EOS where it has none, as GPT-2's), with masks 0. Only that id is read from
    the tokenizer."""
    import torch

    where = "episode_tensors"
    max_len = checks.number(where, "max_len", max_len, lo=1, hi=1_000_000, integer=True)
    checks.tokenizer(where, "tokenizer", tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else getattr(tokenizer, "eos_token_id", None)
    if isinstance(pad_id, bool) or not isinstance(pad_id, int) or pad_id < 0:
        raise ValueError(f"{where}: tokenizer has no pad_token_id or eos_token_id to pad with (got {pad_id!r}): "
                         f"set tokenizer.pad_token = tokenizer.eos_token")
    if isinstance(segments, (str, bytes, dict)) or not isinstance(segments, (list, tuple)) or not all(
            isinstance(s, (list, tuple)) and len(s) == 2 and s[0] in WHO and isinstance(s[1], (list, tuple)) and
            all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in s[1]) for s in segments):
        raise ValueError(f"{where}: segments must be a list of (who, token ids) pairs, who 'policy' or 'env' and ids "
                         f"ints >= 0, got {checks._short(segments)}")
    ids = [t for _, seg in segments for t in seg][:max_len]
    own = [int(who == "policy") for who, seg in segments for _ in seg][:max_len]
    n = len(ids)
    ids = torch.tensor(ids + [pad_id] * (max_len - n), dtype=torch.long)
    completion = torch.tensor([1] * n + [0] * (max_len - n), dtype=torch.long)
    loss = torch.tensor(own + [0] * (max_len - n), dtype=torch.long)
    return ids, completion, loss


def bpe_tokenizer(merges=((" ", ">"), ("3", "4"))):
    """A small BPE tokenizer over ALPHABET (transformers' PreTrainedTokenizerFast over a `tokenizers` BPE, built
    here: nothing is downloaded), with `merges` (pairs of strings, applied in order) on top of the characters, and
    '<eos>' as EOS and padding. Real tokenizers (GPT-2's) merge across what the policy and a tool wrote in the same
    way: the default merges ' >' (the tool's trailing space with the policy's '>') and '34'."""
    from tokenizers import Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    where = "bpe_tokenizer"
    if isinstance(merges, (str, bytes)) or not isinstance(merges, (tuple, list)) or not all(
            isinstance(m, (tuple, list)) and len(m) == 2 and all(isinstance(x, str) and x for x in m) for m in merges):
        raise ValueError(f"{where}: merges must be pairs of non-empty strings, got {checks._short(merges)}")
    vocab = {c: i for i, c in enumerate(["<eos>"] + list(dict.fromkeys(ALPHABET)))}
    for a, b in merges:
        if a not in vocab or b not in vocab:
            raise ValueError(f"{where}: merge ({a!r}, {b!r}) joins a string that is not yet a token: list the merges "
                             f"that make it first")
        vocab.setdefault(a + b, len(vocab))
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m) for m in merges]))
    bpe.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>", pad_token="<eos>")


def retokenised(tokenizer, segments):
    """What a trainer that decodes an episode and encodes it again would train on, against the row as it was
    written (token in, token out). segments: [(who, token ids), ...] as episode_tensors takes them. Returns dict(
    written: the ids as sampled and appended, reencoded: the ids of tokenizer(decode(written)), same: whether they
    agree, first_difference: the first position where they differ (None if same), mask: the loss mask the trainer
    would use if it kept each segment's token count (1 where the policy wrote), laid on the re-encoded ids, and
    mislabelled: the re-encoded tokens that mask calls the policy's and the policy did not write, or the other way
    round, by the characters each token covers)."""
    where = "retokenised"
    checks.tokenizer(where, "tokenizer", tokenizer)
    episode_tensors(segments, 1, tokenizer)   # checks segments (the row itself is not needed)
    written = [t for _, seg in segments for t in seg]
    own = [int(who == "policy") for who, seg in segments for _ in seg]
    if any(t >= len(tokenizer) for t in written):
        raise ValueError(f"{where}: segments hold ids the tokenizer does not have (it has {len(tokenizer)}): give "
                         f"ids from this tokenizer")
    text = tokenizer.decode(written)
    reencoded = tokenizer(text, add_special_tokens=False)["input_ids"]
    eos = tokenizer.eos_token_id
    if written and written[-1] == eos and (not reencoded or reencoded[-1] != eos):
        reencoded = reencoded + [eos]            # decode keeps the EOS as text or drops it: count it once, as written
    chars = []                                   # who wrote each character of the text
    for t, w in zip(written, own):
        chars += [w] * len(tokenizer.decode([t]))
    mask = (own + [0] * len(reencoded))[:len(reencoded)]
    truth, i = [], 0
    for t in reencoded:
        n = len(tokenizer.decode([t]))
        truth.append(chars[i] if n == 0 or len(set(chars[i:i + n])) == 1 else None)   # None: straddles the two
        i += n
    diff = next((j for j, (a, b) in enumerate(zip(written, reencoded)) if a != b),
                None if len(written) == len(reencoded) else min(len(written), len(reencoded)))
    return {"written": written, "reencoded": reencoded, "same": diff is None, "first_difference": diff,
            "mask": mask, "mislabelled": sum(m != w for m, w in zip(mask, truth))}


# Pre-training the tool model (`python -m utils.runs.build_base_model task=tool`): the scratchpad task's noisy traces,
# and, for a share p_tool of the examples, a calculator episode instead. Its noise, so that RL has room:
TOOL_NOISE = {
    "right": 0.7,     # the operands copied into the call, the calculator's answer copied after '>'
    "operand": 0.15,  # one digit of an operand miscopied into the call: the calculator answers the wrong sum
    "answer": 0.15,   # the right call, one digit of the answer miscopied after '>'
}


def _slip(rng, digits):
    """digits with one digit changed (never to a leading zero)."""
    i = rng.randrange(len(digits))
    d = rng.choice([c for c in "0123456789" if c != digits[i] and (i or c != "0" or len(digits) == 1)])
    return digits[:i] + d + digits[i + 1:]


def tool_episode(rng, a, b, noise=None):
    """(kind, completion, loss) for a + b as a calculator episode, its kind drawn from `noise` (TOOL_NOISE's shares
    by default): completion '?a+b=<answer> >answer'; loss one 0/1 per character, 0 on the calculator's answer (the
    policy never writes it, so it is never trained to)."""
    noise = noise or TOOL_NOISE
    kind = rng.choices(list(noise), weights=list(noise.values()))[0]
    x, y = str(a), str(b)
    if kind == "operand":
        x, y = (_slip(rng, x), y) if rng.random() < 0.5 else (x, _slip(rng, y))
    call, reply = f"{CALL}{x}+{y}{END}", calculate(f"{x}+{y}") + " "
    answer = _slip(rng, reply.strip()) if kind == "answer" else reply.strip()
    return kind, call + reply + ">" + answer, [1] * len(call) + [0] * len(reply) + [1] * (1 + len(answer))


def practice_operands(rng, held_out, max_digits=5):
    """(a, b) for a calculator episode outside the training problems: the longer operand 2 to max_digits digits
    (uniform), the other 1 to as many; never a pair whose prompt is in `held_out` (a set of prompts: the valid, test
    and ood splits). Copy practice: the policy learns to copy long operands into a call, and the calculator, not the
    policy, does the sum."""
    while True:
        n = rng.randint(2, max_digits)
        m = rng.randint(1, n)
        a, b = (rng.randint(10 ** (n - 1), 10 ** n - 1), rng.randint(10 ** (m - 1) if m > 1 else 0, 10 ** m - 1))
        a, b = (a, b) if rng.random() < 0.5 else (b, a)
        if f"{a}+{b}:" not in held_out:
            return a, b


def pretrain_example(rng, train_rows, p_tool=0.5, p_practice=0.0, held_out=frozenset()):
    """(prompt, completion, loss) for the tool model's pre-training: a scratchpad train problem, and with
    probability p_tool a calculator episode (tool_episode), else a noisy trace (scratchpad.noisy_trace, loss on
    every character). A share p_practice of the calculator episodes is on practice_operands(rng, held_out) instead
    of a train problem (p_practice=0 draws nothing more: the first recipe's draws)."""
    from utils.tasks import scratchpad

    p_tool = checks.number("pretrain_example", "p_tool", p_tool, lo=0, hi=1)
    p_practice = checks.number("pretrain_example", "p_practice", p_practice, lo=0, hi=1)
    r = rng.choice(train_rows)
    if rng.random() < p_tool:
        if p_practice and rng.random() < p_practice:
            a, b = practice_operands(rng, held_out)
            return (scratchpad.format_prompt(a, b), *tool_episode(rng, a, b)[1:])
        return (r["prompt"], *tool_episode(rng, r["a"], r["b"])[1:])
    text = scratchpad.noisy_trace(rng, r["a"], r["b"])[1]
    return r["prompt"], text, [1] * len(text)
