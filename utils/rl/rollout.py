"""How a batch of completions comes to be: the rollout seam of train_grpo (as TRL's `rollout_func`).

The contract. A rollout has one method, start(policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn),
called once before training; it checks its inputs (ValueError naming what to fix), seeds its own random
streams from cfg.seed, and returns draw(step) -> Batch, which train_grpo calls once per step (step counts
from 0). A Batch holds:

    ro        a utils.models.policy.Rollout of N rows, groups of cfg.group_size consecutive rows:
                prompt_ids, prompt_mask   [N, P]  the prompts, left padded
                completion_ids            [N, T]  every token after the prompt (a multi-turn episode puts the
                                                  environment's tokens here too)
                completion_mask           [N, T]  1 on every real token (0: padding): what the model reads
                loss_mask                 [N, T]  1 on the tokens that carry loss (0: padding, the environment's
                                                  tokens); None = completion_mask (single-turn)
                logprobs                  [N, T]  the sampler's log-probs of the tokens with loss (0 elsewhere):
                                                  the "old" policy of the clipped ratio
                texts [N] (what the verifier reads), truncated [N] bool (cut by max_new_tokens) or None
    rewards   [N] float32
    right     [N] bool (correct, for the record's right/wrong lengths) or None (= reward >= 1)
    counts    a dict added to the step's record; completions_sampled (all drawn, kept or not) is required
    steps, weights, off_policy   optional: what the batch adds to the loss's advantages beyond one per completion
              (per-step credit; importance or task weights; sequences to drop where their advantage is negative),
              applied by Batch.advantages, so train_grpo reads no kind of rollout by name

GroupRollout is the course's rollout: single-turn sampling of G completions per prompt. A new way of making
completions overrides GroupRollout.generate (ToolRollout: episodes with a tool whose answers are masked out of the
loss; StaleRollout: a stale or lower-precision sampler), GroupRollout.choose (MixRollout: which prompts a step
draws), or writes its own start() to the contract above.
"""
import copy
import time
from collections import deque
from dataclasses import dataclass, replace

import numpy as np
import torch

from utils import checks
from utils.models.policy import Rollout, completion_logprobs, concat_rollouts, sample, select_rows
from utils.rl.grpo import process_advantages, zero_spread


@dataclass
class StepCredit:
    """Per-step rewards of a batch, placed on tokens (StepRollout): Batch.advantages turns them into per-token
    advantages (grpo.process_advantages) and adds outcome_weight times the completion's own advantage."""
    rewards: torch.Tensor        # [N, T] a step's reward at the token where it ends, 0 elsewhere
    mask: torch.Tensor           # [N, T] bool, True at those tokens
    outcome_weight: float


@dataclass
class Batch:
    """One step's rewarded completions (the contract above), and what they add to the advantages (advantages())."""
    ro: Rollout
    rewards: torch.Tensor        # [N]
    right: torch.Tensor | None   # [N] bool
    counts: dict
    prompt_idx: np.ndarray | None = None   # [N / G] the prompts drawn (None under dynamic sampling)
    steps: StepCredit | None = None        # per-step credit (StepRollout), None for one reward per completion
    weights: torch.Tensor | None = None    # [N, T] weights on the advantages (StaleRollout's correction, MixRollout's)
    off_policy: torch.Tensor | None = None  # [N] bool: too far off-policy (StaleRollout's off_policy_mask_threshold)

    def advantages(self, adv, cfg):
        """The advantages the loss takes for this batch, on the completions' device: adv [N] (advantage_fn's, one per
        completion) as it is, or [N, T], one per token, when the rollout brought more: per-step credit (steps:
        outcome_weight * adv plus grpo.process_advantages of the step rewards), off_policy (DeepSeek-V3.2's
        off-policy sequence masking: a sequence marked True gets advantage 0 wherever its advantage is negative, so it
        leaves the loss's policy term there and still counts in its denominator, as TRL's mask multiplies the per-token
        loss; counts gets opsm_dropped_frac, the share of sequences dropped) and weights (multiplying each token's
        advantage; applied after the mask, whose sign test they cannot change). A new kind of rollout brings its part
        here, as a field of the Batch, and train_grpo stays as it is."""
        if not isinstance(adv, torch.Tensor) or adv.shape != self.rewards.shape:
            raise ValueError(f"train_grpo: advantage_fn must return a tensor of one advantage per completion "
                             f"{tuple(self.rewards.shape)}, got {checks._short(adv)}")
        device = self.ro.completion_ids.device
        adv = adv.to(device)
        if self.steps is not None:  # per-step credit (StepRollout): one advantage per token, [N, T]
            adv = self.steps.outcome_weight * adv[:, None] + process_advantages(
                self.steps.rewards, self.steps.mask, cfg.group_size, cfg.scale_std).to(device)
        if self.off_policy is not None:  # OPSM (StaleRollout): far off-policy and negative -> out of the policy loss
            far = self.off_policy.to(device)                                     # [N] bool
            drop = (adv < 0) & (far if adv.dim() == 1 else far[:, None])        # [N] or [N, T]
            adv = torch.where(drop, torch.zeros((), dtype=adv.dtype, device=device), adv)
            self.counts["opsm_dropped_frac"] = (drop if drop.dim() == 1 else drop.any(1)).float().mean().item()
        if self.weights is not None:  # importance weights (StaleRollout) or task weights (MixRollout), [N, T]
            adv = (adv if adv.dim() == 2 else adv[:, None]) * self.weights.to(device)
        return adv


