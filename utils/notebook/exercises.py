"""Exercise checks. Each check runs the learner's function on small worked cases and
returns the function to use for the rest of the lab:

- not written yet (raises NotImplementedError): prints a visible note and returns the
  reference implementation, so the lab still runs top to bottom;
- wrong: raises ExerciseError saying what differs (shape or values, on a small case);
- right: prints a tick and returns the learner's function.
"""
import torch

from utils.rl import grpo


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
    """Run fn on each case, a (description, args tuple, expected value: a number, list or tensor), and compare
    with _compare. Returns fn if every case matches, the reference if fn is not written yet."""
    try:
        for desc, args, want in cases:
            _compare(name, desc, fn(*args), torch.as_tensor(want, dtype=torch.float32))
    except NotImplementedError:
        return _note(name, reference)
    print(f"OK: {name} matches the reference on {len(cases)} worked cases.")
    return fn


def _first_match(got, variants, want):
    """The first (name, message) in variants, {(name, message): value}, whose value got matches where want differs:
    a plausible mistake the learner's result is recognised as. None if there is none."""
    got = torch.as_tensor(got, dtype=torch.float32) if not torch.is_tensor(got) else got.detach().float()
    for key, value in variants.items():
        value = torch.as_tensor(value, dtype=torch.float32)
        if value.shape == got.shape == want.shape and torch.allclose(got, value, atol=1e-5, rtol=1e-4, equal_nan=True) \
                and not torch.allclose(want, value, atol=1e-5, rtol=1e-4, equal_nan=True):
            return key
    return None


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
        for desc, args, want in cases:
            got, want = fn(*args), torch.as_tensor(want, dtype=torch.float32)
            try:
                _compare("my_group_advantages", desc, got, want)
            except ExerciseError as e:
                variants = _advantage_variants(*args)
                known = _first_match(got, variants, want)
                if known is None and torch.is_tensor(got) and not torch.isfinite(got).all():
                    known = next(k for k in variants if k[0] == "no eps")
                hint = known[1] if known else (
                    "subtract each group's mean (or median: for an even group the mean of the two middle values); "
                    "when scale_std is True divide by the group's population std (unbiased=False) plus 1e-4.")
                raise ExerciseError(f"{e}\nHint: {hint}") from None
    except NotImplementedError:
        return _note("my_group_advantages", grpo.group_advantages)
    print(f"OK: my_group_advantages matches the reference on {len(cases)} worked cases.")
    return fn


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
                    f"Hint: the loss must be differentiable in logp, the only input that is not a constant: compute "
                    f"ratio = exp(logp - old_logp) without detaching logp or the ratio (only old_logp and ref_logp "
                    f"are constants), let the clip cut the gradient by itself, and keep logp in the KL term.")
    except NotImplementedError:
        return _note("my_policy_loss", grpo.policy_loss)
    print(f"OK: my_policy_loss matches the reference on {len(cases)} worked cases, values and gradients.")
    return fn


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
        want = _row_by_row_logprobs(model, *args).detach()
        model.zero_grad()
        got = fn(model, *[x.clone() for x in args])
    except NotImplementedError:
        _note("my_completion_logprobs", completion_logprobs)
        return reference
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
    print("OK: my_completion_logprobs matches the row-by-row log-probs on a left-padded batch, values and gradient.")
    return fn


# ----------------------------------------------------------------------------------------- Lab 02

# Cases the shipped suite does not hold: a written verifier is also judged on these, so that
# fitting the suite case by case shows up as a lower score here.
HIDDEN_ARITHMETIC_CASES = [
    ("-12,345", -12345, 1.0), ("  7 ", 7, 1.0), ("100.", 100, 1.0), ("2,000", 2000, 1.0),
    ("7 7", 77, 0.0), ("77 78", 77, 0.0), ("1,00", 100, 0.0), ("+7", 7, 0.0), ("7..", 7, 0.0),
    ("0.", 0, 1.0), ("\u0667", 7, 0.0), ("12,3456", 123456, 0.0), ("--7", -7, 0.0), ("", 0, 0.0),
]


def _suite_errors(fn, cases):
    """[(case, got)] where fn(output, answer) disagrees with the label; an exception counts as an error."""
    bad = []
    for c in cases:
        try:
            got = float(fn(c["output"], c["answer"]))
        except Exception as e:  # a verifier must never raise: report it as a miss
            got = f"raised {type(e).__name__}: {e}"
        if got != c["label"]:
            bad.append((c, got))
    return bad


