"""Lab 01's checks (GRPO from scratch): group advantages, policy loss, completion log-probs."""
import torch

from utils.notebook.exercises.common import (
    ExerciseError,
    _agree,
    _compare,
    _first_match,
    _generator,
    _note,
    _show,
    _worked_then_generated,
    learner_check,
)
from utils.rl import grpo

UNBIASED_STD_MESSAGE = (
    "your advantages divide by the unbiased (sample) std, sqrt(sum (r - mean)^2 / (G - 1)): torch's default "
    "r.std(), and the convention of TRL's GRPOTrainer and of Stanford CS336. This course divides by the population "
    "std (G in the denominator): a group of G rewards is the whole population being normalised, not a sample from "
    "a larger one, and it keeps a group of 2 with one right answer at +/-1 (the unbiased std gives +/-0.71). Both "
    "conventions are defensible; this check expects r.std(1, unbiased=False, keepdim=True) + 1e-4.")


def _advantage_variants(r, group_size, scale_std, baseline):
    """Plausible wrong advantages on one case, {(name, what to do instead): value}, to name a learner's mistake."""
    x = r.view(-1, group_size)                                              # [n_groups, G]
    mid = x.median(1, keepdim=True).values if group_size % 2 else x.quantile(0.5, 1, keepdim=True)
    base = x.mean(1, keepdim=True) if baseline == "mean" else mid
    dev, pop = x - base, x.std(1, unbiased=False, keepdim=True)

    def scaled(d, s):
        return (d / s if scale_std else d).reshape(-1)
    out = {
        ("unbiased std", UNBIASED_STD_MESSAGE): scaled(dev, x.std(1, keepdim=True) + 1e-4),
        ("no eps", "you divide by the std alone: a group whose rewards are all equal has std 0, so 0 / 0 = nan "
                   "there (and a near-equal group blows up). Divide by std + 1e-4, which gives such a group "
                   "advantage 0."): scaled(dev, pop),
        ("sqrt(var + eps)", "you divide by sqrt(var + 1e-4): the eps is inside the square root, which for a group "
                            "of near-equal rewards is about 0.01, not 1e-4. Divide by std + 1e-4 (eps outside)."):
            scaled(dev, (x.var(1, unbiased=False, keepdim=True) + 1e-4).sqrt()),
        ("batch mean", "you subtract the mean of the whole batch; subtract each group's own mean (view the "
                       "rewards as [n_groups, group_size] and reduce over dim 1)."):
            scaled(x - r.mean(), pop + 1e-4),
        ("batch std", "you divide by the std of the whole batch; divide by each group's own std (reduce over "
                      "dim 1 of the [n_groups, group_size] view)."): scaled(dev, r.std(unbiased=False) + 1e-4),
        ("mean, not median", "you subtract the mean whatever `baseline` says; with baseline='median' subtract "
                             "each group's median."): scaled(x - x.mean(1, keepdim=True), pop + 1e-4),
        ("lower median", "for an even group the median is the mean of the two middle values "
                         "(r.quantile(0.5, dim=1)); torch.median returns the lower one."):
            scaled(x - x.median(1, keepdim=True).values, pop + 1e-4),
        ("spread around the baseline", "you divide by the root mean square distance from the baseline; the std "
                                       "is always around the group mean, whatever the baseline."):
            scaled(dev, (dev ** 2).mean(1, keepdim=True).sqrt() + 1e-4),
        ("always scaled", "you divide by the std even when scale_std is False (Dr. GRPO's advantages are "
                          "r - baseline, unscaled)."): (dev / (pop + 1e-4)).reshape(-1),
    }
    return out