@dataclass
class GroupRollout:
    """Each step: draw batch_size / group_size prompts with replacement (seeded by cfg.seed; from pools[step] if
    pools is given: Lab 07's curriculum, built by curation.level_pools), sample group_size completions of each
    (generate), reward them with reward_fn(texts, answers, **columns), and with cfg.dynamic_sampling refill the
    batch with groups whose rewards differ (dynamic_batch).

    columns {name: list aligned with prompts} reach reward_fn and correct_fn as keyword arguments, one value per
    completion, as TRL passes a dataset's extra columns (Lab 06's trace verifiers read the operands a and b)."""
    columns: dict | None = None
    pools: list | None = None

    def choose(self, step, rng, n, n_all, pools):
        """The indices of the n prompts (of n_all) that step `step` samples: uniform with replacement, from
        pools[step] if there are pools."""
        pool = None if pools is None else pools[step]
        return rng.integers(0, n_all, n) if pool is None else pool[rng.integers(0, len(pool), n)]

    def generate(self, policy, tokenizer, prompts, cfg, generator):
        """cfg.group_size completions of each prompt, as a Rollout of len(prompts) * group_size rows."""
        return sample(policy, tokenizer, prompts, k=cfg.group_size, temperature=cfg.temperature,
                      max_new_tokens=cfg.max_new_tokens, generator=generator)

    def start(self, policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn=None):
        for name, v in (("prompts", prompts), ("answers", answers)):
            if isinstance(v, (str, bytes)):
                raise ValueError(f"{name} must be a list (one entry per problem), not one string ({v[:40]!r}): "
                                 f"wrap a single one as [{name[:-1]}]")
        prompts, answers = checks.sequence("GroupRollout.start", "prompts", prompts), \
            checks.sequence("GroupRollout.start", "answers", answers)
        if not prompts or len(prompts) != len(answers):
            raise ValueError(f"prompts and answers must be non-empty and the same length "
                             f"(got {len(prompts)} and {len(answers)})")
        columns = dict(self.columns or {})
        for name, col in columns.items():
            if name in ("completions", "answer") or not hasattr(col, "__len__") or len(col) != len(prompts):
                raise ValueError(f"columns[{name!r}] must be a list with one value per prompt ({len(prompts)}), "
                                 f"named other than 'completions' and 'answer'")
        pools = None if self.pools is None else _pools(self.pools, cfg.steps, len(prompts))
        deadline = time.time() + cfg.max_seconds if cfg.max_seconds else None  # the run's time limit binds refills
        rng = np.random.default_rng(cfg.seed)          # which prompts each step draws
        gen = torch.Generator().manual_seed(cfg.seed)  # which completions the policy samples
        G, n_prompts = cfg.group_size, cfg.batch_size // cfg.group_size

        def draw_round(idx):  # prompts idx [n] -> (Rollout [n * G rows], rewards [N], right [N] or None)
            ro = self.generate(policy, tokenizer, [prompts[i] for i in idx], cfg, gen)
            batch_a = [answers[i] for i in idx for _ in range(G)]
            extra = {name: [col[i] for i in idx for _ in range(G)] for name, col in columns.items()}
            rewards = scores(reward_fn, "reward_fn", ro.texts, batch_a, extra)
            right = None if correct_fn is None else \
                scores(correct_fn, "correct_fn", ro.texts, batch_a, extra, dtype=None) >= 1.0
            return ro, rewards, right

        def draw(step):
            pick = lambda: self.choose(step, rng, n_prompts, len(prompts), pools)  # noqa: E731
            if cfg.dynamic_sampling:
                ro, rewards, right, counts = dynamic_batch(draw_round, pick(), pick, cfg, tokenizer.pad_token_id,
                                                           deadline)
                return Batch(ro, rewards, right, counts)
            idx = pick()
            return Batch(*draw_round(idx), {"completions_sampled": cfg.batch_size}, prompt_idx=idx)
        return draw


