"""GRPO's maths (DeepSeekMath, arXiv 2402.03300), with the DAPO (arXiv 2503.14476), Dr. GRPO
(arXiv 2503.20783), GSPO (one importance ratio per sequence, arXiv 2507.18071) and LUSPO (GSPO with each
sequence's loss scaled by its length, arXiv 2602.05261) variants as options, the other objectives TRL 1.16
ships under loss_type (CISPO, SAPO, VESPO: the loss zoo, OBJECTIVES below), and the one config of an
experiment. The training loop that uses them is loop.py. The maths is the first screen of this file.
"""
import math
import numbers
from dataclasses import dataclass

import torch

from utils import checks

LOSS_TYPES = ("grpo", "dapo", "dr_grpo", "luspo", "bnpo", "cispo", "sapo", "vespo")  # TRL 1.16's names
# What each loss_type optimises per token (per_token_loss) and how it averages (aggregate), as TRL does:
#   clip   PPO's clipped surrogate (arXiv 1707.06347): grpo, dapo, dr_grpo, luspo, bnpo
#   cispo  the ratio itself clipped and detached, times A log pi (MiniMax-M1, arXiv 2506.13585)
#   sapo   a sigmoid gate instead of the clip (Soft Adaptive Policy Optimization, arXiv 2511.20347)
#   vespo  a gamma-shaped weight of the sequence's whole ratio, times A log pi (VESPO, as TRL 1.16 has it)
OBJECTIVES = {"grpo": "clip", "dapo": "clip", "dr_grpo": "clip", "luspo": "clip", "bnpo": "clip",
              "cispo": "cispo", "sapo": "sapo", "vespo": "vespo"}
AGGREGATES = {"bnpo": "dapo", "cispo": "dapo", "vespo": "dapo", "sapo": "grpo"}  # the rest: their own name
# each objective's own parameters (GRPOConfig fields of the same names; TRL's defaults)
OBJECTIVE_PARAMS = {"cispo": {"cispo_cap": 5.0}, "sapo": {"sapo_tau_pos": 1.0, "sapo_tau_neg": 1.05},
                    "vespo": {"vespo_k_pos": 2.0, "vespo_lambda_pos": 3.0, "vespo_k_neg": 3.0,
                              "vespo_lambda_neg": 2.0}}
BASELINES = ("mean", "median")
RATIO_LEVELS = ("token", "sequence")


def _what(x):
    return f"shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else checks._short(x)


def _group_size(where, name, G, rewards):
    """G as an int >= 1 that divides the number of rewards."""
    G = checks.number(where, name, G, lo=1, integer=True)
    if rewards.numel() % G:
        raise ValueError(f"{where}: {rewards.numel()} rewards do not split into groups of {name}={G}")
    return G


def _logps(where, dims=2, **named):
    """Log-prob tensors of one shape ([N, T] unless dims is None), no NaN or +inf, by name."""
    out = []
    for name, x in named.items():
        if not isinstance(x, torch.Tensor) or (dims is not None and x.dim() != dims):
            raise ValueError(f"{where}: {name} must be a {'[N, T] ' if dims else ''}tensor of log-probs, got "
                             f"{_what(x)}")
        if torch.isnan(x).any() or (x == float("inf")).any():
            raise ValueError(f"{where}: {name} holds NaN or +inf")
        out.append(x)
    checks.same_shape(where, **named)
    return out


def _mask(where, mask, like):
    """mask as a tensor of like's shape."""
    if not isinstance(mask, torch.Tensor) or mask.shape != like.shape:
        raise ValueError(f"{where}: mask must be a tensor of shape {tuple(like.shape)}, got {_what(mask)}")
    return mask


def _masked(x, m):
    """x * m, and 0 wherever m is 0 whatever x holds there: a log-prob of -inf or a NaN on padding never reaches a
    sum (inf * 0 is NaN), and its gradient there is 0."""
    return torch.where(m != 0, x * m, torch.zeros((), dtype=x.dtype, device=x.device))


