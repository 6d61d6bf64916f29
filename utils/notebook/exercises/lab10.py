"""Lab 10's checks (off-policy RL): the importance weights of a mismatched sampler, CISPO's token loss."""
import math

import torch

from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _generator,
    _note,
    _said_if_reference,
    _show,
    _worked_then_generated,
    learner_check,
)
from utils.rl import grpo, rollout

L4, L2 = math.log(4.0), math.log(2.0)
# Lab 10: (what the case tests, log_ratio [N, T], mask [N, T], mode, lo, hi). Row 0's sequence ratio is 4 x 1 = 4, row
# 1's is 0.5 x 1 = 0.5; the third token of each row is padding, with a log-ratio that must not count.
IS_CASES = [
    ("token_truncate, hi 3: 4 -> 3, the rest kept", [[L4, 0.0, 5.0], [-L2, 0.0, 7.0]], [[1, 1, 0], [1, 1, 0]],
     "token_truncate", None, 3.0),
    ("token_mask, hi 3: a ratio above hi weighs 0", [[L4, 0.0, 5.0], [-L2, 0.0, 7.0]], [[1, 1, 0], [1, 1, 0]],
     "token_mask", None, 3.0),
    ("sequence_truncate, hi 3: one ratio per sequence, the product of its tokens'", [[L4, 0.0, 5.0], [-L2, 0.0, 7.0]],
     [[1, 1, 0], [1, 1, 0]], "sequence_truncate", None, 3.0),
    ("sequence_mask, hi 3: a sequence whose ratio is above hi weighs 0 on every token",
     [[L4, 0.0, 5.0], [-L2, 0.0, 7.0]], [[1, 1, 0], [1, 1, 0]], "sequence_mask", None, 3.0),
    ("token_truncate, lo 0.6 and hi 3: 0.5 -> 0.6", [[L4, 0.0, 5.0], [-L2, 0.0, 7.0]], [[1, 1, 0], [1, 1, 0]],
     "token_truncate", 0.6, 3.0),
    ("token_mask, lo 0.6, no hi: only the low ratio weighs 0", [[L4, 0.0, 5.0], [-L2, 0.0, 7.0]],
     [[1, 1, 0], [1, 1, 0]], "token_mask", 0.6, None),
    ("sequence_mask, lo 0.6 and hi 5: row 1's 0.5 is out, row 0's 4 is in", [[L4, 0.0, 5.0], [-L2, 0.0, 7.0]],
     [[1, 1, 0], [1, 1, 0]], "sequence_mask", 0.6, 5.0),
    ("sequence_truncate over rows of other lengths: 2 x 2 x 2 = 8 -> 3; a row of padding only weighs 0",
     [[L2, L2, L2], [0.3, -9.0, -9.0], [1.0, 1.0, 1.0]], [[1, 1, 1], [1, 0, 0], [0, 0, 0]],
     "sequence_truncate", None, 3.0),
]


@learner_check("(log_ratio, mask, mode, lo, hi)", "the weights, a tensor [N, T]")
def check_importance_weights(fn):
    """Check fn(log_ratio, mask, mode, lo, hi) -> [N, T] importance weights of TRL's correction of a mismatched
    sampler (rollout.importance_weights) on IS_CASES: each mode, each bound, padding, rows of other lengths.
    Returns the function to use."""
    t = lambda x: torch.tensor(x, dtype=torch.float32)  # noqa: E731
    try:
        fn(t(IS_CASES[0][1]), t(IS_CASES[0][2]), "token_truncate", None, 3.0)
    except NotImplementedError:
        return _note("my_importance_weights", rollout.importance_weights)
    hint = {"token": "a token's weight is exp(its own log-ratio)",
            "sequence": "a sequence's weight is exp(the SUM of its tokens' log-ratios), the same on all its tokens",
            "truncate": "truncate: clamp the ratio into [lo, hi] (a bound None is no bound)",
            "mask": "mask: a ratio outside [lo, hi] weighs 0 (a bound None is no bound); the rest keep their ratio"}
    generated = _is_cases(_generator("check_importance_weights"))
    _worked_then_generated(lambda: _worked_is(fn, t, hint), lambda: _agree(
        "my_importance_weights", fn, rollout.importance_weights, generated,
        lambda lr, m, mode, lo, hi: f"my_importance_weights(log_ratio={[[round(v, 4) for v in r] for r in lr.tolist()]}"
                                    f", mask={m.long().tolist()}, mode={mode!r}, lo={lo}, hi={hi}) (the ratios "
                                    f"exp(log_ratio): {[[round(v, 4) for v in r] for r in lr.exp().tolist()]})",
        lambda args, got, want: (f"{hint[args[2].split('_')[0]]}; {hint[args[2].split('_')[1]]}; a ratio exactly on a "
                                 f"bound is inside [lo, hi] (kept as it is); 0 wherever the mask is 0.")))
    _said_if_reference("my_importance_weights", fn, rollout.importance_weights, t(IS_CASES[0][1]), t(IS_CASES[0][2]),
                       "token_truncate", None, 3.0)
    print(f"OK: my_importance_weights matches TRL's correction on {len(IS_CASES)} worked cases and {len(generated)} "
          f"generated ones.")
    return fn