def check_careful_match(fn, min_coverage=0.95):
    """Check a learner's match(text, answer) -> 0.0/1.0 verifier on the adversarial suite and on
    hidden cases: no false positives anywhere (a wrong answer must never score 1), coverage at least
    min_coverage on each. Returns the function to use (the reference careful_match if not written)."""
    from utils.verifiers.arithmetic import careful_match, load_arithmetic_suite

    suite = load_arithmetic_suite()
    hidden = [{"id": f"hidden-{i}", "output": o, "answer": a, "label": label}
              for i, (o, a, label) in enumerate(HIDDEN_ARITHMETIC_CASES)]
    try:
        fn("66", 66)
    except NotImplementedError:
        return _note("my_careful_match", careful_match)
    for name, cases in (("the shipped suite", suite), ("hidden cases", hidden)):
        bad = _suite_errors(fn, cases)
        fp = [(c, g) for c, g in bad if c["label"] == 0.0 and g == 1.0]
        raised = [(c, g) for c, g in bad if isinstance(g, str)]  # a verifier must never raise
        coverage = 1 - len(bad) / len(cases)
        if fp or raised or coverage < min_coverage:
            shown = "\n".join(f"  {c['id']:12s} output {repr(c['output'])[:30]:32s} answer {c['answer']!r:8} "
                              f"label {c['label']}  got {g}" for c, g in (fp or raised or bad)[:6])
            raise ExerciseError(
                f"my_careful_match on {name}: coverage {coverage:.0%} (need >= {min_coverage:.0%}), "
                f"{len(fp)} false positive(s) (need 0), {len(raised)} exception(s) (need 0). "
                f"First disagreements:\n{shown}\n"
                f"Hint: start from strict_match's rules; accept '1,073' only with commas every three digits "
                f"and one final '.'; reject everything else, and never raise (check isinstance(text, str)).")
        print(f"OK: my_match on {name}: coverage {coverage:.0%}, no false positives ({len(cases)} cases).")
    return fn


def breaking_cases():
    """The reference answer to Lab 02's exercise: (output, answer, label) cases last_number_match judges wrongly."""
    return [("67 66", 66, 0.0), ("xx66yy", 66, 0.0), ("066", 66, 0.0), ("-0", 0, 0.0)]


def check_breaking_cases(fn, target=None, min_cases=3):
    """fn() -> list of (output, answer, label) triples that `target` (default: last_number_match)
    judges wrongly. Labels are checked against careful_match, the lab's best arithmetic judge.
    Returns the list of cases to use (the reference's if fn is not written)."""
    from utils.verifiers.arithmetic import careful_match, last_number_match

    target = target or last_number_match
    reference = breaking_cases()
    try:
        cases = list(fn())
    except NotImplementedError:
        print(f"NOTE: my_breaking_cases is not written yet, so this lab uses the reference {__name__}.breaking_cases "
              f"and runs on: {reference}. Write it and re-run this cell.")
        return reference
    problems = []
    for i, case in enumerate(cases):
        if not (isinstance(case, (tuple, list)) and len(case) == 3):
            problems.append(f"case {i}: {case!r} is not an (output, answer, label) triple")
            continue
        out, ans, label = case
        if careful_match(out, ans) != label:
            problems.append(f"case {i}: {out!r} for answer {ans!r} has label {label}, but careful_match says "
                            f"{careful_match(out, ans)} (if you think it is wrong, you broke careful_match too)")
        elif target(out, ans) == label:
            problems.append(f"case {i}: {target.__name__} judges {out!r} correctly ({label}): it does not break it")
    if len(cases) < min_cases or problems:
        raise ExerciseError(f"my_breaking_cases needs at least {min_cases} cases that {target.__name__} gets wrong; "
                            f"got {len(cases)}.\n  " + "\n  ".join(problems)
                            + "\nHint: last_number_match only looks at the last number in the text.")
    print(f"OK: all {len(cases)} cases break {target.__name__}.")
    return cases


# ----------------------------------------------------------------------------------------- Lab 03

