"""GRPO from scratch (DeepSeekMath, arXiv 2402.03300), with the DAPO (arXiv 2503.14476) and
Dr. GRPO (arXiv 2503.20783) variants as options. The maths is the first screen of this file.
"""
import copy
import time
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from . import cache
from .metrics import evaluate, masked_mean
from .policy import completion_logprobs, sample

LOSS_TYPES = ("grpo", "dapo", "dr_grpo")
BASELINES = ("mean", "median")


def group_advantages(rewards, group_size, scale_std=True, baseline="mean", eps=1e-4):
    """Group-relative advantages. rewards [N] with N = n_groups * group_size, groups contiguous.

    A_i = (r_i - baseline(group)) / (std(group) + eps)   if scale_std   (GRPO)
    A_i =  r_i - baseline(group)                         otherwise      (Dr. GRPO)
    baseline is the group mean or median; std is the population std (divide by G).
    Returns [N]. A group whose rewards are all equal gets advantage 0.
    """
    r = torch.as_tensor(rewards, dtype=torch.float32).view(-1, group_size)  # [n_groups, G]
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


def kl_k3(logp, ref_logp):
    """k3 estimator of KL(pi || pi_ref) per token (Schulman 2020): exp(d) - d - 1, d = ref - logp.
    Always >= 0; unbiased for the KL when tokens are sampled from pi. Shapes [N, T] -> [N, T]."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1


def policy_loss(logp, old_logp, ref_logp, adv, mask, eps_low=0.2, eps_high=0.2, beta=0.0,
                loss_type="grpo", max_len=None):
    """Clipped surrogate with a KL penalty. Returns (loss scalar, stats dict).

    logp, old_logp [N, T]: log-probs of the sampled tokens under the current and the sampling
    policy; ref_logp [N, T] under the frozen reference (ignored if beta == 0); adv [N];
    mask [N, T] 1 on completion tokens (EOS included).
    per-token: l = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A) + beta * KL_k3
    aggregation (how tokens are averaged):
      grpo     mean over each sequence's tokens, then mean over sequences
      dapo     sum over all tokens / number of tokens in the batch   (token-level)
      dr_grpo  sum over all tokens / (N * max_len), max_len a constant
    """
    m = mask.to(logp.dtype)
    ratio = torch.exp(logp - old_logp)                                  # [N, T]
    a = adv[:, None]                                                    # [N, 1]
    surr = torch.min(ratio * a, torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * a)
    per_token = -surr                                                   # [N, T]
    kl = kl_k3(logp, ref_logp) if beta > 0 else torch.zeros_like(logp)
    per_token = per_token + beta * kl
    if loss_type == "grpo":
        loss = ((per_token * m).sum(1) / m.sum(1).clamp(min=1)).mean()
    elif loss_type == "dapo":
        loss = (per_token * m).sum() / m.sum().clamp(min=1)
    elif loss_type == "dr_grpo":
        if not max_len:
            raise ValueError("loss_type 'dr_grpo' needs max_len (a constant, e.g. max_new_tokens)")
        loss = (per_token * m).sum() / (logp.shape[0] * max_len)
    else:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    return loss, loss_stats(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high)


@torch.no_grad()
def loss_stats(logp, old_logp, ref_logp, adv, mask, eps_low, eps_high):
    """Monitoring numbers for one batch (shapes as in policy_loss):
    clip_frac  share of completion tokens whose ratio was clipped (where the clip binds the objective)
    kl         mean k3 KL to the reference per completion token"""
    m = mask.to(logp.dtype)
    n = m.sum().clamp(min=1)
    ratio, a = torch.exp(logp - old_logp), adv[:, None]
    clipped = ((ratio < 1 - eps_low) & (a < 0)) | ((ratio > 1 + eps_high) & (a > 0))
    return {"clip_frac": ((clipped.float() * m).sum() / n).item(), "kl": ((kl_k3(logp, ref_logp) * m).sum() / n).item()}


@dataclass
class GRPOConfig:
    """One visible config per experiment. batch_size counts completions: batch_size / group_size
    prompts per step, each sampled group_size times."""
    steps: int = 100
    batch_size: int = 256
    group_size: int = 8
    lr: float = 5e-4
    temperature: float = 1.0
    max_new_tokens: int = 8
    eps_low: float = 0.2
    eps_high: float = 0.2
    beta: float = 0.0
    loss_type: str = "grpo"
    scale_std: bool = True
    baseline: str = "mean"
    updates_per_batch: int = 1
    entropy_coef: float = 0.0      # entropy bonus: loss -= entropy_coef * mean token entropy
    top_entropy_frac: float = 1.0  # train only on this share of tokens, the highest-entropy ones (arXiv 2506.01939: 0.2)
    track_kl: bool = True  # measure KL to the reference every step even when beta = 0 (one extra forward)
    max_grad_norm: float = 1.0
    warmup_steps: int = 0
    eval_every: int = 10
    eval_n: int = 200
    max_seconds: float = 0.0  # stop after this much wall-clock time (0 = no limit)
    seed: int = 0

    def validate(self):
        """Raise ValueError naming the field and what is allowed; called before any training."""
        def bad(name, allowed):
            raise ValueError(f"GRPOConfig.{name}={getattr(self, name)!r} is invalid: {allowed}")
        for name in ("steps", "batch_size", "max_new_tokens", "updates_per_batch"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                bad(name, "must be an integer >= 1")
        if not isinstance(self.group_size, int) or self.group_size < 2:
            bad("group_size", "must be an integer >= 2 (a group of one has no baseline to compare with)")
        if self.batch_size % self.group_size:
            bad("batch_size", f"must be divisible by group_size={self.group_size} "
                              f"(e.g. {self.group_size * max(1, self.batch_size // self.group_size)})")
        if self.loss_type not in LOSS_TYPES:
            bad("loss_type", f"must be one of {LOSS_TYPES}")
        if self.baseline not in BASELINES:
            bad("baseline", f"must be one of {BASELINES}")
        for name in ("lr", "eps_low", "eps_high", "temperature"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not v > 0:
                bad(name, "must be a number > 0")
        if not isinstance(self.top_entropy_frac, (int, float)) or not 0 < self.top_entropy_frac <= 1:
            bad("top_entropy_frac", "must be a number in (0, 1] (1 = every token)")
        for name in ("beta", "max_grad_norm", "max_seconds", "entropy_coef"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or v < 0:
                bad(name, "must be a number >= 0")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            bad("warmup_steps", "must be an integer >= 0")
        if not isinstance(self.eval_n, int) or self.eval_n < 1:
            bad("eval_n", "must be an integer >= 1")
        if not isinstance(self.eval_every, int) or self.eval_every < 0:
            bad("eval_every", "must be an integer >= 0 (0 = never)")
        return self


def high_entropy_mask(entropy, mask, frac):
    """mask [N, T] restricted to the top `frac` share of its tokens by entropy [N, T] (ties kept).
    Training only on these "forking" tokens is the remedy of arXiv 2506.01939 (frac 0.2)."""
    if frac >= 1:
        return mask
    vals = entropy[mask.bool()]
    if vals.numel() == 0:
        return mask
    cut = torch.quantile(vals.float(), 1 - frac)
    return mask * (entropy >= cut).to(mask.dtype)


def grpo_step_loss(policy, rollout, adv, old_logp, ref_logp, cfg, loss_fn=policy_loss):
    """Forward the policy on a rollout and return (loss, stats, entropy [N, T]).
    loss_fn has policy_loss's signature and may return the loss alone. With cfg.top_entropy_frac < 1
    the loss sees only the highest-entropy tokens; with cfg.entropy_coef > 0 it gets an entropy bonus."""
    r = rollout
    logp, ent = completion_logprobs(policy, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask,
                                    cfg.temperature, entropy_grad=cfg.entropy_coef > 0)
    mask = high_entropy_mask(ent.detach(), r.completion_mask, cfg.top_entropy_frac)
    out = loss_fn(logp, old_logp, ref_logp, adv, mask, cfg.eps_low, cfg.eps_high,
                  cfg.beta, cfg.loss_type, cfg.max_new_tokens)
    loss, stats = out if isinstance(out, tuple) else (out, None)  # policy_loss returns (loss, stats)
    if stats is None:
        stats = loss_stats(logp, old_logp, ref_logp, adv, r.completion_mask, cfg.eps_low, cfg.eps_high)
    if cfg.entropy_coef > 0:
        loss = loss - cfg.entropy_coef * masked_mean(ent, r.completion_mask)
    return loss, stats, ent.detach()


def train_grpo(policy, tokenizer, prompts, answers, reward_fn, cfg, eval_prompts=None, eval_answers=None,
               ref=None, loss_fn=None, advantage_fn=None, progress=True, callback=None, eval_rewards=None,
               eval_sets=None):
    """Train `policy` in place with GRPO. Returns the history: a list of dicts, one per step.

    prompts/answers: the training pool, sampled with replacement (seeded). reward_fn has the
    verifier signature (completions, answer, **kw) -> list[float]. Every step records reward
    mean/std, share of groups with zero reward spread, mean token entropy, KL to the reference,
    clip fraction, mean completion length, and (every eval_every steps, and at the end)
    held-out sampled pass@1 on the first eval_n eval prompts with the strict verifier.
    With updates_per_batch > 1, entropy, KL and clip fraction are those of the last update on the batch.
    loss_fn / advantage_fn, if given, replace policy_loss / group_advantages (same signatures):
    the lab's exercises plug in here. eval_rewards, a dict name -> reward_fn, also scores the same
    held-out samples with other verifiers, recorded as "heldout_<name>" (Lab 02: proxy vs truth).
    eval_sets, a dict name -> (prompts, answers), adds more held-out sets scored the same way and
    recorded as "<name>_pass@1" (Lab 04: the OOD split).
    """
    cfg.validate()
    prompts, answers = list(prompts), list(answers)
    if not prompts or len(prompts) != len(answers):
        raise ValueError(f"prompts and answers must be non-empty and the same length "
                         f"(got {len(prompts)} and {len(answers)})")
    loss_fn = loss_fn or policy_loss
    advantage_fn = advantage_fn or group_advantages
    key = None  # the run cache (utils/cache.py): off unless RLVR_LABS_CACHE is set; never with a time limit
    if not cfg.max_seconds:
        key = cache.key("train_grpo", policy, ref, tokenizer, prompts, answers, reward_fn, cfg, eval_prompts,
                        eval_answers, eval_rewards, eval_sets, callback, *_probes(advantage_fn, loss_fn, cfg))
        hit = cache.load(key)
        if hit is not None:
            for rec, state in zip(hit["history"], hit["states"] if callback else []):  # replay the callback
                policy.load_state_dict(state)                                         # on each step's weights
                callback(rec)
            policy.load_state_dict(hit["state"])
            policy.eval()
            print(f"(GRPO, {cfg.steps} steps: the same run was computed earlier in this test session; "
                  f"loaded from the run cache, {cache.ENV})")
            return hit["history"]
    states = []  # each step's weights, kept only to replay a callback from the cache
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    if ref is None and (cfg.beta > 0 or cfg.track_kl):  # frozen reference: the policy before training
        ref = copy.deepcopy(policy).eval().requires_grad_(False)
    policy.eval()  # no dropout: the policy that is trained is the one that sampled
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=0.0)
    # linear warm-up from lr/warmup to lr, then constant (TRL's "constant_with_warmup")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (cfg.warmup_steps + 1)))
    G, n_prompts = cfg.group_size, cfg.batch_size // cfg.group_size
    history = []

    eval_rewards, eval_sets = dict(eval_rewards or {}), dict(eval_sets or {})
    for name, pair in eval_sets.items():
        if name == "heldout" or not (isinstance(pair, (tuple, list)) and len(pair) == 2
                                     and len(pair[0]) == len(pair[1]) > 0):
            raise ValueError(f"eval_sets[{name!r}] must be a (prompts, answers) pair of equal, non-zero length, "
                             f"under a name other than 'heldout' (that is eval_prompts/eval_answers)")
    if eval_prompts is not None:  # the held-out set is the first eval set, recorded as "heldout_pass@1"
        eval_sets = {"heldout": (eval_prompts, eval_answers), **eval_sets}

    def held_out():
        out = {}
        for name, (ps, ys) in eval_sets.items():
            ans = list(ys)[:cfg.eval_n]
            ev = evaluate(policy, tokenizer, list(ps)[:cfg.eval_n], ans, k=1,
                          temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens, seed=12345)
            out[f"{name}_pass@1"] = ev["pass@1"]
            if name == "heldout":
                for r_name, fn in eval_rewards.items():
                    out[f"heldout_{r_name}"] = float(np.mean(fn(ev["texts"], ans)))
        return out

    t0 = time.time()
    # mininterval and refresh=False keep widget traffic low: a Jupyter kernel drops messages
    # past ~2000 queued ones, which makes headless runners (nbval) lose the end of a cell.
    bar = tqdm(range(cfg.steps), desc="GRPO", disable=not progress, mininterval=1.0)
    for step in bar:
        idx = rng.integers(0, len(prompts), n_prompts)
        batch_p = [prompts[i] for i in idx]
        batch_a = [answers[i] for i in idx for _ in range(G)]
        ro = sample(policy, tokenizer, batch_p, k=G, temperature=cfg.temperature,
                    max_new_tokens=cfg.max_new_tokens, generator=gen)          # N = n_prompts * G rows
        rewards = torch.tensor(reward_fn(ro.texts, batch_a), dtype=torch.float32)  # [N]
        adv = advantage_fn(rewards, G, cfg.scale_std, cfg.baseline)      # [N]
        old_logp = ro.logprobs                                                # [N, T] sampler's log-probs
        ref_logp = old_logp  # unused by the loss when beta = 0
        if cfg.beta > 0 or cfg.track_kl:
            with torch.no_grad():
                ref_logp, _ = completion_logprobs(ref, ro.prompt_ids, ro.prompt_mask, ro.completion_ids,
                                                  ro.completion_mask, cfg.temperature)  # [N, T]
        for _ in range(cfg.updates_per_batch):
            loss, stats, ent = grpo_step_loss(policy, ro, adv, old_logp, ref_logp, cfg, loss_fn)
            opt.zero_grad()
            loss.backward()
            if cfg.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
            opt.step()
        sched.step()
        rg = rewards.view(-1, G)
        rec = {
            "step": step + 1,
            "reward_mean": rewards.mean().item(),
            "reward_std": rewards.std(unbiased=False).item(),
            "zero_spread_frac": (rg.max(1).values == rg.min(1).values).float().mean().item(),
            "group_reward_std": rg.std(1, unbiased=False).mean().item(),  # mean within-group spread
            "distinct_answers": float(np.mean([len({t.strip() for t in ro.texts[i:i + G]})
                                               for i in range(0, len(ro.texts), G)])),  # of G per group
            "entropy": masked_mean(ent.detach(), ro.completion_mask).item(),
            "kl": stats["kl"] if cfg.beta > 0 or cfg.track_kl else None,
            "clip_frac": stats["clip_frac"],
            "completion_len": ro.completion_mask.sum(1).float().mean().item(),
            "loss": loss.item(),
            "heldout_pass@1": None,
            **{f"heldout_{name}": None for name in eval_rewards},
            **{f"{name}_pass@1": None for name in eval_sets},  # includes heldout_pass@1 when given
            "seconds": None,
        }
        out_of_time = cfg.max_seconds and time.time() - t0 >= cfg.max_seconds
        last = step + 1 == cfg.steps or out_of_time
        if last or (cfg.eval_every and (step + 1) % cfg.eval_every == 0):
            rec.update(held_out())
        rec["seconds"] = time.time() - t0
        history.append(rec)
        bar.set_postfix(reward=f"{rec['reward_mean']:.2f}", ent=f"{rec['entropy']:.2f}", refresh=False)
        if callback:
            if key is not None:
                states.append({k: v.detach().clone() for k, v in policy.state_dict().items()})
            callback(rec)
        if out_of_time:
            break
    bar.close()
    cache.save(key, {"state": {k: v.detach().clone() for k, v in policy.state_dict().items()},
                     "history": history, "states": states})
    return history


def _probes(advantage_fn, loss_fn, cfg):
    """advantage_fn and loss_fn keyed for the run cache by what they compute on fixed inputs (values and,
    for the loss, its gradient), so a learner's function equal to the reference bit for bit shares its runs."""
    g = torch.Generator().manual_seed(0)
    G = cfg.group_size
    rewards = (torch.rand(4 * G, generator=g) > 0.5).float()
    rewards[:G] = 1.0                                                   # one group with zero spread
    adv = cache.Probe(advantage_fn, [(rewards, G, cfg.scale_std, cfg.baseline)])
    N, T = 4 * G, 6
    logp = -torch.rand(N, T, generator=g) * 3
    old = logp + 0.3 * torch.randn(N, T, generator=g)
    ref = logp + 0.3 * torch.randn(N, T, generator=g)
    mask = (torch.rand(N, T, generator=g) > 0.2).float()

    def loss_and_grad(a):
        x = logp.clone().requires_grad_(True)
        with torch.enable_grad():
            out = loss_fn(x, old, ref, a, mask, cfg.eps_low, cfg.eps_high, cfg.beta, cfg.loss_type,
                          cfg.max_new_tokens)
            loss = out[0] if isinstance(out, tuple) else out
            loss.backward()
        return loss.detach(), x.grad

    return adv, cache.Probe(loss_and_grad, [(torch.randn(N, generator=g),)])
