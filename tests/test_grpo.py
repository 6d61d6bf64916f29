"""utils.rl.grpo and utils.rl.loop: advantages, k3 KL, the clipped loss and its aggregations, config checks,
the loop."""
import copy
import dataclasses
import math

import pytest
import torch
from tolerance import assert_near

from utils.rl.grpo import (
    GRPOConfig,
    aggregate,
    group_advantages,
    high_entropy_mask,
    kl_k3,
    log_ratio,
    loss_stats,
    per_token_loss,
    policy_loss,
    process_advantages,
    token_weights,
)
from utils.rl.loop import train_grpo, update
from utils.rl.rollout import GroupRollout
from utils.tasks.arithmetic import load_split
from utils.verifiers.arithmetic import strict_reward

LN2 = math.log(2)


# ---------------------------------------------------------------- advantages
def test_advantages_mean_no_std():
    r = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]  # two groups of 4
    # group 1 mean 0.5 -> [0.5, -0.5, -0.5, 0.5]; group 2 all equal -> zeros
    assert group_advantages(r, 4, scale_std=False).tolist() == [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0]


def test_advantages_mean_with_std():
    r = torch.tensor([1.0, 0.0, 0.0, 0.0])
    # mean 0.25; deviations [0.75, -0.25, -0.25, -0.25];
    # population std = sqrt((0.5625 + 3 * 0.0625) / 4) = sqrt(0.1875) = 0.4330127; + eps 1e-4
    s = math.sqrt(0.1875) + 1e-4
    want = [0.75 / s, -0.25 / s, -0.25 / s, -0.25 / s]
    assert torch.allclose(group_advantages(r, 4), torch.tensor(want), atol=1e-6)
    # two groups of 2: [1, 0] -> mean .5, std .5 -> +-0.5 / 0.5001; [0, 0] -> 0
    got = group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), 2)
    assert torch.allclose(got, torch.tensor([0.5 / 0.5001, -0.5 / 0.5001, 0, 0]), atol=1e-6)


def test_advantages_median():
    # even group: median of [0, 0, 0, 1] is 0 (the mean of the two middle values, 0 and 0)
    r = torch.tensor([1.0, 0.0, 0.0, 0.0])
    assert group_advantages(r, 4, scale_std=False, baseline="median").tolist() == [1, 0, 0, 0]
    s = math.sqrt(0.1875) + 1e-4  # the std is the same as with the mean baseline
    assert torch.allclose(group_advantages(r, 4, baseline="median"), torch.tensor([1 / s, 0, 0, 0]), atol=1e-6)
    # even group [1, 0, 0, 1]: middle values 0 and 1 -> median 0.5, as the mean
    assert group_advantages([1.0, 0.0, 0.0, 1.0], 4, False, "median").tolist() == [0.5, -0.5, -0.5, 0.5]
    # odd groups: [0.2, 0.4, 0.9] median 0.4 -> [-0.2, 0, 0.5]; [1, 0, 0] median 0 -> [1, 0, 0]
    got = group_advantages([0.2, 0.4, 0.9, 1.0, 0.0, 0.0], 3, False, "median")
    assert torch.allclose(got, torch.tensor([-0.2, 0.0, 0.5, 1.0, 0.0, 0.0]), atol=1e-6)
    # the mean baseline for [1, 0, 0] is 1/3 -> [2/3, -1/3, -1/3]
    got = group_advantages([1.0, 0.0, 0.0], 3, False, "mean")
    assert torch.allclose(got, torch.tensor([2 / 3, -1 / 3, -1 / 3]), atol=1e-6)


@pytest.mark.parametrize("scale_std", [True, False])
@pytest.mark.parametrize("baseline", ["mean", "median"])
def test_advantages_all_equal_group_is_zero(scale_std, baseline):
    for v in (0.0, 0.3, 1.0):
        assert group_advantages([v] * 8, 4, scale_std, baseline).tolist() == [0.0] * 8


def test_advantages_sum_to_zero_per_group_and_shape():
    r = torch.rand(24, generator=torch.Generator().manual_seed(0))
    a = group_advantages(r, 6)
    assert a.shape == (24,)
    assert torch.allclose(a.view(4, 6).sum(1), torch.zeros(4), atol=1e-5)
    # scaled by std: each group's advantages have population std ~1
    assert torch.allclose(a.view(4, 6).std(1, unbiased=False), torch.ones(4), atol=1e-3)


def test_advantages_bad_baseline():
    with pytest.raises(ValueError, match="baseline"):
        group_advantages([1.0, 0.0], 2, baseline="max")


# ---------------------------------------------------------------- KL
def test_kl_k3_hand_values():
    logp = torch.log(torch.tensor([0.5, 0.25, 0.3]))
    ref = torch.log(torch.tensor([0.25, 0.5, 0.3]))
    # d = ref - logp: -ln2 -> e^-ln2 + ln2 - 1 = 0.5 + ln2 - 1 = 0.193147
    #                 +ln2 -> 2 - ln2 - 1 = 0.306853;   0 -> 0
    want = torch.tensor([0.5 + LN2 - 1, 2 - LN2 - 1, 0.0])
    assert torch.allclose(kl_k3(logp, ref), want, atol=1e-6)


def test_kl_k3_non_negative_and_unbiased():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(1000, generator=g) * 3, torch.randn(1000, generator=g) * 3
    assert (kl_k3(a, b) >= 0).all()
    # E_{x~p}[k3] = KL(p||q): p = [.5, .5], q = [.25, .75]
    # KL = .5 ln(.5/.25) + .5 ln(.5/.75) = .5 * 0.693147 + .5 * (-0.405465) = 0.143841
    k3 = kl_k3(torch.log(torch.tensor([0.5, 0.5])), torch.log(torch.tensor([0.25, 0.75])))
    assert (0.5 * k3).sum().item() == pytest.approx(0.5 * LN2 + 0.5 * math.log(0.5 / 0.75), abs=1e-6)


