"""utils.rl.trl_trainer: TRL's own GRPO loss (trl 1.16, GRPOTrainer._compute_loss) against ours
(utils.rl.grpo.policy_loss), value and gradient, on one small batch.

How TRL's loss is driven: a real GRPOTrainer is built around the shipped model from to_trl_config(cfg), in
train mode. Its per-token log-prob method (_get_per_token_logps_and_entropies, the model's forward) is
replaced by one returning a float64 tensor `logp` that the test holds, so TRL's loss and ours see the very
same log-probs, and both gradients are taken w.r.t. that tensor. The inputs dict is the one TRL's
_generate_and_score_completions hands to the loss:
  old_per_token_logps  absent on-policy: TRL then uses logp.detach(), what it does with num_iterations = 1
                       (ours: old_logp = logp.detach()); given off-policy
  num_items_in_batch   the generation batch's completion tokens; with one process and steps_per_generation =
                       gradient_accumulation_steps = 1, dapo's divisor num_items / processes * accumulation /
                       steps_per_generation is this batch's token count, ours
  current_gradient_accumulation_steps  set by Trainer's loop to the micro-batches per step (1); grpo and
                       dr_grpo divide by it
  dr_grpo              TRL divides by N * max_completion_length = N * cfg.max_new_tokens, our loop's max_len
                       (6 here, longer than the batch's 5 columns, so a wrong constant shows)
The batch: 2 groups of 4 completions of lengths 1 to 5 (right padded), advantages of both signs, and
off-policy ratios far enough from 1 that both clip bounds bind. The tests read TRL's internals as of trl 1.16.0
(requirements-lock.txt): a new TRL that renames them fails here, which is the moment to re-check the mapping.
About 5 s on a 2-core CPU, after the one-off ~9 s import of TRL's trainer (shared with test_trl_grpo.py).
"""
import copy
import math

import pytest
import torch
import trl
from tolerance import assert_near

from utils.models.policy import masked_mean
from utils.rl.grpo import (
    LOSS_TYPES,
    GRPOConfig,
    aggregate,
    group_advantages,
    high_entropy_mask,
    kl_k3,
    log_ratio,
    per_token_loss,
    policy_loss,
)
from utils.rl.trl_trainer import to_trl_config

G, T, MAX_NEW = 4, 5, 6
LENGTHS = [5, 3, 1, 4, 2, 5, 4, 3]  # completion lengths, EOS included
REWARDS = [1.0, 0.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.0]
BETA = 0.04
SEQ_SHIFT = [0.4, -0.4, 0.5, 0.05, -0.3, 0.02, -0.1, 0.3]  # log pi - log pi_old per sequence, off-policy
# (loss_type, ratio_level): every loss at both levels, but luspo, which is sequence-level only, and vespo, which
# makes its own sequence weight from token ratios (token level only)
COMBOS = [(t, "token") for t in LOSS_TYPES if t != "luspo"] + [(t, "sequence") for t in LOSS_TYPES if t != "vespo"]


def make_batch():
    """One batch, float64: mask [8, 5] (long, as TRL's), logp/old/ref [8, 5] (0 on padding, as TRL's
    log-probs), entropy [8, 5], adv [8] (ours, from REWARDS)."""
    g = torch.Generator().manual_seed(0)
    N = len(LENGTHS)
    mask = (torch.arange(T)[None, :] < torch.tensor(LENGTHS)[:, None]).long()
    m = mask.double()
    logp = -(0.05 + 2 * torch.rand(N, T, generator=g, dtype=torch.float64)) * m
    old = logp + 0.4 * torch.randn(N, T, generator=g, dtype=torch.float64) * m
    ref = logp + 0.5 * torch.randn(N, T, generator=g, dtype=torch.float64) * m
    entropy = (0.1 + 2 * torch.rand(N, T, generator=g, dtype=torch.float64)) * m
    adv = group_advantages(REWARDS, G).double()
    # off-policy by a whole sequence at a time, so that one ratio per sequence (GSPO) meets both clip bounds
    shift = torch.tensor(SEQ_SHIFT, dtype=torch.float64)[:, None]
    old_seq = logp - (shift + 0.2 * torch.randn(N, T, generator=g, dtype=torch.float64)) * m
    return dict(mask=mask, logp=logp, old=old, ref=ref, entropy=entropy, adv=adv, old_seq=old_seq)