def check_random_reward(fn):
    """Check fn(p, seed) -> reward function paying 1.0 with probability p whatever the completion:
    the rate on 20,000 calls is within 0.015 of p, right and wrong outputs are paid alike, the same seed
    gives the same stream and another seed another one, successive calls draw fresh coins, and p outside
    [0, 1] raises ValueError. Returns the factory to use."""
    import numpy as np

    from utils.verifiers.spurious import random_reward

    try:
        fn(0.5, 0)
    except NotImplementedError:
        return _note("my_random_reward", random_reward)
    n = 20000
    for p in (0.0, 0.3, 1.0):
        got = np.asarray(fn(p, 1)(["66"] * n, [66] * n), dtype=float)
        if got.shape != (n,) or not np.isin(got, (0.0, 1.0)).all():
            raise ExerciseError(f"my_random_reward({p}, 1) should return a list of {n} values, each 0.0 or 1.0")
        if abs(got.mean() - p) > 0.015:
            raise ExerciseError(f"my_random_reward({p}, 1) paid {got.mean():.3f} of {n} completions; "
                                f"expected about {p}")
    right = np.asarray(fn(0.3, 2)(["66"] * n, [66] * n))
    wrong = np.asarray(fn(0.3, 2)(["67"] * n, [66] * n))
    if abs(right.mean() - wrong.mean()) > 0.02:
        raise ExerciseError(f"the reward must not depend on the output: right answers paid {right.mean():.3f}, "
                            f"wrong ones {wrong.mean():.3f}")
    if list(fn(0.5, 3)(["x"] * 50)) != list(fn(0.5, 3)(["x"] * 50)):
        raise ExerciseError("the same seed must give the same rewards: use np.random.default_rng(seed) inside")
    if list(fn(0.5, 3)(["x"] * 50)) == list(fn(0.5, 4)(["x"] * 50)):  # equal by chance: 1 in 2^50
        raise ExerciseError("seeds 3 and 4 gave the same 50 rewards: the seed must choose the stream "
                            "(np.random.default_rng(seed), not a fixed seed)")
    reward = fn(0.5, 3)
    if list(reward(["x"] * 50)) == list(reward(["x"] * 50)):
        raise ExerciseError("two calls of the same reward function paid the same 50 rewards: each call must draw "
                            "fresh coins from one stream. Create the generator once in my_random_reward, outside the "
                            "inner function, not on every call (and draw at random, not a fixed pattern).")
    for bad in (-0.1, 1.5):
        try:
            fn(bad, 0)
        except ValueError:
            continue
        raise ExerciseError(f"my_random_reward({bad}, 0) should raise ValueError: p is a probability")
    print("OK: my_random_reward pays at rate p, ignores the output, is seeded (one stream per seed, fresh coins "
          "on every call) and rejects a bad p.")
    return fn


def check_control_check(fn):
    """Check fn(before, true_runs, random_runs, threshold) -> dict with true_gain, random_gain, flagged (random
    gain > threshold) and harmed (random gain < -threshold) on worked cases, one per branch and both edges
    (runs are dicts with an 'after' report; gains are means over runs of pass@1 after minus before).
    A 'verdict' or 'message' key is allowed but not required."""
    from utils.eval.control import control_check

    def runs(*accs):
        return [{"config": {"steps": 1}, "after": {"pass@1": a}} for a in accs]
    before = {"pass@1": 0.25}  # values exact in binary floating point, so the threshold cases are exact
    # (description, true runs, random runs, threshold, (true_gain, random_gain, flagged, harmed)), worked by hand:
    cases = [("true +12.5 and +6.25 points (mean +9.375), random +3.125 and 0 (mean +1.5625)",
              runs(0.375, 0.3125), runs(0.28125, 0.25), 0.0625, (0.09375, 0.015625, False, False)),
             ("random +12.5 and +6.25 points (mean +9.375 > 6.25): flagged", runs(0.5), runs(0.375, 0.3125), 0.0625,
              (0.25, 0.09375, True, False)),
             ("random exactly at +threshold (+6.25 points): not above it", runs(0.5), runs(0.3125), 0.0625,
              (0.25, 0.0625, False, False)),
             ("random -12.5 points (< -6.25): it hurt, harmed", runs(0.5), runs(0.125), 0.0625,
              (0.25, -0.125, False, True)),
             ("random exactly at -threshold (-6.25 points): not below it", runs(0.5), runs(0.1875), 0.0625,
              (0.25, -0.0625, False, False)),
             ("random -12.5 and +6.25 points: the mean, -3.125, is within the threshold", runs(0.5),
              runs(0.125, 0.3125), 0.0625, (0.25, -0.03125, False, False))]
    try:
        fn(before, *cases[0][1:4])
    except NotImplementedError:
        return _note("my_control_check", control_check)
    keys = ("true_gain", "random_gain", "flagged", "harmed")
    for desc, t, r, th, want in cases:
        out = fn(before, t, r, th)
        missing = [k for k in keys if not isinstance(out, dict) or k not in out]
        if missing:
            raise ExerciseError(f"my_control_check must return a dict with the keys {list(keys)}; missing "
                                f"{missing}. 'harmed' is True when the random gain is below -threshold: training "
                                f"itself costs accuracy, so the control is not neutral and the comparison with the "
                                f"true reward is not like with like.")
        got = tuple(out[k] for k in keys)
        if not (abs(got[0] - want[0]) < 1e-9 and abs(got[1] - want[1]) < 1e-9 and bool(got[2]) == want[2]
                and bool(got[3]) == want[3]):
            raise ExerciseError(
                f"my_control_check on {desc} (threshold {th}):\n"
                f"  expected true_gain {want[0]}, random_gain {want[1]}, flagged {want[2]}, harmed {want[3]}\n"
                f"  got      true_gain {got[0]}, random_gain {got[1]}, flagged {got[2]}, harmed {got[3]}\n"
                f"Hint: gain = mean over runs of after['pass@1'] - before['pass@1']; flagged when the random gain is "
                f"strictly above +threshold, harmed when it is strictly below -threshold (exactly at either is "
                f"neither).")
    print(f"OK: my_control_check matches the reference on {len(cases)} worked cases.")
    return fn


