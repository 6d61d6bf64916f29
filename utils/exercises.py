"""Exercise checks. Each check runs the learner's function on small worked cases and
returns the function to use for the rest of the lab:

- not written yet (raises NotImplementedError): prints a visible note and returns the
  reference implementation, so the lab still runs top to bottom;
- wrong: raises ExerciseError saying what differs (shape or values, on a small case);
- right: prints a tick and returns the learner's function.
"""
import torch

from . import grpo


class ExerciseError(AssertionError):
    """A learner's function disagrees with the reference on a worked case."""


def _note(name, reference):
    print(f"NOTE: {name} is not written yet, so this lab uses the reference implementation "
          f"{reference.__module__}.{reference.__name__} and runs on. Write it and re-run this cell.")
    return reference


def _compare(name, case, got, want, atol=1e-5):
    got = torch.as_tensor(got, dtype=torch.float32) if not torch.is_tensor(got) else got.float()
    if got.shape != want.shape:
        raise ExerciseError(f"{name} on {case}: expected shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if not torch.allclose(got, want, atol=atol, rtol=1e-4):
        raise ExerciseError(f"{name} on {case}:\n  expected {want.tolist()}\n  got      {got.tolist()}")


def _run(name, fn, reference, cases):
    """cases: list of (description, args tuple, expected tensor or callable->tensor)."""
    try:
        for desc, args, want in cases:
            _compare(name, desc, fn(*args), torch.as_tensor(want, dtype=torch.float32))
    except NotImplementedError:
        return _note(name, reference)
    print(f"OK: {name} matches the reference on {len(cases)} worked cases.")
    return fn


def check_advantages(fn):
    """Check fn(rewards [N], group_size, scale_std=True, baseline='mean') -> advantages [N]."""
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # two groups of 4
    cases = [
        ("rewards [1,0,0,1 | 1,1,1,1], group 4, no std scaling",
         (r, 4, False, "mean"), [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0]),
        ("the same, scaled by the group std (0.5 in the first group, 0 in the second)",
         (r, 4, True, "mean"), [0.5 / 0.5001, -0.5 / 0.5001, -0.5 / 0.5001, 0.5 / 0.5001, 0, 0, 0, 0]),
        ("rewards [1,0,0,0], group 2", (torch.tensor([1.0, 0.0, 0.0, 0.0]), 2, True, "mean"),
         [0.5 / 0.5001, -0.5 / 0.5001, 0, 0]),
    ]
    try:
        return _run("advantages", fn, grpo.group_advantages, cases)
    except ExerciseError as e:
        raise ExerciseError(f"{e}\nHint: subtract each group's mean; divide by the group's population std "
                            f"(unbiased=False) plus 1e-4 only when scale_std is True.") from None


def check_policy_loss(fn):
    """Check fn(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len)
    -> loss (a scalar tensor), or (loss, stats)."""
    logp = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.2]]))
    old = torch.log(torch.tensor([[0.25, 0.5], [0.9, 0.4]]))
    ref = torch.log(torch.tensor([[0.5, 0.25], [0.9, 0.2]]))
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1], [1, 0]])
    # worked by hand: ratios [[2, 1], [1, 0.5]]; clip to [0.8, 1.2]:
    # row 0 (A=+1): min(2, 1.2) = 1.2 and 1 -> token losses -1.2, -1
    # row 1 (A=-1): min(-1, -1) = -1 -> loss 1 (second token masked)
    # grpo: mean(( -1.2 - 1) / 2, 1 / 1) = (-1.1 + 1) / 2 = -0.05
    # dapo: (-1.2 - 1 + 1) / 3 = -0.4
    cases = [("a 2-sequence batch, eps 0.2, beta 0, loss 'grpo'", (logp, old, ref, adv, mask, 0.2, 0.2, 0.0, "grpo", 2), -0.05),
             ("the same batch, loss 'dapo'", (logp, old, ref, adv, mask, 0.2, 0.2, 0.0, "dapo", 2), -0.4)]
    # with beta = 0.1 the KL term adds 0.1 * k3 per token; k3 worked by hand:
    # token (0,1): d = log(0.25/0.5) = -ln 2 -> 0.5 + ln 2 - 1 = 0.19315; others d = 0 -> 0
    cases.append(("the same batch, loss 'grpo', beta 0.1", (logp, old, ref, adv, mask, 0.2, 0.2, 0.1, "grpo", 2),
                  -0.05 + 0.1 * 0.1931472 / 2 / 2))
    cases.append(("asymmetric clipping eps_low 0.2, eps_high 0.5, loss 'dapo'",
                  (logp, old, ref, adv, mask, 0.2, 0.5, 0.0, "dapo", 2), (-1.5 - 1 + 1) / 3))

    def scalar(*a):
        out = fn(*a)
        loss = out[0] if isinstance(out, tuple) else out
        return torch.as_tensor(loss).detach().reshape(())

    try:
        used = _run("policy_loss", scalar, grpo.policy_loss, cases)
    except ExerciseError as e:
        raise ExerciseError(f"{e}\nHint: ratio = exp(logp - old_logp); per token take "
                            f"-min(ratio*A, clip(ratio, 1-eps_low, 1+eps_high)*A) + beta*k3; then average "
                            f"with the mask as loss_type says.") from None
    return grpo.policy_loss if used is grpo.policy_loss else fn