def zero_spread(rewards, G):
    """[n] bool: True for each group of G consecutive rewards [n * G] that all score alike (its advantages are
    all 0, so it teaches nothing). E.g. [1, 1, 0, 1] with G=2 -> [True, False]."""
    if not isinstance(rewards, torch.Tensor) or rewards.dim() != 1:
        raise ValueError(f"zero_spread: rewards must be a [n * G] tensor, got {_what(rewards)}")
    G = _group_size("zero_spread", "G", G, rewards)
    rg = rewards.view(-1, G)                                                    # [n, G]
    return rg.max(1).values == rg.min(1).values


def group_advantages(rewards, group_size, scale_std=True, baseline="mean", eps=1e-4):
    """Group-relative advantages. rewards [N] with N = n_groups * group_size, groups contiguous.

    A_i = (r_i - baseline(group)) / (std(group) + eps)   if scale_std   (GRPO)
    A_i =  r_i - baseline(group)                         otherwise      (Dr. GRPO)
    baseline is the group mean or median; std is the population std (divide by G).
    Returns [N]. A group whose rewards are all equal gets advantage 0.
    """
    r = checks.tensor("group_advantages", "rewards", rewards, dims=1).float()   # float32, as always
    group_size = _group_size("group_advantages", "group_size", group_size, r)
    eps = checks.number("group_advantages", "eps", eps, lo=0)
    r = r.view(-1, group_size)                                              # [n_groups, G]
    if baseline == "mean":
        base = r.mean(1, keepdim=True)
    elif baseline == "median":
        base = r.median(1, keepdim=True).values if group_size % 2 else r.quantile(0.5, 1, keepdim=True)
    else:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")
    adv = r - base
    if scale_std:
        adv = adv / (r.std(1, unbiased=False, keepdim=True) + eps)
    return adv.view(-1)


def process_advantages(step_rewards, step_mask, group_size, scale_std=True, eps=1e-4):
    """Per-token advantages from per-step rewards: process supervision in GRPO (DeepSeekMath, arXiv 2402.03300,
    section 4.1.3). step_rewards [N, T]: a step's reward at the token where the step ends (0 elsewhere);
    step_mask [N, T] bool: True at those tokens. Each step reward is normalised over all the steps of its group
    (the G completions of one prompt), r~ = (r - mean) / (std + eps) (no division if not scale_std), and token t
    gets the sum of r~ over the steps that end at t or after it:

        A_t = sum of r~_j over the steps j of its completion with end(j) >= t

    so a token is credited with how the steps it leads into turned out, and a wrong step costs only the tokens
    up to it. Tokens after a completion's last step get 0. Returns [N, T] float32. E.g. one group of two
    completions, G=2, steps ending at tokens 1 and 3 of each, rewards [1, 1] and [1, 0]: mean 0.75, std 0.433,
    r~ = 0.577 (a right step), -1.732 (the wrong one); the first completion's tokens 0-1 get 1.155, tokens
    2-3 0.577; the second's 0-1 get -1.155, 2-3 -1.732."""
    r = checks.tensor("process_advantages", "step_rewards", step_rewards, dims=2).float()
    if not isinstance(step_mask, torch.Tensor) or step_mask.shape != r.shape:
        raise ValueError(f"process_advantages: step_mask must be a bool tensor of shape {tuple(r.shape)} (True where "
                         f"a step ends), got {_what(step_mask)}")
    G = _group_size("process_advantages", "group_size", group_size, r[:, 0])
    eps = checks.number("process_advantages", "eps", eps, lo=0)
    N, T = r.shape
    m = step_mask.bool().view(-1, G * T).float()                            # [n_groups, G * T]
    rg = r.view(-1, G * T) * m
    n = m.sum(1, keepdim=True).clamp(min=1)                                 # steps in each group
    mean = rg.sum(1, keepdim=True) / n
    norm = (rg - mean) * m
    if scale_std:
        std = ((norm ** 2).sum(1, keepdim=True) / n).sqrt()                 # population std over the group's steps
        norm = norm / (std + eps)
    norm = norm.view(N, T)
    return norm.flip(1).cumsum(1).flip(1)              # [N, T]: the sum over the steps ending at t or after