@learner_check("(rewards, group_size, scale_std, baseline)", "the advantages, a tensor [N]")
def check_group_advantages(fn):
    """Check fn(rewards [N], group_size, scale_std=True, baseline='mean') -> advantages [N]: mean and median
    baselines (odd and even groups), with and without std scaling, several groups, an all-equal group.
    The std is the population std (unbiased=False) plus 1e-4; a result that matches a known mistake (the
    unbiased std of TRL and CS336, no eps, eps inside the root, batch-wide statistics, ...) is named."""
    s3 = 3 ** 0.5 / 4                # population std of a group with one 1 and three 0s: sqrt(1/4 * 3/4)
    s14, s29 = (14 / 3) ** 0.5, (2 / 9) ** 0.5   # population stds of [0, 1, 5] and [1, 1, 0] (worked below)
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # three groups of 4
    cases = [
        # means 0.5, 1, 0.25
        ("rewards [1,0,0,1 | 1,1,1,1 | 1,0,0,0], group 4, no std scaling", (r, 4, False, "mean"),
         [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0, 0.75, -0.25, -0.25, -0.25]),
        # population stds 0.5, 0 and sqrt(3)/4 = 0.4330 (the unbiased ones: 0.5774, 0, 0.5)
        ("the same, scaled by each group's population std + 1e-4 (0.5, 0 and 0.4330)", (r, 4, True, "mean"),
         [0.5 / 0.5001, -0.5 / 0.5001, -0.5 / 0.5001, 0.5 / 0.5001, 0, 0, 0, 0,
          0.75 / (s3 + 1e-4), -0.25 / (s3 + 1e-4), -0.25 / (s3 + 1e-4), -0.25 / (s3 + 1e-4)]),
        # one right answer in a group of 2: mean 0.5, population std 0.5 -> +/-1 (unbiased std 0.7071 -> +/-0.71)
        ("rewards [1,0 | 0,0], group 2", (torch.tensor([1.0, 0.0, 0.0, 0.0]), 2, True, "mean"),
         [0.5 / 0.5001, -0.5 / 0.5001, 0, 0]),
        # near-equal rewards: mean 0.0025, std 0.01 * sqrt(3)/4 = 0.00433; eps matters (sqrt(var + eps) = 0.0109)
        ("rewards [0.01,0,0,0], group 4 (a tiny spread: where eps goes matters)",
         (torch.tensor([0.01, 0.0, 0.0, 0.0]), 4, True, "mean"),
         [0.0075 / (0.01 * s3 + 1e-4)] + [-0.0025 / (0.01 * s3 + 1e-4)] * 3),
        # medians 1 and 1 (the means would be 2 and 2/3)
        ("rewards [0,1,5 | 1,1,0], group 3 (odd), baseline 'median', no std scaling",
         (torch.tensor([0.0, 1.0, 5.0, 1.0, 1.0, 0.0]), 3, False, "median"), [-1, 0, 4, 0, 0, -1]),
        # the std is still around the mean: group 1 sqrt(((-2)^2 + (-1)^2 + 3^2) / 3) = sqrt(14/3) = 2.1602,
        # group 2 (mean 2/3) sqrt(((1/3)^2 * 2 + (2/3)^2) / 3) = sqrt(2/9) = 0.4714
        ("the same, scaled by the population std + 1e-4 (2.1602 and 0.4714)",
         (torch.tensor([0.0, 1.0, 5.0, 1.0, 1.0, 0.0]), 3, True, "median"),
         [-1 / (s14 + 1e-4), 0, 4 / (s14 + 1e-4), 0, 0, -1 / (s29 + 1e-4)]),
        # even group: the median of [0,1,3,10] is (1 + 3) / 2 = 2 (torch.median would give 1); of [1,1,1,0] it is 1
        ("rewards [0,1,3,10 | 1,1,1,0], group 4 (even), baseline 'median', no std scaling",
         (torch.tensor([0.0, 1.0, 3.0, 10.0, 1.0, 1.0, 1.0, 0.0]), 4, False, "median"), [-2, -1, 1, 8, 0, 0, 0, -1]),
    ]
    try:
        fn(*cases[0][1])
    except NotImplementedError:
        return _note("my_group_advantages", grpo.group_advantages)

    def worked():
        """The worked cases, each with its hint."""
        for desc, args, want in cases:
            got, want = fn(*args), torch.as_tensor(want, dtype=torch.float32)
            try:
                _compare("my_group_advantages", desc, got, want)
            except ExerciseError as e:
                raise ExerciseError(f"{e}\nHint: {_advantage_hint(args, got, want)}") from None

    generated = _advantage_cases(_generator("check_group_advantages"))
    _worked_then_generated(worked, lambda: _agree(
        "my_group_advantages", fn, grpo.group_advantages, generated, _describe_advantages, _advantage_hint))
    print(f"OK: my_group_advantages matches the reference on {len(cases)} worked cases and {len(generated)} "
          f"generated ones.")
    return fn


def _advantage_hint(args, got, want):
    """The hint for wrong advantages: the known mistake the result matches, else the rule."""
    try:
        variants = _advantage_variants(*args)
        known = _first_match(got, variants, torch.as_tensor(want, dtype=torch.float32))
        if known is None and torch.is_tensor(got) and not torch.isfinite(got).all():
            known = next(k for k in variants if k[0] == "no eps")
    except Exception:  # noqa: BLE001 - a result the variants cannot be compared with: the plain rule
        known = None
    return known[1] if known else (
        "subtract each group's mean (or median: for an even group the mean of the two middle values); "
        "when scale_std is True divide by the group's population std (unbiased=False) plus 1e-4.")