def zero_reward(completions, **kw):
    """The trainer needs a reward function; the loss tests never call it."""
    return [0.0] * len(completions)


def make_trainer(shipped, cfg, out, **options):
    """A GRPOTrainer on a copy of the shipped model with to_trl_config(cfg) (options override its fields),
    in the state Trainer's loop puts it in before calling compute_loss."""
    from datasets import Dataset

    model, tok = shipped
    args = to_trl_config(cfg, str(out))
    for name, value in options.items():
        setattr(args, name, value)
    ds = Dataset.from_dict({"prompt": ["12+3=", "4*5="], "answer": ["15", "20"]})
    trainer = trl.GRPOTrainer(model=copy.deepcopy(model), reward_funcs=zero_reward, args=args,
                              train_dataset=ds, processing_class=tok)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    assert (trainer.accelerator.num_processes, args.gradient_accumulation_steps, args.steps_per_generation) == (1, 1, 1)
    return trainer


def trl_loss(trainer, b, logp, old=None, entropy=None, sampling=None):
    """TRL's scalar loss on batch b, with `logp` [N, T] standing for the model's per-token log-probs (sampling: vLLM's
    log-probs of the completions, sampling_per_token_logps, which off-policy sequence masking reads)."""
    ent = torch.zeros_like(logp) if entropy is None else entropy
    trainer._get_per_token_logps_and_entropies = lambda *a, **k: (logp, ent, None)
    N = logp.shape[0]
    inputs = {"prompt_ids": torch.full((N, 3), 4), "prompt_mask": torch.ones(N, 3, dtype=torch.long),
              "completion_ids": torch.full((N, T), 5) * b["mask"], "completion_mask": b["mask"],
              "advantages": b["adv"], "num_items_in_batch": b["mask"].sum(), "ref_per_token_logps": b["ref"]}
    if old is not None:
        inputs["old_per_token_logps"] = old
    if sampling is not None:
        inputs["sampling_per_token_logps"] = sampling
    return trainer._compute_loss(trainer.model, inputs)


def value_and_grad(fn, logp0, *extra):
    """fn(logp, *extra) and its gradient w.r.t. logp (and each extra tensor), on fresh leaves."""
    leaves = [t.clone().requires_grad_(True) for t in (logp0, *extra)]
    out = fn(*leaves)
    return (out.detach(), *torch.autograd.grad(out, leaves))


def assert_same(a, b, what):
    assert torch.allclose(a, b, rtol=1e-10, atol=1e-12), f"{what}: TRL {a} vs ours {b}"


def test_batch_exercises_both_clip_bounds():
    b, eps_low, eps_high = make_batch(), 0.1, 0.28
    on = b["mask"].bool()
    ratio, a = torch.exp(b["logp"] - b["old"]), b["adv"][:, None].expand(-1, T)
    assert ((ratio < 1 - eps_low) & (a < 0) & on).any() and ((ratio > 1 + eps_high) & (a > 0) & on).any()
    assert ((ratio > 1 + eps_high) & (a < 0) & on).any()  # the unclipped side of a negative advantage
    assert (b["adv"] > 0).any() and (b["adv"] < 0).any()
    s = torch.exp(log_ratio(b["logp"], b["old_seq"], b["mask"], "sequence"))[:, 0]  # [N], GSPO's s_i
    a = b["adv"]
    assert ((s < 1 - eps_low) & (a < 0)).any() and ((s > 1 + eps_high) & (a > 0)).any() and ((s > 1 + eps_high)
                                                                                             & (a < 0)).any()