def kl_k3(logp, ref_logp):
    """k3 estimator of KL(pi || pi_ref) per token (Schulman 2020): exp(d) - d - 1, d = ref - logp.
    Always >= 0; unbiased for the KL when tokens are sampled from pi. Shapes [N, T] -> [N, T]."""
    logp, ref_logp = _logps("kl_k3", None, logp=logp, ref_logp=ref_logp)
    d = ref_logp - logp
    return torch.exp(d) - d - 1


def log_ratio(logp, old_logp, mask=None, level="token"):
    """The log importance ratio log(pi / pi_old) of the sampled tokens. level "token": [N, T], one per token
    (PPO, GRPO); "sequence": [N, 1], the mean over each sequence's tokens where mask [N, T] is 1, so that
    exp of it is the geometric mean of the token ratios, GSPO's s_i (arXiv 2507.18071)."""
    logp, old_logp = _logps("log_ratio", logp=logp, old_logp=old_logp)
    d = logp - old_logp                                                 # [N, T]
    if level == "token":
        return d
    if level != "sequence":
        raise ValueError(f"log_ratio: level must be one of {RATIO_LEVELS}, got {checks._short(level)}")
    if mask is None:
        raise ValueError("level 'sequence' needs the mask: a sequence's ratio averages over its own tokens")
    m = _mask("log_ratio", mask, d).to(d.dtype)
    return (_masked(d, m).sum(1) / m.sum(1).clamp(min=1))[:, None]      # [N, 1]


def per_token_loss(logp, old_logp, ref_logp, adv, eps_low=0.2, eps_high=0.2, beta=0.0, level="token", mask=None,
                   loss_type="grpo", delta=None, **params):
    """GRPO's per-token loss, before any averaging (PPO's clipped surrogate, arXiv 1707.06347, plus a KL
    penalty). logp, old_logp [N, T]: log-probs of the sampled tokens under the current and the sampling
    policy; ref_logp [N, T] under the frozen reference (ignored if beta == 0); adv [N], one per completion, or
    [N, T], one per token (process_advantages). Returns [N, T]:

        l_t = -min(ratio_t * A, clip(ratio_t, 1 - eps_low, 1 + eps_high) * A) + beta * KL_k3,t
    with ratio_t = exp(logp_t - old_logp_t), or with level "sequence" one ratio for all of a sequence's
    tokens, exp(log_ratio(..., mask, "sequence")) (GSPO). Padding is not masked here: aggregate() does that; with
    mask given, what padding holds (a log-prob of -inf, NaN) is read as 0, so it reaches no value and no gradient.
    delta (None: off): the two-sided clip of TRL's `delta` (INTELLECT-2, arXiv 2505.07291; dual-clip PPO, arXiv
    1912.09729): the unclipped term's ratio is capped, min(ratio_t, delta) * A, as TRL's _compute_loss does. It
    binds only where A < 0 and ratio_t > delta (where A > 0 the clip already caps the ratio at 1 + eps_high), so
    there a token's loss stops at -delta * A, with no gradient, instead of growing with its ratio. A number
    > 1 + eps_high; the clipped objective's only (ValueError under cispo, sapo, vespo).

    loss_type picks the objective in place of the clipped surrogate (OBJECTIVES; params are its
    OBJECTIVE_PARAMS, by name; sg = no gradient through it):
      cispo  -sg(min(ratio, cispo_cap)) * A * logp: every token keeps a gradient, its weight capped
      sapo   -sigmoid(tau * (ratio - 1)) * 4 / tau * A, tau = sapo_tau_pos where A > 0, else sapo_tau_neg:
             the gradient is A's at ratio 1 and fades smoothly away from it instead of stopping at a clip
      vespo  -sg(phi(w)) * A * logp, w = exp(sum of the sequence's log-ratios), phi(w) = e^lam w^k e^(-lam w)
             (1 at w = 1), k, lam = vespo_k_pos, vespo_lambda_pos where A >= 0, else the _neg pair
    """
    logp, old_logp, ref_logp = _logps("per_token_loss", logp=logp, old_logp=old_logp, ref_logp=ref_logp)
    if mask is not None:   # padding's log-probs (-inf, NaN) become 0 before any of it: no NaN, in values or gradients
        m = _mask("per_token_loss", mask, logp) != 0
        logp, old_logp, ref_logp = (torch.where(m, x, 0.0) for x in (logp, old_logp, ref_logp))
    a = _advantages("per_token_loss", adv, logp)                       # [N, 1] or [N, T]
    eps_low, eps_high = (checks.number("per_token_loss", n, v, lo=0) for n, v in (("eps_low", eps_low),
                                                                                  ("eps_high", eps_high)))
    beta = checks.number("per_token_loss", "beta", beta, lo=0)
    objective, params = _objective("per_token_loss", loss_type, params)
    delta = _delta("per_token_loss", delta, eps_high, loss_type)
    kl = kl_k3(logp, ref_logp) if beta > 0 else torch.zeros_like(logp)
    if objective == "vespo":
        return -_vespo_weight(logp, old_logp, a, mask, params) * a * logp + beta * kl
    ratio = torch.exp(log_ratio(logp, old_logp, mask, level))          # [N, T], or [N, 1] per sequence
    if objective == "cispo":
        surr = torch.clamp(ratio, max=params["cispo_cap"]).detach() * a * logp
    elif objective == "sapo":
        tau = torch.where(a > 0, params["sapo_tau_pos"], params["sapo_tau_neg"])
        surr = torch.sigmoid(tau * (ratio - 1)) * 4 / tau * a
    else:
        capped = ratio if delta is None else torch.clamp(ratio, max=delta)     # TRL's two-sided clip (delta)
        surr = torch.min(capped * a, torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * a)
    return -surr + beta * kl                                            # [N, T]