@dataclass
class StepRollout(GroupRollout):
    """GroupRollout plus a verdict on every step of every completion, for per-step credit (process supervision,
    DeepSeekMath arXiv 2402.03300 section 4.1.3). steps_fn(text, **columns) -> [(end, ok)] judges one completion:
    end is the character position just past a step, ok its verdict (bool or a number; e.g. Lab 06's
    utils.verifiers.traces.step_verdicts with the columns a and b). Each verdict is placed on the token holding the
    step's last character; a verdict at the end of the text goes on the completion's last token (its EOS if it
    wrote one), and two on one token count as one, the lower. The loop then trains on
    process_advantages(verdicts) + outcome_weight * the usual advantage of reward_fn (0: the steps alone).
    reward_fn still gives each completion's reward for the record. Not with dynamic sampling."""
    steps_fn: object = None
    outcome_weight: float = 1.0

    def start(self, policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn=None):
        checks.function("StepRollout", "steps_fn", self.steps_fn)
        w = checks.number("StepRollout", "outcome_weight", self.outcome_weight, lo=0)
        if cfg.dynamic_sampling:
            raise ValueError("StepRollout: per-step credit does not combine with cfg.dynamic_sampling (which keeps "
                             "groups by their completions' rewards): set dynamic_sampling=False")
        draw, columns, G = super().start(policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn), \
            dict(self.columns or {}), cfg.group_size

        def draw_steps(step):
            b = draw(step)
            cols = [{name: col[i] for name, col in columns.items()} for i in b.prompt_idx for _ in range(G)]
            b.steps = StepCredit(*token_verdicts(self.steps_fn, b.ro, tokenizer, cols), w)
            return b
        return draw_steps


@dataclass
class PrunedRollout(GroupRollout):
    """Rollout pruning: sample factor x cfg.group_size completions of each prompt, reward them all, and train on
    the cfg.group_size with the highest rewards (ties: the first drawn). The batch is the usual one, so the loop's
    advantages see groups of cfg.group_size; completions_sampled counts every completion drawn (factor x
    batch_size a step). Not with dynamic sampling."""
    factor: int = 2

    def start(self, policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn=None):
        f = checks.number("PrunedRollout", "factor", self.factor, lo=1, hi=64, integer=True)
        if cfg.dynamic_sampling:
            raise ValueError("PrunedRollout: pruning does not combine with cfg.dynamic_sampling: set one of them")
        G = cfg.group_size
        wide = replace(cfg, group_size=G * f, batch_size=cfg.batch_size * f)
        draw = super().start(policy, tokenizer, prompts, answers, reward_fn, wide, correct_fn)

        def pruned(step):
            b = draw(step)
            r = b.rewards.view(-1, G * f)                                               # [n, G * f]
            top = torch.sort(r, dim=1, descending=True, stable=True).indices[:, :G]     # [n, G]
            rows = (top.sort(1).values + torch.arange(r.shape[0])[:, None] * G * f).flatten()
            right = None if b.right is None else b.right[rows]
            return Batch(select_rows(b.ro, rows), b.rewards[rows], right,
                         {"completions_sampled": cfg.batch_size * f}, prompt_idx=b.prompt_idx)
        return pruned