def test_to_trl_config_sets_every_loss_option(tmp_path):
    default = trl.GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    # TRL's defaults that would change the objective: the dapo loss, and (from trl 1.10 on) a KL weighted by
    # pi/pi_old; 1.8 and 1.9, which requirements.txt still allows, default to the plain KL
    from packaging.version import Version

    assert default.loss_type == "dapo"
    assert default.use_bias_correction_kl is (Version(trl.__version__) >= Version("1.10"))
    cfg = GRPOConfig(batch_size=8, group_size=4, beta=BETA, eps_low=0.1, eps_high=0.28, loss_type="grpo",
                     top_entropy_frac=0.5, entropy_coef=0.01)
    t = to_trl_config(cfg, str(tmp_path))
    assert t.use_bias_correction_kl is False
    assert t.loss_type == "grpo" and t.beta == BETA and (t.epsilon, t.epsilon_high) == (0.1, 0.28)
    assert t.delta is None and t.importance_sampling_level == "token"
    assert t.mask_truncated_completions is False and t.off_policy_mask_threshold is None
    assert t.top_entropy_quantile == 0.5 and t.entropy_coef == 0.01 and t.use_adaptive_entropy is False
    assert t.use_vllm is False and t.sync_ref_model is False
    assert t.scale_rewards == "group" and t.multi_objective_aggregation == "sum_then_normalize"
    assert (t.top_p, t.top_k, t.min_p, t.repetition_penalty) == (1.0, 0, None, 1.0)
    assert (t.gradient_accumulation_steps, t.steps_per_generation, t.generation_batch_size) == (1, 1, 8)


@pytest.mark.parametrize("eps", [(0.2, 0.2), (0.1, 0.28)], ids=["sym", "asym"])
@pytest.mark.parametrize("beta", [0.0, BETA])
@pytest.mark.parametrize("loss_type,level", COMBOS)
def test_trl_loss_matches_ours(shipped, tmp_path, loss_type, level, beta, eps):
    """TRL's loss and its gradient w.r.t. the log-probs equal policy_loss's, on- and off-policy, with a ratio per
    token or one per sequence (GSPO; TRL's importance_sampling_level) and LUSPO's length-scaled sum."""
    b = make_batch()
    cfg = GRPOConfig(batch_size=8, group_size=G, max_new_tokens=MAX_NEW, beta=beta, eps_low=eps[0], eps_high=eps[1],
                     loss_type=loss_type, ratio_level=level)
    from utils.rl.trl_trainer import LUSPO_KL_MASKED, _older

    if loss_type == "luspo" and beta > 0 and _older(trl.__version__, LUSPO_KL_MASKED):
        # trl 1.8 (the lowest allowed): (per_token_loss * length).mean() over every position once the KL makes the
        # loss per token, padding included; not ours, so to_trl_config refuses it by name
        with pytest.raises(ValueError, match="loss_type='luspo' with beta"):
            to_trl_config(cfg, str(tmp_path))
        return
    trainer = make_trainer(shipped, cfg, tmp_path)
    assert trainer.importance_sampling_level == level and trainer.loss_type == loss_type
    old = b["old"] if level == "token" else b["old_seq"]

    _agree(trainer, b, cfg, old)


def _agree(trainer, b, cfg, old):
    """TRL's loss and gradient on batch b equal ours, on-policy and off-policy (old: the sampling log-probs)."""
    def ours(logp, old):
        return policy_loss(logp, old, b["ref"], b["adv"], b["mask"], cfg.eps_low, cfg.eps_high, cfg.beta,
                           cfg.loss_type, cfg.max_new_tokens, level=cfg.ratio_level, **cfg.objective_params())

    for name, theirs, mine in [
        ("on-policy", lambda lp: trl_loss(trainer, b, lp), lambda lp: ours(lp, lp.detach())),
        ("off-policy", lambda lp: trl_loss(trainer, b, lp, old=old), lambda lp: ours(lp, old)),
    ]:
        v_trl, g_trl = value_and_grad(theirs, b["logp"])
        v_ours, g_ours = value_and_grad(mine, b["logp"])
        assert_same(v_trl, v_ours, f"{name} loss")
        assert_same(g_trl, g_ours, f"{name} gradient")
        assert g_ours.abs().sum() > 0 and (g_ours[b["mask"] == 0] == 0).all()