def cispo_token_loss(logp, old_logp, adv, cap=5.0):
    """CISPO's per-token loss (MiniMax-M1, arXiv 2506.13585), Lab 10's exercise: logp, old_logp [N, T], adv [N] ->
    [N, T] = -sg(min(ratio, cap)) * A * logp, ratio = exp(logp - old_logp). per_token_loss with loss_type "cispo"
    and no KL."""
    return per_token_loss(logp, old_logp, torch.zeros_like(logp) if isinstance(logp, torch.Tensor) else logp, adv,
                          loss_type="cispo", cispo_cap=cap)


def _objective(where, loss_type, params):
    """(objective, its parameters with defaults filled in) for loss_type; a ValueError names an unknown
    loss_type, a parameter the objective does not take, or a value out of range (all must be > 0)."""
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"{where}: loss_type must be one of {LOSS_TYPES}, got {checks._short(loss_type)}")
    objective = OBJECTIVES[loss_type]
    allowed = OBJECTIVE_PARAMS.get(objective, {})
    extra = sorted(set(params) - set(allowed))
    if extra:
        raise ValueError(f"{where}: loss_type {loss_type!r} takes no {extra}" + (
            f" (its parameters: {sorted(allowed)})" if allowed else ""))
    return objective, {n: checks.number(where, n, params.get(n, d), lo=0, lo_open=True) for n, d in allowed.items()}


def _delta(where, delta, eps_high, loss_type):
    """delta as a float (or None), checked: a finite number > 1 + eps_high, and only for the clipped objective."""
    if delta is None:
        return None
    if OBJECTIVES.get(loss_type) != "clip":
        raise ValueError(f"{where}: delta caps the clipped objective's ratio (TRL's two-sided clip); loss_type "
                         f"{loss_type!r} has no clip to cap: set delta=None")
    delta = checks.number(where, "delta", delta, lo=1, lo_open=True)
    if delta <= 1 + eps_high:
        raise ValueError(f"{where}: delta={delta:g} must be > 1 + eps_high = {1 + eps_high:g} (TRL recommends "
                         f"> 1 + eps): at or below it the cap would bind inside the clip's band")
    return delta


