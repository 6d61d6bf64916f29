"""Lab 06-07's runs: a fresh trace model trained with GRPO on one reward, then judged by numbers that reward does
not see (utils.eval.traces). benchmarks/lab06.py, benchmarks/lab07.py and the notebooks share it."""
import copy
import time
from dataclasses import asdict

from utils import checks
from utils.eval.traces import check_cap, rows_of, trace_metrics
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.rollout import GroupRollout, PrunedRollout, StepRollout
from utils.verifiers.traces import outcome_reward


def train_on_traces(base, tokenizer, reward_fn, cfg, train, test, eval_k=4, progress=True, pools=None, steps_fn=None,
                    outcome_weight=1.0, prune=1):
    """Train a copy of `base` with GRPO on `reward_fn` (a trace verifier) over the scratchpad split `train`, its
    columns a and b passed to the reward. A completion counts as right when its answer is (outcome_reward), and
    the held-out pass@1 curve is the outcome on `test`'s first cfg.eval_n problems, whatever the reward. Checks
    the cap first (check_cap). progress: True, False, or the progress bar's label (a str). pools: GroupRollout's
    (one array of indices into `train` per step: Lab 07's curriculum). steps_fn (e.g. traces.step_verdicts):
    per-step credit (rollout.StepRollout), added to outcome_weight times reward_fn's advantage. prune > 1: sample
    prune x group_size completions a prompt and train on the best group_size (rollout.PrunedRollout). Returns
    dict(config, seconds, history, final: trace_metrics on all of `test` with eval_k samples each, seed 0,
    and the model)."""
    where = "train_on_traces"
    checks.model(where, "base", base)
    checks.tokenizer(where, "tokenizer", tokenizer)
    if not isinstance(cfg, GRPOConfig):
        raise ValueError(f"{where}: cfg must be a GRPOConfig, got {checks._short(cfg)}")
    cfg.validate()
    rows_of(where, train, ("prompt", "answer", "a", "b"), name="train")
    rows_of(where, test, ("prompt", "answer", "a", "b"), name="test")
    eval_k = checks.number(where, "eval_k", eval_k, lo=1, hi=100_000, integer=True)
    check_cap(cfg.max_new_tokens, tokenizer, train)
    model = copy.deepcopy(base)
    t = time.time()
    columns = {"a": list(train["a"]), "b": list(train["b"])}
    if steps_fn is not None and prune != 1:
        raise ValueError("train_on_traces: give steps_fn or prune, not both")
    rollout = StepRollout(columns=columns, pools=pools, steps_fn=steps_fn, outcome_weight=outcome_weight) \
        if steps_fn is not None else PrunedRollout(columns=columns, pools=pools, factor=prune) if prune != 1 \
        else GroupRollout(columns=columns, pools=pools)
    label = f"GRPO on {getattr(reward_fn, '__name__', 'the reward')}" if progress is True else progress
    hist = train_grpo(model, tokenizer, train["prompt"], train["answer"], reward_fn, cfg,
                      eval_prompts=test["prompt"], eval_answers=test["answer"], progress=label,
                      correct_fn=outcome_reward, rollout=rollout)
    seconds = time.time() - t
    final = trace_metrics(model, tokenizer, test, k=eval_k, max_new_tokens=cfg.max_new_tokens)
    return {"config": asdict(cfg), "seconds": seconds, "history": hist, "final": final, "model": model}
