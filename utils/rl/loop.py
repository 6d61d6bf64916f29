"""Our GRPO training loop, top to bottom: rollout -> advantage -> update -> record.
The maths it calls is grpo.py; how a batch of completions is made is rollout.py; the held-out numbers it
records come from utils/eval/metrics.py, as TRL's run does (trl_trainer.py)."""
import contextlib
import copy
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from utils import checks
from utils.eval.metrics import eval_sets_of, heldout_keys, heldout_metrics
from utils.models.policy import completion_logprobs, fits, masked_mean
from utils.rl.grpo import (
    GRPOConfig,
    group_advantages,
    high_entropy_mask,
    loss_stats,
    policy_loss,
    zero_spread,
)
from utils.rl.rollout import GroupRollout


def train_grpo(policy, tokenizer, prompts, answers, reward_fn, cfg, eval_prompts=None, eval_answers=None,
               ref=None, loss_fn=policy_loss, advantage_fn=group_advantages, progress=True, callback=None,
               eval_rewards=None, eval_sets=None, correct_fn=None, rollout=None):
    """Train `policy` in place with GRPO (arXiv 2402.03300). Returns the history, one dict per step.

    Each step: 1-2. the rollout draws prompts from prompts/answers, samples cfg.group_size completions of each
    and rewards them with reward_fn(completions, answer, **kw) -> list[float] (rollout.py: GroupRollout() by
    default; GroupRollout(columns=, pools=) for extra reward inputs and curricula; your own for other
    samplers); 3. group-relative advantages (advantage_fn), with what the rollout adds (Batch.advantages: per-step
    credit, weights); 4. cfg.updates_per_batch clipped updates (loss_fn: the lab's exercises plug in here and
    above); 5. the record (step_record; every cfg.eval_every steps and at the end, heldout_metrics on
    eval_prompts/eval_answers, eval_sets {name: (prompts, answers)} and eval_rewards {name: reward_fn}).
    correct_fn (default: reward >= 1 in training, the strict verifier held out) judges a completion right (held
    out it gets only completions and answers, and its mean is the pass@1). rollout is an object with start()
    (rollout.py), not a policy.Rollout; ref is the frozen reference for the KL (default: a copy of policy as it
    starts); progress: True, False or the bar's label. callback(policy, record) runs after each step; a dict it
    returns joins the record.
    Stops after cfg.steps, or once cfg.max_completions completions were sampled or cfg.max_seconds passed.
    """
    eval_sets = _check_args(policy, tokenizer, reward_fn, cfg, ref, loss_fn, advantage_fn, callback, eval_rewards,
                            correct_fn, rollout, eval_prompts, eval_answers, eval_sets)
    torch.manual_seed(cfg.seed)
    draw = (rollout or GroupRollout()).start(policy, tokenizer, prompts, answers, reward_fn, cfg, correct_fn)
    if ref is None and (cfg.beta > 0 or cfg.track_kl):  # frozen reference: the policy before training
        ref = copy.deepcopy(policy).eval().requires_grad_(False)
    policy.eval()  # no dropout: the policy that is trained is the one that sampled
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=0.0)
    # linear warm-up from lr/warmup to lr, then constant (TRL's "constant_with_warmup")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (cfg.warmup_steps + 1)))
    history, clock = [], Budget(cfg)
    # mininterval and refresh=False keep widget traffic low: a Jupyter kernel drops messages
    # past ~2000 queued ones, which makes headless runners (nbval) lose the end of a cell.
    bar = tqdm(total=cfg.steps, desc=progress if isinstance(progress, str) else "GRPO", disable=not progress,
               mininterval=1.0)
    with keep_history(history, cfg), bar:  # an error or an interrupt mid-run carries the steps done
        for step in range(cfg.steps):
            b = draw(step)                                                          # 1-2. sample, reward
            adv = advantage_fn(b.rewards, cfg.group_size, cfg.scale_std, cfg.baseline)  # 3. advantage [N]
            adv = b.advantages(adv, cfg)     # and what the rollout adds (per-step credit, weights): [N] or [N, T]
            ref_logp = reference_logprobs(ref, b.ro, cfg)                           # [N, T]
            for _ in range(cfg.updates_per_batch):                                  # 4. update
                loss, stats, ent = update(policy, opt, b.ro, adv, ref_logp, cfg, loss_fn)
            sched.step()
            rec = step_record(step + 1, b.rewards, b.ro, loss, stats, ent, cfg, b.right) | b.counts | \
                heldout_keys(eval_sets, eval_rewards)                              # 5. record
            stop = clock.spent(rec)
            if step + 1 == cfg.steps or stop or (cfg.eval_every and (step + 1) % cfg.eval_every == 0):
                with clock.evaluating():
                    rec.update(heldout_metrics(policy, tokenizer, eval_sets, eval_rewards, cfg.eval_n,
                                               cfg.temperature, cfg.max_new_tokens, correct_fn))
            rec["seconds"] = time.time() - clock.t0
            if callback:
                extra = callback(policy, rec)
                if extra and not isinstance(extra, dict):
                    raise ValueError(f"train_grpo: callback must return a dict (it joins the step's record) or None, "
                                     f"got {checks._short(extra)}")
                rec.update(extra or {})
            history.append(rec)
            bar.set_postfix(reward=f"{rec['reward_mean']:.2f}", ent=f"{rec['entropy']:.2f}", refresh=False)
            bar.update(1)
            if stop:  # the bar ends complete, with the reason in its label (a narrow terminal trims the tail)
                if not bar.disable:   # a disabled bar has no label
                    bar.set_description(f"{bar.desc.removesuffix(': ')} (stopped by its {stop})", refresh=False)
                start = getattr(bar, "start_t", None)  # reset() restarts the clock: the rate would read 1000s it/s
                bar.reset(total=step + 1)
                if start is not None:
                    bar.start_t = bar.last_print_t = start
                bar.update(step + 1)
                break
    return history