def _vespo_weight(logp, old_logp, a, mask, params):
    """VESPO's weight phi(w), no gradient: [N, 1] for adv [N, 1] (or [N, T] for one advantage per token).
    w is the sequence's whole ratio (the product of its token ratios, not GSPO's geometric mean), in log space
    and clamped as TRL 1.16 does (each log-ratio to [-20, 20], log w to [log 1e-8, 20])."""
    if mask is None:
        raise ValueError("per_token_loss: loss_type 'vespo' needs the mask: its weight sums each sequence's "
                         "log-ratios over its own tokens")
    m = _mask("per_token_loss", mask, logp).to(logp.dtype)
    with torch.no_grad():
        seq = (torch.clamp(logp - old_logp, -20.0, 20.0) * m).sum(-1, keepdim=True)    # [N, 1]
        log_w = torch.clamp(seq, math.log(1e-8), 20.0)
        nonneg = a >= 0
        k = torch.where(nonneg, params["vespo_k_pos"], params["vespo_k_neg"])
        lam = torch.where(nonneg, params["vespo_lambda_pos"], params["vespo_lambda_neg"]).clamp(min=1e-4)
        return torch.exp(lam + k * log_w - lam * torch.exp(log_w)).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)


def _advantages(where, adv, logp):
    """adv [N] (one per completion) as [N, 1], or [N, T] (one per token) as it is; checked against logp [N, T]."""
    ok = isinstance(adv, torch.Tensor) and adv.dim() in (1, 2) and adv.shape[0] == logp.shape[0] and \
        (adv.dim() == 1 or adv.shape == logp.shape)
    if not ok or not torch.isfinite(adv).all():
        raise ValueError(f"{where}: adv must be a tensor of finite advantages, one per completion [N] = "
                         f"[{logp.shape[0]}] or one per token [N, T] = {list(logp.shape)}, got {_what(adv)}")
    return adv[:, None] if adv.dim() == 1 else adv


def aggregate(per_token, mask, loss_type="grpo", max_len=None):
    """Average per-token losses [N, T] over the tokens where mask [N, T] is 1 into one scalar:
      grpo     mean over each sequence's tokens, then mean over sequences  (DeepSeekMath)
      dapo     sum over all tokens / number of tokens in the batch          (token-level, arXiv 2503.14476)
      dr_grpo  sum over all tokens / (N * max_len), max_len a constant       (arXiv 2503.20783)
      luspo    sum over each sequence's tokens, then mean over sequences    (arXiv 2602.05261)
    and, as TRL averages them: bnpo, cispo and vespo as dapo (with one process and no gradient accumulation
    TRL's bnpo, local tokens, equals its dapo, the generation batch's), sapo as grpo.
    grpo gives each token of a long sequence less weight than a short one's: a length bias. With one ratio
    per sequence (GSPO) grpo weighs every sequence alike whatever its length; luspo weighs it by its length."""
    if not isinstance(per_token, torch.Tensor) or per_token.dim() != 2:
        raise ValueError(f"aggregate: per_token must be a [N, T] tensor, got {_what(per_token)}")
    mask = _mask("aggregate", mask, per_token)
    m = mask.to(per_token.dtype)
    if not isinstance(loss_type, str) or loss_type not in LOSS_TYPES:
        raise ValueError(f"aggregate: loss_type must be one of {LOSS_TYPES}, got {checks._short(loss_type)}")
    loss_type = AGGREGATES.get(loss_type, loss_type)
    pm = _masked(per_token, m)                                          # padding's values never count
    if loss_type == "grpo":
        return (pm.sum(1) / m.sum(1).clamp(min=1)).mean()
    if loss_type == "dapo":
        return pm.sum() / m.sum().clamp(min=1)
    if loss_type == "dr_grpo":
        if not max_len:
            raise ValueError("loss_type 'dr_grpo' needs max_len (a constant, e.g. max_new_tokens)")
        max_len = checks.number("aggregate", "max_len", max_len, lo=1, hi=2**31, integer=True)
        return pm.sum() / (per_token.shape[0] * max_len)
    return pm.sum(1).mean()                                             # luspo


def token_weights(mask, loss_type="grpo", max_len=None):
    """The weight each token's loss gets in aggregate(): d aggregate / d per_token, a [N, T] tensor (0 where
    mask is 0). grpo: 1 / (N * |o_i|), so every sequence weighs 1/N in all and a long one's tokens count less
    each; dapo: 1 / (tokens in the batch); dr_grpo: 1 / (N * max_len); luspo: 1 / N. Lab 06 reads length
    bias off it."""
    if not isinstance(mask, torch.Tensor) or mask.dim() != 2:
        raise ValueError(f"token_weights: mask must be a [N, T] tensor, got {_what(mask)}")
    x = torch.zeros(mask.shape, dtype=torch.float64, requires_grad=True)
    aggregate(x, mask, loss_type, max_len).backward()
    return x.grad.float()