# ----------------------------------------------------------------------------------------- Lab 04

def check_token_entropy(fn):
    """Check fn(logits [N, T, V], mask [N, T]) -> mean entropy in nats over the masked positions: each
    position where mask is 1 counts once (rows with more positions weigh more), masked positions not at all,
    and a fully peaked distribution gives exactly 0 (no nan from 0 * log 0)."""
    import math

    from utils.eval.health import token_entropy
    uniform_peaked = torch.tensor([[[0.0, 0, 0, 0], [100.0, 0, 0, 0], [0.0, 0, 0, 0]]])   # [1, 3, 4]
    u4, peak = [0.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]
    cases = [
        ("one uniform position over 4 tokens (ln 4 = 1.3863 nats; 2 bits)", (uniform_peaked[:, :1], torch.ones(1, 1)),
         math.log(4)),
        ("uniform, then peaked, then a masked position: (ln 4 + 0) / 2", (uniform_peaked, torch.tensor([[1, 1, 0]])),
         math.log(4) / 2),
        ("p = (.75, .25) from logits (ln 3, 0): -(.75 ln .75 + .25 ln .25)", (torch.tensor([[[math.log(3), 0.0]]]),
                                                                              torch.ones(1, 1)), 0.562335),
        ("two rows, row 2 fully masked", (torch.tensor([[[0.0, 0.0]], [[5.0, -5.0]]]), torch.tensor([[1], [0]])),
         math.log(2)),
        # row 0: two uniform positions (ln 4 each); row 1: one peaked position (0), then a masked one.
        # Per position: (ln 4 + ln 4 + 0) / 3 = 0.9242; the mean of the rows' means would be (ln 4 + 0) / 2 = 0.6931
        ("rows with 2 and 1 unmasked positions (entropies ln 4, ln 4 | 0): each position counts once",
         (torch.tensor([[u4, u4], [peak, u4]]), torch.tensor([[1, 1], [1, 0]])), 2 * math.log(4) / 3),
        # logits (1000, 0, 0, 0): softmax gives exactly (1, 0, 0, 0) in float32, so log(softmax) has log 0 = -inf and
        # 0 * -inf = nan; log_softmax gives (0, -1000, -1000, -1000) and 0 * -1000 = 0: entropy exactly 0
        ("a fully peaked position, logits (1000, 0, 0, 0): entropy 0", (torch.tensor([[[1000.0, 0, 0, 0]]]),
                                                                      torch.ones(1, 1)), 0.0),
    ]
    try:
        return _run("my_token_entropy", fn, token_entropy, cases)
    except ExerciseError as e:
        raise ExerciseError(f"{e}\nHint: log_softmax over the last axis (not log(softmax): it gives log 0 = -inf on "
                            f"a peaked distribution), H = -(p * log p).sum(-1) per position in nats (natural log), "
                            f"then average over all positions where mask is 1 (divide by mask.sum(), not by T and "
                            f"not row by row).") from None