@dataclass
class MixRollout(GroupRollout):
    """Several tasks in one batch (Lab 07's task mix; MT-GRPO, arXiv 2602.05547). task: one task name per prompt
    (a list aligned with the prompts, e.g. the `task` column of utils.tasks.mix.load_mix). Each step draws n_k
    prompts of task k, with replacement, n_k the batch's share of task k in groups (largest remainder; ties to the
    task named first), and the loop trains on every task's groups at once.

    shares   {task: share > 0}: each task's share of the batch's groups (normalised); None: the tasks alike
    weights  {task: w >= 0}: each task's loss weight, applied as a factor on its rows' advantages (Batch.weights);
             None: all 1. A weight changes how hard a task pulls; a share changes how many of its groups there are
    adapt    0: the shares stay fixed. > 0: they follow the tasks' training rewards, so the task doing worst gets
             the most groups: each step share_k = floor + (1 - K floor) softmax(-J_k / adapt), J_k a running mean
             (factor 0.8 a step) of task k's reward, every J_k 0.5 at the start. MT-GRPO's aim (the worst task
             first) in its simplest form; the paper also weighs each task's improvement and keeps the realised
             ratio when groups carry no signal (its ratio-preserving sampler), which this does not
    floor    with adapt > 0, the least share any task gets (0 to 1 / the number of tasks)

    Each step's record gets, per task t: share/t (its share of the groups), reward/t (the mean reward of its
    completions) and zero_spread/t (the share of its groups whose rewards are all equal: no gradient).
    Not with pools or dynamic sampling."""
    task: list | None = None
    shares: dict | None = None
    weights: dict | None = None
    adapt: float = 0.0
    floor: float = 0.05

    def choose(self, step, rng, n, n_all, pools):
        """n prompts, task by task: this step's shares (_counts) of each task's prompts, drawn with replacement."""
        by_task, state = self._mix
        return np.concatenate([by_task[t][rng.integers(0, len(by_task[t]), k)]
                               for t, k in _counts(state["shares"], n).items()])

    def start(self, policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn=None):
        where = "MixRollout"
        task = self.task
        if isinstance(task, (str, bytes, dict)) or not hasattr(task, "__len__") or len(task) != len(prompts) \
                or not all(isinstance(t, str) and t for t in task):
            raise ValueError(f"{where}: task must be a list of task names, one per prompt ({len(prompts)}), got "
                             f"{checks._short(task)}")
        names = list(dict.fromkeys(task))                               # the tasks, in order of first appearance
        for field in ("shares", "weights"):
            d = getattr(self, field)
            if d is not None and (not isinstance(d, dict) or set(d) != set(names)):
                raise ValueError(f"{where}: {field} must be a dict with one value per task {names}, got "
                                 f"{checks._short(d)}")
        shares = {t: checks.number(where, f"shares[{t!r}]", self.shares[t], lo=0, lo_open=True) for t in names} \
            if self.shares else dict.fromkeys(names, 1.0)
        weights = {t: checks.number(where, f"weights[{t!r}]", self.weights[t], lo=0) for t in names} \
            if self.weights else None
        adapt = checks.number(where, "adapt", self.adapt, lo=0)
        floor = checks.number(where, "floor", self.floor, lo=0, hi=1 / len(names))
        if self.pools is not None or cfg.dynamic_sampling:
            raise ValueError(f"{where}: the mix draws its own prompts: set pools=None and dynamic_sampling=False")
        G, n_groups = cfg.group_size, cfg.batch_size // cfg.group_size
        if n_groups < len(names):
            raise ValueError(f"{where}: {n_groups} groups a step cannot hold {len(names)} tasks: raise batch_size "
                             f"to at least {len(names) * G}")
        by_task = {t: np.flatnonzero(np.asarray(task) == t) for t in names}
        state = {"shares": _normalised(shares), "J": dict.fromkeys(names, 0.5)}
        self._mix = (by_task, state)
        draw = super().start(policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn)

        def mixed(step):
            used = dict(state["shares"])
            b = draw(step)
            rows = np.asarray(task)[np.repeat(b.prompt_idx, G)]                              # [N] task names
            r = b.rewards.view(-1, G)                                                        # [n, G]
            flat = (r.max(1).values == r.min(1).values).numpy()                               # [n]
            counts = {}
            for t in names:
                on = rows == t
                counts[f"share/{t}"] = on.mean().item()
                counts[f"reward/{t}"] = b.rewards[torch.from_numpy(on)].mean().item() if on.any() else None
                counts[f"zero_spread/{t}"] = flat[on[::G]].mean().item() if on.any() else None
                if on.any():
                    state["J"][t] = 0.8 * state["J"][t] + 0.2 * counts[f"reward/{t}"]
            if adapt > 0:
                z = np.array([-state["J"][t] / adapt for t in names])
                soft = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
                state["shares"] = {t: floor + (1 - len(names) * floor) * p for t, p in zip(names, soft)}
            b.counts = dict(b.counts, **counts, **{f"target_share/{t}": v for t, v in used.items()})
            if weights is not None:
                w = torch.tensor([weights[t] for t in rows], dtype=torch.float32)             # [N]
                b.weights = w[:, None].expand_as(b.ro.completion_mask).to(b.ro.completion_ids.device)
            return b
        return mixed


@dataclass
class ToolRollout(GroupRollout):
    """GroupRollout whose completions are episodes with a tool (Lab 09): each batch is sampled with a fresh
    utils.tasks.tools.Calculator as the environment (policy.sample(env=...)), so the calculator's answers are in
    the completions (read by the model and the verifier) and out of the loss (ro.loss_mask). max_calls: the calls
    an episode may make; the next one ends it (a cut). Each step's record gets the tool numbers (Calculator.stats:
    tool_calls, tool_error_frac, tool_cut_frac). table: the lookup's facts (Calculator(table=...); None: the
    calculator alone)."""
    max_calls: int = 2
    table: dict = None

    def generate(self, policy, tokenizer, prompts, cfg, generator):
        from utils.tasks.tools import Calculator
        env = Calculator(tokenizer, len(prompts) * cfg.group_size, self.max_calls, table=self.table)
        ro = sample(policy, tokenizer, prompts, k=cfg.group_size, temperature=cfg.temperature,
                    max_new_tokens=cfg.max_new_tokens, generator=generator, env=env)
        self._stats = env.stats()
        return ro

    def start(self, policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn=None):
        checks.number("ToolRollout", "max_calls", self.max_calls, lo=0, hi=100, integer=True)
        if cfg.dynamic_sampling:
            raise ValueError("ToolRollout: set dynamic_sampling=False (its refills would mix several batches' tool "
                             "numbers)")
        draw = super().start(policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn)

        def episodes(step):
            b = draw(step)
            b.counts = dict(b.counts, **self._stats)
            return b
        return episodes