# ---------------------------------------------------------------- loss
def batch():
    """Hand-worked batch (the same one the exercise check uses):
    probs now [[.5, .5], [.9, .2]], when sampled [[.25, .5], [.9, .4]], reference [[.5, .25], [.9, .2]]
    -> ratios [[2, 1], [1, .5]]; A = [+1, -1]; row 1's second token is masked."""
    logp = torch.log(torch.tensor([[0.5, 0.5], [0.9, 0.2]]))
    old = torch.log(torch.tensor([[0.25, 0.5], [0.9, 0.4]]))
    ref = torch.log(torch.tensor([[0.5, 0.25], [0.9, 0.2]]))
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1], [1, 0]])
    return logp, old, ref, adv, mask


# per-token losses, eps 0.2 (clip to [0.8, 1.2]):
#   (0,0) ratio 2, A=+1: -min(2, 1.2) = -1.2      (0,1) ratio 1, A=+1: -1
#   (1,0) ratio 1, A=-1: -min(-1, -1) = +1        (1,1) masked
# k3 to the reference: only (0,1) is non-zero: d = ln(.25/.5) = -ln2 -> 0.5 + ln2 - 1 = 0.193147
K3 = 0.5 + LN2 - 1
CASES = [
    # loss_type, beta, max_len, expected
    ("grpo", 0.0, None, ((-1.2 - 1) / 2 + 1 / 1) / 2),               # -0.05: mean per sequence, then over sequences
    ("dapo", 0.0, None, (-1.2 - 1 + 1) / 3),                         # -0.4: over all 3 tokens
    ("dr_grpo", 0.0, 4, (-1.2 - 1 + 1) / (2 * 4)),                   # -0.15: over N * max_len = 8
    ("grpo", 0.1, None, ((-1.2 - 1 + 0.1 * K3) / 2 + 1) / 2),        # -0.045171
    ("dapo", 0.1, None, (-1.2 - 1 + 0.1 * K3 + 1) / 3),              # -0.393562
    ("dr_grpo", 0.1, 4, (-1.2 - 1 + 0.1 * K3 + 1) / 8),              # -0.147586
]


@pytest.mark.parametrize("loss_type, beta, max_len, want", CASES)
def test_policy_loss_hand_values(loss_type, beta, max_len, want):
    logp, old, ref, adv, mask = batch()
    loss = policy_loss(logp, old, ref, adv, mask, 0.2, 0.2, beta, loss_type, max_len)
    assert loss.shape == ()
    assert loss.item() == pytest.approx(want, abs=1e-6)
    # the same number in two steps: per-token losses, then their aggregation
    per_token = per_token_loss(logp, old, ref, adv, 0.2, 0.2, beta)
    assert per_token.shape == logp.shape
    assert aggregate(per_token, mask, loss_type, max_len).item() == pytest.approx(want, abs=1e-6)


def test_per_token_loss_hand_values():
    """Ratios [[2, 1], [1, 0.5]], advantages [+1, -1], clip [0.8, 1.2]: per token -min(rA, clip(r)A),
    padding included (aggregate masks it); with beta 0.1, + 0.1 * k3 where the reference differs."""
    logp, old, ref, adv, mask = batch()
    want = torch.tensor([[-1.2, -1.0], [1.0, 0.8]])
    assert torch.allclose(per_token_loss(logp, old, ref, adv), want, atol=1e-6)
    want[0, 1] += 0.1 * K3
    assert torch.allclose(per_token_loss(logp, old, ref, adv, beta=0.1), want, atol=1e-6)


def test_aggregate_rejects_what_it_cannot_average():
    x, m = torch.ones(2, 3), torch.ones(2, 3)
    with pytest.raises(ValueError, match="max_len"):
        aggregate(x, m, "dr_grpo")
    with pytest.raises(ValueError, match="loss_type must be one of"):
        aggregate(x, m, "sum")


def test_policy_loss_asymmetric_clip():
    # eps_high 0.5: (0,0) now clips at 1.5 -> dapo (-1.5 - 1 + 1) / 3 = -0.5
    logp, old, ref, adv, mask = batch()
    loss = policy_loss(logp, old, ref, adv, mask, eps_low=0.2, eps_high=0.5, loss_type="dapo")
    assert loss.item() == pytest.approx(-0.5, abs=1e-6)


def test_policy_loss_negative_advantage_clip():
    # A=-1, ratio 0.5 < 1 - eps_low: -min(-0.5, -0.8) = 0.8 (the clip binds); ratio 2: -min(-2, -1.2) = 2
    logp = torch.log(torch.tensor([[0.2, 0.8]]))
    old = torch.log(torch.tensor([[0.4, 0.4]]))
    loss = policy_loss(logp, old, old, torch.tensor([-1.0]), torch.ones(1, 2), loss_type="dapo")
    assert loss.item() == pytest.approx((0.8 + 2.0) / 2, abs=1e-6)


def test_policy_loss_ignores_masked_tokens():
    logp, old, ref, adv, mask = batch()
    base = policy_loss(logp, old, ref, adv, mask, beta=0.1, loss_type="dapo")
    logp2, old2, ref2 = logp.clone(), old.clone(), ref.clone()
    logp2[1, 1], old2[1, 1], ref2[1, 1] = -30.0, 0.0, 5.0   # garbage where the mask is 0
    other = policy_loss(logp2, old2, ref2, adv, mask, beta=0.1, loss_type="dapo")
    assert other.item() == pytest.approx(base.item(), abs=1e-6)


def test_policy_loss_bad_arguments():
    logp, old, ref, adv, mask = batch()
    with pytest.raises(ValueError, match="max_len"):
        policy_loss(logp, old, ref, adv, mask, loss_type="dr_grpo")
    with pytest.raises(ValueError, match="loss_type"):
        policy_loss(logp, old, ref, adv, mask, loss_type="ppo")


def test_policy_loss_gradient_direction():
    """d loss / d logp, worked by hand for 'grpo' (loss = mean over 2 rows of per-row token means):
    (0,0): clipped (ratio 2 > 1.2, A > 0): no gradient
    (0,1): -ratio * A / 2 tokens / 2 rows = -1 * 1 / 4 = -0.25   (A > 0: descent raises logp)
    (1,0): -ratio * A / 1 token / 2 rows = +1 / 2 = +0.5         (A < 0: descent lowers logp)
    (1,1): masked: 0"""
    logp, old, ref, adv, mask = batch()
    logp = logp.clone().requires_grad_(True)
    loss = policy_loss(logp, old, ref, adv, mask, loss_type="grpo")
    loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[0.0, -0.25], [0.5, 0.0]]), atol=1e-6)
    # with beta = 0.1 the k3 term adds beta * (1 - exp(ref - logp)) / 4 at (0,1): 0.1 * (1 - 0.5) / 4 = 0.0125
    logp.grad = None
    loss = policy_loss(logp, old, ref, adv, mask, beta=0.1, loss_type="grpo")
    loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[0.0, -0.2375], [0.5, 0.0]]), atol=1e-6)


