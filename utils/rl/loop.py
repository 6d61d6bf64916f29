"""Our GRPO training loop, top to bottom: sample -> reward -> advantage -> update -> record.
The maths it calls is grpo.py; the held-out numbers it records come from utils/eval/metrics.py,
as TRL's run does (trl_trainer.py)."""
import copy
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from utils.eval.metrics import eval_sets_of, heldout_keys, heldout_metrics
from utils.models.policy import completion_logprobs, concat_rollouts, sample, select_rows
from utils.rl.grpo import group_advantages, high_entropy_mask, loss_stats, masked_mean, policy_loss


def train_grpo(policy, tokenizer, prompts, answers, reward_fn, cfg, eval_prompts=None, eval_answers=None,
               ref=None, loss_fn=policy_loss, advantage_fn=group_advantages, progress=True, callback=None,
               eval_rewards=None, eval_sets=None, columns=None, correct_fn=None, pools=None):
    """Train `policy` in place with GRPO. Returns the history: a list of dicts, one per step.

    prompts/answers: the training pool, sampled with replacement (seeded by cfg.seed). reward_fn has
    the verifier signature (completions, answer, **kw) -> list[float]. loss_fn / advantage_fn have
    policy_loss's / group_advantages' signatures: the lab's exercises plug in here.
    Every step records reward mean/std, the share of groups with zero reward spread, the mean
    within-group spread, distinct answers per group, mean token entropy, KL to the reference, clip
    fraction, completion length and loss (entropy, KL and clip fraction of the last update on the
    batch, on the tokens the loss used), the mean length of right and of wrong completions, and the
    truncated share (completions stopped by max_new_tokens before EOS: reward 0 for a reason the
    model never sees). A completion is right when correct_fn (default: reward_fn) gives it >= 1;
    correct_fn (default: the strict arithmetic verifier) also judges the held-out pass@1.
    columns {name: list aligned with prompts} are passed to reward_fn and correct_fn as keyword
    arguments, one value per completion, as TRL passes a dataset's extra columns (Lab 06's trace
    verifiers read the operands "a" and "b"). Every cfg.eval_every steps and at the end it adds the
    held-out numbers of heldout_metrics: "heldout_pass@1" on eval_prompts/eval_answers, "<name>_pass@1"
    for each eval_sets {name: (prompts, answers)} (Lab 04: the OOD split), "heldout_<name>" for each
    eval_rewards {name: reward_fn} (Lab 02: proxy vs truth). callback(policy, record), if given, runs
    after each step; a dict it returns is added to that step's record (Lab 04: answer snapshots).
    pools, if given, is one array of prompt indices per step: step s draws its prompts from pools[s] only
    (Lab 07's curriculum; curation.level_pools builds it). Every record has completions_sampled (the step's)
    and train_seconds (time so far, held-out evaluation excluded); seconds includes it. Training stops early
    once cfg.max_completions completions have been sampled (a compute budget) or after cfg.max_seconds.
    """
    cfg.validate()
    prompts, answers = list(prompts), list(answers)
    if not prompts or len(prompts) != len(answers):
        raise ValueError(f"prompts and answers must be non-empty and the same length "
                         f"(got {len(prompts)} and {len(answers)})")
    eval_sets = eval_sets_of(eval_prompts, eval_answers, eval_sets)
    columns = dict(columns or {})
    for name, col in columns.items():
        if name in ("completions", "answer") or not hasattr(col, "__len__") or len(col) != len(prompts):
            raise ValueError(f"columns[{name!r}] must be a list with one value per prompt ({len(prompts)}), "
                             f"named other than 'completions' and 'answer'")
    if pools is not None:
        pools = [np.asarray(p, dtype=int) for p in pools]
        if len(pools) < cfg.steps or any(p.size == 0 or p.min() < 0 or p.max() >= len(prompts) for p in pools):
            raise ValueError(f"pools must hold a non-empty array of prompt indices (0..{len(prompts) - 1}) for each "
                             f"of the {cfg.steps} steps (got {len(pools)} pools)")
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)          # which prompts each step draws
    gen = torch.Generator().manual_seed(cfg.seed)  # which completions the policy samples
    if ref is None and (cfg.beta > 0 or cfg.track_kl):  # frozen reference: the policy before training
        ref = copy.deepcopy(policy).eval().requires_grad_(False)
    policy.eval()  # no dropout: the policy that is trained is the one that sampled
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=0.0)
    # linear warm-up from lr/warmup to lr, then constant (TRL's "constant_with_warmup")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (cfg.warmup_steps + 1)))
    G, n_prompts = cfg.group_size, cfg.batch_size // cfg.group_size
    history, t0, eval_time, sampled = [], time.time(), 0.0, 0
    # mininterval and refresh=False keep widget traffic low: a Jupyter kernel drops messages
    # past ~2000 queued ones, which makes headless runners (nbval) lose the end of a cell.
    bar = tqdm(range(cfg.steps), desc=progress if isinstance(progress, str) else "GRPO", disable=not progress,
               mininterval=1.0)
    for step in bar:
        # 1. sample: n_prompts prompts from the pool, G completions each; 2. reward them
        pool = None if pools is None else pools[step]
        pick = lambda: (rng.integers(0, len(prompts), n_prompts) if pool is None  # noqa: E731
                        else pool[rng.integers(0, len(pool), n_prompts)])
        draw = lambda idx: rollout(policy, tokenizer, idx, prompts, answers, columns, reward_fn,  # noqa: E731
                                   correct_fn, cfg, gen)
        idx = pick()
        if cfg.dynamic_sampling:
            ro, rewards, right, drawn = dynamic_batch(draw, idx, pick, cfg, tokenizer.pad_token_id)
        else:
            (ro, rewards, right), drawn = draw(idx), {"completions_sampled": cfg.batch_size}
        # 3. advantage
        adv = advantage_fn(rewards, G, cfg.scale_std, cfg.baseline).to(ro.completion_ids.device)  # [N]
        ref_logp = reference_logprobs(ref, ro, cfg)                            # [N, T]
        # 4. update, updates_per_batch times on the same samples
        for _ in range(cfg.updates_per_batch):
            loss, stats, ent = update(policy, opt, ro, adv, ref_logp, cfg, loss_fn)
        sched.step()
        # 5. record
        rec = step_record(step + 1, rewards, ro, loss, stats, ent, cfg, right) | drawn | heldout_keys(eval_sets,
                                                                                                   eval_rewards)
        sampled += rec["completions_sampled"]
        out_of_budget = (cfg.max_seconds and time.time() - t0 >= cfg.max_seconds) or \
            (cfg.max_completions and sampled >= cfg.max_completions)
        rec["train_seconds"] = time.time() - t0 - eval_time
        if step + 1 == cfg.steps or out_of_budget or (cfg.eval_every and (step + 1) % cfg.eval_every == 0):
            t_eval = time.time()
            rec.update(heldout_metrics(policy, tokenizer, eval_sets, eval_rewards, cfg.eval_n,
                                       cfg.temperature, cfg.max_new_tokens, correct_fn))
            eval_time += time.time() - t_eval
        rec["seconds"] = time.time() - t0
        if callback:
            rec.update(callback(policy, rec) or {})
        history.append(rec)
        bar.set_postfix(reward=f"{rec['reward_mean']:.2f}", ent=f"{rec['entropy']:.2f}", refresh=False)
        if out_of_budget:
            break
    bar.close()
    return history