def policy_loss(logp, old_logp, ref_logp, adv, mask, eps_low=0.2, eps_high=0.2, beta=0.0,
                loss_type="grpo", max_len=None, level="token", **params):
    """The GRPO loss, a scalar: aggregate(per_token_loss(...), mask, loss_type, max_len). Shapes as in
    per_token_loss; mask [N, T] is 1 on the completion tokens the loss uses (EOS included). Lab 01's
    exercise writes this function; the training loop calls it with these ten arguments, with
    level="sequence" as well when the config asks for one ratio per sequence (GSPO: loss_type "grpo";
    LUSPO: "luspo"), with the objective's parameters by name for cispo, sapo and vespo (OBJECTIVE_PARAMS), and
    with delta by name when the config sets it (GRPOConfig.objective_params)."""
    return aggregate(per_token_loss(logp, old_logp, ref_logp, adv, eps_low, eps_high, beta, level, mask,
                                    loss_type, **params), mask, loss_type, max_len)


@torch.no_grad()
def loss_stats(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high, level="token", loss_type="grpo",
               cispo_cap=OBJECTIVE_PARAMS["cispo"]["cispo_cap"], delta=None):
    """Monitoring numbers for one update, on the tokens the loss used (mask [N, T]; shapes as in
    per_token_loss). The loop computes them once, whoever's loss function ran:
    clip_frac   share of those tokens whose ratio was clipped (where the clip binds the objective; with
                level "sequence", a token counts as clipped when its sequence's ratio is); under cispo, whose
                weight was capped (ratio > cispo_cap where A > 0, as TRL's cispo_clip_ratio); 0 under sapo
                and vespo, which have no hard clip. Tokens that delta caps are not counted: as TRL's
                clip_ratio/region_mean, it is the clip of eps_low and eps_high alone
    delta_frac  only when delta is given: share of those tokens that delta caps (A < 0 and ratio > delta)
    kl          mean k3 KL to the reference per token"""
    logp, old_logp, ref_logp = _logps("loss_stats", logp=logp, old_logp=old_logp, ref_logp=ref_logp)
    a = _advantages("loss_stats", adv, logp)                           # [N, 1] or [N, T]
    mask = _mask("loss_stats", mask, logp)
    eps_low, eps_high = (checks.number("loss_stats", n, v, lo=0) for n, v in (("eps_low", eps_low),
                                                                              ("eps_high", eps_high)))
    m = mask.to(logp.dtype)
    n = m.sum().clamp(min=1)
    objective, _ = _objective("loss_stats", loss_type, {})
    ratio = torch.exp(log_ratio(logp, old_logp, mask, level))
    if objective == "cispo":
        clipped = (ratio > checks.number("loss_stats", "cispo_cap", cispo_cap, lo=0, lo_open=True)) & (a > 0)
    elif objective == "clip":
        clipped = ((ratio < 1 - eps_low) & (a < 0)) | ((ratio > 1 + eps_high) & (a > 0))
    else:
        clipped = torch.zeros_like(ratio * a, dtype=torch.bool)
    out = {"clip_frac": ((clipped.float() * m).sum() / n).item(),
           "kl": (_masked(kl_k3(logp, ref_logp), m).sum() / n).item()}
    delta = _delta("loss_stats", delta, eps_high, loss_type)
    if delta is not None:
        out["delta_frac"] = ((((ratio > delta) & (a < 0)).float() * m).sum() / n).item()
    return out


def high_entropy_mask(entropy, mask, frac):
    """mask [N, T] restricted to the top `frac` share of its tokens by entropy [N, T] (ties kept).
    Training only on these "forking" tokens is the remedy of arXiv 2506.01939 (frac 0.2)."""
    frac = checks.number("high_entropy_mask", "frac", frac, lo=0, hi=1, lo_open=True)
    if not isinstance(entropy, torch.Tensor) or entropy.dim() != 2:
        raise ValueError(f"high_entropy_mask: entropy must be a [N, T] tensor, got {_what(entropy)}")
    mask = _mask("high_entropy_mask", mask, entropy)
    if frac >= 1:
        return mask
    vals = entropy[mask.bool()]
    if vals.numel() == 0:
        return mask
    cut = torch.quantile(vals.float(), 1 - frac)
    return mask * (entropy >= cut).to(mask.dtype)