def _advantage_cases(rng, n=60):
    """Generated (rewards [N], group_size, scale_std, baseline) cases, smallest first: groups of 1 to 5, one to three
    groups, rewards 0/1 (groups all alike among them), small ints, floats and near-equal values (where eps matters)."""
    cases = []
    for _ in range(n):
        G, groups = rng.choice([1, 2, 2, 3, 4, 5]), rng.choice([1, 2, 2, 3])
        kind = rng.choice(["binary", "binary", "ints", "floats", "tiny"])
        draw = {"binary": lambda: float(rng.random() < 0.5), "ints": lambda: float(rng.randint(-3, 5)),
                "floats": lambda: round(rng.uniform(-2, 2), 3), "tiny": lambda: rng.choice([0.0, 0.01, 0.02])}[kind]
        r = [draw() for _ in range(G * groups)]
        cases.append((torch.tensor(r), G, rng.random() < 0.7, rng.choice(["mean", "median"])))
    return sorted(cases, key=lambda c: len(c[0]))


def _describe_advantages(rewards, group_size, scale_std, baseline):
    """A generated advantages case in words."""
    return (f"my_group_advantages(rewards={[round(x, 3) for x in rewards.tolist()]}, group_size={group_size}, "
            f"scale_std={scale_std}, baseline={baseline!r})")


def _loss_variants(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len):
    """Plausible wrong values of policy_loss on one case, {(name, what is wrong): value}, to name a mistake."""
    m, full = mask.float(), torch.ones_like(mask, dtype=torch.float32)
    n, t = m.shape
    ratio, a, d = torch.exp(logp - old_logp), adv[:, None], ref_logp - logp
    clip = ratio.clamp(1 - eps_low, 1 + eps_high)
    k3 = torch.exp(d) - d - 1
    surr = torch.min(ratio * a, clip * a)
    right = -surr + beta * k3                                                     # the right per-token loss
    aggs = {"grpo": lambda x, w: ((x * w).sum(1) / w.sum(1).clamp(min=1)).mean(),
            "dapo": lambda x, w: (x * w).sum() / w.sum().clamp(min=1),
            "dr_grpo": lambda x, w: (x * w).sum() / (n * (max_len or 1))}
    agg = aggs.get(loss_type, aggs["grpo"])
    return {
        ("no min", "the clipped term alone: -clip(ratio) * A without the min, so a ratio the min would keep "
                   "unclipped (ratio < 1 - eps_low with A > 0, ratio > 1 + eps_high with A < 0) is clipped too"):
            agg(-clip * a + beta * k3, m),
        ("max", "max instead of min: the surrogate must be the smaller (pessimistic) of the two terms"):
            agg(-torch.max(ratio * a, clip * a) + beta * k3, m),
        ("min before A", "min(ratio, clip(ratio)) * A: take the min of the two products ratio * A and "
                         "clip(ratio) * A, which differs when A < 0"): agg(-torch.min(ratio, clip) * a + beta * k3, m),
        ("no clip", "no clipping at all: -ratio * A"): agg(-ratio * a + beta * k3, m),
        ("eps_high ignored", "clip(ratio, 1 - eps_low, 1 + eps_low): the upper bound must use eps_high"):
            agg(-torch.min(ratio * a, ratio.clamp(1 - eps_low, 1 + eps_low) * a) + beta * k3, m),
        ("eps_low ignored", "clip(ratio, 1 - eps_high, 1 + eps_high): the lower bound must use eps_low"):
            agg(-torch.min(ratio * a, ratio.clamp(1 - eps_high, 1 + eps_high) * a) + beta * k3, m),
        ("eps swapped", "clip(ratio, 1 - eps_high, 1 + eps_low): eps_low and eps_high swapped"):
            agg(-torch.min(ratio * a, ratio.clamp(1 - eps_high, 1 + eps_low) * a) + beta * k3, m),
        ("ratio inverted", "ratio = exp(old_logp - logp): it is pi / pi_old = exp(logp - old_logp)"):
            agg(-torch.min(a / ratio, (1 / ratio).clamp(1 - eps_low, 1 + eps_high) * a) + beta * k3, m),
        ("KL reversed", "the KL as exp(-d) + d - 1 with d = ref_logp - logp: its direction is reversed; "
                        "k3 is exp(d) - d - 1"): agg(-surr + beta * (torch.exp(-d) + d - 1), m),
        ("KL k1", "the KL as logp - ref_logp (k1, which can be negative); use k3 = exp(d) - d - 1, "
                  "d = ref_logp - logp"): agg(-surr - beta * d, m),
        ("KL outside", "the KL averaged over all tokens and added after aggregating the surrogate; add "
                       "beta * k3 to each token's loss first, then aggregate both as loss_type says"):
            agg(-surr, m) + beta * aggs["dapo"](k3, m),
        ("no mask", "every position averaged, padding included: multiply by the mask (and count only its 1s)"):
            agg(right, full),
        ("mask not counted", "padding masked out of the sum but counted in the denominator"):
            ((right * m).sum(1) / t).mean() if loss_type == "grpo" else (right * m).sum() / (n * t),
        ("dapo", "dapo's token-level average (all tokens' sum / their count)"): aggs["dapo"](right, m),
        ("grpo", "grpo's average (each sequence's mean over its tokens, then the mean over sequences)"):
            aggs["grpo"](right, m),
        ("dr_grpo", "dr_grpo's sum / (N * max_len)"): aggs["dr_grpo"](right, m),
        ("sum / max_len", "sum / max_len: dr_grpo divides by N * max_len"): (right * m).sum() / (max_len or 1),
        ("sum of means", "the sum of the sequences' means: grpo takes their mean"): aggs["grpo"](right, m) * n,
        ("sign", "the sign flipped: the loss is minus the surrogate (we minimise it), plus the KL"):
            -agg(right, m),
    }