# the loss zoo away from TRL's defaults, where each parameter binds on this batch (checked below)
ZOO = [("cispo", "token", dict(cispo_cap=1.1)), ("cispo", "sequence", dict(cispo_cap=1.1)),
       ("sapo", "token", dict(sapo_tau_pos=2.0, sapo_tau_neg=0.5)),
       ("sapo", "sequence", dict(sapo_tau_pos=0.5, sapo_tau_neg=3.0)),
       ("vespo", "token", dict(vespo_k_pos=1.5, vespo_lambda_pos=2.5, vespo_k_neg=4.0, vespo_lambda_neg=1.0))]


@pytest.mark.parametrize("beta", [0.0, BETA])
@pytest.mark.parametrize("loss_type,level,params", ZOO, ids=[f"{t}-{lv}" for t, lv, _ in ZOO])
def test_trl_loss_zoo_parameters_match_ours(shipped, tmp_path, loss_type, level, params, beta):
    """CISPO's cap (sent as TRL's epsilon_high), SAPO's two temperatures and VESPO's k and lambda reach TRL's loss as
    they reach ours: value and gradient agree away from the defaults too."""
    b = make_batch()
    cfg = GRPOConfig(batch_size=8, group_size=G, max_new_tokens=MAX_NEW, beta=beta, loss_type=loss_type,
                     ratio_level=level, **params)
    trainer = make_trainer(shipped, cfg, tmp_path)
    if loss_type == "cispo":
        assert trainer.epsilon_high == params["cispo_cap"]
        old = b["old"] if level == "token" else b["old_seq"]
        r = torch.exp(log_ratio(b["logp"], old, b["mask"], level)).expand(-1, T) * b["mask"]
        assert ((r > params["cispo_cap"]) & (b["adv"][:, None] > 0)).any()  # the cap binds somewhere
    _agree(trainer, b, cfg, b["old"] if level == "token" else b["old_seq"])


# TRL's two-sided clip where it applies (the clipped losses), at both ratio levels
DELTA = [("grpo", "token"), ("dapo", "token"), ("dr_grpo", "token"), ("grpo", "sequence"), ("luspo", "sequence")]


@pytest.mark.parametrize("beta", [0.0, BETA])
@pytest.mark.parametrize("loss_type,level", DELTA)
def test_trl_two_sided_clip_matches_ours(shipped, tmp_path, loss_type, level, beta):
    """GRPOConfig.delta reaches TRL's `delta` through the knob map, and TRL's loss with it equals ours, value and
    gradient, on a batch where the cap binds (A < 0 and ratio > delta) and changes the loss."""
    b = make_batch()
    cfg = GRPOConfig(batch_size=8, group_size=G, max_new_tokens=MAX_NEW, beta=beta, loss_type=loss_type,
                     ratio_level=level, delta=1.3)
    from utils.rl.trl_trainer import LUSPO_KL_MASKED, _older

    if loss_type == "luspo" and beta > 0 and _older(trl.__version__, LUSPO_KL_MASKED):  # refused: see above
        with pytest.raises(ValueError, match="loss_type='luspo' with beta"):
            to_trl_config(cfg, str(tmp_path))
        return
    trainer = make_trainer(shipped, cfg, tmp_path)
    assert trainer.args.delta == 1.3
    old = b["old"] if level == "token" else b["old_seq"]
    r = torch.exp(log_ratio(b["logp"], old, b["mask"], level)).expand(-1, T) * b["mask"]
    assert ((r > 1.3) & (b["adv"][:, None] < 0)).any()                              # the cap binds somewhere
    without = policy_loss(b["logp"], old, b["ref"], b["adv"], b["mask"], cfg.eps_low, cfg.eps_high, beta, loss_type,
                          MAX_NEW, level=level)
    with_delta = policy_loss(b["logp"], old, b["ref"], b["adv"], b["mask"], cfg.eps_low, cfg.eps_high, beta,
                             loss_type, MAX_NEW, level=level, delta=1.3)
    assert abs(without - with_delta) > 1e-3, (without, with_delta)                  # and it changes the loss
    _agree(trainer, b, cfg, old)