@dataclass
class GRPOConfig:
    """One visible config per experiment. batch_size counts completions: batch_size / group_size
    prompts per step, each sampled group_size times. Checked when built: a bad value raises a
    ValueError that names the field and what it allows."""
    steps: int = 100
    batch_size: int = 256
    group_size: int = 8
    lr: float = 5e-4
    temperature: float = 1.0
    max_new_tokens: int = 8
    eps_low: float = 0.2
    eps_high: float = 0.2
    beta: float = 0.0
    loss_type: str = "grpo"        # grpo, dapo, dr_grpo, luspo (needs ratio_level "sequence"), bnpo, cispo, sapo, vespo
    ratio_level: str = "token"     # "sequence": one importance ratio per completion (GSPO, arXiv 2507.18071)
    # the loss zoo's parameters (per_token_loss), at TRL's defaults (OBJECTIVE_PARAMS): CISPO's cap on the detached
    # ratio (ScaleRL, arXiv 2510.13786, suggests 5); SAPO's gate temperatures where A > 0 and A <= 0 (arXiv
    # 2511.20347); VESPO's phi(w) = e^lam w^k e^(-lam w), its k and lam where A >= 0 and A < 0
    cispo_cap: float = OBJECTIVE_PARAMS["cispo"]["cispo_cap"]
    sapo_tau_pos: float = OBJECTIVE_PARAMS["sapo"]["sapo_tau_pos"]
    sapo_tau_neg: float = OBJECTIVE_PARAMS["sapo"]["sapo_tau_neg"]
    vespo_k_pos: float = OBJECTIVE_PARAMS["vespo"]["vespo_k_pos"]
    vespo_lambda_pos: float = OBJECTIVE_PARAMS["vespo"]["vespo_lambda_pos"]
    vespo_k_neg: float = OBJECTIVE_PARAMS["vespo"]["vespo_k_neg"]
    vespo_lambda_neg: float = OBJECTIVE_PARAMS["vespo"]["vespo_lambda_neg"]
    # TRL's two-sided clip (INTELLECT-2, arXiv 2505.07291): where A < 0 the unclipped ratio is capped at delta
    # (> 1 + eps_high), so a token far above its old probability cannot push its loss without bound. None: off
    delta: float | None = None
    scale_std: bool = True
    baseline: str = "mean"
    updates_per_batch: int = 1
    entropy_coef: float = 0.0      # entropy bonus: loss -= entropy_coef * mean token entropy
    # train only on this share of tokens, the highest-entropy ones (arXiv 2506.01939: 0.2)
    top_entropy_frac: float = 1.0
    track_kl: bool = True  # measure KL to the reference every step even when beta = 0 (one extra forward)
    max_grad_norm: float = 1.0
    warmup_steps: int = 0
    eval_every: int = 10
    eval_n: int = 200
    max_seconds: float = 0.0  # stop after this much wall-clock time (0 = no limit)
    max_completions: int = 0  # stop once this many completions have been sampled: a compute budget (0 = none)
    # DAPO's dynamic sampling (arXiv 2503.14476): train only on groups whose rewards differ, drawing more
    # prompts until the batch is full or max_sampling_rounds batches have been sampled in the step
    dynamic_sampling: bool = False
    max_sampling_rounds: int = 4
    # DAPO's overlong filtering (arXiv 2503.14476): completions cut off by max_new_tokens still count in their
    # group's advantages but are left out of the loss, so the model is not pushed away from a right start
    mask_truncated: bool = False
    seed: int = 0

    def __post_init__(self):
        self.validate()

    def objective_params(self):
        """{name: value} of the objective's parameters that the loss function gets by name (OBJECTIVE_PARAMS:
        cispo_cap for cispo, the temperatures for sapo, k and lambda for vespo; none for the clipped
        objectives, so that a learner's ten-argument policy_loss still fits them), and delta only when it is set."""
        out = {name: getattr(self, name) for name in OBJECTIVE_PARAMS.get(OBJECTIVES[self.loss_type], {})}
        return out if self.delta is None else out | {"delta": self.delta}

    def validate(self):
        """Raise ValueError naming the field and what is allowed; called before any training. NumPy scalars are
        taken as the Python numbers they hold; bools are not numbers here, and NaN or inf never passes."""
        def bad(name, allowed):
            raise ValueError(f"GRPOConfig.{name}={getattr(self, name)!r} is invalid: {allowed}")

        def whole(name, lo, allowed):  # an integer >= lo
            v = getattr(self, name)
            if isinstance(v, numbers.Integral) and not isinstance(v, bool):
                setattr(self, name, v := int(v))
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                bad(name, allowed)

        def real(name, ok, allowed):  # a finite number for which ok(v) holds
            v = getattr(self, name)
            if isinstance(v, numbers.Real) and not isinstance(v, (bool, int)):
                setattr(self, name, v := float(v))
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not ok(v):
                bad(name, allowed)
        for name in ("steps", "batch_size", "max_new_tokens", "updates_per_batch"):
            whole(name, 1, "must be an integer >= 1")
        whole("group_size", 2, "must be an integer >= 2 (a group of one has no baseline to compare with)")
        if self.batch_size % self.group_size:
            bad("batch_size", f"must be divisible by group_size={self.group_size} "
                              f"(e.g. {self.group_size * max(1, self.batch_size // self.group_size)})")
        if self.loss_type not in LOSS_TYPES:
            bad("loss_type", f"must be one of {LOSS_TYPES}")
        if self.ratio_level not in RATIO_LEVELS:
            bad("ratio_level", f"must be one of {RATIO_LEVELS}")
        if self.loss_type == "luspo" and self.ratio_level != "sequence":
            bad("loss_type", "'luspo' scales a sequence-level loss by length: it needs ratio_level='sequence' "
                             "(as TRL's importance_sampling_level='sequence')")
        if self.loss_type == "vespo" and self.ratio_level != "token":
            bad("loss_type", "'vespo' makes its own sequence-level weight from the token ratios: it needs "
                             "ratio_level='token' (TRL warns likewise)")
        for params in OBJECTIVE_PARAMS.values():
            for name in params:
                real(name, lambda v: v > 0, "must be a finite number > 0")
        if self.baseline not in BASELINES:
            bad("baseline", f"must be one of {BASELINES}")
        for name in ("lr", "eps_low", "eps_high", "temperature"):
            real(name, lambda v: v > 0, "must be a finite number > 0")
        if self.delta is not None:
            real("delta", lambda v: v > 1 + self.eps_high, f"must be None (off) or a finite number > 1 + eps_high = "
                                                           f"{1 + self.eps_high:g} (TRL recommends > 1 + eps; "
                                                           f"INTELLECT-2 used 4)")
            if OBJECTIVES[self.loss_type] != "clip":
                bad("delta", f"caps the clipped objective's ratio; loss_type={self.loss_type!r} has no clip to cap "
                             f"(set delta=None)")
        real("top_entropy_frac", lambda v: 0 < v <= 1, "must be a number in (0, 1] (1 = every token)")
        for name in ("beta", "max_grad_norm", "max_seconds", "entropy_coef"):
            real(name, lambda v: v >= 0, "must be a finite number >= 0" + (" (0 = no limit)" if name in (
                "max_grad_norm", "max_seconds") else ""))
        whole("max_completions", 0, "must be an integer >= 0 (completions sampled before stopping; 0 = no budget)")
        whole("warmup_steps", 0, "must be an integer >= 0")
        whole("eval_n", 1, "must be an integer >= 1")
        whole("eval_every", 0, "must be an integer >= 0 (0 = never)")
        whole("seed", 0, "must be an integer >= 0")
        if self.seed >= 2**63:
            bad("seed", "must be below 2**63")
        for name in ("dynamic_sampling", "mask_truncated", "scale_std", "track_kl"):
            if not isinstance(getattr(self, name), bool):
                bad(name, "must be True or False")
        whole("max_sampling_rounds", 1, "must be an integer >= 1 (batches sampled per step at most)")
        return self