def check_health_check(fn):
    """Check fn(history, window=5) -> set of failed check names ("spread", "entropy", "kl") against
    utils.eval.health.health_check on worked histories (the default window and window=2, a history shorter
    than the window, values exactly at the limits), and a ValueError for an empty history or a missing
    metric. Returns the function to use."""
    from utils.eval.health import ENTROPY_RATIO, KL_CEILING, STD_FLOOR, health_check

    def reference(history, window=5):
        return set(health_check(history, window=window)["failed"])

    def rec(std=0.3, ent=0.5, kl=0.1):
        return {"group_reward_std": std, "entropy": ent, "kl": kl}
    low = ENTROPY_RATIO * 0.5 * 0.9                                      # under the floor of a run started at 0.5
    cases = [("a healthy run", [rec()] * 8),
             (f"entropy 0.5 -> {low:.3f} at the end", [rec()] * 8 + [rec(ent=low)] * 5),
             (f"group std {STD_FLOOR / 2} and KL {KL_CEILING * 2}",
              [rec()] * 5 + [rec(std=STD_FLOOR / 2, kl=KL_CEILING * 2)] * 5),
             ("entropy low in the middle, fine in the last 5 steps", [rec()] * 5 + [rec(ent=0.0)] * 10 + [rec()] * 5),
             ("one bad step among the last 5 (mean entropy 0.4)", [rec()] * 9 + [rec(ent=0.0)]),
             ("a run that started at 0.3 nats and ends at 0.2 (floor 0.15)", [rec(ent=0.3)] * 5 + [rec(ent=0.2)] * 5),
             ("a run that started at 1.0 nats and ends at 0.4 (floor 0.5)", [rec(ent=1.0)] * 5 + [rec(ent=0.4)] * 5),
             ("a first step of 1.1 nats, then 0.35 (start: the first 5 steps' mean 0.5, floor 0.25)",
              [rec(ent=1.1)] + [rec(ent=0.35)] * 9),
             # exact in binary: std 0.1 = STD_FLOOR, entropy 0.25 = 0.5 x the start 0.5, KL 10.0 = KL_CEILING
             ("std, entropy and KL exactly at their limits (0.1, 0.25 = 0.5 x 0.5, 10.0): strictly beyond is a flag",
              [rec()] * 5 + [rec(std=STD_FLOOR, ent=ENTROPY_RATIO * 0.5, kl=KL_CEILING)] * 5),
             ("a 3-step history, shorter than the window (std 0.3, 0.05, 0.05: mean 0.133, not below 0.1)",
              [rec(std=0.3), rec(std=0.05), rec(std=0.05)])]
    windowed = [  # window 2: the last 2 steps and the first 2 steps, not 5
        # KL: mean of the last 2 = 20 > 10 (over the last 5: (3 x 0.1 + 2 x 20) / 5 = 8.06, not above)
        (f"window 2, KL {2 * KL_CEILING} in the last 2 of 10 steps", [rec()] * 8 + [rec(kl=2 * KL_CEILING)] * 2, 2),
        # entropy: start = mean of the first 2 = 1.0, floor 0.5, end = mean of the last 2 = 0.45 < 0.5: flagged
        # (with 5 for either: start (2 x 1.0 + 3 x 0.6) / 5 = 0.76, floor 0.38; end (3 x 0.6 + 2 x 0.45) / 5 = 0.54)
        ("window 2, entropy 1.0, 1.0, then 0.6 x 6, then 0.45, 0.45",
         [rec(ent=1.0)] * 2 + [rec(ent=0.6)] * 6 + [rec(ent=0.45)] * 2, 2)]
    try:
        fn(cases[0][1])
    except NotImplementedError:
        return _note("my_health_check", reference)
    for desc, hist, window in [(d, h, None) for d, h in cases] + windowed:
        want = reference(hist) if window is None else reference(hist, window=window)
        try:
            got = fn(hist) if window is None else fn(hist, window=window)
        except Exception as e:
            raise ExerciseError(f"my_health_check on {desc} raised {type(e).__name__}: {e}; expected "
                                f"{sorted(want) or 'no flags'}") from None
        if set(got or ()) != want:
            raise ExerciseError(f"my_health_check on {desc}: expected {sorted(want) or 'no flags'}, got {got}\n"
                                f"Hint: average each metric over the last `window` steps (history[-window:], all of "
                                f"them if the history is shorter), then compare with STD_FLOOR={STD_FLOOR} (std < "
                                f"floor), ENTROPY_RATIO={ENTROPY_RATIO} x the mean entropy of the first `window` steps "
                                f"(entropy < that) and KL_CEILING={KL_CEILING} (kl > ceiling); use the `window` "
                                f"argument, not a fixed 5.")
    for desc, bad in (("an empty history", []),
                      ("a history without 'kl'", [{"group_reward_std": 0.3, "entropy": 0.5}])):
        try:
            fn(bad)
        except ValueError:
            continue
        except Exception as e:
            raise ExerciseError(f"my_health_check on {desc} raised {type(e).__name__}: {e}; raise a ValueError "
                                f"that names what is missing instead") from None
        raise ExerciseError(f"my_health_check on {desc} should raise ValueError naming what is missing")
    print(f"OK: my_health_check agrees with the reference on {len(cases) + len(windowed)} histories and rejects bad "
          f"input.")
    return fn


# ----------------------------------------------------------------------------------------- Lab 05