@pytest.mark.parametrize("threshold", [0.05, 0.1])
@pytest.mark.parametrize("arm", ["uncorrected", "recompute"])
def test_off_policy_sequence_masking_matches_trls(shipped, tmp_path, threshold, arm):
    """DeepSeek-V3.2's off-policy sequence masking: TRL's get_off_policy_mask keeps a sequence where A >= 0 or its
    mean log pi_sampler - log pi_policy is at most the threshold; ours marks the others (off_policy_sequences) and
    Batch.advantages zeroes their negative advantages. With one update a batch the policy at batch time is the one
    TRL scores, so the two losses agree, value and gradient: uncorrected (the sampler's log-probs are the old ones)
    and under TRL's no-correction arm (old log-probs recomputed by the trainer, here logp itself; the sampler's only
    in sampling_per_token_logps). The batch's sampler is b["old"]."""
    from types import SimpleNamespace

    from utils.rl.rollout import Batch, off_policy_sequences

    b = make_batch()
    sampler, adv = b["old"], b["adv"]
    far = off_policy_sequences(b["logp"] - sampler, b["mask"], threshold)                     # [N] bool
    keep = trl.GRPOTrainer.get_off_policy_mask(adv[:, None], b["logp"], sampler, b["mask"], threshold)[:, 0]
    assert torch.equal(keep.bool(), (adv >= 0) | ~far)
    assert (~keep.bool()).any() and (far & (adv >= 0)).any() and (~far & (adv < 0)).any()  # each case occurs
    cfg = GRPOConfig(batch_size=8, group_size=G, max_new_tokens=MAX_NEW, loss_type="grpo")
    trainer = make_trainer(shipped, cfg, tmp_path, off_policy_mask_threshold=threshold)
    batch = Batch(SimpleNamespace(completion_ids=b["mask"]), torch.zeros(len(adv)), None, {}, off_policy=far)
    masked = batch.advantages(adv, cfg)                                                     # [N]
    assert torch.equal(masked == 0, ~keep.bool())
    assert batch.counts["opsm_dropped_frac"] == pytest.approx((~keep.bool()).float().mean().item())

    def ours(lp, old):
        return policy_loss(lp, old, b["ref"], masked, b["mask"], cfg.eps_low, cfg.eps_high, 0.0, "grpo", MAX_NEW)

    if arm == "uncorrected":
        theirs, mine = (lambda lp: trl_loss(trainer, b, lp, old=sampler)), (lambda lp: ours(lp, sampler))
    else:
        theirs, mine = (lambda lp: trl_loss(trainer, b, lp, sampling=sampler)), (lambda lp: ours(lp, lp.detach()))
    v_trl, g_trl = value_and_grad(theirs, b["logp"])
    v_ours, g_ours = value_and_grad(mine, b["logp"])
    assert_same(v_trl, v_ours, f"{arm} loss with OPSM")
    assert_same(g_trl, g_ours, f"{arm} gradient with OPSM")
    assert (g_ours[~keep.bool()] == 0).all() and g_ours[keep.bool()].abs().sum() > 0