def rollout(policy, tokenizer, idx, prompts, answers, columns, reward_fn, correct_fn, cfg, gen):
    """Sample cfg.group_size completions of each prompt idx [n] of the pool and reward them.
    Returns (Rollout of N = n * G rows, rewards [N], right [N] bool or None)."""
    G = cfg.group_size
    batch_p = [prompts[i] for i in idx]
    batch_a = [answers[i] for i in idx for _ in range(G)]
    ro = sample(policy, tokenizer, batch_p, k=G, temperature=cfg.temperature,
                max_new_tokens=cfg.max_new_tokens, generator=gen)       # N = n * G rows
    extra = {name: [col[i] for i in idx for _ in range(G)] for name, col in columns.items()}
    rewards = torch.tensor(reward_fn(ro.texts, batch_a, **extra), dtype=torch.float32)  # [N]
    right = None if correct_fn is None else torch.tensor(correct_fn(ro.texts, batch_a, **extra)) >= 1.0  # [N]
    return ro, rewards, right


def dynamic_batch(draw, idx, pick, cfg, pad_id):
    """DAPO's dynamic sampling (arXiv 2503.14476): keep only groups whose rewards differ (a group whose
    completions all score alike has advantage 0 and teaches nothing), and draw more prompts until the batch
    holds batch_size / group_size such groups, or cfg.max_sampling_rounds rounds have been drawn.

    draw(idx) -> (Rollout, rewards [N], right [N] or None) samples and rewards prompts idx; pick() -> the next
    round's prompt indices. The batch is the first informative groups found, in the order drawn; after
    max_sampling_rounds it may hold fewer (a smaller batch, as DAPO's cap allows). If no group in any round
    differed, the last round is trained as drawn (all advantages 0: only a KL term moves the policy). Returns
    (Rollout, rewards, right, counts) with counts the step's completions_sampled, sampling_rounds, groups_kept
    and drawn_zero_spread_frac: the share of all groups drawn whose rewards were all alike (the step's
    zero_spread_frac is of the kept groups, so with dynamic sampling it is 0 whenever the batch filled)."""
    G, n_prompts = cfg.group_size, cfg.batch_size // cfg.group_size
    parts = []
    while True:
        parts.append(draw(idx))
        kept, used = fill_batch([p[1] for p in parts], G, n_prompts)
        if used < len(parts) or len(kept) >= n_prompts or len(parts) >= cfg.max_sampling_rounds:
            break
        idx = pick()
    rounds = len(parts)
    alike = sum(int((r.view(-1, G).max(1).values == r.view(-1, G).min(1).values).sum()) for _, r, _ in parts)
    counts = {"completions_sampled": rounds * cfg.batch_size, "sampling_rounds": rounds, "groups_kept": len(kept),
              "drawn_zero_spread_frac": alike / (rounds * n_prompts)}
    if not kept:
        return (*parts[-1], counts)
    rows = [torch.arange(g * G, (g + 1) * G) for _, g in kept]                 # completion rows, in kept order
    ro = concat_rollouts([select_rows(parts[r][0], i) for (r, _), i in zip(kept, rows)], pad_id)
    rewards = torch.cat([parts[r][1][i] for (r, _), i in zip(kept, rows)])
    right = None if parts[0][2] is None else torch.cat([parts[r][2][i] for (r, _), i in zip(kept, rows)])
    return ro, rewards, right, counts