def _loss_and_grad(fn, args):
    """fn's loss on args, with logp a fresh leaf: (value, d loss / d logp or None if no gradient reaches logp)."""
    logp = args[0].clone().requires_grad_(True)
    loss = fn(logp, *[x.clone() if torch.is_tensor(x) else x for x in args[1:]])
    if not (torch.is_tensor(loss) and loss.numel() == 1):
        raise ExerciseError(f"my_policy_loss must return the loss as a scalar tensor (one number), "
                            f"got {type(loss).__name__}{'' if not torch.is_tensor(loss) else tuple(loss.shape)}")
    grad = None
    if loss.requires_grad:
        grad = torch.autograd.grad(loss.reshape(()), logp, allow_unused=True)[0]
    return loss.detach().float().reshape(()), grad


@learner_check("(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len)",
               "the loss, a scalar tensor")
def check_policy_loss(fn):
    """Check fn(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len)
    -> loss, a scalar tensor (policy_loss's contract), on worked cases that reach every branch: each side of
    the clip for A > 0 and A < 0, asymmetric eps, the k3 KL (beta > 0), the three loss types (max_len > T),
    and padding with garbage values. The value must match the hand-worked one and the gradient w.r.t. logp
    must match utils.rl.grpo.policy_loss's (so a detached ratio or logp is caught)."""
    import math

    ln2 = math.log(2)
    p = torch.tensor([[0.5, 0.25, 0.55], [0.2, 0.8, 1.0]])      # pi(token), row 1's last position is padding
    q = torch.tensor([[0.25, 0.5, 0.5], [0.4, 0.4, 1.0]])       # pi_old(token)
    p_ref = torch.tensor([[0.5, 0.5, 0.55], [0.1, 0.8, 1.0]])   # pi_ref(token)
    logp, old, ref = p.log(), q.log(), p_ref.log()
    logp[1, 2], old[1, 2], ref[1, 2] = 3.0, -3.0, -10.0          # garbage at the padding: it must not matter
    adv = torch.tensor([1.5, -0.5])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    batch = (logp, old, ref, adv, mask)
    # worked by hand. ratios p / q: row 0 [2, 0.5, 1.1], row 1 [0.5, 2] (+ padding).
    # eps 0.2 (clip to [0.8, 1.2]); token loss -min(ratio * A, clip(ratio) * A):
    #   row 0, A = +1.5: ratio 2   -> min(3, 1.8) = 1.8     (the clip binds above 1 + eps_high)  -> -1.8
    #                    ratio 0.5 -> min(0.75, 1.2) = 0.75 (below 1 - eps_low: the min keeps it) -> -0.75
    #                    ratio 1.1 -> 1.65 (inside the clip range)                                -> -1.65
    #   row 1, A = -0.5: ratio 0.5 -> min(-0.25, -0.4) = -0.4 (the clip binds below 1 - eps_low)  -> 0.4
    #                    ratio 2   -> min(-1, -0.6) = -1      (above 1 + eps_high: unclipped)     -> 1
    #   row sums -4.2 (3 tokens) and 1.4 (2 tokens): 5 tokens, sum -2.8
    # grpo:    mean(-4.2 / 3, 1.4 / 2) = (-1.4 + 0.7) / 2 = -0.35
    # dapo:    -2.8 / 5 = -0.56
    # dr_grpo: -2.8 / (N * max_len) = -2.8 / (2 * 10) = -0.14  (dividing by N * T = 6, by the 5 tokens or by
    #          max_len alone gives -0.467, -0.56 or -0.28)
    cases = [("a 2-sequence batch, eps 0.2, beta 0, loss 'grpo'", batch + (0.2, 0.2, 0.0, "grpo", 10), -0.35),
             ("the same batch, loss 'dapo'", batch + (0.2, 0.2, 0.0, "dapo", 10), -0.56),
             ("the same batch, loss 'dr_grpo', max_len 10", batch + (0.2, 0.2, 0.0, "dr_grpo", 10), -0.14)]
    # eps_low 0.2, eps_high 0.5 (clip to [0.8, 1.5]): row 0's ratio 2 -> 1.5 * 1.5 = 2.25 -> -2.25, the rest as
    # above: row 0 sums -2.25 - 0.75 - 1.65 = -4.65, row 1 still 0.4 + 1 = 1.4; dapo: (-4.65 + 1.4) / 5 = -0.65
    cases.append(("asymmetric clipping eps_low 0.2, eps_high 0.5, loss 'dapo'", batch + (0.2, 0.5, 0.0, "dapo", 10),
                  -0.65))
    # beta 0.5 adds 0.5 * k3 per token, k3 = exp(d) - d - 1 with d = ln(p_ref / p):
    #   row 0: d = [0, ln 2, 0] -> k3 = [0, 2 - ln 2 - 1, 0] = [0, 0.30685, 0]
    #   row 1: d = [-ln 2, 0]   -> k3 = [0.5 + ln 2 - 1, 0] = [0.19315, 0]
    #   (the reversed exp(-d) + d - 1 swaps them: 0.19315 in row 0, 0.30685 in row 1)
    # grpo: -0.35 + 0.5 * mean(0.30685 / 3, 0.19315 / 2) = -0.35 + (1 - ln 2) / 12 + (ln 2 - 0.5) / 8 = -0.30029
    cases.append(("the first batch, loss 'grpo', beta 0.5", batch + (0.2, 0.2, 0.5, "grpo", 10),
                  -0.35 + (1 - ln2) / 12 + (ln2 - 0.5) / 8))
    # dr_grpo: (-2.8 + 0.5 * (0.30685 + 0.19315)) / 20 = (-2.8 + 0.25) / 20 = -0.1275
    cases.append(("the first batch, loss 'dr_grpo', max_len 10, beta 0.5", batch + (0.2, 0.2, 0.5, "dr_grpo", 10),
                  -0.1275))
    hint = ("Hint: ratio = exp(logp - old_logp); per token take -min(ratio*A, clip(ratio, 1-eps_low, 1+eps_high)*A) "
            "+ beta*k3 with k3 = exp(d) - d - 1, d = ref_logp - logp; then average with the mask as loss_type says "
            "(grpo: per-sequence means, then their mean; dapo: sum / number of tokens; dr_grpo: sum / (N * max_len)).")
    try:
        fn(*[x.clone() if torch.is_tensor(x) else x for x in cases[0][1]])
    except NotImplementedError:
        return _note("my_policy_loss", grpo.policy_loss)

    def worked():
        """The worked cases: the value (a known mistake named), then the gradient."""
        for desc, args, want in cases:
            got, grad = _loss_and_grad(fn, args)
            want = torch.tensor(want, dtype=torch.float32)
            try:
                _compare("my_policy_loss", desc, got, want)
            except ExerciseError as e:
                known = _first_match(got, _loss_variants(*args), want)
                raise ExerciseError(f"{e}\n" + (f"Your value matches a known mistake: {known[1]}.\n" if known else "")
                                    + hint) from None
            leaf = args[0].clone().requires_grad_(True)                          # the reference's gradient
            want_grad = torch.autograd.grad(grpo.policy_loss(leaf, *args[1:]), leaf)[0]
            if grad is None or not torch.allclose(grad, want_grad, atol=1e-5, rtol=1e-4):
                detached = ("the loss is computed from detached values (.detach(), .item(), torch.no_grad() or a "
                            "new tensor)")
                if grad is None:
                    why = f"no gradient reaches logp at all: {detached}"
                else:
                    why = (f"no gradient reaches logp (it is 0 everywhere): {detached}; " if not grad.any() else "") \
                        + f"d loss / d logp\n  expected {want_grad.tolist()}\n  got      {grad.tolist()}"
                raise ExerciseError(
                    f"my_policy_loss on {desc}: the loss value is right but its gradient is not: {why}.\n"
                    f"{GRADIENT_HINT}")

    def value_and_grad(f):
        """f as a function of the case giving (loss, d loss / d logp)."""
        return lambda *args: _loss_and_grad(f, args)

    def loss_hint(args, got, want):
        """The hint for a generated case: a right value with a wrong gradient, a known mistake, or the rule."""
        if isinstance(got, tuple) and torch.allclose(got[0], want[0], atol=1e-5, rtol=1e-4):
            return ("the loss value is right but its gradient w.r.t. logp is not. "
                    + GRADIENT_HINT.removeprefix("Hint: "))
        known = _first_match(got[0], _loss_variants(*args), want[0]) if isinstance(got, tuple) else None
        return (f"your value matches a known mistake: {known[1]}. " if known else "") + hint.removeprefix("Hint: ")

    generated = _loss_cases(_generator("check_policy_loss"))
    _worked_then_generated(worked, lambda: _agree(
        "my_policy_loss", value_and_grad(fn), value_and_grad(grpo.policy_loss), generated, _describe_loss, loss_hint,
        show=_show_loss))
    print(f"OK: my_policy_loss matches the reference on {len(cases)} worked cases and {len(generated)} generated "
          f"ones, values and gradients.")
    return fn


