"""The loss zoo (utils.rl.grpo: CISPO, SAPO, VESPO beside PPO's clip) by hand: one token at ratio 2, values and
gradients worked out from the papers' formulas; every objective's on-policy gradient is the plain policy
gradient, -A per token; the monitoring numbers; the errors for a bad parameter; and TRL's two-sided clip (delta) on
the clipped objective. TRL's own loss against ours is tests/test_trl_loss.py."""
import math

import pytest
import torch

from utils.rl.grpo import LOSS_TYPES, OBJECTIVES, GRPOConfig, aggregate, loss_stats, per_token_loss, policy_loss


def one_token(adv, ratio=2.0, p=0.5):
    """logp [1, 1] = log p as a leaf, old_logp = log(p / ratio), ref = logp, adv [1], mask [1, 1]."""
    logp = torch.tensor([[math.log(p)]], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[math.log(p / ratio)]], dtype=torch.float64)
    return logp, old, logp.detach().clone(), torch.tensor([float(adv)], dtype=torch.float64), torch.ones(1, 1)


def value_and_grad(loss_type, adv, **params):
    logp, old, ref, a, mask = one_token(adv)
    loss = per_token_loss(logp, old, ref, a, 0.2, 0.2, 0.0, "token", mask, loss_type, **params).sum()
    (g,) = torch.autograd.grad(loss, logp)
    return loss.item(), g.item()


def sig(x):
    return 1 / (1 + math.exp(-x))


LOG_HALF = math.log(0.5)


@pytest.mark.parametrize("adv", [1.0, -1.0])
def test_each_objective_at_ratio_two_by_hand(adv):
    r = 2.0
    # PPO's clip (eps 0.2): -min(r A, clip(r) A); A > 0 takes the clipped 1.2 A (no gradient), A < 0 the raw r A
    v, g = value_and_grad("grpo", adv)
    assert v == pytest.approx(-1.2 if adv > 0 else 2.0) and g == pytest.approx(0.0 if adv > 0 else 2.0)
    # CISPO: -sg(min(r, cap)) A log p; the gradient keeps flowing, weighted by the capped ratio
    for cap, w in ((5.0, 2.0), (1.5, 1.5)):
        v, g = value_and_grad("cispo", adv, cispo_cap=cap)
        assert v == pytest.approx(-w * adv * LOG_HALF) and g == pytest.approx(-w * adv)
    # SAPO: -sigmoid(tau (r - 1)) 4 / tau A; d/dlogp = -A 4 s (1 - s) r, tau 1.0 for A > 0, 1.05 for A <= 0
    tau = 1.0 if adv > 0 else 1.05
    s = sig(tau * (r - 1))
    v, g = value_and_grad("sapo", adv)
    assert v == pytest.approx(-s * 4 / tau * adv) and g == pytest.approx(-adv * 4 * s * (1 - s) * r)
    # VESPO: w = r (one token), phi = e^lam w^k e^(-lam w): k 2, lam 3 for A >= 0; k 3, lam 2 for A < 0
    k, lam = (2.0, 3.0) if adv >= 0 else (3.0, 2.0)
    phi = math.exp(lam) * r ** k * math.exp(-lam * r)
    v, g = value_and_grad("vespo", adv)
    assert v == pytest.approx(-phi * adv * LOG_HALF) and g == pytest.approx(-phi * adv)