def check_pass_at_k(fn):
    """Check fn(n, c, k) -> unbiased pass@k: equal to exact enumeration over all k-subsets for n <= 8,
    exactly 1.0 when n - c < k, finite and in [0, 1] for n = 1024, ValueError for k > n, negative
    counts and c > n. Returns the function to use."""
    import itertools
    import math

    from utils.eval.metrics import pass_at_k

    try:
        fn(4, 1, 2)
    except NotImplementedError:
        return _note("my_pass_at_k", pass_at_k)
    for n in range(1, 9):
        for c in range(n + 1):
            samples = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(range(n), k))
                want = sum(any(samples[i] for i in s) for s in subsets) / len(subsets)
                got = fn(n, c, k)
                if not abs(float(got) - want) < 1e-9:
                    raise ExerciseError(f"my_pass_at_k(n={n}, c={c}, k={k}): expected {want:.6f} (the share of the "
                                        f"{len(subsets)} {k}-subsets with a correct sample), got {got}\nHint: "
                                        f"1 - C(n-c, k) / C(n, k) = 1 - prod over i from n-c+1 to n of (1 - k/i).")
    for c, k in ((1000, 100), (1, 1), (5, 512), (1023, 2), (0, 1024), (3, 1022)):
        try:
            got = float(fn(1024, c, k))
        except (OverflowError, ZeroDivisionError) as e:
            got = f"{type(e).__name__}: {e}"
        if (isinstance(got, str) or not (math.isfinite(got) and 0.0 <= got <= 1.0)
                or abs(got - pass_at_k(1024, c, k)) > 1e-9):
            raise ExerciseError(f"my_pass_at_k(1024, {c}, {k}) = {got}; expected {pass_at_k(1024, c, k)}. "
                                f"With n = 1024 the binomials reach 10^306, the edge of float64: use the product form, "
                                f"never C(n, k) itself.")
    if fn(1024, 1000, 100) != 1.0:
        raise ExerciseError("my_pass_at_k(1024, 1000, 100) must be exactly 1.0: "
                            "with n - c < k every subset has a correct sample")
    for bad in ((4, 1, 5), (4, -1, 2), (4, 5, 2), (4, 1, 0)):
        try:
            fn(*bad)
        except ValueError:
            continue
        raise ExerciseError(f"my_pass_at_k{bad} should raise ValueError (k must be 1..n, counts 0..n)")
    print("OK: my_pass_at_k matches exact enumeration for n <= 8, is exact at n - c < k, stable at n = 1024, "
          "and rejects bad counts.")
    return fn


# Lab 06: (a, b, text, expected credit, what the case tests). 478 + 356: 8+6+0=14 7+5+1=13 4+3+1=8 >834
STEP_CASES = [
    (478, 356, "8+6+0=14 7+5+1=13 4+3+1=8 >834", 1.0, "the right trace"),
    (478, 356, "8+6+0=14 7+5+1=13 4+3+1=8 >999", 1.0, "right steps, wrong answer (the answer is not a step)"),
    (478, 356, "8+6+0=14 4+3+1=8 >834", 1 / 3, "a skipped step: the later steps are out of place"),
    (478, 356, "8+6+0=14 7+5+1=13 4+3+1=8 0+0+0=0 >834", 3 / 4, "padding: an extra step costs"),
    (478, 356, "8+6+0=14 7+5+0=12 4+3+1=8 >834", 2 / 3, "a dropped carry: true sum, wrong step"),
    (478, 356, "8+6+0=14 hello 4+3+1=8 >834", 2 / 3, "an unreadable token keeps its place"),
    (478, 356, "6+8+0=14 5+7+1=13 3+4+1=8 >834", 0.0, "operands swapped: not the steps asked for"),
    (5, 97, "5+7+0=12 0+9+1=10 >102", 1.0, "a shorter operand reads as 0"),
    (5, 97, ">102", 0.0, "no steps at all"),
    (478, 356, "", 0.0, "an empty completion"),
    (478, 356, None, 0.0, "None (a verifier never raises)"),
    (478, 356, "8+6+0=14 " * 60 + ">834", 0.0, "a text over traces.MAX_CHARS: rejected unread"),
]


def check_step_credit(fn):
    """Check fn(text, a, b) -> the process reward of one completion (traces.step_credit) on STEP_CASES: one case
    per rule (position, padding, skipping, carries, unreadable tokens, None, over-long text). Returns the
    function to use."""
    from utils.verifiers.traces import step_credit

    try:
        fn("8+6+0=14 >14", 8, 6)
    except NotImplementedError:
        return _note("my_step_credit", step_credit)
    for a, b, text, want, what in STEP_CASES:
        try:
            got = fn(text, a, b)
        except Exception as e:  # noqa: BLE001 - report the learner's exception as a failed case
            raise ExerciseError(f"my_step_credit({text!r:.60}, {a}, {b}) raised {type(e).__name__}: {e}. A verifier "
                                f"never raises: anything unreadable scores 0.0 ({what}).") from None
        if not isinstance(got, (int, float)) or isinstance(got, bool) or abs(float(got) - want) > 1e-9:
            raise ExerciseError(f"my_step_credit on {what}:\n  completion {text!r:.70} for {a}+{b} "
                                f"(right steps {' '.join('{}+{}+{}={}'.format(*s) for s in _steps(a, b))})\n"
                                f"  expected {want:.4f}, got {got!r}\nRule: count written steps equal to the "
                                f"right step at the same position; divide by max(steps written, steps needed).")
    print(f"OK: my_step_credit matches the process reward on {len(STEP_CASES)} worked cases.")
    return fn


def _steps(a, b):
    from utils.tasks.scratchpad import steps_for
    return steps_for(a, b)


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
    print("OK: my_token_weights matches the gradient of the aggregate for grpo, dapo and dr_grpo on 2 masks.")
    return fn


