"""Lab 06's checks (reward design on reasoning traces): step credit, token weights."""
import torch

from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _note,
    _said_if_reference,
    _same,
    _worked_then_generated,
    learner_check,
)
from utils.rl import grpo

# Lab 06: (a, b, text, expected credit, what the case tests). 478 + 356: 8+6+0=14 7+5+1=13 4+3+1=8 >834
STEP_CASES = [
    (478, 356, "8+6+0=14 7+5+1=13 4+3+1=8 >834", 1.0, "the right trace"),
    (478, 356, "8+6+0=14 7+5+1=13 4+3+1=8 >999", 1.0, "right steps, wrong answer (the answer is not a step)"),
    (478, 356, "8+6+0=14 4+3+1=8 >834", 1 / 3, "a skipped step: the later steps are out of place"),
    (478, 356, "8+6+0=14 7+5+1=13 4+3+1=8 0+0+0=0 >834", 3 / 4, "padding: an extra step costs"),
    (478, 356, "8+6+0=14 7+5+0=12 4+3+1=8 >834", 2 / 3, "a dropped carry: true sum, wrong step"),
    (478, 356, "8+6+0=14 hello 4+3+1=8 >834", 2 / 3, "an unreadable token keeps its place"),
    (478, 356, "8+6+0=14 7+5+1=13 4+3+1=8 junk >834", 3 / 4,
     "an unreadable extra token is a step written: it counts in the divisor"),
    (478, 356, "6+8+0=14 5+7+1=13 3+4+1=8 >834", 0.0, "operands swapped: not the steps asked for"),
    (5, 97, "5+7+0=12 0+9+1=10 >102", 1.0, "a shorter operand reads as 0"),
    (5, 97, ">102", 0.0, "no steps at all"),
    (478, 356, "", 0.0, "an empty completion"),
    (478, 356, None, 0.0, "None (a verifier never raises)"),
    (478, 356, "8+6+0=14 " * 60 + ">834", 0.0, "a text over traces.MAX_CHARS: rejected unread"),
]


@learner_check("(text, a, b)", "the process reward, a number in [0, 1]")
def check_step_credit(fn):
    """Check fn(text, a, b) -> the process reward of one completion (traces.step_credit) on STEP_CASES: one case
    per rule (position, padding, skipping, carries, unreadable tokens, None, over-long text). Returns the
    function to use."""
    from utils.verifiers.traces import step_credit

    try:
        fn("8+6+0=14 >14", 8, 6)
    except NotImplementedError:
        return _note("my_step_credit", step_credit)
    generated = _credit_cases(_generator("check_step_credit"))
    _worked_then_generated(lambda: _worked_credit(fn), lambda: _agree(
        "my_step_credit", fn, step_credit, generated, lambda text, a, b: f"my_step_credit({text!r}, {a}, {b}) (right "
        f"steps {' '.join('{}+{}+{}={}'.format(*s) for s in _steps(a, b))})",
        "count written steps equal to the right step at the same position (operands, carry AND sum); divide by "
        "max(steps written, steps needed), an unreadable token counting as a step written; return a float, 0.0 for "
        "anything unreadable."))
    _said_if_reference("my_step_credit", fn, step_credit, STEP_CASES[0][2], STEP_CASES[0][0], STEP_CASES[0][1])
    print(f"OK: my_step_credit matches the process reward on {len(STEP_CASES)} worked cases and {len(generated)} "
          f"generated ones.")
    return fn


def _credit_cases(rng, n=60):
    """Generated (text, a, b) traces, shortest first: the right steps of a random sum, with 0-2 slips among a step
    whose operands and carry are right but whose sum is wrong, swapped operands, a dropped carry, a skipped, repeated
    or extra step, an unreadable token, another answer or none, spaces around."""
    out = []
    for _ in range(n):
        a, b = (rng.randint(0, 10 ** rng.randint(1, 4) - 1) for _ in range(2))
        steps = [list(s) for s in _steps(a, b)]
        for _ in range(rng.choice([0, 1, 1, 2])):
            i, slip = rng.randrange(len(steps)), rng.choice(["sum", "swap", "carry", "skip", "repeat", "extra", "junk"])
            if isinstance(steps[i], str):     # a junk token already there: leave it
                continue
            x, y, c, s_ = steps[i]
            if slip == "sum":
                steps[i] = [x, y, c, (s_ + rng.choice([1, 9, 10])) % 20]
            elif slip == "swap":
                steps[i] = [y, x, c, s_]
            elif slip == "carry":
                steps[i] = [x, y, 1 - c, x + y + 1 - c]
            elif slip == "skip" and len(steps) > 1:
                del steps[i]
            elif slip == "repeat":
                steps.insert(i, list(steps[i]))
            elif slip == "extra":
                steps.append([0, 0, 0, 0])
            elif slip == "junk":
                steps.insert(i, rng.choice(["hello", "8+6", "=14", "x"]))
        body = " ".join(s if isinstance(s, str) else "{}+{}+{}={}".format(*s) for s in steps)
        answer = rng.choice([a + b, a + b, a + b + 1, None])
        text = body + ("" if answer is None else f" >{answer}")
        out.append((rng.choice([text, text, f" {text} ", text.replace(" ", "  ", 1)]), a, b))
    out += [(x, rng.randint(1, 99), rng.randint(1, 99)) for x in (None, 834, ["8+6+0=14"])]   # not text: 0.0
    return sorted(out, key=lambda c: len(c[0]) if isinstance(c[0], str) else 0)