def _normalised(d):
    total = sum(d.values())
    return {k: v / total for k, v in d.items()}


def _counts(shares, n):
    """n split by shares (largest remainder; ties to the key named first): {key: count}, counts summing to n."""
    exact = {k: v * n for k, v in _normalised(shares).items()}
    out = {k: int(np.floor(v)) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: -(exact[k] - out[k]))[:n - sum(out.values())]:
        out[k] += 1
    return out


SAMPLER_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
CORRECTIONS = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")  # TRL's IS modes
RECOMPUTE = "recompute"   # StaleRollout's correction without weights: TRL's vllm_importance_sampling_correction=False


@dataclass
class StaleRollout(GroupRollout):
    """GroupRollout whose completions come from a sampler `lag` optimizer steps behind the policy it trains, as in
    an asynchronous pipeline (TRL's AsyncGRPOTrainer, max_staleness), optionally held in a lower precision
    (sampler_dtype "bfloat16" or "float16": an inference engine's numbers, the training-inference mismatch).

    The sampler is a copy of the policy; before step s it gets the policy's weights of step max(0, s - lag)
    (lag 0: this step's, the on-policy loop), cast to its dtype. Each step also measures how far the policy is
    from the sampler on the batch (one forward pass of the policy, no gradient), into the step's record:
    staleness (steps behind), stale_abs_log_ratio (mean |log pi_policy - log pi_sampler| a token), stale_kl
    (KL(sampler || policy) a token, the k3 estimate r - 1 - log r on the sampler's tokens, r = pi_policy / pi_sampler),
    stale_ratio_out (share of tokens whose ratio pi_policy / pi_sampler lies outside [1 - eps_low, 1 + eps_high]),
    sample_seconds (the sampling and rewarding alone, for a pipeline model: utils.rl.staleness.step_seconds) and
    measure_seconds (the policy's forward pass on the batch: a correction needs it, as TRL recomputes the old
    log-probs; uncorrected it only measures).

    correction None: ro.logprobs are the sampler's, so the loss's clipped ratio divides by the behaviour policy
    and the staleness and the mismatch land in the clip. correction one of CORRECTIONS (TRL's
    vllm_importance_sampling_mode, with is_max and is_min as its clip_max and clip_min): ro.logprobs are the
    learner's own at batch time (as TRL recomputes old_per_token_logps), so the clip starts at ratio 1, and each
    token's loss is weighted by the importance ratio w = pi_policy / pi_sampler, per token or per sequence (the
    product over its tokens), truncated to [is_min, is_max] or set to 0 outside it (masked). Batch.advantages
    applies w as a factor on the advantages (Batch.weights), which for w >= 0 is the same as weighting each token's
    policy loss, as TRL does (trl 1.16's _compute_loss multiplies the policy term by the weights and adds the KL term
    unweighted, so beta > 0 is fine). VESPO takes no importance weights here: TRL folds the weights into VESPO's own
    sequence weight instead of multiplying the loss.

    correction "recompute" (RECOMPUTE): TRL's own arm with no correction, vllm_importance_sampling_correction=False.
    ro.logprobs are the learner's own at batch time, as under a correction, and no weight is applied: the clip
    starts at ratio 1 against the policy of the batch's first update and the sampler's distance is ignored
    (correction None keeps the sampler's log-probs as old instead, so the distance lands in the clip).

    off_policy_mask_threshold (None: off): DeepSeek-V3.2's off-policy sequence masking (arXiv 2512.02556, eq. 9;
    TRL's off_policy_mask_threshold, get_off_policy_mask): a sequence whose advantage is negative and whose mean over
    its tokens of log pi_sampler - log pi_policy exceeds the threshold leaves the loss (off_policy_sequences marks
    them, Batch.advantages zeroes their negative advantages). With any correction or none, it reads the sampler's
    log-probs, as TRL reads vLLM's. It is measured once, against the policy at batch time: with one update a batch
    that is the policy TRL scores (its per_token_logps), so the mask is TRL's. With several updates a batch TRL
    recomputes the mask before each update from the policy as it moves, so a sequence that crosses the threshold
    during the batch's updates leaves TRL's later updates and stays in ours (the batch-time distance is
    lag x updates_per_batch updates; the batch's own updates add up to updates_per_batch - 1 more). Each step's
    record gets opsm_over_frac (the share of sequences past the threshold, either sign) and opsm_dropped_frac."""
    lag: int = 0
    sampler_dtype: str = "float32"
    correction: str | None = None
    is_max: float | None = 3.0     # TRL's vllm_importance_sampling_clip_max default
    is_min: float | None = None
    off_policy_mask_threshold: float | None = None

    def start(self, policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn=None):
        lag = checks.number("StaleRollout", "lag", self.lag, lo=0, hi=1000, integer=True)
        if self.sampler_dtype not in SAMPLER_DTYPES:
            raise ValueError(f"StaleRollout: sampler_dtype must be one of {sorted(SAMPLER_DTYPES)}, got "
                             f"{checks._short(self.sampler_dtype)}")
        if self.correction is not None and self.correction not in (RECOMPUTE, *CORRECTIONS):
            raise ValueError(f"StaleRollout: correction must be None or one of {(RECOMPUTE, *CORRECTIONS)}, got "
                             f"{checks._short(self.correction)}")
        weighted = self.correction in CORRECTIONS
        opsm = None if self.off_policy_mask_threshold is None else checks.number(
            "StaleRollout", "off_policy_mask_threshold", self.off_policy_mask_threshold, lo=0)
        hi = None if self.is_max is None else checks.number("StaleRollout", "is_max", self.is_max, lo=0, lo_open=True)
        lo = None if self.is_min is None else checks.number("StaleRollout", "is_min", self.is_min, lo=0)
        if lo is not None and hi is not None and lo >= hi:
            raise ValueError(f"StaleRollout: is_min ({lo}) must be below is_max ({hi})")
        if weighted and cfg.loss_type == "vespo":
            raise ValueError("StaleRollout: loss_type='vespo' takes no correction here (TRL folds the importance "
                             "weights into VESPO's own sequence weight, which this loop does not model): set "
                             "correction=None, or pick another loss_type")
        checks.model("StaleRollout", "policy", policy)
        sampler = cast(policy, self.sampler_dtype)
        weights = deque(maxlen=lag + 1)   # the policy's weights of the last lag + 1 steps, oldest first
        draw = super().start(sampler, tokenizer, prompts, answers, reward_fn, cfg, correct_fn)

        def stale(step):
            weights.append({k: v.detach().clone() for k, v in policy.state_dict().items()})
            sampler.load_state_dict(weights[0])                        # the policy of step - lag (or of the start)
            t = time.perf_counter()
            b = draw(step)
            sampled_s = time.perf_counter() - t
            ro = b.ro
            t = time.perf_counter()
            logp, d, m = policy_log_ratio(policy, ro, cfg.temperature, ro.loss_mask)      # [N, T] each
            n = m.sum().clamp(min=1)
            out = ((d.exp() < 1 - cfg.eps_low) | (d.exp() > 1 + cfg.eps_high)).float() * m
            b.counts = dict(b.counts, staleness=len(weights) - 1, stale_abs_log_ratio=(d.abs().sum() / n).item(),
                            stale_kl=(((d.exp() - 1 - d) * m).sum() / n).item(),
                            stale_ratio_out=(out.sum() / n).item(), sample_seconds=sampled_s,
                            measure_seconds=time.perf_counter() - t)
            if opsm is not None:   # DeepSeek-V3.2's mask, against the policy now (before this batch's updates)
                b.off_policy = off_policy_sequences(d, m, opsm)
                b.counts["opsm_over_frac"] = b.off_policy.float().mean().item()
            if self.correction is None:
                b.ro = replace(ro, logprobs=ro.logprobs.float())
                return b
            b.ro = replace(ro, logprobs=logp * m)
            if weighted:
                b.weights = importance_weights(d, m, self.correction, lo, hi)
                b.counts["is_weight_mean"] = ((b.weights * m).sum() / n).item()
            return b
        return stale