GRADIENT_HINT = ("Hint: the loss must be differentiable in logp, the only input that is not a constant: compute "
                 "ratio = exp(logp - old_logp) without detaching logp or the ratio (only old_logp and ref_logp "
                 "are constants), let the clip cut the gradient by itself, and keep logp in the KL term.")


def _loss_cases(rng, n=40):
    """Generated policy_loss cases, smallest first: 1-3 sequences of 1-4 tokens, probabilities whose ratios fall on
    each side of the clip and exactly on a bound (equal probabilities with an eps of 0), advantages of both signs and
    0, padding holding garbage, each loss type, beta 0 or not."""
    probs = [0.1, 0.2, 0.25, 0.4, 0.5, 0.8, 1.0]
    cases = []
    for _ in range(n):
        N, T = rng.randint(1, 3), rng.randint(1, 4)
        p = [[rng.choice(probs) for _ in range(T)] for _ in range(N)]
        q = [[x if rng.random() < 0.3 else rng.choice(probs) for x in row] for row in p]     # ratio exactly 1 too
        r = [[x if rng.random() < 0.4 else rng.choice(probs) for x in row] for row in p]
        lengths = [rng.choice([T] * 3 + list(range(1, T + 1))) for _ in range(N)]    # every completion has a token
        mask = torch.tensor([[int(t < n_) for t in range(T)] for n_ in lengths])
        logp, old, ref = (torch.tensor(x).log() for x in (p, q, r))
        for x in (logp, old, ref):
            x[mask == 0] = torch.tensor([rng.choice([3.0, -10.0, 7.5]) for _ in range(int((mask == 0).sum()))])
        adv = torch.tensor([rng.choice([-2.0, -1.5, -0.5, 0.0, 0.5, 1.0, 2.0]) for _ in range(N)])
        eps_low, eps_high = rng.choice([0.0, 0.1, 0.2, 0.2, 0.28]), rng.choice([0.0, 0.2, 0.2, 0.28, 0.5])
        cases.append((logp, old, ref, adv, mask, eps_low, eps_high, rng.choice([0.0, 0.0, 0.1, 0.5]),
                      rng.choice(["grpo", "dapo", "dr_grpo"]), T + rng.randint(0, 3)))
    return sorted(cases, key=lambda c: c[0].numel())