def test_vespo_weight_uses_the_whole_sequence_ratio():
    """Two tokens at ratios 2 and 1.5: VESPO's w is their product 3 (not GSPO's geometric mean), for both tokens."""
    logp = torch.tensor([[math.log(0.5), math.log(0.3)]], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[math.log(0.25), math.log(0.2)]], dtype=torch.float64)
    loss = per_token_loss(logp, old, logp.detach(), torch.tensor([1.0], dtype=torch.float64), mask=torch.ones(1, 2),
                          loss_type="vespo").sum()
    (g,) = torch.autograd.grad(loss, logp)
    phi = math.exp(3.0) * 3.0 ** 2 * math.exp(-3.0 * 3.0)
    assert g[0].tolist() == pytest.approx([-phi, -phi])
    with pytest.raises(ValueError, match="'vespo' needs the mask"):
        per_token_loss(logp, old, logp.detach(), torch.tensor([1.0], dtype=torch.float64), loss_type="vespo")


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_on_policy_every_objective_is_the_policy_gradient(loss_type):
    """At ratio 1 (old = logp) the clip does not bind, CISPO's weight is 1, SAPO's gate has slope 1 and VESPO's
    phi(1) = 1: each token's gradient is -A, so the objectives differ only off-policy."""
    g = torch.Generator().manual_seed(0)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]])
    logp = (-(0.1 + torch.rand(4, 3, generator=g, dtype=torch.float64)) * mask).requires_grad_(True)
    adv = torch.tensor([1.0, -0.5, 0.25, -2.0], dtype=torch.float64)
    level = "sequence" if loss_type == "luspo" else "token"
    pt = per_token_loss(logp, logp.detach(), logp.detach(), adv, level=level, mask=mask, loss_type=loss_type)
    (grad,) = torch.autograd.grad((pt * mask).sum(), logp)
    assert torch.allclose(grad, (-adv[:, None] * mask).double()), (loss_type, grad)


def test_aggregation_of_the_zoo_follows_trl():
    """bnpo, cispo and vespo average as dapo (over the batch's tokens); sapo as grpo (per sequence, then mean)."""
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    for t in ("bnpo", "cispo", "vespo"):
        assert aggregate(x, mask, t).item() == pytest.approx(10 / 4)  # (1 + 2 + 3 + 4) / 4 tokens
    assert aggregate(x, mask, "sapo").item() == pytest.approx((2.0 + 4.0) / 2)  # means 2 and 4, then their mean
    assert set(OBJECTIVES) == set(LOSS_TYPES)


def test_loss_stats_clip_fraction_of_the_zoo():
    logp, old, ref, a, mask = one_token(1.0)
    kw = dict(logp=logp.detach(), old_logp=old, ref_logp=ref, adv=a, mask=mask, eps_low=0.2, eps_high=0.2)
    assert loss_stats(**kw)["clip_frac"] == 1.0                                   # ratio 2 > 1.2 with A > 0
    assert loss_stats(**kw, loss_type="cispo", cispo_cap=1.5)["clip_frac"] == 1.0  # capped
    assert loss_stats(**kw, loss_type="cispo", cispo_cap=5.0)["clip_frac"] == 0.0
    assert loss_stats(**kw, loss_type="sapo")["clip_frac"] == 0.0                 # no hard clip
    kw["adv"] = -a
    assert loss_stats(**kw, loss_type="cispo", cispo_cap=1.5)["clip_frac"] == 0.0  # CISPO caps where A > 0 only


def test_bad_parameters_are_refused_by_name():
    logp, old, ref, a, mask = one_token(1.0)
    with pytest.raises(ValueError, match=r"loss_type 'grpo' takes no \['cispo_cap'\]"):
        per_token_loss(logp, old, ref, a, mask=mask, loss_type="grpo", cispo_cap=2.0)
    with pytest.raises(ValueError, match=r"loss_type 'sapo' takes no \['cispo_cap'\].*sapo_tau_neg"):
        policy_loss(logp, old, ref, a, mask, loss_type="sapo", cispo_cap=2.0)
    with pytest.raises(ValueError, match="cispo_cap=0.0 must be a finite number > 0"):
        per_token_loss(logp, old, ref, a, mask=mask, loss_type="cispo", cispo_cap=0.0)
    with pytest.raises(ValueError, match="loss_type must be one of"):
        per_token_loss(logp, old, ref, a, mask=mask, loss_type="ppo")
    with pytest.raises(ValueError, match="sapo_tau_neg"):
        GRPOConfig(loss_type="sapo", sapo_tau_neg=-1.0)
    with pytest.raises(ValueError, match="cispo_cap"):
        GRPOConfig(cispo_cap=float("nan"))
    with pytest.raises(ValueError, match="'vespo' makes its own sequence-level weight"):
        GRPOConfig(loss_type="vespo", ratio_level="sequence")