def test_positive_advantage_increases_logp():
    # on-policy (ratio 1), unclipped: every token of a positive-advantage sequence gets a negative
    # gradient and every token of a negative-advantage sequence a positive one, for every loss_type
    g = torch.Generator().manual_seed(0)
    logp = torch.log(torch.rand(4, 5, generator=g) * 0.9 + 0.05).requires_grad_(True)
    adv = torch.tensor([1.0, -0.5, 2.0, -1.0])
    mask = torch.ones(4, 5)
    for lt in ("grpo", "dapo", "dr_grpo"):
        logp.grad = None
        loss = policy_loss(logp, logp.detach(), logp.detach(), adv, mask, loss_type=lt, max_len=5)
        loss.backward()
        assert (logp.grad[adv > 0] < 0).all() and (logp.grad[adv < 0] > 0).all(), lt


def test_loss_stats_hand_case():
    logp, old, ref, adv, mask = batch()
    st = loss_stats(logp, old, ref, adv, mask, 0.2, 0.2)
    # clipped where the clip binds: (0,0) ratio 2 > 1.2 with A > 0 -> yes;
    # (1,1) ratio .5 < .8 with A < 0 would be, but it is masked -> 1 of 3 tokens
    assert st["clip_frac"] == pytest.approx(1 / 3)
    # kl: only (0,1) non-zero, K3 over 3 tokens
    assert st["kl"] == pytest.approx(K3 / 3, abs=1e-6)
    # clip does not bind: ratio 0.5 with A > 0 and ratio 2 with A < 0; ratio 2 with A > 0 does
    lp = torch.log(torch.tensor([[0.5, 1.0], [1.0, 1.0]]))
    old2 = torch.log(torch.tensor([[1.0, 0.5], [0.5, 1.0]]))   # ratios [[.5, 2], [2, 1]]
    st = loss_stats(lp, old2, lp, torch.tensor([1.0, -1.0]), torch.ones(2, 2), 0.2, 0.2)
    assert st["clip_frac"] == pytest.approx(1 / 4)              # only (0,1) binds
    assert st["kl"] == pytest.approx(0.0)


# ------------------------------------------------- one ratio per sequence (GSPO, LUSPO)
# batch(): log ratios [[ln2, 0], [0, -ln2]], mask [[1, 1], [1, 0]] -> per-sequence means [ln2 / 2, 0] (row 1's
# masked token is left out) -> s = [sqrt 2, 1]. Clip [0.8, 1.2]: row 0 (A=+1) -min(1.414, 1.2) = -1.2 on both
# tokens; row 1 (A=-1) -min(-1, -1) = +1 on both (the padded one too: aggregate masks it).
SEQ_CASES = [
    ("grpo", 0.0, None, (-1.2 + 1) / 2),                             # -0.1: each sequence its mean, then mean
    ("dapo", 0.0, None, (-1.2 - 1.2 + 1) / 3),                       # -0.466667: over all 3 tokens
    ("dr_grpo", 0.0, 4, (-1.2 - 1.2 + 1) / 8),                       # -0.175: over N * max_len
    ("luspo", 0.0, None, (-2.4 + 1) / 2),                            # -0.7: each sequence's sum, then mean
    ("grpo", 0.1, None, ((-2.4 + 0.1 * K3) / 2 + 1) / 2),            # the k3 of token (0,1), as above
    ("luspo", 0.1, None, (-2.4 + 0.1 * K3 + 1) / 2),
]


def test_log_ratio_per_token_and_per_sequence():
    logp, old, ref, adv, mask = batch()
    assert torch.allclose(log_ratio(logp, old), torch.tensor([[LN2, 0.0], [0.0, -LN2]]), atol=1e-6)
    seq = log_ratio(logp, old, mask, "sequence")
    assert seq.shape == (2, 1) and torch.allclose(seq, torch.tensor([[LN2 / 2], [0.0]]), atol=1e-6)
    with pytest.raises(ValueError, match="needs the mask"):
        log_ratio(logp, old, level="sequence")
    with pytest.raises(ValueError, match="level must be one of"):
        log_ratio(logp, old, mask, "batch")


@pytest.mark.parametrize("loss_type, beta, max_len, want", SEQ_CASES)
def test_sequence_level_loss_hand_values(loss_type, beta, max_len, want):
    logp, old, ref, adv, mask = batch()
    loss = policy_loss(logp, old, ref, adv, mask, 0.2, 0.2, beta, loss_type, max_len, level="sequence")
    assert loss.item() == pytest.approx(want, abs=1e-6)
    per_token = per_token_loss(logp, old, ref, adv, 0.2, 0.2, beta, "sequence", mask)
    assert torch.allclose(per_token - beta * kl_k3(logp, ref), torch.tensor([[-1.2, -1.2], [1.0, 1.0]]), atol=1e-6)


def test_sequence_ratio_spreads_the_gradient_evenly():
    """Unclipped (eps 1: clip [0, 2]), grpo aggregation, beta 0: the loss is (-s_0 + s_1) / 2. One ratio per
    sequence gives both of row 0's tokens d/dlogp = -(1/2) * s_0 * (1/2) = -0.353553; a ratio per token gives
    them -(1/2) * r_t / 2 with r = [2, 1]: -0.5 and -0.25."""
    logp, old, ref, adv, mask = batch()
    for level, want in (("sequence", [-math.sqrt(2) / 4] * 2), ("token", [-0.5, -0.25])):
        lp = logp.clone().requires_grad_(True)
        policy_loss(lp, old, ref, adv, mask, 1.0, 1.0, 0.0, "grpo", level=level).backward()
        assert lp.grad[0].tolist() == pytest.approx(want, abs=1e-6), level
        assert lp.grad[1, 1].item() == 0.0  # padding: no gradient