def _describe_loss(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len):
    """A generated policy_loss case in words (probabilities rather than log-probabilities: easier to read)."""
    pr = lambda x: [[round(v, 4) for v in row] for row in x.exp().tolist()]  # noqa: E731
    return (f"pi = exp(logp) {pr(logp)}, pi_old {pr(old_logp)}, pi_ref {pr(ref_logp)}, adv {adv.tolist()}, mask "
            f"{mask.tolist()}, eps_low {eps_low}, eps_high {eps_high}, beta {beta}, loss_type {loss_type!r}, max_len "
            f"{max_len} (the values at padding are garbage on purpose)")


def _show_loss(x):
    """A (loss, d loss / d logp) pair as the learner reads it."""
    if not isinstance(x, tuple):
        return _show(x)
    value, grad = x
    return f"loss {_show(value)}, d loss / d logp {_show(grad) if grad is not None else 'none (no gradient)'}"


def _tiny_gpt2(seed=0, vocab=12, positions=16):
    """A 2-layer GPT-2 with random weights: small enough to check a function on, any token id < vocab."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=vocab, n_positions=positions, n_embd=16, n_layer=2, n_head=2,
                     bos_token_id=vocab - 1, eos_token_id=vocab - 1)
    return GPT2LMHeadModel(cfg).eval()


def _row_by_row_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask):
    """The completion tokens' log-probs worked out one row at a time, padding cut off first: no padding, no
    position ids, no attention mask to get wrong. [N, T], 0 where completion_mask is 0."""
    out = torch.zeros(completion_ids.shape)
    for i in range(len(prompt_ids)):
        prompt = prompt_ids[i][prompt_mask[i].bool()]                        # [p_i] real prompt tokens
        comp = completion_ids[i][completion_mask[i].bool()]                  # [t_i] real completion tokens
        logits = model(torch.cat([prompt, comp])[None]).logits[0]            # [p_i + t_i, V]
        lp = torch.log_softmax(logits[len(prompt) - 1 : -1].float(), -1)     # [t_i, V]: row j predicts token j+1
        out[i, : len(comp)] = lp.gather(-1, comp[:, None]).squeeze(-1)
    return out


@learner_check("(model, prompt_ids, prompt_mask, completion_ids, completion_mask)", "the log-probs, a tensor [N, T]")
def check_completion_logprobs(fn):
    """Check fn(model, prompt_ids, prompt_mask, completion_ids, completion_mask) -> logp [N, T] (the first output of
    utils.models.policy.completion_logprobs) on a tiny random GPT-2 and a batch with left-padded prompts of three
    lengths and completions padded after EOS (with garbage ids in the padding). Values must equal the log-probs
    worked out one row at a time with the padding cut off, and the gradient w.r.t. the model's weights must match.
    Returns the function to use (the reference's logp if fn is not written yet)."""
    from utils.models.policy import completion_logprobs

    def reference(model, prompt_ids, prompt_mask, completion_ids, completion_mask):
        return completion_logprobs(model, prompt_ids, prompt_mask, completion_ids, completion_mask)[0]

    model = _tiny_gpt2()
    eos = model.config.eos_token_id
    prompt_ids = torch.tensor([[3, 1, 4, 10], [eos, 2, 7, 10], [eos, eos, 5, 10]])   # [3, 4] left padded
    prompt_mask = torch.tensor([[1, 1, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1]])
    completion_ids = torch.tensor([[6, 2, eos], [8, eos, 9], [eos, 4, 4]])             # [3, 3]: garbage after EOS
    completion_mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0]])
    args = (prompt_ids, prompt_mask, completion_ids, completion_mask)
    desc = ("a batch of 3: prompts of 4, 3 and 2 real tokens (left padded), completions of 3, 2 and 1 tokens "
            "(padding after EOS)")
    hint = ("Hint: concatenate prompt and completion (ids and masks), give the model the attention mask and position "
            "ids that start at 0 on each row's first real token ((mask.cumsum(-1) - 1).clamp(min=0)); the logits "
            "at position j predict token j + 1, so the completion's T tokens are predicted by positions P - 1 .. "
            "P + T - 2; log_softmax over the vocabulary, gather the completion ids, and multiply by completion_mask.")
    try:
        fn(model, *[x.clone() for x in args])
    except NotImplementedError:
        _note("my_completion_logprobs", completion_logprobs)
        return reference
    generated = _logprob_cases(_generator("check_completion_logprobs"), eos)
    _worked_then_generated(lambda: _worked_logprobs(fn, model, reference, args, desc, hint), lambda: _agree(
        "my_completion_logprobs", lambda *a: fn(model, *a), lambda *a: reference(model, *a).detach(), generated,
        _describe_logprobs, hint.removeprefix("Hint: ") + " The padding id is EOS, also a real token: read which "
        "tokens are real from the masks, never from the ids."))
    print(f"OK: my_completion_logprobs matches the row-by-row log-probs on a left-padded batch (values and gradient) "
          f"and the reference on {len(generated)} generated batches.")
    return fn