def test_the_loop_trains_with_each_objective_and_refuses_a_loss_fn_without_its_parameters(shipped):
    """Two steps of train_grpo with each objective that has parameters; a ten-argument loss_fn (Lab 01's exercise)
    fits the clipped objectives but is refused by name under cispo, sapo and vespo."""
    import copy

    from utils.rl.loop import train_grpo
    from utils.verifiers.arithmetic import strict_reward

    model, tok = shipped
    prompts, answers = ["12+3=", "4*5=", "7+8=", "9*2="], ["15", "20", "15", "18"]
    for loss_type in ("cispo", "sapo", "vespo"):
        cfg = GRPOConfig(steps=2, batch_size=8, group_size=4, lr=1e-3, eval_every=0, track_kl=False,
                         updates_per_batch=2, loss_type=loss_type, cispo_cap=1.05)
        hist = train_grpo(copy.deepcopy(model), tok, prompts, answers, strict_reward, cfg, progress=False)
        assert len(hist) == 2 and all(math.isfinite(r["loss"]) for r in hist), (loss_type, hist)

        def ten_arguments(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len):
            return policy_loss(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, "grpo", max_len)

        with pytest.raises(ValueError, match=f"cfg.loss_type='{loss_type}' passes loss_fn the keyword"):
            train_grpo(copy.deepcopy(model), tok, prompts, answers, strict_reward, cfg, loss_fn=ten_arguments,
                       progress=False)


# ---------------------------------------------------------------- TRL's two-sided clip (delta), by hand

def clip_value_and_grad(adv, ratio, delta=None, eps=0.2):
    """The clipped objective's loss and d loss / d logp for one token at `ratio`, with or without delta."""
    logp, old, ref, a, mask = one_token(adv, ratio)
    loss = per_token_loss(logp, old, ref, a, eps, eps, 0.0, "token", mask, "grpo", delta=delta).sum()
    (g,) = torch.autograd.grad(loss, logp)
    return loss.item(), g.item()


@pytest.mark.parametrize("adv, ratio, without, with_delta", [
    # A < 0, ratio 6 > delta 4: the raw term -r A = 6 (gradient r = 6) is capped at -delta A = 4, with no gradient
    (-1.0, 6.0, (6.0, 6.0), (4.0, 0.0)),
    (-0.5, 6.0, (3.0, 3.0), (2.0, 0.0)),
    # A < 0, ratio 3 < delta: untouched (loss 3, gradient 3)
    (-1.0, 3.0, (3.0, 3.0), (3.0, 3.0)),
    # A < 0, ratio 0.5 below the band: the clip's 0.8 binds, delta plays no part
    (-1.0, 0.5, (0.8, 0.0), (0.8, 0.0)),
    # A > 0, ratio 6: the clip already caps at 1 + eps = 1.2, so delta changes nothing
    (1.0, 6.0, (-1.2, 0.0), (-1.2, 0.0)),
    (1.0, 1.1, (-1.1, -1.1), (-1.1, -1.1)),
])
def test_delta_caps_a_negative_advantage_far_above_its_old_probability(adv, ratio, without, with_delta):
    """TRL's `delta` (INTELLECT-2, arXiv 2505.07291): -min(min(r, delta) A, clip(r, 1 - eps, 1 + eps) A)."""
    assert clip_value_and_grad(adv, ratio) == pytest.approx(without)
    assert clip_value_and_grad(adv, ratio, delta=4.0) == pytest.approx(with_delta)


def test_delta_reaches_the_loss_by_name_and_leaves_a_ten_argument_loss_as_it_was():
    """policy_loss passes delta on to per_token_loss; the config adds it to objective_params only when set, so Lab 01's
    ten-argument loss_fn still fits a config without it."""
    logp, old, ref, a, mask = one_token(-1.0, 6.0)
    assert policy_loss(logp, old, ref, a, mask).item() == pytest.approx(6.0)
    assert policy_loss(logp, old, ref, a, mask, delta=4.0).item() == pytest.approx(4.0)
    assert "delta" not in GRPOConfig().objective_params()
    assert GRPOConfig(delta=4.0).objective_params() == {"delta": 4.0}
    assert GRPOConfig(delta=4.0, loss_type="dapo", ratio_level="sequence").objective_params() == {"delta": 4.0}