def test_on_policy_the_sequence_objectives_are_token_ones():
    """With old_logp = logp (one update per batch: every ratio is 1 where the gradient is taken) GSPO's gradient is
    GRPO's, -A_i / (N |o_i|) on each token, and LUSPO's is dr_grpo's times max_len, -A_i / N: the sequence-level
    objectives differ from the token-level ones only off-policy (benchmarks/lab06.py, part objectives-offpolicy)."""
    logp, _, ref, adv, mask = batch()

    def grad(loss_type, level, max_len=None):
        lp = logp.clone().requires_grad_(True)
        policy_loss(lp, lp.detach(), ref, adv, mask, 0.2, 0.2, 0.0, loss_type, max_len, level=level).backward()
        return lp.grad

    want = torch.tensor([[-1 / 4, -1 / 4], [1 / 2, 0.0]])  # A = [+1, -1], lengths [2, 1], N = 2
    assert torch.allclose(grad("grpo", "token"), want) and torch.allclose(grad("grpo", "sequence"), want)
    # two code paths (a ratio per sequence, one per token) that agree only to rounding
    assert_near(grad("luspo", "sequence"), 4 * grad("dr_grpo", "token", max_len=4), "luspo's gradient")
    assert torch.allclose(grad("luspo", "sequence"), torch.tensor([[-0.5, -0.5], [0.5, 0.0]]))


def test_luspo_weighs_each_sequence_by_its_length():
    """token_weights: luspo gives every token 1/N, so a sequence's weight is its length / N."""
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert token_weights(mask, "luspo").tolist() == [[0.5, 0.5, 0.5], [0.5, 0.0, 0.0]]


def test_loss_stats_counts_a_clipped_sequence_on_each_of_its_tokens():
    logp, old, ref, adv, mask = batch()
    # s = [1.414, 1]: row 0's ratio binds (> 1.2 with A > 0) on both its tokens; row 1 does not: 2 of 3 tokens
    assert loss_stats(logp, old, ref, adv, mask, 0.2, 0.2, "sequence")["clip_frac"] == pytest.approx(2 / 3)


def test_padding_that_is_not_finite_changes_nothing():
    """A log-prob of -inf (a token the model cannot write) on padding reaches no sum (issue 60: inf * 0 is NaN, and it
    took the whole row with it): the loss, its gradient, the sequence's ratio and the monitoring numbers are those
    of the same batch with 0 there. NaN anywhere is refused by name."""
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    old, ref = torch.tensor([[-1.0, -2.0, 0.0], [-0.5, 0.0, 0.0]]), torch.full((2, 3), -1.0)
    adv = torch.tensor([1.0, -1.0])
    with pytest.raises(ValueError, match="logp holds NaN"):
        policy_loss(torch.tensor([[-0.8, -2.1, math.nan], [-0.7, 0.0, 0.0]]), old, ref, adv, mask)
    for pad in (-math.inf,):
        clean = torch.tensor([[-0.8, -2.1, 0.0], [-0.7, 0.0, 0.0]], requires_grad=True)
        dirty = torch.tensor([[-0.8, -2.1, pad], [-0.7, pad, pad]], requires_grad=True)
        for level in ("token", "sequence"):
            for loss_type in ("grpo", "dapo", "luspo"):
                if loss_type == "luspo" and level == "token":
                    continue
                a, b = (policy_loss(x, old, ref, adv, mask, beta=0.1, level=level, loss_type=loss_type)
                        for x in (clean, dirty))
                assert torch.isfinite(b) and a.item() == b.item(), (pad, level, loss_type)
                (ga,), (gb,) = torch.autograd.grad(a, clean), torch.autograd.grad(b, dirty)
                assert torch.equal(ga, gb), (pad, level, loss_type)
        assert torch.equal(log_ratio(clean, old, mask, "sequence"), log_ratio(dirty, old, mask, "sequence"))
        assert loss_stats(clean, old, ref, adv, mask, 0.2, 0.2, "sequence") == \
            loss_stats(dirty, old, ref, adv, mask, 0.2, 0.2, "sequence")


def test_luspo_needs_one_ratio_per_sequence():
    with pytest.raises(ValueError, match=r"GRPOConfig\.loss_type='luspo'.*ratio_level='sequence'"):
        GRPOConfig(loss_type="luspo")
    assert GRPOConfig(loss_type="luspo", ratio_level="sequence").ratio_level == "sequence"


# ---------------------------------------------------------------- config
def test_default_config_is_valid():
    cfg = GRPOConfig()
    assert cfg.validate() is cfg


@pytest.mark.parametrize("field, value", [
    ("group_size", 1), ("batch_size", 30), ("loss_type", "ppo"), ("eps_low", 0), ("eps_high", -0.1),
    ("lr", -1), ("baseline", "max"), ("steps", 0), ("temperature", 0), ("beta", -0.1), ("eval_every", -1),
    ("warmup_steps", 1.5), ("steps", 2.0), ("max_new_tokens", True), ("ratio_level", "sentence"),
])
def test_config_validate_names_the_field(field, value):
    cfg = GRPOConfig(batch_size=32, group_size=8)
    setattr(cfg, field, value)
    with pytest.raises(ValueError, match=rf"GRPOConfig\.{field}="):
        cfg.validate()


@pytest.mark.parametrize("field, value", [("group_size", 1), ("loss_type", "ppo"), ("lr", 0), ("top_entropy_frac", 2)])
def test_config_is_checked_when_built(field, value):
    """A bad config fails where it is written, not minutes later inside training."""
    from dataclasses import replace
    with pytest.raises(ValueError, match=rf"GRPOConfig\.{field}="):
        GRPOConfig(**{field: value})
    with pytest.raises(ValueError, match=rf"GRPOConfig\.{field}="):
        replace(GRPOConfig(), **{field: value})


def test_config_batch_divisibility_message_suggests_a_value():
    with pytest.raises(ValueError, match="divisible by group_size=8"):
        GRPOConfig(batch_size=30, group_size=8).validate()


# ---------------------------------------------------------------- the loop
KEYS = {"step", "reward_mean", "reward_std", "zero_spread_frac", "group_reward_std", "distinct_answers", "entropy",
        "kl", "clip_frac", "completion_len", "completion_len_right", "completion_len_wrong", "truncated_frac", "loss",
        "heldout_pass@1", "seconds", "completions_sampled", "train_seconds"}