def test_bias_corrected_kl_is_a_different_objective(shipped, tmp_path):
    """TRL's default use_bias_correction_kl=True weights the k3 KL by ratio = pi/pi_old: off-policy the loss
    differs from ours; on-policy the value agrees (ratio = 1) but the gradient does not (d ratio = ratio d logp).
    This is what the comparison above would catch if to_trl_config left the flag at its default."""
    b = make_batch()
    cfg = GRPOConfig(batch_size=8, group_size=G, max_new_tokens=MAX_NEW, beta=BETA, eps_low=0.1, eps_high=0.28,
                     loss_type="dapo")
    trainer = make_trainer(shipped, cfg, tmp_path, use_bias_correction_kl=True)

    def ours(logp, old):
        return policy_loss(logp, old, b["ref"], b["adv"], b["mask"], 0.1, 0.28, BETA, "dapo")

    def corrected(logp, old):  # what TRL computes with the flag on: the KL term times the ratio
        ratio = torch.exp(logp - old)
        pt = per_token_loss(logp, old, b["ref"], b["adv"], 0.1, 0.28, 0.0) + BETA * kl_k3(logp, b["ref"]) * ratio
        return aggregate(pt, b["mask"], "dapo")

    v_trl, g_trl = value_and_grad(lambda lp: trl_loss(trainer, b, lp, old=b["old"]), b["logp"])
    v_corr, g_corr = value_and_grad(lambda lp: corrected(lp, b["old"]), b["logp"])
    v_ours, g_ours = value_and_grad(lambda lp: ours(lp, b["old"]), b["logp"])
    assert_same(v_trl, v_corr, "bias-corrected loss")
    assert_same(g_trl, g_corr, "bias-corrected gradient")
    with pytest.raises(AssertionError):  # the check test_trl_loss_matches_ours makes fails
        assert_same(v_trl, v_ours, "off-policy loss")
    assert abs(v_trl - v_ours) > 1e-4, (v_trl, v_ours)  # -0.13985 vs ours -0.13960 on this batch
    assert (g_trl - g_ours).abs().max() > 1e-4  # 5.5e-4, the largest gradient entry being 0.072

    v_trl, g_trl = value_and_grad(lambda lp: trl_loss(trainer, b, lp), b["logp"])
    v_ours, g_ours = value_and_grad(lambda lp: ours(lp, lp.detach()), b["logp"])
    assert_same(v_trl, v_ours, "on-policy loss")
    m = b["mask"].double()
    extra = BETA * kl_k3(b["logp"], b["ref"]) * m / m.sum()  # d/dlogp of beta * kl * ratio beyond ours
    assert_same(g_trl, g_ours + extra, "on-policy gradient")
    with pytest.raises(AssertionError):
        assert_same(g_trl, g_ours, "on-policy gradient")
    assert extra.abs().max() > 1e-4  # 4.4e-4, the largest gradient entry being 0.057


def test_entropy_bonus_matches_ours(shipped, tmp_path):
    """entropy_coef: TRL subtracts coef * mean token entropy, as our loop's update() does; value and gradient
    w.r.t. log-probs and entropies agree (every token kept: top_entropy_frac = 1)."""
    b = make_batch()
    cfg = GRPOConfig(batch_size=8, group_size=G, max_new_tokens=MAX_NEW, beta=BETA, loss_type="grpo", entropy_coef=0.01)
    trainer = make_trainer(shipped, cfg, tmp_path)

    def ours(logp, ent):  # utils.rl.loop.update
        loss = policy_loss(logp, b["old"], b["ref"], b["adv"], b["mask"], 0.2, 0.2, BETA, "grpo", MAX_NEW)
        return loss - cfg.entropy_coef * masked_mean(ent, b["mask"])

    v_trl, g_trl, ge_trl = value_and_grad(lambda lp, e: trl_loss(trainer, b, lp, b["old"], e), b["logp"], b["entropy"])
    v_ours, g_ours, ge_ours = value_and_grad(ours, b["logp"], b["entropy"])
    assert_same(v_trl, v_ours, "loss")
    assert_same(g_trl, g_ours, "gradient w.r.t. log-probs")
    assert_same(ge_trl, ge_ours, "gradient w.r.t. entropies")