def _is_cases(rng, n=50):
    """Generated (log_ratio [N, T], mask [N, T], mode, lo, hi), smallest first: each mode, bounds None or not, rows
    of log-ratios 0 (a ratio exactly 1, on a bound of 1.0), log 2, log 4 and 0.3 of one sign (so that no sum cancels
    to a ratio near a bound), garbage log-ratios at the padding, rows of padding only."""
    out = []
    for _ in range(n):
        N, T = rng.randint(1, 3), rng.randint(1, 4)
        rows = []
        for _ in range(N):
            sign = rng.choice([1.0, -1.0])
            rows.append([0.0 if rng.random() < 0.4 else sign * rng.choice([L2, L4, 0.3]) for _ in range(T)])
        mask = torch.tensor([[float(rng.random() < 0.75) for _ in range(T)] for _ in range(N)])
        lr = torch.tensor(rows)
        lr[mask == 0] = 5.0
        mode = rng.choice(rollout.CORRECTIONS)
        lo, hi = rng.choice([None, None, 0.6, 1.0]), rng.choice([None, 1.0, 3.0, 5.0])
        if lo is None and hi is None and mode.endswith("truncate"):   # truncating needs a bound (TRL gives one)
            hi = 3.0
        out.append((lr, mask, mode, lo, hi))
    return sorted(out, key=lambda c: c[0].numel())


def _worked_is(fn, t, hint):
    """IS_CASES, each with its message."""
    for what, lr, mask, mode, lo, hi in IS_CASES:
        want = rollout.importance_weights(t(lr), t(mask), mode, lo, hi)
        got = fn(t(lr), t(mask), mode, lo, hi)
        got = torch.as_tensor(got).float() if not torch.is_tensor(got) else got.detach().float()
        if got.shape != want.shape:
            raise ExerciseError(f"my_importance_weights on {what}: expected shape {tuple(want.shape)} (one weight per "
                                f"token), got {tuple(got.shape)}")
        if not torch.allclose(got, want, atol=1e-5, rtol=1e-4):
            level, kind = mode.split("_")
            r3 = lambda x: [[round(v, 4) for v in row] for row in x]  # noqa: E731
            raise ExerciseError(f"my_importance_weights on {what}:\n  log-ratios {r3(lr)}, mask {mask}\n"
                                f"  expected {r3(want.tolist())}\n  got      {r3(got.tolist())}\n"
                                f"Hint: {hint[level]}; {hint[kind]}; 0 wherever the mask is 0.")


def _cispo_cases():
    """(what, logp [N, T], old_logp [N, T], adv [N], cap): ratios 2 and 0.5 with A > 0 and A < 0, and a ratio of 8
    above the cap."""
    lg = lambda *v: torch.log(torch.tensor(v))  # noqa: E731
    return [
        ("ratios 2 and 0.5, A = +1 and -1, cap 5", lg([0.4, 0.1], [0.2, 0.3]), lg([0.2, 0.2], [0.1, 0.6]),
         torch.tensor([1.0, -1.0]), 5.0),
        ("a ratio of 8 above the cap 5, A = +2", lg([0.8, 0.5]), lg([0.1, 0.5]), torch.tensor([2.0]), 5.0),
        ("the same with cap 10 (nothing capped)", lg([0.8, 0.5]), lg([0.1, 0.5]), torch.tensor([2.0]), 10.0),
    ]