TINY = dict(steps=3, batch_size=16, group_size=4, eval_every=0)


@pytest.fixture(scope="module")
def train():
    ds = load_split("train")
    return list(ds["prompt"]), list(ds["answer"])


@pytest.fixture(scope="module")
def tiny_run(shipped, train):
    model, tok = shipped
    policy = copy.deepcopy(model)
    seen = []

    def callback(model, rec):
        seen.append((model is policy, dict(rec)))
        return {"from_callback": rec["step"] * 10}

    hist = train_grpo(policy, tok, *train, strict_reward, GRPOConfig(**TINY), progress=False, callback=callback)
    return policy, hist, seen


def test_train_grpo_history(shipped, tiny_run):
    model, _ = shipped
    policy, hist, seen = tiny_run
    assert [r["step"] for r in hist] == [1, 2, 3]
    # the callback got the trained policy and every record, and what it returned is in the record
    assert [(is_policy, rec["step"]) for is_policy, rec in seen] == [(True, 1), (True, 2), (True, 3)]
    assert [r["from_callback"] for r in hist] == [10, 20, 30]
    hist = [{k: v for k, v in r.items() if k != "from_callback"} for r in hist]  # a copy: the fixture is shared
    assert [rec for _, rec in seen] == hist
    for r in hist:
        assert set(r) == KEYS and r["completions_sampled"] == TINY["batch_size"]
        assert 0 <= r["reward_mean"] <= 1 and 0 <= r["reward_std"] <= 0.5
        assert 0 <= r["zero_spread_frac"] <= 1 and r["entropy"] >= 0 and r["kl"] >= -1e-6
        assert 0 <= r["group_reward_std"] <= r["reward_std"] + 1e-6  # within-group spread <= total spread
        assert 1 <= r["completion_len"] <= 8
        assert r["heldout_pass@1"] is None           # no eval prompts given
        assert r["seconds"] >= 0
        # one update per batch: the loss is computed on-policy, so ratio = 1 and nothing is clipped
        assert r["clip_frac"] == 0.0
    assert [r["seconds"] for r in hist] == sorted(r["seconds"] for r in hist)
    # before the first update the policy is the reference: KL exactly 0 up to float noise
    assert hist[0]["kl"] == pytest.approx(0.0, abs=1e-6)
    # it trained in place: the weights moved away from the shipped model's
    assert any(not torch.equal(p, q) for p, q in zip(policy.parameters(), model.parameters()))
    assert not policy.training


def test_train_grpo_passes_columns_and_judges_right_with_correct_fn(shipped, train):
    """columns reach reward_fn and correct_fn one value per completion, aligned with the prompts drawn;
    correct_fn, not the reward, decides which completions count as right; a bad column is a ValueError."""
    model, tok = shipped
    prompts, answers = train[0][:40], train[1][:40]
    calls = []

    def reward(completions, answer, idx):
        calls.append((list(answer), list(idx)))
        return [0.5] * len(completions)                       # never >= 1: all "wrong" by the reward

    def everything_right(completions, answer, idx):
        return [1.0] * len(completions)

    cfg = GRPOConfig(**TINY)
    hist = train_grpo(copy.deepcopy(model), tok, prompts, answers, reward, cfg, progress=False,
                      rollout=GroupRollout(columns={"idx": list(range(40))}), correct_fn=everything_right)
    assert len(calls) == 3
    for ans, idx in calls:                                    # 4 prompts x G = 4 completions each
        assert len(idx) == cfg.batch_size and ans == [answers[i] for i in idx]
        assert all(idx[j] == idx[j - j % cfg.group_size] for j in range(len(idx)))  # one value per group
    for r in hist:
        assert r["completion_len_wrong"] is None and r["completion_len_right"] == pytest.approx(r["completion_len"])
        assert 0 <= r["truncated_frac"] <= 1
    for bad in ({"idx": [0] * 39}, {"answer": list(range(40))}, {"idx": 5}):
        with pytest.raises(ValueError, match="columns"):
            train_grpo(copy.deepcopy(model), tok, prompts, answers, reward, cfg, progress=False,
                       rollout=GroupRollout(columns=bad))


def test_sample_marks_truncated_rows(shipped):
    """A row that ran out of max_new_tokens before writing EOS is truncated; a row that wrote EOS is not."""
    from utils.models.policy import sample
    model, tok = shipped
    prompts = load_split("test", n=8)["prompt"]
    short = sample(model, tok, prompts, k=2, max_new_tokens=1, generator=torch.Generator().manual_seed(0))
    assert short.truncated.tolist() == [ids[0] != tok.eos_token_id for ids in short.completion_ids.tolist()]
    assert short.truncated.any()
    full = sample(model, tok, prompts, k=2, max_new_tokens=8, generator=torch.Generator().manual_seed(0))
    ends = [row[n - 1] == tok.eos_token_id for row, n in zip(full.completion_ids.tolist(),
                                                            full.completion_mask.sum(1).tolist())]
    assert full.truncated.tolist() == [not e for e in ends]


def test_train_grpo_same_seed_same_history(shipped, train, tiny_run):
    model, tok = shipped
    _, hist, _ = tiny_run
    hist2 = train_grpo(copy.deepcopy(model), tok, *train, strict_reward, GRPOConfig(**TINY), progress=False)
    strip = lambda h: [{k: v for k, v in r.items() if k not in ("seconds", "train_seconds", "from_callback")}  # noqa: E731
                       for r in h]
    assert strip(hist2) == strip(hist)


def test_train_grpo_plugins_and_eval(shipped, train):
    """A zero advantage_fn makes every gradient 0, so AdamW (no weight decay) leaves the weights as
    they were; a learner's loss_fn (the loss alone) plugs in; eval runs at eval_every and at the end."""
    model, tok = shipped
    policy = copy.deepcopy(model)
    calls = []

    def zero_adv(rewards, group_size, scale_std=True, baseline="mean"):
        calls.append(group_size)
        return torch.zeros(len(rewards))

    def loss_only(*args):
        return policy_loss(*args)

    ev = load_split("test", n=8)
    hist = train_grpo(policy, tok, *train, strict_reward, GRPOConfig(steps=3, batch_size=8, group_size=4, eval_every=2,
                                                                     eval_n=8),
                      eval_prompts=ev["prompt"], eval_answers=ev["answer"], loss_fn=loss_only,
                      advantage_fn=zero_adv, progress=False)
    assert calls == [4, 4, 4]
    assert all(torch.equal(p, q) for p, q in zip(policy.parameters(), model.parameters()))
    assert [r["loss"] for r in hist] == [0.0, 0.0, 0.0]
    # held-out pass@1 at step 2 (eval_every) and step 3 (the end), on 8 prompts: a multiple of 1/8
    assert hist[0]["heldout_pass@1"] is None
    for r in hist[1:]:
        p1 = r["heldout_pass@1"]
        assert 0 <= p1 <= 1 and (p1 * 8) == pytest.approx(round(p1 * 8))