@pytest.mark.parametrize("loss_type", [t for t in LOSS_TYPES if t != "luspo"])
def test_top_entropy_tokens_are_normalised_differently(shipped, tmp_path, loss_type):
    """top_entropy_frac < 1 (arXiv 2506.01939) maps onto TRL's top_entropy_quantile, and both keep the same
    tokens, but TRL zeroes the others' policy loss and still divides by every completion token, and adds the KL
    on every token; ours averages loss and KL over the kept tokens only. A difference no option removes."""
    b = make_batch()
    cfg = GRPOConfig(batch_size=8, group_size=G, max_new_tokens=MAX_NEW, beta=BETA, loss_type=loss_type,
                     top_entropy_frac=0.5)
    trainer = make_trainer(shipped, cfg, tmp_path)
    kept = high_entropy_mask(b["entropy"], b["mask"], 0.5)  # ours (utils.rl.loop.update)
    assert 0 < kept.sum() < b["mask"].sum()
    args = (b["old"], b["ref"], b["adv"])
    v_trl = trl_loss(trainer, b, b["logp"], b["old"], b["entropy"])
    v_ours = policy_loss(b["logp"], *args, kept, 0.2, 0.2, BETA, loss_type, MAX_NEW)
    trl_form = aggregate(per_token_loss(b["logp"], *args, 0.2, 0.2, 0.0, "token", b["mask"], loss_type) * kept
                         + BETA * kl_k3(b["logp"], b["ref"]), b["mask"], loss_type, MAX_NEW)
    assert_same(v_trl, trl_form, "TRL's top-entropy loss")
    with pytest.raises(AssertionError):  # 13 of 27 tokens kept; TRL vs ours: grpo 0.1381 vs 0.1548,
        assert_same(v_trl, v_ours, "loss")  # dapo -0.1248 vs -0.2631, dr_grpo -0.0702 vs -0.0713
    if loss_type == "dapo":  # beta = 0: TRL's loss is ours scaled by the share of kept tokens
        trainer0 = make_trainer(shipped, GRPOConfig(batch_size=8, group_size=G, max_new_tokens=MAX_NEW,
                                                    loss_type="dapo", top_entropy_frac=0.5), tmp_path)
        v0_trl = trl_loss(trainer0, b, b["logp"], b["old"], b["entropy"])
        v0_ours = policy_loss(b["logp"], *args, kept, 0.2, 0.2, 0.0, "dapo")
        assert_same(v0_trl, v0_ours * kept.sum() / b["mask"].sum(), "dapo, beta 0")


@pytest.mark.parametrize("scale_std", [True, False])
def test_trl_advantages_use_the_unbiased_std(shipped, tmp_path, scale_std):
    """TRL's own advantages (from _generate_and_score_completions, rewards fixed by the reward function): the
    group mean baseline as ours, but the std divides by G - 1 where ours divides by G. Without scaling they
    agree; with it, TRL's = ours * sqrt((G - 1) / G) up to the 1e-4 (0.866 for G = 4). The loss tests above
    therefore hand both losses the same advantages."""
    model, tok = shipped
    cfg = GRPOConfig(batch_size=8, group_size=G, max_new_tokens=3, scale_std=scale_std)
    trainer = make_trainer(shipped, cfg, tmp_path)
    trainer.reward_funcs = [lambda completions, **kw: list(REWARDS)]
    trainer.reward_func_names = ["fixed"]
    rows = [{"prompt": "12+3=", "answer": "15"}] * G + [{"prompt": "4*5=", "answer": "20"}] * G
    torch.manual_seed(0)
    theirs = trainer._generate_and_score_completions(rows)["advantages"].double()
    ours = group_advantages(REWARDS, G, scale_std=scale_std).double()
    if not scale_std:
        assert_same(theirs, ours, "advantages")
        return
    r = torch.tensor(REWARDS, dtype=torch.float64).view(-1, G)
    unbiased = ((r - r.mean(1, keepdim=True)) / (r.std(1, unbiased=True, keepdim=True) + 1e-4)).view(-1)
    assert_near(theirs, unbiased, "TRL's advantages against the unbiased std's")   # TRL's float32 against float64
    assert torch.allclose(theirs, ours * math.sqrt((G - 1) / G), rtol=1e-3)
    assert (theirs - ours).abs().max() > 0.1