def _worked_logprobs(fn, model, reference, args, desc, hint):
    """The worked batch: values against the row-by-row truth, then the gradient, each with its message."""
    completion_mask = args[3]
    want = _row_by_row_logprobs(model, *args).detach()
    model.zero_grad()
    got = fn(model, *[x.clone() for x in args])
    if not torch.is_tensor(got) or got.shape != want.shape:
        shape = tuple(got.shape) if torch.is_tensor(got) else type(got).__name__
        raise ExerciseError(f"my_completion_logprobs on {desc}: expected a tensor of shape {tuple(want.shape)} "
                            f"[N, T], got {shape}")
    if not torch.allclose(got.detach().float(), want, atol=1e-5, rtol=1e-4):
        diff = (got.detach().float() - want).abs() > 1e-4                  # [N, T] where it differs
        real = diff & completion_mask.bool()                                # ... on real completion tokens
        rows = sorted({int(i) for i in diff.nonzero()[:, 0]})
        where = []
        if diff[~completion_mask.bool()].any():
            where.append("padding positions of the completion are not 0: multiply by completion_mask")
        if real.any() and not real[0].any():                                # row 0 has no padding
            where.append("only the rows whose prompt is left padded differ: check the attention mask and the "
                         "position ids (without them a padded row is read as if its prompt started at the padding)")
        raise ExerciseError(f"my_completion_logprobs on {desc}: rows {rows} differ from the log-probs worked out row "
                            f"by row without padding.\n  expected {want.tolist()}\n  got      "
                            f"{got.detach().tolist()}\n" + "".join(f"  - {w}\n" for w in where) + hint)
    if not got.requires_grad:
        raise ExerciseError("my_completion_logprobs: the values are right but no gradient reaches the model's weights "
                            "(torch.no_grad(), .detach() or .item() somewhere): the loss is differentiated through "
                            "these log-probs.")
    weight = model.transformer.wte.weight                                     # [V, E] token embeddings
    (got_grad,) = torch.autograd.grad((got * torch.arange(1.0, 10.0).view(3, 3)).sum(), weight)
    (want_grad,) = torch.autograd.grad((reference(model, *args) * torch.arange(1.0, 10.0).view(3, 3)).sum(), weight)
    if not torch.allclose(got_grad, want_grad, atol=1e-5, rtol=1e-4):
        raise ExerciseError("my_completion_logprobs: the values are right but their gradient w.r.t. the token "
                            "embeddings is not the reference's. Compute everything from the model's output, in one "
                            "differentiable pass.")