def fill_batch(round_rewards, G, n_groups):
    """Dynamic sampling's choice (arXiv 2503.14476): given the rewards of the rounds drawn so far, in order
    (a list of [n * G] tensors, groups of G consecutive completions), the first n_groups groups whose rewards
    are not all alike, in the order drawn, as (round, group) pairs; and how many rounds that took (all of
    them if the batch is not full). E.g. rounds [1,1, 0,1] and [0,0, 1,0] with G=2, n_groups=2 ->
    ([(0, 1), (1, 1)], 2)."""
    kept = []
    for r, rewards in enumerate(round_rewards):
        rg = rewards.view(-1, G)                                                # [n, G]
        for g in (rg.max(1).values > rg.min(1).values).nonzero().flatten().tolist():
            kept.append((r, g))
            if len(kept) == n_groups:
                return kept, r + 1
    return kept, len(round_rewards)


@torch.no_grad()
def reference_logprobs(ref, ro, cfg):
    """Log-probs [N, T] of the sampled completions under the frozen reference; when neither the loss
    (beta) nor the record (track_kl) needs them, the sampler's, which makes the KL term zero."""
    if not (cfg.beta > 0 or cfg.track_kl):
        return ro.logprobs
    logp, _ = completion_logprobs(ref, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask,
                                  cfg.temperature)
    return logp