def cast(policy, dtype):
    """A frozen copy of `policy` in dtype ("float32", "bfloat16" or "float16"): StaleRollout's sampler."""
    checks.model("cast", "policy", policy)
    if not isinstance(dtype, str) or dtype not in SAMPLER_DTYPES:
        raise ValueError(f"cast: dtype must be one of {sorted(SAMPLER_DTYPES)}, got {checks._short(dtype)}")
    return copy.deepcopy(policy).eval().requires_grad_(False).to(SAMPLER_DTYPES[dtype])


def policy_log_ratio(policy, ro, temperature=1.0, mask=None):
    """How far `policy` is from the sampler that wrote the Rollout ro, token by token: (logp [N, T], the policy's
    log-probs of ro's tokens from one forward pass without gradient; log_ratio [N, T] = logp - ro.logprobs, the log
    of the importance ratio pi_policy / pi_sampler, 0 off the mask; mask [N, T] float: `mask`, or the completion's
    tokens when None)."""
    with torch.no_grad():
        logp, _ = completion_logprobs(policy, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask,
                                      temperature)                                  # [N, T]
    m = (ro.completion_mask if mask is None else mask).float()                      # [N, T]
    return logp, (logp - ro.logprobs.float()) * m, m


def importance_weights(log_ratio, mask, mode, lo=None, hi=None):
    """TRL's importance-sampling correction of a sampler's mismatch (vllm_importance_sampling_mode): log_ratio
    [N, T] = log pi_policy - log pi_sampler on the tokens with loss (mask [N, T], 0 elsewhere) -> weights [N, T]
    (0 off the mask). token_*: each token's ratio; sequence_*: the sequence's, exp(sum of its log-ratios), on all
    its tokens. *_truncate: clipped to [lo, hi]; *_mask: 0 outside [lo, hi] (a bound None is no bound).
    E.g. log-ratios [log 4, 0] and hi 3: token_truncate [3, 1], token_mask [0, 1], sequence_truncate [3, 3],
    sequence_mask [0, 0]."""
    if not isinstance(mode, str) or mode not in CORRECTIONS:
        raise ValueError(f"importance_weights: mode must be one of {CORRECTIONS}, got {checks._short(mode)}")
    if not isinstance(log_ratio, torch.Tensor) or log_ratio.dim() != 2 or not log_ratio.is_floating_point():
        raise ValueError(f"importance_weights: log_ratio must be a [N, T] float tensor, got {checks._short(log_ratio)}")
    if not isinstance(mask, torch.Tensor) or mask.shape != log_ratio.shape:
        raise ValueError(f"importance_weights: mask must be a tensor of log_ratio's shape {tuple(log_ratio.shape)}, "
                         f"got {checks._short(mask)}")
    lo, hi = (None if v is None else checks.number("importance_weights", name, v, lo=0)
              for name, v in (("lo", lo), ("hi", hi)))
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"importance_weights: lo={lo} must be <= hi={hi}: the weights are kept within [lo, hi]")
    m = mask.float()
    if torch.isnan(log_ratio[m != 0]).any():
        raise ValueError("importance_weights: log_ratio holds NaN on the mask: a token with loss has no ratio")
    lr = torch.where(m != 0, log_ratio * m, 0.0)   # padding's value (even -inf or NaN) never enters a sum
    r = torch.exp(lr.sum(1, keepdim=True)).expand_as(lr) if mode.startswith("sequence") else torch.exp(lr)  # [N, T]
    if mode.endswith("truncate"):
        r = r.clamp(min=lo, max=hi)
    else:
        bad = torch.zeros_like(r, dtype=torch.bool)
        if lo is not None:
            bad |= r < lo
        if hi is not None:
            bad |= r > hi
        r = r.masked_fill(bad, 0.0)
    return r * m