def test_delta_frac_counts_the_capped_tokens_and_clip_frac_does_not():
    """Three tokens: A < 0 at ratio 6 (delta binds), A < 0 at ratio 3 (nothing binds), A > 0 at ratio 6 (the clip
    binds). clip_frac is the clip's alone, as TRL's clip_ratio/region_mean: 1/3 with or without delta."""
    logp = torch.log(torch.tensor([[0.6, 0.3, 0.6]], dtype=torch.float64))
    old = torch.log(torch.tensor([[0.1, 0.1, 0.1]], dtype=torch.float64))
    mask, adv = torch.ones(1, 3), torch.tensor([[-1.0, -1.0, 1.0]], dtype=torch.float64)   # one advantage a token
    base = loss_stats(logp, old, logp, adv, mask, 0.2, 0.2)
    st = loss_stats(logp, old, logp, adv, mask, 0.2, 0.2, delta=4.0)
    assert "delta_frac" not in base
    assert st["clip_frac"] == base["clip_frac"] == pytest.approx(1 / 3)
    assert st["delta_frac"] == pytest.approx(1 / 3)


def test_bad_delta_is_refused_by_name():
    logp, old, ref, a, mask = one_token(-1.0, 6.0)
    with pytest.raises(ValueError, match=r"delta=1.1 must be > 1 \+ eps_high = 1.2"):
        per_token_loss(logp, old, ref, a, mask=mask, delta=1.1)
    with pytest.raises(ValueError, match="delta='x' must be a finite number"):
        per_token_loss(logp, old, ref, a, mask=mask, delta="x")
    with pytest.raises(ValueError, match="delta caps the clipped objective's ratio.*'cispo'"):
        per_token_loss(logp, old, ref, a, mask=mask, loss_type="cispo", delta=4.0)
    with pytest.raises(ValueError, match=r"GRPOConfig\.delta=1.2 is invalid: must be None \(off\) or a finite number "
                                         r"> 1 \+ eps_high = 1.2"):
        GRPOConfig(delta=1.2)
    with pytest.raises(ValueError, match=r"GRPOConfig\.delta=3.0 is invalid: .*> 1 \+ eps_high = 3.5"):
        GRPOConfig(delta=3.0, eps_high=2.5)
    for bad in (float("inf"), float("nan"), True, "4"):
        with pytest.raises(ValueError, match=r"GRPOConfig\.delta="):
            GRPOConfig(delta=bad)
    with pytest.raises(ValueError, match=r"GRPOConfig\.delta=4.0 is invalid: caps the clipped objective's ratio; "
                                         r"loss_type='sapo'"):
        GRPOConfig(delta=4.0, loss_type="sapo")


def test_the_loop_trains_with_delta_and_refuses_a_loss_fn_without_it(shipped):
    """Two steps with delta (its share of capped tokens in the record); a ten-argument loss_fn is refused by name,
    pointing at cfg.delta."""
    import copy

    from utils.rl.loop import train_grpo
    from utils.verifiers.arithmetic import strict_reward

    model, tok = shipped
    prompts, answers = ["12+3=", "4*5=", "7+8=", "9*2="], ["15", "20", "15", "18"]
    cfg = GRPOConfig(steps=2, batch_size=8, group_size=4, lr=1e-3, eval_every=0, track_kl=False, updates_per_batch=2,
                     delta=1.5)
    hist = train_grpo(copy.deepcopy(model), tok, prompts, answers, strict_reward, cfg, progress=False)
    assert len(hist) == 2 and all(0.0 <= r["delta_frac"] <= 1.0 and math.isfinite(r["loss"]) for r in hist)

    def ten_arguments(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len):
        return policy_loss(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, beta, loss_type, max_len)

    with pytest.raises(ValueError, match=r"cfg.delta=1.5 passes loss_fn the keyword `delta`.*or set delta=None"):
        train_grpo(copy.deepcopy(model), tok, prompts, answers, strict_reward, cfg, loss_fn=ten_arguments,
                   progress=False)