def update(policy, opt, ro, adv, ref_logp, cfg, loss_fn=policy_loss):
    """One optimizer step on rollout `ro` with advantages adv [N]. Returns (loss, stats, entropy [N, T]).
    With cfg.top_entropy_frac < 1 the loss sees only the highest-entropy tokens; with cfg.entropy_coef
    > 0 it gets an entropy bonus; with cfg.mask_truncated the truncated completions are left out of the
    loss (their rows of the mask are zeroed; they still count in the group's advantages).
    stats (loss_stats) are measured on the tokens the loss used."""
    logp, ent = completion_logprobs(policy, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask,
                                    cfg.temperature, entropy_grad=cfg.entropy_coef > 0)  # [N, T] each
    mask = ro.completion_mask                                                            # [N, T]
    if cfg.mask_truncated and getattr(ro, "truncated", None) is not None:  # overlong filtering: cut rows out
        mask = mask * (~ro.truncated).to(mask.dtype)[:, None]
    mask = high_entropy_mask(ent.detach(), mask, cfg.top_entropy_frac)                  # [N, T]
    loss = loss_fn(logp, ro.logprobs, ref_logp, adv, mask, cfg.eps_low, cfg.eps_high, cfg.beta,
                   cfg.loss_type, cfg.max_new_tokens)
    if cfg.entropy_coef > 0:
        loss = loss - cfg.entropy_coef * masked_mean(ent, ro.completion_mask)
    opt.zero_grad()
    loss.backward()
    if cfg.max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
    opt.step()
    stats = loss_stats(logp.detach(), ro.logprobs, ref_logp, adv, mask, cfg.eps_low, cfg.eps_high)
    return loss.detach(), stats, ent.detach()


def step_record(step, rewards, ro, loss, stats, ent, cfg, right=None):
    """One step's training numbers (see train_grpo); rewards [N] in groups of cfg.group_size, right [N]
    bool (default: reward >= 1). A length over no completions (none right, say) is None, not 0."""
    G = cfg.group_size
    rg = rewards.view(-1, G)                                                   # [n_prompts, G]
    lengths = ro.completion_mask.sum(1).float()                                # [N] tokens, EOS included
    right = (rewards >= 1.0 if right is None else right).to(lengths.device)
    truncated = getattr(ro, "truncated", None)
    return {
        "step": step,
        "reward_mean": rewards.mean().item(),
        "reward_std": rewards.std(unbiased=False).item(),
        "zero_spread_frac": (rg.max(1).values == rg.min(1).values).float().mean().item(),
        "group_reward_std": rg.std(1, unbiased=False).mean().item(),      # mean within-group spread
        "distinct_answers": float(np.mean([len({t.strip() for t in ro.texts[i:i + G]})
                                           for i in range(0, len(ro.texts), G)])),  # of G per group
        "entropy": masked_mean(ent, ro.completion_mask).item(),
        "kl": stats["kl"] if cfg.beta > 0 or cfg.track_kl else None,
        "clip_frac": stats["clip_frac"],
        "completion_len": lengths.mean().item(),
        "completion_len_right": _mean_or_none(lengths[right]),
        "completion_len_wrong": _mean_or_none(lengths[~right]),
        "truncated_frac": truncated.float().mean().item() if truncated is not None else None,
        "loss": loss.item(),
    }


def _mean_or_none(x):
    """The mean of a 1-D tensor as a float, None when it is empty."""
    return x.mean().item() if x.numel() else None