def off_policy_sequences(log_ratio, mask, threshold):
    """The sequences that DeepSeek-V3.2's off-policy sequence masking (arXiv 2512.02556, eq. 9; TRL's
    get_off_policy_mask) drops where their advantage is negative: log_ratio [N, T] = log pi_policy - log pi_sampler
    on the tokens with loss (mask [N, T]) -> [N] bool, True where the sequence's mean over its tokens of
    log pi_sampler - log pi_policy (a one-sample estimate of KL(sampler || policy) a token) exceeds threshold (>= 0).
    Padding's values never count; a row with no token has mean 0. E.g. log-ratios [-0.6, -0.2] and [0.4, -0.2]
    with threshold 0.3: means 0.4 and -0.1 -> [True, False]. TRL keeps a sequence where (A >= 0) or (mean <=
    threshold): the mask is (adv >= 0) | ~off_policy_sequences(...), applied by Batch.advantages."""
    if not isinstance(log_ratio, torch.Tensor) or log_ratio.dim() != 2 or not log_ratio.is_floating_point():
        raise ValueError(f"off_policy_sequences: log_ratio must be a [N, T] float tensor, got "
                         f"{checks._short(log_ratio)}")
    if not isinstance(mask, torch.Tensor) or mask.shape != log_ratio.shape:
        raise ValueError(f"off_policy_sequences: mask must be a tensor of log_ratio's shape {tuple(log_ratio.shape)}, "
                         f"got {checks._short(mask)}")
    threshold = checks.number("off_policy_sequences", "threshold", threshold, lo=0)
    m = mask.to(log_ratio.dtype)
    if torch.isnan(log_ratio[m != 0]).any():
        raise ValueError("off_policy_sequences: log_ratio holds NaN on the mask: a token with loss has no ratio")
    lr = torch.where(m != 0, log_ratio * m, 0.0)                               # [N, T], padding 0
    kl = -lr.sum(1) / m.sum(1).clamp(min=1)                                    # [N] mean log pi_s - log pi_policy
    return kl > threshold


