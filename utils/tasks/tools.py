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
    ended by the cap: a call past max_calls)."""

    def __init__(self, tokenizer, n_rows, max_calls=2):
        checks.tokenizer("Calculator", "tokenizer", tokenizer)
        self.n_rows = checks.number("Calculator", "n_rows", n_rows, lo=1, integer=True)
        self.max_calls = checks.number("Calculator", "max_calls", max_calls, lo=0, hi=100, integer=True)
        vocab = tokenizer.get_vocab()
        missing = [c for c in (CALL, ERROR, END, " ") if c not in vocab]
        if missing:
            raise ValueError(f"Calculator: the tokenizer has no token for {missing}: build it with the tool alphabet "
                             f"(char_tokenizer(utils.tasks.tools.ALPHABET))")
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
        answer = calculate(expr)
        self.errors[row] += answer == ERROR
        return self.tok(answer + " ", add_special_tokens=False)["input_ids"]

    def stats(self):
        """The batch's tool numbers for a step's record: mean calls a completion, the share of calls answered with
        ERROR, the share of episodes cut by the cap."""
        n_calls = sum(self.calls)
        return {"tool_calls": n_calls / self.n_rows, "tool_error_frac": sum(self.errors) / n_calls if n_calls else 0.0,
                "tool_cut_frac": sum(self.cut) / self.n_rows}


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


def pretrain_example(rng, train_rows, p_tool=0.5):
    """(prompt, completion, loss) for the tool model's pre-training: a scratchpad train problem, and with
    probability p_tool a calculator episode (tool_episode), else a noisy trace (scratchpad.noisy_trace, loss on
    every character)."""
    from utils.tasks import scratchpad

    p_tool = checks.number("pretrain_example", "p_tool", p_tool, lo=0, hi=1)
    r = rng.choice(train_rows)
    if rng.random() < p_tool:
        return (r["prompt"], *tool_episode(rng, r["a"], r["b"])[1:])
    text = scratchpad.noisy_trace(rng, r["a"], r["b"])[1]
    return r["prompt"], text, [1] * len(text)