@learner_check("(logp, old_logp, adv, cap)", "the per-token loss, a tensor [N, T]")
def check_cispo_token_loss(fn):
    """Check fn(logp, old_logp, adv, cap) -> CISPO's per-token loss [N, T] (grpo.per_token_loss, loss_type "cispo"):
    -sg(min(ratio, cap)) * A * logp. Its value and its gradient with respect to logp are compared with the
    reference's on _cispo_cases: the gradient is the point (every token keeps one, its weight the capped ratio, no
    gradient through the weight). Returns the function to use."""
    cases = _cispo_cases()
    try:
        fn(*cases[0][1:])
    except NotImplementedError:
        return _note("my_cispo_token_loss", grpo.cispo_token_loss)
    def value_and_grad(f):
        """f as a function of the case giving (loss [N, T], d sum(loss) / d logp), or its result as it is when that
        is not a loss with a gradient (so the comparison shows what came back)."""
        def run(logp, old, adv, cap):
            leaf = logp.clone().requires_grad_(True)
            out = f(leaf, old, adv, cap)
            if not torch.is_tensor(out) or out.shape != logp.shape or not out.requires_grad:
                return out if not torch.is_tensor(out) else out.detach()
            return out.detach(), torch.autograd.grad(out.sum(), leaf)[0]
        return run

    generated = _cispo_generated(_generator("check_cispo_token_loss"))
    _worked_then_generated(lambda: _worked_cispo(fn, cases), lambda: _agree(
        "my_cispo_token_loss", value_and_grad(fn), value_and_grad(grpo.cispo_token_loss), generated,
        lambda logp, old, adv, cap: f"my_cispo_token_loss with pi = exp(logp) {_p(logp)}, pi_old {_p(old)}, adv "
                                    f"{adv.tolist()}, cap {cap} (ratios {_p(logp - old)})",
        "the loss of a token is -min(ratio, cap) * A * logp with ratio = exp(logp - old_logp), the weight detached; "
        "only the top is capped (a ratio below 1 / cap keeps its value), and logp keeps its gradient.",
        show=lambda x: (f"loss {_show(x[0])}, d loss / d logp {_show(x[1])}" if isinstance(x, tuple) else
                        f"{_show(x)} (with no gradient w.r.t. logp)" if torch.is_tensor(x) else _show(x))))
    _said_if_reference("my_cispo_token_loss", fn, grpo.cispo_token_loss, *cases[0][1:])
    _said_if_reference("my_cispo_token_loss", fn, grpo.per_token_loss, *cases[0][1:])
    print(f"OK: my_cispo_token_loss matches CISPO's loss and its gradient on {len(cases)} worked cases and "
          f"{len(generated)} generated ones.")
    return fn


def _p(x):
    """exp(x) rounded, as nested lists: probabilities or ratios a learner reads."""
    return [[round(v, 4) for v in row] for row in x.exp().tolist()]


def _cispo_generated(rng, n=40):
    """Generated (logp, old_logp, adv, cap), smallest first: probabilities whose ratios lie far below 1 / cap, below 1,
    above 1 and above cap, advantages of both signs and 0, caps 2, 5 and 10."""
    probs = [0.05, 0.1, 0.2, 0.4, 0.5, 0.8, 1.0]
    out = []
    for _ in range(n):
        N, T = rng.randint(1, 3), rng.randint(1, 4)
        p = torch.tensor([[rng.choice(probs) for _ in range(T)] for _ in range(N)])
        q = torch.tensor([[rng.choice(probs) for _ in range(T)] for _ in range(N)])
        adv = torch.tensor([rng.choice([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0]) for _ in range(N)])
        out.append((p.log(), q.log(), adv, rng.choice([2.0, 5.0, 10.0])))
    return sorted(out, key=lambda c: c[0].numel())


def _worked_cispo(fn, cases):
    """The worked CISPO cases, values then gradients, each with its message."""
    for what, logp, old, adv, cap in cases:
        leaf_w, leaf_g = logp.clone().requires_grad_(True), logp.clone().requires_grad_(True)
        want = grpo.cispo_token_loss(leaf_w, old, adv, cap)
        got = fn(leaf_g, old.clone(), adv.clone(), cap)
        if not torch.is_tensor(got) or got.shape != want.shape:
            raise ExerciseError(f"my_cispo_token_loss on {what}: expected a tensor of shape {tuple(want.shape)} (one "
                                f"loss per token), got {got if not torch.is_tensor(got) else tuple(got.shape)}")
        if not torch.allclose(got.detach(), want.detach(), atol=1e-5, rtol=1e-4):
            raise ExerciseError(f"my_cispo_token_loss on {what}:\n  expected {want.detach().tolist()}\n  got      "
                                f"{got.detach().tolist()}\nHint: the loss of a token is -min(ratio, cap) * A * logp, "
                                f"with ratio = exp(logp - old_logp) and A its sequence's advantage.")
        if not got.requires_grad:
            raise ExerciseError(f"my_cispo_token_loss on {what}: the loss has no gradient with respect to logp. The "
                                f"ratio is detached, but logp (the log pi in -w * A * log pi) must keep its gradient.")
        (want_grad,) = torch.autograd.grad(want.sum(), leaf_w)
        (got_grad,) = torch.autograd.grad(got.sum(), leaf_g)
        if not torch.allclose(got_grad, want_grad, atol=1e-5, rtol=1e-4):
            raise ExerciseError(f"my_cispo_token_loss on {what}: the loss value is right but its gradient is not.\n"
                                f"  expected d loss / d logp {want_grad.tolist()}\n  got                     "
                                f"{got_grad.tolist()}\nHint: CISPO detaches the capped ratio (ratio.detach() or "
                                f"torch.no_grad), so the gradient of a token is -min(ratio, cap) * A, and no token "
                                f"loses it to a clip.")