def _check_args(policy, tokenizer, reward_fn, cfg, ref, loss_fn, advantage_fn, callback, eval_rewards, correct_fn,
                rollout, eval_prompts, eval_answers, eval_sets):
    """train_grpo's arguments checked before any training: ValueError naming the one to fix. Returns the held-out
    sets {name: (prompts, answers)} (eval_sets_of), each checked to fit the policy's context."""
    where = "train_grpo"
    if not isinstance(cfg, GRPOConfig):
        raise ValueError(f"train_grpo: cfg must be a GRPOConfig, got {checks._short(cfg)}")
    cfg.validate()
    checks.model(where, "policy", policy)
    checks.tokenizer(where, "tokenizer", tokenizer)
    if ref is not None:
        checks.model(where, "ref", ref)
    for name, fn in (("reward_fn", reward_fn), ("loss_fn", loss_fn), ("advantage_fn", advantage_fn)):
        checks.function(where, name, fn)
    for name, fn in (("correct_fn", correct_fn), ("callback", callback)):
        checks.function(where, name, fn, none=True)
    checks.function_dict(where, "eval_rewards", eval_rewards)
    if rollout is not None and (isinstance(rollout, type) or not callable(getattr(rollout, "start", None))):
        raise ValueError(f"{where}: rollout must be None or an object with a start() method (utils/rl/rollout.py: "
                         f"GroupRollout(), an instance), got {checks._short(rollout)}")
    if cfg.ratio_level != "token" and not _takes(loss_fn, "level"):  # the keywords the loss gets from cfg
        raise ValueError(f"train_grpo: cfg.ratio_level={cfg.ratio_level!r} passes loss_fn a keyword `level`, and "
                         f"{getattr(loss_fn, '__name__', 'loss_fn')} takes none: give it a level='token' parameter "
                         f"(see grpo.policy_loss) or set ratio_level='token'")
    for name in cfg.objective_params():
        if not _takes(loss_fn, name):
            why, or_else = (f"cfg.delta={cfg.delta!r}", "set delta=None") if name == "delta" else \
                (f"cfg.loss_type={cfg.loss_type!r}", "pick another loss_type")
            raise ValueError(f"train_grpo: {why} passes loss_fn the keyword `{name}`, and "
                             f"{getattr(loss_fn, '__name__', 'loss_fn')} takes none: give it **params and pass them "
                             f"on to grpo.per_token_loss (see grpo.policy_loss), or {or_else}")
    eval_sets = eval_sets_of(eval_prompts, eval_answers, eval_sets)
    for name, (ps, _) in eval_sets.items():  # a held-out set that cannot be sampled fails now, not at its evaluation
        fits("train_grpo", "eval_prompts" if name == "heldout" else f"eval_sets[{name!r}] prompts", policy, tokenizer,
             list(ps)[:cfg.eval_n], cfg.max_new_tokens)
    return eval_sets