def _worked_credit(fn):
    """STEP_CASES, each with its message."""
    for a, b, text, want, what in STEP_CASES:
        try:
            got = fn(text, a, b)
        except Exception as e:  # noqa: BLE001 - report the learner's exception as a failed case
            raise ExerciseError(f"my_step_credit({text!r:.60}, {a}, {b}) raised {type(e).__name__}: {e}. A verifier "
                                f"never raises: anything unreadable scores 0.0 ({what}).") from None
        if not isinstance(got, (int, float)) or isinstance(got, bool) or not abs(float(got) - want) <= 1e-9:
            raise ExerciseError(f"my_step_credit on {what}:\n  completion {text!r:.70} for {a}+{b} "
                                f"(right steps {' '.join('{}+{}+{}={}'.format(*s) for s in _steps(a, b))})\n"
                                f"  expected {want:.4f}, got {got!r}\nRule: count written steps equal to the "
                                f"right step at the same position; divide by max(steps written, steps needed), an "
                                f"unreadable token counting as a step written.")


def _steps(a, b):
    from utils.tasks.scratchpad import steps_for
    return steps_for(a, b)


@learner_check("(mask, loss_type, max_len)", "the weights, a tensor [N, T]")
def check_token_weights(fn):
    """Check fn(mask, loss_type, max_len) -> [N, T] weight of each token's loss in aggregate(): compared with
    grpo.token_weights (the gradient of the aggregate with respect to each token's loss) for each loss type on
    masks with short, long, full and empty rows. Returns the function to use."""
    masks = {"lengths 3, 1, 2 (T = 3)": torch.tensor([[1, 1, 1], [1, 0, 0], [1, 1, 0]]),
             "lengths 2, 5, 0, 5 (T = 5)": torch.tensor([[1, 1, 0, 0, 0], [1] * 5, [0] * 5, [1] * 5])}
    try:
        fn(masks["lengths 3, 1, 2 (T = 3)"], "grpo", 4)
    except NotImplementedError:
        return _note("my_token_weights", grpo.token_weights)
    hints = {"grpo": "each row: 1 / (N * its own length), so every sequence weighs 1/N in all",
             "dapo": "1 / (the number of real tokens in the whole batch)",
             "dr_grpo": "1 / (N * max_len), with max_len the constant given (not the batch's longest row)"}
    generated = _weight_cases(_generator("check_token_weights"))
    _worked_then_generated(lambda: _worked_weights(fn, masks, hints), lambda: _agree(
        "my_token_weights", fn, grpo.token_weights, generated,
        lambda mask, lt, ml: f"my_token_weights(mask={mask.tolist()}, loss_type={lt!r}, max_len={ml})",
        lambda args, got, want: hints[args[1]] + "; 0 where the mask is 0 (a mask may have holes or empty rows)",
        same=lambda got, want: _same(got, want, atol=1e-6)))
    _said_if_reference("my_token_weights", fn, grpo.token_weights, masks["lengths 3, 1, 2 (T = 3)"], "dapo", 8)
    print(f"OK: my_token_weights matches the gradient of the aggregate for grpo, dapo and dr_grpo on 2 masks and "
          f"{len(generated)} generated ones.")
    return fn


def _weight_cases(rng, n=40):
    """Generated (mask [N, T], loss_type, max_len) cases, smallest first: 1-4 rows of 1-5 positions, masks of any 0/1
    pattern (empty rows too), each loss type, max_len at or above T."""
    out = []
    for _ in range(n):
        N, T = rng.randint(1, 4), rng.randint(1, 5)
        mask = torch.tensor([[int(rng.random() < 0.7) for _ in range(T)] for _ in range(N)])
        out.append((mask, rng.choice(["grpo", "dapo", "dr_grpo"]), T + rng.randint(0, 3)))
    return sorted(out, key=lambda c: c[0].numel())


def _worked_weights(fn, masks, hints):
    """The two worked masks under each loss type, each with its message."""
    for desc, mask in masks.items():
        for loss_type in ("grpo", "dapo", "dr_grpo"):
            want = grpo.token_weights(mask, loss_type, 8)
            got = fn(mask, loss_type, 8)
            got = torch.as_tensor(got).float() if not torch.is_tensor(got) else got.detach().float()
            if got.shape != want.shape:
                raise ExerciseError(f"my_token_weights({desc}, {loss_type!r}, max_len=8): expected shape "
                                    f"{tuple(want.shape)} (one weight per token), got {tuple(got.shape)}")
            if not torch.allclose(got, want, atol=1e-6):
                raise ExerciseError(f"my_token_weights on the mask with {desc}, {loss_type!r}, max_len=8:\n"
                                    f"  expected {[[round(v, 4) for v in r] for r in want.tolist()]}\n"
                                    f"  got      {[[round(v, 4) for v in r] for r in got.tolist()]}\n"
                                    f"Hint: {hints[loss_type]}; 0 where the mask is 0.")