# ------------------------------------------------------------------------------------------------ Lab 07
SWEET_CASES = [  # (rates, lo, hi, the indices in the band, what the case tests)
    ([0.0, 0.25, 0.3, 0.5, 0.7, 0.75, 1.0], 0.3, 0.7, [2, 3, 4], "both ends of the band are inside"),
    ([0.6, 0.1, 0.9, 0.5], 0.3, 0.7, [0, 3], "indices in the split's order, not sorted by rate"),
    ([1.0, 0.0, 1.0], 0.3, 0.7, [], "nothing in the band: an empty result"),
    ([0.0, 0.0625, 1.0], 0.0, 0.0625, [0, 1], "a band that starts at 0"),
    ([0.2, 0.4, 0.8], 0.1, 0.9, [0, 1, 2], "another band: lo and hi are used, not 0.3 and 0.7"),
]


def check_sweet_spot(fn):
    """Check fn(rates, lo, hi) -> the indices of the prompts whose pass rate r has lo <= r <= hi, in order, on
    SWEET_CASES. Returns the function to use (curation.sweet_spot, which also refuses a bad band, when fn is not
    written)."""
    import numpy as np

    from utils.tasks.curation import sweet_spot
    try:
        fn(np.array([0.5]), 0.3, 0.7)
    except NotImplementedError:
        return _note("my_sweet_spot", sweet_spot)
    for rates, lo, hi, want, what in SWEET_CASES:
        got = fn(np.array(rates), lo, hi)
        got = np.asarray(got)
        if got.dtype == bool:
            raise ExerciseError(f"my_sweet_spot({rates}, {lo}, {hi}) returned a True/False mask {got.tolist()}; "
                                f"return the indices where it is True (np.flatnonzero(mask))")
        if got.tolist() != want:
            raise ExerciseError(f"my_sweet_spot on {what}: rates {rates}, band [{lo}, {hi}]\n  expected indices "
                                f"{want}\n  got      {got.tolist()}\nRule: the indices i with lo <= rates[i] <= hi.")
    print(f"OK: my_sweet_spot matches on {len(SWEET_CASES)} worked cases.")
    return fn


FILL_CASES = [  # (rounds of rewards, G, n_groups, expected (kept, rounds used), what the case tests)
    ([[1, 1, 0, 1, 0, 0], [1, 0, 1, 1, 0, 1]], 2, 3, ([(0, 1), (1, 0), (1, 2)], 2),
     "all-1 and all-0 groups are dropped; a second round fills the batch"),
    ([[0, 1, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1]], 2, 3, ([(0, 0), (0, 1), (0, 2)], 1),
     "a full first round needs no second one"),
    ([[0, 1, 0, 0, 1, 0], [1, 0, 0, 1, 0, 1]], 2, 3, ([(0, 0), (0, 2), (1, 0)], 2),
     "stop as soon as the batch is full: the second round's later groups are not kept"),
    ([[1, 1, 1, 1], [0, 0, 0, 0]], 2, 2, ([], 2), "nothing informative: nothing kept, every round used"),
    ([[0.5, 0.5, 0.2, 0.7, 1, 1]], 2, 3, ([(0, 1)], 1), "rewards need not be 0/1: alike means equal"),
    ([[0, 0, 1, 0, 1, 1, 1, 1]], 4, 2, ([(0, 0)], 1), "groups of 4: one right of four is informative"),
]


def check_fill_batch(fn):
    """Check fn(round_rewards, G, n_groups) -> (kept (round, group) pairs, rounds used), dynamic sampling's
    refill (loop.fill_batch), on FILL_CASES. Returns the function to use."""
    from utils.rl.loop import fill_batch
    try:
        fn([torch.tensor([0.0, 1.0])], 2, 1)
    except NotImplementedError:
        return _note("my_fill_batch", fill_batch)
    for rounds, G, n, (want_kept, want_used), what in FILL_CASES:
        got = fn([torch.tensor(r, dtype=torch.float32) for r in rounds], G, n)
        try:
            kept, used = got
            kept = [tuple(int(x) for x in pair) for pair in kept]
        except (TypeError, ValueError):
            raise ExerciseError(f"my_fill_batch must return (kept, rounds_used) with kept a list of (round, group) "
                                f"pairs; got {got!r:.120}") from None
        if kept != want_kept or used != want_used:
            raise ExerciseError(f"my_fill_batch on {what}: rounds {rounds}, G={G}, n_groups={n}\n"
                                f"  expected kept {want_kept}, rounds used {want_used}\n"
                                f"  got      kept {kept}, rounds used {used}\nRule: walk the rounds in order, "
                                f"keep each group whose rewards are not all equal, stop once n_groups are kept.")
    print(f"OK: my_fill_batch matches dynamic sampling's refill on {len(FILL_CASES)} worked cases.")
    return fn