def _takes(fn, name):
    """Whether fn accepts the keyword argument `name` (by name or through **kwargs)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return True
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in params)


@contextlib.contextmanager
def keep_history(history, cfg):
    """On an error or an interrupt mid-run, nothing is lost: the steps done so far go on the exception
    (error.history) and its note says where the run stopped. The policy keeps every update up to there; a
    step whose loss is not finite applies none (update)."""
    try:
        yield
    except BaseException as e:
        e.history = history
        if hasattr(e, "add_note"):
            e.add_note(f"train_grpo stopped in step {len(history) + 1} of {cfg.steps}: the {len(history)} steps "
                       f"done are on this error's .history, and the policy holds their updates")
        raise


class Budget:
    """The run's clock and its limits beyond cfg.steps: cfg.max_completions completions sampled (a compute
    budget) or cfg.max_seconds of wall time. spent(rec) counts the step's completions_sampled, sets
    rec["train_seconds"] (time so far, held-out evaluation excluded) and names the limit reached ('' if none)."""

    def __init__(self, cfg):
        self.cfg, self.t0, self.eval_time, self.sampled = cfg, time.time(), 0.0, 0

    def spent(self, rec):
        if not isinstance(rec.get("completions_sampled"), int):
            raise ValueError("the rollout's Batch.counts must hold completions_sampled, the number of completions "
                             "drawn this step (an int; utils/rl/rollout.py has the contract)")
        self.sampled += rec["completions_sampled"]
        c = self.cfg
        out = "time limit" if c.max_seconds and time.time() - self.t0 >= c.max_seconds else \
            "completion budget" if c.max_completions and self.sampled >= c.max_completions else ""
        rec["train_seconds"] = time.time() - self.t0 - self.eval_time
        return out

    @contextlib.contextmanager
    def evaluating(self):
        """A context whose time does not count as training time."""
        t = time.time()
        try:
            yield
        finally:
            self.eval_time += time.time() - t


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
    """One optimizer step on rollout `ro` with advantages adv [N] (or [N, T], one per token). Returns (loss,
    stats, entropy [N, T]).
    With cfg.top_entropy_frac < 1 the loss sees only the highest-entropy tokens; with cfg.entropy_coef
    > 0 it gets an entropy bonus; with cfg.mask_truncated the truncated completions are left out of the
    loss (their rows of the mask are zeroed; they still count in the group's advantages).
    stats (loss_stats) are measured on the tokens the loss used."""
    logp, ent = completion_logprobs(policy, ro.prompt_ids, ro.prompt_mask, ro.completion_ids, ro.completion_mask,
                                    cfg.temperature, entropy_grad=cfg.entropy_coef > 0)  # [N, T] each
    own = ro.completion_mask if ro.loss_mask is None else ro.loss_mask                   # [N, T] tokens with loss
    mask = own
    if cfg.mask_truncated and ro.truncated is not None:  # overlong filtering: cut rows out
        mask = mask * (~ro.truncated).to(mask.dtype)[:, None]
    mask = high_entropy_mask(ent.detach(), mask, cfg.top_entropy_frac)                  # [N, T]
    level = {} if cfg.ratio_level == "token" else {"level": cfg.ratio_level}  # a 10-argument loss_fn still fits
    loss = loss_fn(logp, ro.logprobs, ref_logp, adv, mask, cfg.eps_low, cfg.eps_high, cfg.beta,
                   cfg.loss_type, cfg.max_new_tokens, **level, **cfg.objective_params())
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise ValueError(f"train_grpo: loss_fn must return the loss as one number (a 0-dim tensor), got "
                         f"{tuple(loss.shape) if isinstance(loss, torch.Tensor) else checks._short(loss)}")
    if cfg.entropy_coef > 0:
        loss = loss - cfg.entropy_coef * masked_mean(ent, own)
    if not torch.isfinite(loss):
        raise FloatingPointError(f"the loss is {loss.item()}: no update applied (the policy keeps the last finite "
                                 f"step's weights); look for NaN or inf in the log-probs or the loss function")
    opt.zero_grad()
    loss.backward()
    if cfg.max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
    opt.step()
    stats = loss_stats(logp.detach(), ro.logprobs, ref_logp, adv, mask, cfg.eps_low, cfg.eps_high, cfg.ratio_level,
                       cfg.loss_type, cfg.cispo_cap, cfg.delta)
    return loss.detach(), stats, ent.detach()


def step_record(step, rewards, ro, loss, stats, ent, cfg, right=None):
    """One step's training numbers (see train_grpo); rewards [N] in groups of cfg.group_size, right [N]
    bool (default: reward >= 1). A length over no completions (none right, say) is None, not 0."""
    G = cfg.group_size
    rg = rewards.view(-1, G)                                                   # [n_prompts, G]
    lengths = ro.completion_mask.sum(1).float()                                # [N] tokens, EOS included
    right = (rewards >= 1.0 if right is None else right).to(lengths.device)
    truncated = ro.truncated
    return {
        "step": step,
        "reward_mean": rewards.mean().item(),
        "reward_std": rewards.std(unbiased=False).item(),
        "zero_spread_frac": zero_spread(rewards, G).float().mean().item(),
        "group_reward_std": rg.std(1, unbiased=False).mean().item(),      # mean within-group spread
        "distinct_answers": float(np.mean([len({t.strip() for t in ro.texts[i:i + G]})
                                           for i in range(0, len(ro.texts), G)])),  # of G per group
        "entropy": masked_mean(ent, ro.completion_mask).item(),
        "kl": stats["kl"] if cfg.beta > 0 or cfg.track_kl else None,
        "clip_frac": stats["clip_frac"],
        **({"delta_frac": stats["delta_frac"]} if "delta_frac" in stats else {}),   # only with cfg.delta
        "completion_len": lengths.mean().item(),
        "completion_len_right": _mean_or_none(lengths[right]),
        "completion_len_wrong": _mean_or_none(lengths[~right]),
        "truncated_frac": truncated.float().mean().item() if truncated is not None else None,
        "loss": loss.item(),
    }


def _mean_or_none(x):
    """The mean of a 1-D tensor as a float, None when it is empty."""
    return x.mean().item() if x.numel() else None