def token_verdicts(steps_fn, ro, tokenizer, columns):
    """StepRollout's placing of verdicts on tokens: (rewards [N, T] float32, mask [N, T] bool). columns: one dict
    of keyword arguments for steps_fn per completion. A verdict's token is the first whose text reaches the
    verdict's end (the tokens' texts, decoded one by one, must spell the completion's text)."""
    N, T = ro.completion_ids.shape
    rewards, mask = torch.zeros(N, T), torch.zeros(N, T, dtype=torch.bool)
    piece = {}
    for i in range(N):
        n = int(ro.completion_mask[i].sum())
        ids = ro.completion_ids[i, :n].tolist()
        for t in ids:
            if t not in piece:
                piece[t] = tokenizer.decode([t], skip_special_tokens=True)
        ends = np.cumsum([len(piece[t]) for t in ids]) if ids else np.zeros(0, dtype=int)
        text = ro.texts[i]
        if "".join(piece[t] for t in ids) != text:
            raise ValueError("StepRollout: this tokenizer's tokens, decoded one by one, do not spell the completion's "
                             f"text ({text[:40]!r}), so a step cannot be placed on its tokens")
        verdicts = steps_fn(text, **columns[i])
        if not isinstance(verdicts, (list, tuple)):
            raise ValueError(f"StepRollout: steps_fn must return a list of (end, ok) pairs, got "
                             f"{checks._short(verdicts)} for completion {i}")
        for v in verdicts:
            if not (isinstance(v, (list, tuple)) and len(v) == 2 and isinstance(v[0], (int, np.integer))
                    and not isinstance(v[0], bool) and 0 <= v[0] <= len(text)):
                raise ValueError(f"StepRollout: steps_fn's verdicts must be (end, ok) pairs with 0 <= end <= "
                                 f"len(text) = {len(text)}, got {checks._short(v)} for completion {i}")
            ok = float(v[1]) if isinstance(v[1], (bool, np.bool_)) else \
                checks.number("StepRollout", f"steps_fn's verdict for completion {i}", v[1])
            if n == 0:
                continue
            t = n - 1 if v[0] >= len(text) else min(int(np.searchsorted(ends, v[0])), n - 1)
            rewards[i, t] = min(rewards[i, t].item(), ok) if mask[i, t] else ok
            mask[i, t] = True
    return rewards, mask


def _pools(pools, steps, n_prompts):
    """GroupRollout's pools as integer arrays, after checking: one non-empty array of prompt indices per step."""
    bad = ValueError(f"pools must hold a non-empty array of prompt indices (0..{n_prompts - 1}) for each of the "
                     f"{steps} steps, as curation.level_pools gives; got {checks._short(pools)}")
    if isinstance(pools, (str, bytes, dict)) or not isinstance(pools, (list, tuple)) or len(pools) < steps:
        raise bad
    out = []
    for p in pools:
        try:
            p = np.asarray(p)
        except (TypeError, ValueError):
            raise bad from None
        if p.ndim != 1 or p.size == 0 or p.dtype.kind not in "iu" or p.min() < 0 or p.max() >= n_prompts:
            raise bad
        out.append(p.astype(int))
    return out


def scores(fn, role, texts, answers, columns, dtype=torch.float32):
    """fn(texts, answers, **columns) as a tensor [N] (of dtype; None: as torch infers it), checked
    (checks.reward_scores)."""
    out = checks.reward_scores(fn, role, texts, answers, columns)
    return torch.tensor(out, dtype=dtype) if dtype else torch.tensor(out)


def dynamic_batch(draw, idx, pick, cfg, pad_id, deadline=None):
    """DAPO's dynamic sampling (arXiv 2503.14476): keep only groups whose rewards differ (a group whose
    completions all score alike has advantage 0 and teaches nothing), and draw more prompts until the batch
    holds batch_size / group_size such groups, or cfg.max_sampling_rounds rounds have been drawn, or the clock
    passed `deadline` (time.time(); train_grpo's cfg.max_seconds: no refill outlasts the run's time limit).

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
        if used < len(parts) or len(kept) >= n_prompts or len(parts) >= cfg.max_sampling_rounds or \
                (deadline is not None and time.time() >= deadline):
            break
        idx = pick()
    rounds = len(parts)
    alike = sum(int(zero_spread(r, G).sum()) for _, r, _ in parts)
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
    if isinstance(round_rewards, (str, bytes, dict)) or not isinstance(round_rewards, (list, tuple)):
        raise ValueError(f"fill_batch: round_rewards must be a list of [n * G] reward tensors, one per round, got "
                         f"{checks._short(round_rewards)}")
    for i, r in enumerate(round_rewards):
        if not isinstance(r, torch.Tensor) or r.dim() != 1:
            raise ValueError(f"fill_batch: round_rewards[{i}] must be a [n * G] tensor of one round's rewards, got "
                             f"{checks._short(r)}")
    G = checks.number("fill_batch", "G", G, lo=1, integer=True)
    n_groups = checks.number("fill_batch", "n_groups", n_groups, lo=1, integer=True)
    kept = []
    for r, rewards in enumerate(round_rewards):
        for g in (~zero_spread(rewards, G)).nonzero().flatten().tolist():         # groups whose rewards differ
            kept.append((r, g))
            if len(kept) == n_groups:
                return kept, r + 1
    return kept, len(round_rewards)