def test_train_grpo_max_seconds_stops_early(shipped, train):
    model, tok = shipped
    ev = load_split("test", n=4)
    hist = train_grpo(copy.deepcopy(model), tok, *train, strict_reward,
                      GRPOConfig(steps=50, batch_size=8, group_size=4, eval_every=0, eval_n=4, max_seconds=1e-6),
                      eval_prompts=ev["prompt"], eval_answers=ev["answer"], progress=False)
    assert len(hist) == 1 and hist[0]["heldout_pass@1"] is not None  # the last step is always evaluated


def test_train_grpo_one_ratio_per_sequence(shipped, train):
    """GSPO and LUSPO in the loop: the loss function gets level="sequence"; one written for ten arguments is
    refused before training, by name."""
    model, tok = shipped
    policy = copy.deepcopy(model)
    cfg = GRPOConfig(**TINY, loss_type="luspo", ratio_level="sequence", updates_per_batch=2)
    hist = train_grpo(policy, tok, *train, strict_reward, cfg, progress=False)
    assert len(hist) == 3 and all(math.isfinite(h["loss"]) and 0 <= h["clip_frac"] <= 1 for h in hist)
    assert any(not torch.equal(p, q) for p, q in zip(policy.parameters(), model.parameters()))

    def ten_arguments(logp, old, ref, adv, mask, eps_low, eps_high, beta, loss_type, max_len):
        return policy_loss(logp, old, ref, adv, mask, eps_low, eps_high, beta, loss_type, max_len)

    with pytest.raises(ValueError, match="ratio_level='sequence'.*ten_arguments takes none"):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, cfg, loss_fn=ten_arguments, progress=False)


def test_train_grpo_rejects_bad_inputs(shipped, train):
    model, tok = shipped
    prompts, answers = train
    with pytest.raises(ValueError, match="same length"):
        train_grpo(model, tok, prompts[:10], answers[:9], strict_reward, GRPOConfig(**TINY), progress=False)
    with pytest.raises(ValueError, match="non-empty"):
        train_grpo(model, tok, [], [], strict_reward, GRPOConfig(**TINY), progress=False)
    with pytest.raises(ValueError, match="group_size"):
        train_grpo(model, tok, prompts, answers, strict_reward, GRPOConfig(steps=1, batch_size=4, group_size=1),
                   progress=False)


def test_train_grpo_eval_rewards_score_the_same_samples(shipped, train):
    """eval_rewards adds heldout_<name> at every evaluation, from the same held-out samples: the
    strict verifier under another name must equal heldout_pass@1; a verifier paying everything gives 1."""
    model, tok = shipped
    ev = load_split("test", n=16)
    always = lambda completions, answer, **kw: [1.0] * len(completions)  # noqa: E731
    hist = train_grpo(copy.deepcopy(model), tok, *train, strict_reward,
                      GRPOConfig(steps=2, batch_size=8, group_size=4, eval_every=1, eval_n=16),
                      eval_prompts=ev["prompt"], eval_answers=ev["answer"], progress=False,
                      eval_rewards={"strict_again": strict_reward, "always": always})
    for r in hist:
        assert r["heldout_strict_again"] == r["heldout_pass@1"]
        assert r["heldout_always"] == 1.0


def test_progress_bar_redraws_at_most_about_once_a_second(shipped, train, monkeypatch):
    """Every redraw of a notebook progress bar is a kernel message; a bar redrawn each step flooded
    nbval (the kernel drops messages past ~2000 queued, and the cell's end was lost). Count the
    redraws of the bar train_grpo draws, on a text stream instead of a widget."""
    import functools
    import io
    import time

    import tqdm.std

    import utils.rl.loop

    buf = io.StringIO()
    monkeypatch.setattr(utils.rl.loop, "tqdm", functools.partial(tqdm.std.tqdm, file=buf))
    model, tok = shipped
    t0 = time.time()
    train_grpo(copy.deepcopy(model), tok, *train, strict_reward,
               GRPOConfig(steps=12, batch_size=8, group_size=4, eval_every=0), progress=True)
    seconds = time.time() - t0
    redraws = buf.getvalue().count("\r")
    assert "12/12" in buf.getvalue()                  # the bar was drawn and finished
    assert redraws <= 3 + seconds, (redraws, seconds)  # first draw, about one per second, the close