def _logprob_cases(rng, eos, n=4, vocab=12):
    """Generated (prompt_ids, prompt_mask, completion_ids, completion_mask) batches, smallest first: 1-3 rows, prompts
    left padded with EOS (GPT-2's pad is its EOS) that may hold a real EOS too, completions that may end in a real
    EOS, garbage ids (EOS among them) in the completions' padding."""
    cases = []
    for _ in range(n):
        N, P, T = rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 3)
        pl, cl = [rng.randint(1, P) for _ in range(N)], [rng.randint(1, T) for _ in range(N)]
        pl[rng.randrange(N)] = P                                             # one row fills the prompt width
        tok = lambda: rng.choice(list(range(vocab)) + [eos] * 2)  # noqa: E731 - EOS drawn often, as a real token
        prompt_ids = torch.tensor([[eos] * (P - k) + [tok() for _ in range(k)] for k in pl])
        prompt_mask = torch.tensor([[0] * (P - k) + [1] * k for k in pl])
        completion_ids = torch.tensor([[tok() for _ in range(k)] + [rng.choice([eos, 0, 3]) for _ in range(T - k)]
                                       for k in cl])
        completion_mask = torch.tensor([[1] * k + [0] * (T - k) for k in cl])
        cases.append((prompt_ids, prompt_mask, completion_ids, completion_mask))
    return sorted(cases, key=lambda c: c[0].numel() + c[2].numel())


def _describe_logprobs(prompt_ids, prompt_mask, completion_ids, completion_mask):
    """A generated log-probs batch in words."""
    return (f"on the tiny GPT-2 (its EOS, 11, is also the pad id), prompt_ids "
            f"{prompt_ids.tolist()}, prompt_mask {prompt_mask.tolist()}, completion_ids {completion_ids.tolist()}, "
            f"completion_mask {completion_mask.tolist()}")