FIT_CASES = [  # (C, R, R0, C_mid, B, what the case tests): the expected A is best_asymptote's
    ([100.0, 1000.0, 10000.0], [0.3, 0.45, 0.6], 0.2, 1000.0, 1.0, "points near a curve of slope 1"),
    ([64.0, 640.0, 6400.0], [0.4, 0.4, 0.4], 0.4, 640.0, 2.0, "no gain at all: A = R0"),
    ([50.0, 200.0, 800.0, 3200.0], [0.35, 0.5, 0.55, 0.7], 0.3, 400.0, 0.5, "a shallow slope, R0 = 0.3"),
    ([10.0, 20.0], [0.9, 0.1], 0.5, 15.0, 3.0, "a fall below R0: A may be below R0"),
]


def check_best_asymptote(fn):
    """Check fn(C, R, R0, C_mid, B) -> the least-squares asymptote A of the sigmoid at fixed C_mid and B
    (scaling.best_asymptote) on FIT_CASES. Returns the function to use."""
    import numpy as np

    from utils.eval.scaling import best_asymptote, sigmoid
    try:
        fn(np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3]), 0.0, 2.0, 1.0)
    except NotImplementedError:
        return _note("my_best_asymptote", best_asymptote)
    for C, R, R0, C_mid, B, what in FIT_CASES:
        want = best_asymptote(C, R, R0, C_mid, B)
        got = fn(np.array(C), np.array(R), R0, C_mid, B)
        try:
            float(got)
        except (TypeError, ValueError):
            raise ExerciseError(f"my_best_asymptote on {what} returned {got!r:.80}; return one number, the "
                                f"asymptote A") from None
        if not np.isfinite(float(got)) or abs(float(got) - want) > 1e-6:
            err = lambda A: float(np.sum((sigmoid(C, A, C_mid, B, R0) - np.array(R)) ** 2))  # noqa: E731
            extra = "" if not np.isfinite(float(got)) else (
                f" (squared error {err(float(got)):.5f} vs {err(want):.5f} at the best A)")
            raise ExerciseError(f"my_best_asymptote on {what}: C={C}, R={R}, R0={R0}, C_mid={C_mid}, B={B}\n"
                                f"  expected A = {want:.6f}\n  got        {got!r}{extra}\nHint: with "
                                f"s = 1 / (1 + (C_mid / C) ** B) the curve is R0 + (A - R0) * s, a line in A - R0 "
                                f"through the origin: A - R0 = sum(s * (R - R0)) / sum(s * s).")
    print(f"OK: my_best_asymptote matches the least-squares asymptote on {len(FIT_CASES)} worked cases.")
    return fn


DIAGNOSE_CASES = [  # (summary, expected names, what the case tests)
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9), [],
     "a healthy run: nothing to report"),
    (dict(reward_mean=0.02, zero_spread_frac=0.95, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9),
     ["no_signal_all_wrong"], "groups all alike with reward near 0"),
    (dict(reward_mean=0.98, zero_spread_frac=0.8, truncated_frac=0.0, kl=0.01, entropy_ratio=0.9),
     ["no_signal_all_right"], "groups all alike with reward near 1 (0.8 is already too many)"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.5, kl=0.01, entropy_ratio=0.9), ["truncated"],
     "half the completions cut at the cap"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.1, kl=0.01, entropy_ratio=0.9), [],
     "a truncated share of exactly 0.1 is still fine (the flag is for more than 0.1)"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=1e-6, entropy_ratio=0.9), ["not_moving"],
     "KL near 0: the policy is not moving"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=0.0, kl=0.5, entropy_ratio=0.3), ["collapsing"],
     "entropy at 30% of its start"),
    (dict(reward_mean=0.02, zero_spread_frac=0.9, truncated_frac=0.9, kl=1e-6, entropy_ratio=0.9),
     ["no_signal_all_wrong", "truncated", "not_moving"], "several at once, in DIAGNOSES' order"),
    (dict(reward_mean=0.3, zero_spread_frac=0.3, truncated_frac=None, kl=None, entropy_ratio=None), [],
     "None (not recorded) decides nothing"),
]


def check_diagnose(fn):
    """Check fn(summary) -> the list of DIAGNOSES names a run's summary shows (health.diagnose) on DIAGNOSE_CASES.
    Returns the function to use."""
    from utils.eval.health import diagnose
    try:
        fn(dict(DIAGNOSE_CASES[0][0]))
    except NotImplementedError:
        return _note("my_diagnose", diagnose)
    for summary, want, what in DIAGNOSE_CASES:
        try:
            got = fn(dict(summary))
        except TypeError as e:
            raise ExerciseError(f"my_diagnose on {what} raised TypeError ({e}): a value may be None (not recorded); "
                                f"skip that rule") from None
        if list(got) != want:
            raise ExerciseError(f"my_diagnose on {what}:\n  summary  {summary}\n  expected {want}\n  got      "
                                f"{list(got)}\nRules and their order: health.diagnose's docstring.")
    print(f"OK: my_diagnose matches on {len(DIAGNOSE_CASES)} worked cases.")
    return fn