def test_high_entropy_mask_hand_values():
    """Masked entropies .1 .5 .9 .3 .7; the 60% quantile is .58, so frac 0.4 keeps .9 and .7."""
    ent = torch.tensor([[0.1, 0.5, 0.9, 0.0], [0.3, 0.7, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    assert high_entropy_mask(ent, mask, 0.4).tolist() == [[0, 0, 1, 0], [0, 1, 0, 0]]
    assert high_entropy_mask(ent, mask, 1.0) is mask
    empty = torch.zeros(2, 4, dtype=torch.long)
    assert high_entropy_mask(ent, empty, 0.2).tolist() == empty.tolist()


@pytest.mark.parametrize("field,value", [("top_entropy_frac", 0.0), ("top_entropy_frac", 1.5),
                                         ("entropy_coef", -0.1)])
def test_config_validate_remedy_fields(field, value):
    with pytest.raises(ValueError, match=f"GRPOConfig.{field}"):
        GRPOConfig(**{field: value}).validate()


def _rollout(shipped, n_prompts=4, G=4):
    from utils.models.policy import sample
    model, tok = shipped
    prompts = load_split("test", n=n_prompts)["prompt"]
    return sample(model, tok, prompts, k=G, generator=torch.Generator().manual_seed(0))


def _update(model, ro, adv, cfg, loss_fn=policy_loss):
    """One loop update with lr 0: the weights stay, the gradients are left on them to look at."""
    policy = copy.deepcopy(model)
    opt = torch.optim.SGD(policy.parameters(), lr=0.0)
    return policy, update(policy, opt, ro, adv, ro.logprobs, cfg, loss_fn)


def test_entropy_bonus_is_minus_coef_times_mean_entropy_and_has_a_gradient(shipped):
    """With zero advantages and no KL the surrogate is 0, so the loss is the bonus alone."""
    from utils.models.policy import masked_mean
    model, _ = shipped
    ro = _rollout(shipped)
    adv = torch.zeros(ro.completion_ids.shape[0])
    policy, (loss, _, ent) = _update(model, ro, adv, GRPOConfig(entropy_coef=0.5))
    assert loss.item() == pytest.approx(-0.5 * masked_mean(ent, ro.completion_mask).item(), rel=1e-5)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.parameters())
    _, (loss0, _, _) = _update(model, ro, adv, GRPOConfig())
    assert loss0.item() == 0.0


def test_top_entropy_frac_shrinks_the_mask_the_loss_and_its_stats_see(shipped):
    """The loss sees only the top fifth of tokens by entropy, and the clip fraction is measured on
    those same tokens, whoever's loss function ran."""
    model, _ = shipped
    ro = _rollout(shipped)
    seen = []

    def spy(logp, old_logp, ref_logp, adv, mask, *args):
        seen.append(mask.clone())
        return policy_loss(logp, old_logp, ref_logp, adv, mask, *args)

    adv = torch.ones(ro.completion_ids.shape[0])
    old = ro.logprobs.clone()
    old[ro.completion_mask.bool()] -= 1.0       # every ratio e > 1.2 with A > 0: every token the loss uses clips
    ro2 = dataclasses.replace(ro, logprobs=old)
    for frac in (1.0, 0.2):
        _, (_, stats, _) = _update(model, ro2, adv, GRPOConfig(top_entropy_frac=frac), loss_fn=spy)
        assert stats["clip_frac"] == 1.0          # on the tokens the loss used (all of them clip)
    total = int(ro.completion_mask.sum())
    assert int(seen[0].sum()) == total
    assert 0.2 * total - 1 <= int(seen[1].sum()) <= 0.5 * total   # about a fifth (ties can keep a few more)


def test_train_grpo_eval_sets_and_distinct_answers(shipped, train):
    model, tok = shipped
    ev, ood = load_split("test", n=8), load_split("ood", n=8)
    hist = train_grpo(copy.deepcopy(model), tok, *train, strict_reward,
                      GRPOConfig(steps=2, batch_size=16, group_size=4, eval_every=1, eval_n=8),
                      eval_prompts=ev["prompt"], eval_answers=ev["answer"],
                      eval_sets={"ood": (ood["prompt"], ood["answer"])}, progress=False)
    for r in hist:
        assert 0 <= r["ood_pass@1"] <= 1 and (r["ood_pass@1"] * 8) == pytest.approx(round(r["ood_pass@1"] * 8))
        assert 1 <= r["distinct_answers"] <= 4
    with pytest.raises(ValueError, match=r"eval_sets\['ood'\]"):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, GRPOConfig(steps=1, batch_size=8, group_size=4),
                   eval_sets={"ood": (ood["prompt"], [])}, progress=False)
    with pytest.raises(ValueError, match="other than 'heldout'"):
        train_grpo(copy.deepcopy(model), tok, *train, strict_reward, GRPOConfig(steps=1, batch_size=8, group_size=4),
                   eval_sets={"heldout": (ood["prompt"], ood["answer"])}, progress=False)


def test_step_record_by_hand():
    """Two groups of 4: rewards [1, 0, 1, 1 | 0, 0, 0, 0]; completions of lengths 2, 3 (mask) and texts
    with 2 then 1 distinct answers per group."""
    from types import SimpleNamespace

    from utils.rl.loop import step_record
    rewards = torch.tensor([1.0, 0, 1, 1, 0, 0, 0, 0])
    mask = torch.tensor([[1, 1, 0]] * 4 + [[1, 1, 1]] * 4)
    ro = SimpleNamespace(texts=["7", "8", "7", " 7", "1", "1", "1", "1"], completion_mask=mask, truncated=None)
    ent = torch.full((8, 3), 0.5)
    rec = step_record(3, rewards, ro, torch.tensor(0.25), {"kl": 0.01, "clip_frac": 0.1}, ent,
                      GRPOConfig(batch_size=8, group_size=4))
    assert rec["step"] == 3 and rec["reward_mean"] == 0.375
    assert rec["reward_std"] == pytest.approx(math.sqrt(0.375 * 0.625))         # population std of 3 ones in 8
    assert rec["zero_spread_frac"] == 0.5                                       # the second group is all 0
    assert rec["group_reward_std"] == pytest.approx(math.sqrt(0.75 * 0.25) / 2)  # (0.433 + 0) / 2
    assert rec["distinct_answers"] == 1.5                                       # {"7", "8"} and {"1"}
    assert rec["entropy"] == 0.5 and rec["completion_len"] == 2.5 and rec["loss"] == 0.25
    assert rec["kl"] == 0.01 and rec["clip_frac"] == 0.1
    no_kl = step_record(3, rewards, ro, torch.tensor(0.25), {"kl": 0.0, "clip_frac": 0.0}, ent,
                        GRPOConfig(batch_size=8, group_size=4, track_kl=False))
    assert no_kl["kl"] is None                                                  # not measured, not 0
    # right: reward >= 1 -> lengths 2, 2, 2 (group 1's ones); wrong: 2 then 3, 3, 3, 3 -> 14 / 5 = 2.8
    assert rec["completion_len_right"] == 2.0 and rec["completion_len_wrong"] == pytest.approx(2.8)
    assert rec["truncated_frac"] is None                                        # the rollout did not say
    ro.truncated = torch.tensor([False] * 5 + [True] * 3)
    right = torch.tensor([True] * 8)                                            # another judge: all right
    rec = step_record(3, rewards, ro, torch.tensor(0.25), {"kl": 0.0, "clip_frac": 0.0}, ent,
                      GRPOConfig(batch_size=8, group_size=4), right)
    assert rec["truncated_frac"] == 0.375 and rec["completion_len_right"] == 2.5  # all 8: 20 / 8
    assert rec["completion_len_wrong"] is None                                  # no wrong completion: None, not 0


def test_reference_logprobs_only_when_needed(shipped):
    from utils.rl.loop import reference_logprobs
    model, _ = shipped
    ro = _rollout(shipped)
    assert reference_logprobs(model, ro, GRPOConfig(track_kl=False)) is ro.logprobs   # KL term and record off
    ref = reference_logprobs(model, ro, GRPOConfig())                             # the sampler is the reference:
    assert_near(ref, ro.logprobs, "the reference's log-probs")                    # the same log-probs, to rounding


def test_mask_truncated_zeroes_the_loss_rows_of_truncated_completions(shipped):
    """DAPO's overlong filtering: with mask_truncated the truncated rows leave the loss's mask (the other rows
    keep theirs); without it every completion token is in."""
    model, _ = shipped
    ro = _rollout(shipped)
    truncated = torch.zeros(ro.completion_ids.shape[0], dtype=torch.bool)
    truncated[::3] = True                                     # rows 0, 3, 6, ... were cut at the cap
    ro = dataclasses.replace(ro, truncated=truncated)
    seen = []

    def spy(logp, old_logp, ref_logp, adv, mask, *args):
        seen.append(mask.clone())
        return policy_loss(logp, old_logp, ref_logp, adv, mask, *args)

    adv = torch.ones(ro.completion_ids.shape[0])
    for on in (False, True):
        _update(model, ro, adv, GRPOConfig(mask_truncated=on), loss_fn=spy)
    assert torch.equal(seen[0], ro.completion_mask)
    assert seen[1][truncated].sum() == 0
    assert torch.equal(seen[1][~truncated], ro.completion_mask[~truncated])


def test_zero_spread_by_hand():
    from utils.rl.grpo import zero_spread
    assert zero_spread(torch.tensor([1.0, 1.0, 0.0, 1.0]), 2).tolist() == [True, False]
    assert zero_spread(torch.tensor([0.5, 0.5, 0.5, 0.0, 0.0, 0.0]), 3).tolist() == [True, True]
    assert zero_spread(torch.tensor([0.0, 0.1, 0.0]), 3).tolist() == [False]


# ---------------------------------------------------------------- per-step credit (process supervision)
def test_process_advantages_by_hand():
    """One group of two completions (G=2), steps ending at tokens 1 and 3 of each, verdicts [1, 1] and [1, 0]:
    mean 0.75, population std sqrt(3)/4 = 0.4330; a right step normalises to 0.25/0.4330 = 0.5774, the wrong one
    to -0.75/0.4330 = -1.7321; a token gets the sum over the steps that end at it or after it."""
    r = torch.tensor([[0.0, 1, 0, 1], [0, 1, 0, 0]])
    m = torch.tensor([[0, 1, 0, 1], [0, 1, 0, 1]]).bool()
    a = process_advantages(r, m, 2, eps=0.0)
    right, wrong = 0.25 / (3 ** 0.5 / 4), -0.75 / (3 ** 0.5 / 4)
    want = torch.tensor([[2 * right] * 2 + [right] * 2, [right + wrong] * 2 + [wrong] * 2])
    assert torch.allclose(a, want, atol=1e-6)
    # without the std division: the centred verdicts, 0.25 and -0.75
    assert torch.allclose(process_advantages(r, m, 2, scale_std=False),
                          torch.tensor([[0.5, 0.5, 0.25, 0.25], [-0.5, -0.5, -0.75, -0.75]]))
    # groups are normalised apart: a second group whose verdicts all agree gets 0 everywhere
    r2, m2 = torch.cat([r, torch.ones(2, 4)]), torch.cat([m, m])
    a2 = process_advantages(r2, m2, 2)
    assert torch.allclose(a2[:2], want, atol=1e-3) and (a2[2:] == 0).all()
    # tokens after a completion's last step get 0; a token between steps gets the later steps' sum
    r3 = torch.tensor([[1.0, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    m3 = torch.tensor([[1, 0, 0, 0, 0], [1, 0, 0, 0, 0]]).bool()
    a3 = process_advantages(r3, m3, 2, eps=0.0)
    assert torch.allclose(a3, torch.tensor([[1.0, 0, 0, 0, 0], [-1.0, 0, 0, 0, 0]]))


def test_process_advantages_bad_input_is_named():
    r, m = torch.zeros(4, 3), torch.ones(4, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="step_mask"):
        process_advantages(r, torch.ones(4, 2, dtype=torch.bool), 2)
    with pytest.raises(ValueError, match="step_rewards"):
        process_advantages(torch.tensor([[math.nan, 0, 0]] * 4), m, 2)
    with pytest.raises(ValueError, match="group_size"):
        process_advantages(r, m, 3)


def test_per_token_advantages_equal_the_same_advantage_on_every_token():
    """adv [N, T] holding each completion's advantage on every token gives the loss, the gradient and the stats
    of adv [N]; a token's own advantage moves only that token's loss."""
    torch.manual_seed(0)
    logp0, old = torch.randn(3, 5) * 0.3 - 1, torch.randn(3, 5) * 0.3 - 1
    adv, mask = torch.tensor([1.0, -0.5, 0.2]), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    for loss_type in ("grpo", "dapo", "dr_grpo"):
        grads = []
        for a in (adv, adv[:, None].expand(3, 5).clone()):
            logp = logp0.clone().requires_grad_(True)
            loss = policy_loss(logp, old, old, a, mask, 0.2, 0.2, 0.0, loss_type, 5)
            loss.backward()
            grads.append((loss.detach(), logp.grad, loss_stats(logp.detach(), old, old, a, mask, 0.2, 0.2)))
        assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1]), loss_type
        assert grads[0][2] == grads[1][2]
    a = torch.zeros(3, 5)
    a[1, 2] = 1.0
    logp = logp0.clone().requires_grad_(True)
    policy_loss(logp, old, old, a, mask).backward()
    assert (logp.grad != 0).sum() == 1 and logp.grad[1, 2] < 0
    with pytest.raises(ValueError, match=r"one per token \[N, T\]"):
        policy_loss(logp0, old, old, torch.zeros(3, 4), mask)