def test_trl_scores_left_padded_prompts_at_other_positions(shipped, tmp_path):
    """TRL's per-token log-probs of the shipped model (its own _get_per_token_logps_and_entropies, not replaced
    here) equal ours (completion_logprobs) where the prompt has no left padding, but not where it has: TRL calls
    the model without position ids, so GPT-2 numbers the positions 0, 1, ... from the first pad token, where
    generate() and our loop number them from the first real token. TRL's are exactly the model's log-probs with
    those default positions."""
    from utils.models.policy import completion_logprobs, encode_prompts

    model, tok = shipped
    trainer = make_trainer(shipped, GRPOConfig(batch_size=4, group_size=G, max_new_tokens=MAX_NEW), tmp_path)
    p_ids, p_mask = encode_prompts(tok, ["12+3=", "4*5=", "83+69=", "7-1="])  # 6-char prompt: pads the others
    c = tok(["15", "20", "152", "6"], return_tensors="pt", padding=True, padding_side="right")
    c_ids = torch.cat([c.input_ids, torch.full((4, 1), tok.pad_token_id)], 1)
    c_mask = torch.cat([c.attention_mask, torch.zeros(4, 1, dtype=torch.long)], 1)
    ends = c_mask.sum(1)
    c_ids[torch.arange(4), ends], c_mask[torch.arange(4), ends] = tok.eos_token_id, 1  # EOS after each answer
    ids, am = torch.cat([p_ids, c_ids], 1), torch.cat([p_mask, c_mask], 1)
    with torch.no_grad():
        theirs = trainer._get_per_token_logps_and_entropies(trainer.model, ids, am, c_ids.shape[1])[0] * c_mask
        ours, _ = completion_logprobs(model, p_ids, p_mask, c_ids, c_mask, 1.0)
        default_pos = model(input_ids=ids, attention_mask=am).logits[:, p_ids.shape[1] - 1:-1].log_softmax(-1)
        default_pos = default_pos.gather(-1, c_ids[..., None]).squeeze(-1) * c_mask
    padded = (p_mask == 0).any(1)
    assert padded.tolist() == [True, True, False, True]
    # TRL's forward, ours and the model's plain one: other code, the same numbers to rounding
    assert_near(theirs[~padded], ours[~padded], "TRL's log-probs of the unpadded rows against ours")
    assert_near(theirs, default_pos, "TRL's log-probs against the model's with default positions")
    assert (theirs[padded] - ours[padded]).abs().max() > 0.5  # nats per token
    # what train_with_trl does about it: positions from the mask, for the run only
    from utils.rl.trl_trainer import positions_from_mask
    undo = positions_from_mask(trainer.model)
    with torch.no_grad():
        fixed = trainer._get_per_token_logps_and_entropies(trainer.model, ids, am, c_ids.shape[1])[0] * c_mask
    undo()
    assert_near(fixed, ours, "TRL's log-probs with positions from the mask against ours")
    with torch.no_grad():  # undone: the default positions again
        again = trainer._get_per_token_logps_and_entropies(trainer.model, ids, am, c_ids.shape[1])[0] * c_mask
    assert torch.allclose(again, theirs, atol=1e-6)
