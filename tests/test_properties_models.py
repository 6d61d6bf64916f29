"""Property-based checks of the public functions that take a model (hypothesis), as tests/test_properties.py
does for those that take none: for each function below, one argument at a time is replaced by a random bad
value (test_properties.BAD, plus the mistakes of this kind of call: one string for a list of prompts, a
prompt longer than the model's 32 positions, answers of another length, k=0, a NaN or negative temperature,
max_new_tokens 0 or past the model's positions, the tokenizer and the model swapped, a reward function
that returns None, NaN, text or the wrong count, a GRPOConfig changed after it was built so that batch_size
is not a multiple of group_size) while the others stay good. The call must then either succeed, with a
result of the right kind (a Rollout of len(prompts) * k rows, finite numbers), or raise ValueError or
TypeError whose message names the argument (for a config, GRPOConfig or the field).

The same property covers the random-reward control's hit_rate, Lab 06's trace measures (trace_metrics, min_cap,
max_cap, check_cap: a bad `rows` split too) and TRL's path: to_trl_config, and train_with_trl (one step of eight
completions, a few draws per argument, since TRL builds a trainer on each call). FEW_CASES, a few draws per
argument too: load_policy (offline), the widgets that sample (answer_table, compare_models) and the recipes that
train (Lab 03's run_condition, Lab 06's train_on_traces, Lab 08's run_break: one step each).

The shipped model (4 layers, 128 wide) is loaded once; each call samples a few tokens of one or two prompts
and train_grpo trains one step of four completions, so the file runs in well under a minute on two cores.
"""
import copy
import functools
import math
import os
import re

import numpy as np
import pytest
import torch
from draws import draws
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_properties import BAD, NAMED, call_or_named
from utils.eval import control, judging, labels, metrics, probes
from utils.eval import programs as program_eval
from utils.eval import tools as tool_eval
from utils.eval import traces as trace_eval
from utils.models import judge as judge_model
from utils.models import policy as pol
from utils.models import sft
from utils.notebook import widgets
from utils.rl import breaks, rollout, selftrain, staleness
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.rollout import GroupRollout
from utils.rl.trl_tools import scripted_episodes
from utils.rl.trl_trainer import to_trl_config, train_with_trl
from utils.runs.control import run_condition
from utils.runs.traces import train_on_traces
from utils.tasks.arithmetic import load_split
from utils.verifiers.arithmetic import strict_reward
from utils.verifiers.traces import outcome_reward


@pytest.fixture(scope="module")
def model():
    """The shipped model and tokenizer, on one torch thread while this module runs: its products are 128 wide, so
    one thread is as fast as two, and two spin on each other when another process holds a core (measured: 270 s
    for this file at two threads beside a busy notebook kernel, 17 s at one)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    policy, tok = pol.load_policy("rlvr-base")
    yield policy.eval(), tok
    torch.set_num_threads(threads)


PROMPTS, ANSWERS = ["12+34=", "5+6="], ["46", "11"]
ROWS = {"prompt": ["12+34:", "5+6:"], "a": [12, 5], "b": [34, 6], "answer": ["46", "11"]}  # a scratchpad split
LOOKUP_ROWS = {"prompt": ["#01+34:", "#02+6:"], "answer": ["46", "11"], "key": ["#01", "#02"], "a": [34, 6],
               "group": ["g", "g"]}   # a lookup split's columns (utils.tasks.lookup)
MIXED = __import__("datasets").Dataset.from_dict({"prompt": PROMPTS + ["7*6="], "answer": ANSWERS + ["42"],
                                                   "task": ["arithmetic", "arithmetic", "multiply"]})  # a mixed split
LONG = "1" * 40 + "+1="  # past the model's 32 positions


def returning(value):
    """A reward function (TRL's signature) that gives `value` for its last completion, 1.0 for the others;
    value "count" returns one score too few."""
    def bad_reward(completions, answer, **kw):
        out = [1.0] * len(completions)
        if value == "count":
            return out[1:]
        out[-1] = value
        return out
    return bad_reward


def _cfg(**over):
    return GRPOConfig(**dict(dict(steps=1, batch_size=4, group_size=2, max_new_tokens=4, eval_every=0, eval_n=2,
                                  seed=0), **over))


def _indivisible():
    """A config whose batch_size stopped being a multiple of group_size after it was built."""
    cfg = _cfg()
    cfg.batch_size = 5
    return cfg


def _rollout(model):
    policy, tok = model
    return pol.sample(policy, tok, PROMPTS, k=2, max_new_tokens=4, generator=torch.Generator().manual_seed(0))


# the mistakes of a call with a model, per argument name (BAD is tried on every argument as well)
REWARD_BAD = [returning(None), returning(math.nan), returning(math.inf), returning("1"), returning("count"),
              lambda c, a, **kw: None, lambda c, a, **kw: "1.0", lambda c, a, **kw: [[1.0]] * len(c), strict_reward]
EXTRA = {
    "model": ["TOK"], "tokenizer": ["MODEL"], "policy": ["TOK"], "ref": ["TOK"],
    "prompts": ["12+34=", [LONG], [LONG] * 2, [], [None], [12, 34], ("12+34=", "5+6="), [PROMPTS]],
    "answers": ["46", ["46"], ANSWERS * 2, [46, 11], [None, None], []],
    "k": [0, -1, 2.5, np.int64(2), 10**6 + 1, 3],
    "n": [0, -1, 2.5, np.int64(2), 1],
    "temperature": [math.nan, -1.0, 0, 0.0, math.inf, 1e-30, 1e30, np.float32(0.7)],
    "max_new_tokens": [0, 10**6, 3.0, 1, 30],
    "generator": [torch.Generator().manual_seed(1), 0, "gen"],
    "seed": [-1, 2**64, 1.5, np.int64(3), 2**63 - 1],
    "batch_size": [0, 1, -1, 1.0, 10**9],
    "reward_fn": REWARD_BAD, "correct_fn": REWARD_BAD,
    "eval_rewards": [{"proxy": r} for r in REWARD_BAD[:5]] + [{"proxy": "x"}, ["proxy"]],
    "eval_sets": [{"x": (["1+1="], [])}, {"heldout": (["1+1="], ["2"])}, {"x": "ab"}, {"x": ("1+1=", "2")},
                  {"x": ([LONG], ["2"])}, {"x": (["1+1="], ["2"])}],
    "eval_prompts": ["1+1=", [], [LONG], ["1+1=", "2+2="]],
    "eval_answers": ["2", [], ["2", "4"]],
    "cfg": [_indivisible(), {"steps": 1}, _cfg(max_new_tokens=40)],
    "columns": [{"a": [1]}, {"answer": [1, 2]}, {"a": "xy"}, ["a"], {"a": [1, 2]}],
    "prompt_ids": ["IDS1D", "IDS_FLOAT", "IDS_OOV", "IDS_SHORT"], "completion_ids": ["IDS1D", "IDS_FLOAT", "IDS_OOV",
                                                                                      "IDS_SHORT"],
    "prompt_mask": ["IDS1D", "IDS_SHORT"], "completion_mask": ["IDS1D", "IDS_SHORT"],
    "callback": [lambda p, r: "x", lambda p, r: {"extra": 1}, lambda p, r: 1],
    "loss_fn": [lambda *a: None, lambda logp, *a: logp, lambda *a: "x"],
    "advantage_fn": [lambda r, *a: None, lambda r, *a: r[:1], lambda r, *a: "x"],
    "rollout": [GroupRollout(), "GroupRollout", GroupRollout],
    "rows": [dict(ROWS, prompt=[]), {"prompt": ROWS["prompt"]}, dict(ROWS, a=[12]), dict(ROWS, a=["x", "y"]),
             dict(ROWS, b=[None, 6]), dict(ROWS, a=[-12, 5]), dict(ROWS, a=[10**30, 5]), dict(ROWS, prompt=[LONG] * 2),
             [ROWS], {"prompt": "12+34:", "a": 12, "b": 34, "answer": "46"}],
    "output_dir": [3, None, "", object()],
    "train_dataset": ["DS_NO_ANSWER", "DS_EMPTY", {"prompt": PROMPTS, "answer": ANSWERS}, PROMPTS, "DS_LONG"],
    "peft_config": ["x", {"r": 4}, 1],
    "use_cpu": [False, 1, "yes"], "bf16": [True, 1, "no"], "progress": ["x", 1],
}


def _finite(x):
    return isinstance(x, float) and math.isfinite(x)


def _sample_ok(out, kw):
    prompts = kw["prompts"]
    return isinstance(out, pol.Rollout) and len(out.texts) == len(prompts) * kw["k"] == out.completion_ids.shape[0] \
        and all(isinstance(t, str) for t in out.texts) and torch.isfinite(out.logprobs).all()


def _evaluate_ok(out, kw):
    n = len(kw["prompts"])
    return isinstance(out, dict) and _finite(out["pass@1"]) and 0 <= out["pass@1"] <= 1 and len(out["correct"]) == n \
        and len(out["texts"]) == n * kw["k"] and all(_finite(float(v)) for k, v in out.items() if k.startswith("pass@"))


def _logprobs_ok(out, kw):
    logp, ent = out
    return logp.shape == ent.shape == kw["completion_ids"].shape and torch.isfinite(logp).all() and \
        torch.isfinite(ent).all() and (logp <= 0).all()


@functools.wraps(metrics.sample_in_batches)
def _in_batches(model, tokenizer, **kw):
    return list(metrics.sample_in_batches(model, tokenizer, **kw))


def _batches_ok(out, kw):
    return sum(len(r.texts) for _, r in out) == len(kw["prompts"]) * kw["k"] and \
        all(isinstance(i, int) for i, _ in out)


@functools.wraps(train_grpo)
def _train(policy, tokenizer, **kw):
    """train_grpo on a copy of the model (it trains in place)."""
    return train_grpo(copy.deepcopy(policy) if isinstance(policy, torch.nn.Module) else policy, tokenizer, **kw)


@functools.wraps(sft.fine_tune)
def _fine_tune(model, tokenizer, **kw):
    """fine_tune on a copy of the model (it trains in place)."""
    return sft.fine_tune(copy.deepcopy(model) if isinstance(model, torch.nn.Module) else model, tokenizer, **kw)


def _train_ok(out, kw):
    return isinstance(out, list) and len(out) == 1 and \
        all(_finite(out[0][k]) for k in ("reward_mean", "loss", "entropy"))


def _trace_ok(out, kw):
    return isinstance(out, dict) and all(_finite(out[k]) and 0 <= out[k] <= 1 for k in ("pass@1", "cot_pass@1",
                                                                                           "well_formed", "truncated"))


def _cap_ok(out, kw):
    return isinstance(out, int) and 1 < out <= 200


# fn, good keyword arguments (MODEL, TOK and the IDS names stand for the fixture's model and a rollout's
# tensors), a check on a successful result
CASES = {
    "staleness.sampler_log_ratios": (staleness.sampler_log_ratios, dict(
        policy="MODEL", sampler="MODEL", tokenizer="TOK", prompts=PROMPTS, k=2, temperature=1.0, max_new_tokens=4,
        seed=0), lambda out, kw: out[0].shape == out[1].shape and torch.isfinite(out[0]).all()),
    "staleness.drift_probe": (staleness.drift_probe, dict(tokenizer="TOK", prompts=PROMPTS, cfg=_cfg(), at=1, lags=2,
                                                          n_prompts=2, seed=0), lambda out, kw: callable(out)),
    "rollout.cast": (rollout.cast, dict(policy="MODEL", dtype="bfloat16"),
                       lambda out, kw: next(out.parameters()).dtype == torch.bfloat16),
    "judge.make_judge": (judge_model.make_judge, dict(tokenizer="TOK", cfg=judge_model.JudgeConfig(n_layer=1)),
                         lambda r, kw: isinstance(r, torch.nn.Module) and r.config.num_labels == 1),
    "judge.judge_probs": (judge_model.judge_probs, dict(judge="JUDGE", tokenizer="TOK", problems=PROMPTS,
                                                        completions=["46", ""]),
                          lambda r, kw: len(r) == len(kw["problems"]) and all(0 <= p <= 1 for p in r)),
    "judge.judge_scorer": (judge_model.judge_scorer, dict(judge="JUDGE", tokenizer="TOK"),
                           lambda r, kw: len(r(PROMPTS, ANSWERS)) == 2),
    "judge.judge_accuracy": (judge_model.judge_accuracy, dict(judge="JUDGE", tokenizer="TOK", problems=PROMPTS,
                                                              completions=ANSWERS, labels=[1, 0], threshold=0.5),
                             lambda r, kw: 0 <= r["accuracy"] <= 1 and r["n"] == 2),
    "judging.rubric_labels": (judging.rubric_labels, dict(model="MODEL", tokenizer="TOK", prompts=PROMPTS,
                                                          answers=ANSWERS, k=2, flip=0.5, seed=0,
                                                          reward_fn=strict_reward, max_new_tokens=4),
                              lambda r, kw: len(r["labels"]) == len(r["truth"]) == len(kw["prompts"]) * kw["k"]
                              and set(r["labels"]) <= {0.0, 1.0}),
    "judging.judge_report": (judging.judge_report, dict(policy="MODEL", judge="JUDGE", tokenizer="TOK",
                                                        prompts=PROMPTS, answers=ANSWERS, seed=0,
                                                        reward_fn=strict_reward, max_new_tokens=4),
                             lambda r, kw: 0 <= r["truth"] <= 1 and 0 <= r["judge_mean"] <= 1
                             and 0 < r["top_share"] <= 1),
    "judge.train_judge": (judge_model.train_judge, dict(
        tokenizer="TOK", problems=PROMPTS, completions=ANSWERS, labels=[1, 0],
        cfg=judge_model.JudgeConfig(n_layer=1, n_embd=16, n_head=2, steps=2, batch_size=2), progress=False),
        lambda r, kw: len(r[1]) == (kw["cfg"] or judge_model.JudgeConfig()).steps and
        all(_finite(h["loss"]) for h in r[1])),
    "policy.sample": (pol.sample, dict(model="MODEL", tokenizer="TOK", prompts=PROMPTS, k=2, temperature=1.0,
                                       max_new_tokens=4, generator=None, env=None), _sample_ok),
    "policy.completion_logprobs": (pol.completion_logprobs, dict(
        model="MODEL", prompt_ids="prompt_ids", prompt_mask="prompt_mask", completion_ids="completion_ids",
        completion_mask="completion_mask", temperature=1.0, entropy_grad=False), _logprobs_ok),
    "metrics.evaluate": (metrics.evaluate, dict(model="MODEL", tokenizer="TOK", prompts=PROMPTS, answers=ANSWERS,
                                                k=2, temperature=1.0, max_new_tokens=4, reward_fn=strict_reward, seed=0,
                                                batch_size=2048, entropy=True, env_fn=None), _evaluate_ok),
    "metrics.sample_in_batches": (_in_batches, dict(model="MODEL", tokenizer="TOK", prompts=PROMPTS, k=2,
                                                    temperature=1.0, max_new_tokens=4, seed=0, batch_size=2,
                                                    env_fn=None),
                                  _batches_ok),
    "metrics.per_task_pass": (metrics.per_task_pass, dict(model="MODEL", tokenizer="TOK", rows=MIXED, k=2, n=2,
                                                          seed=0, max_new_tokens=4),
                              lambda r, kw: all(_finite(v) and 0 <= v <= 1 for v in r.values())),
    "metrics.policy_report": (metrics.policy_report, dict(model="MODEL", tokenizer="TOK", prompts=PROMPTS,
                                                          answers=ANSWERS, k=2, temperature=1.0, max_new_tokens=4,
                                                          seed=0, batch_size=2048),
                              lambda r, kw: all(_finite(v) for v in r.values())),
    "metrics.heldout_metrics": (metrics.heldout_metrics, dict(
        model="MODEL", tokenizer="TOK", eval_sets={"heldout": (PROMPTS, ANSWERS)},
        eval_rewards={"proxy": strict_reward}, n=2, temperature=1.0, max_new_tokens=4, correct_fn=None),
        lambda r, kw: isinstance(r, dict) and all(_finite(v) and 0 <= v <= 1 for v in r.values())),
    "metrics.answer_distribution": (metrics.answer_distribution, dict(
        model="MODEL", tokenizer="TOK", prompts=PROMPTS, k=2, temperature=1.0, max_new_tokens=4, seed=0,
        batch_size=2048), lambda r, kw: len(r) == len(kw["prompts"]) and all(sum(c.values()) == kw["k"] for c in r)),
    "metrics.answer_logprob": (metrics.answer_logprob, dict(model="MODEL", tokenizer="TOK", prompts=PROMPTS,
                                                            answers=ANSWERS, temperature=1.0, batch_size=512),
                               lambda r, kw: r.shape == (len(kw["prompts"]),) and np.isfinite(r).all() and
                               (r <= 0).all()),
    "metrics.pass_rates": (metrics.pass_rates, dict(model="MODEL", tokenizer="TOK", prompts=PROMPTS, answers=ANSWERS,
                                                    correct_fn=strict_reward, n=2, max_new_tokens=4, seed=0,
                                                    columns=None, batch_size=1024),
                           lambda r, kw: r.shape == (len(kw["prompts"]),) and ((r >= 0) & (r <= 1)).all()),
    "loop.train_grpo": (_train, dict(policy="MODEL", tokenizer="TOK", prompts=PROMPTS, answers=ANSWERS,
                                     reward_fn=strict_reward, cfg=_cfg(), eval_prompts=["1+1="], eval_answers=["2"],
                                     ref=None, callback=None, eval_rewards=None, eval_sets=None, correct_fn=None,
                                     rollout=None, progress=False), _train_ok),
    "labels.label_probe": (labels.label_probe, dict(policy="MODEL", tokenizer="TOK", prompts=PROMPTS, answers=ANSWERS,
                                                    k=2, seed=0, difficulty=None, bins={"hard": (0, 0)}),
                           lambda r, kw: 0 <= r[0]["truth"] <= 1 and len(r[1]) == len(kw["prompts"])),
    "control.hit_rate": (control.hit_rate, dict(model="MODEL", tokenizer="TOK", prompts=PROMPTS, answers=ANSWERS,
                                                reward_fn=strict_reward, k=2, seed=0, max_new_tokens=4),
                         lambda r, kw: _finite(r) and 0 <= r <= 1),
    "traces.trace_metrics": (trace_eval.trace_metrics, dict(model="MODEL", tokenizer="TOK", rows=ROWS, k=2, seed=0,
                                                            max_new_tokens=4, batch_size=400), _trace_ok),
    "traces.best_of_n": (trace_eval.best_of_n, dict(model="MODEL", tokenizer="TOK", rows=ROWS, n=2, seed=0,
                                                    max_new_tokens=4, batch_size=400),
                         lambda r, kw: all(0 <= r[k] <= 1 for k in ("one sample", "majority vote", "step verdicts",
                                                                     "any of n"))),
    "sft.fine_tune": (_fine_tune, dict(model="MODEL", tokenizer="TOK", pairs=[("12+34=", "46")], steps=1, batch_size=2,
                                       lr=1e-3, seed=0),
                      lambda r, kw: len(r) in (0, kw["steps"]) and all(_finite(x) for x in r)),
    "tools.episode_metrics": (tool_eval.episode_metrics, dict(model="MODEL", tokenizer="TOK", rows=ROWS, k=2,
                                                              tool=False, seed=0, max_new_tokens=4, max_calls=2),
                              lambda r, kw: all(_finite(v) and 0 <= v <= 1 for v in r.values())),
    "tools.lookup_metrics": (tool_eval.lookup_metrics, dict(model="LOOKUP_MODEL", tokenizer="LOOKUP_TOK",
                                                            rows=LOOKUP_ROWS, table={}, k=2, seed=0, max_new_tokens=4,
                                                            max_calls=2),
                             lambda r, kw: all(v is None or (_finite(v) and 0 <= v <= 1)   # None: a route unused
                                               for g in r.values() for v in g.values())),
    "selftrain.generation_metrics": (selftrain.generation_metrics, dict(model="MODEL", tokenizer="TOK", rows=ROWS, k=2,
                                                                        seed=0, max_new_tokens=4),
                                     lambda r, kw: all(_finite(v) for v in r.values() if not isinstance(v, dict))),
    "traces.min_cap": (trace_eval.min_cap, dict(tokenizer="TOK", rows=ROWS), _cap_ok),
    "traces.max_cap": (trace_eval.max_cap, dict(tokenizer="TOK", rows=ROWS), _cap_ok),
    "traces.check_cap": (trace_eval.check_cap, dict(max_new_tokens=64, tokenizer="TOK", rows=ROWS),
                         lambda r, kw: r is None),
    "trl.to_trl_config": (to_trl_config, dict(cfg=_cfg(batch_size=8, group_size=4), output_dir="/tmp/trl-props",
                                              use_cpu=True, bf16=False),
                          lambda r, kw: type(r).__name__ == "GRPOConfig" and r.num_generations == kw["cfg"].group_size),
}


@functools.wraps(pol.load_policy)
def _load_policy(name, device):
    """Offline: a name that is not here is not looked for on the hub (its arguments are still checked)."""
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        return pol.load_policy(name, device)
    finally:
        os.environ.pop("HF_HUB_OFFLINE") if old is None else os.environ.update(HF_HUB_OFFLINE=old)


@functools.wraps(breaks.run_break)
def _break(**kw):
    history = breaks.run_break(**kw)
    return history


def _history_ok(out, kw):
    return isinstance(out, list) and len(out) == kw["cfg"].steps and all(_finite(h["reward_mean"]) for h in out)


# the recipes, the widgets that sample and loading a model: a few draws per argument (FEW_CASES, below)
FEW_CASES = {
    "probes.probe_family": (probes.probe_family, dict(model="MODEL", reference="MODEL", tokenizer="TOK",
                                                      where="first", candidates=[42], k=1, seed=0),
                            lambda r, kw: set(r) == set(kw["candidates"]) and all(
                                0 <= v[p] <= 1 for v in r.values() for p in probes.PROBES)),
    "programs.program_report": (program_eval.program_report, dict(
        policy="MODEL", tokenizer="TOK", prompts=PROMPTS, answers=ANSWERS, checker=None, k=1, seed=0,
        max_new_tokens=4, truth=lambda c, a, **kw: [0.0] * len(c)),
        lambda r, kw: r["true_pass@1"] == 0.0 and abs(sum(r["kinds"].values()) - 1) < 1e-9),
    "policy.load_policy": (_load_policy, dict(name="rlvr-base", device="cpu"),
                           lambda r, kw: isinstance(r[0], torch.nn.Module) and callable(r[1])),
    "widgets.answer_table": (widgets.answer_table, dict(models="MODELS", tokenizer="TOK", text="37+29", k=2,
                                                        temperature=1.0, seed=0),
                             lambda r, kw: r[0].endswith("=") and all(len(v[0]) == kw["k"] for v in r[2].values())),
    "widgets.compare_models": (widgets.compare_models, dict(models="MODELS", tokenizer="TOK", default="37+29", k=2),
                               lambda r, kw: r is not None),
    "breaks.run_break": (_break, dict(name="healthy", base="MODEL", tok="TOK", train="DS",
                                      cfg=_cfg(batch_size=8, group_size=4), progress=False), _history_ok),
    "control.run_condition": (run_condition, dict(base="MODEL", tokenizer="TOK", make_reward=lambda seed: strict_reward,
                                                  cfg=_cfg(), seeds=[0], train=(PROMPTS, ANSWERS),
                                                  heldout=(PROMPTS, ANSWERS), progress=False),
                              lambda r, kw: len(r) == len(kw["seeds"]) and _history_ok(r[0]["history"], kw)),
    "selftrain.self_train": (selftrain.self_train, dict(
        base="MODEL", tokenizer="TOK", train=ROWS, test=ROWS, how="closed", progress=False,
        cfg=selftrain.SelfTrainConfig(generations=1, n_prompts=2, k=2, steps=1, batch_size=4, max_new_tokens=4,
                                      eval_k=2, eval_n=2)),
        lambda r, kw: [h["generation"] for h in r["history"]] == [0, 1]),
    "widgets.episode_rows": (widgets.episode_rows, dict(model="MODEL", tokenizer="TOK", problem="12+34", k=2,
                                                        tool=False, seed=0, max_new_tokens=4),
                             lambda r, kw: len(r) == kw["k"] and all(w == "policy" for x in r for _, w in x)),
    "widgets.episode_view": (widgets.episode_view, dict(tokens=[(">", "policy"), ("4", "policy")], upto=2, a=1, b=3),
                             lambda r, kw: isinstance(r, str) and "check" in r),
    "widgets.episode_stepper": (widgets.episode_stepper, dict(model="MODEL", tokenizer="TOK", default_problem="1+1",
                                                              k=2, tool=False, max_new_tokens=8),
                                lambda r, kw: r is not None),
    "trl_tools.scripted_episodes": (scripted_episodes, dict(
        episodes={"1+2:": ("3", {"1+2:": "?1+2=", "1+2:?1+2=3 ": ">3"})}, max_calls=1, group_size=2, seed=0,
        merges=((" ", ">"),)),
        lambda r, kw: set(r[1]) == set(kw["episodes"]) and all(len(v[1]) == kw["group_size"] for v in r[1].values())),
    "traces.train_on_traces": (train_on_traces, dict(base="MODEL", tokenizer="TOK", reward_fn=outcome_reward,
                                                     cfg=_cfg(max_new_tokens=24), train=ROWS, test=ROWS, eval_k=1,
                                                     progress=False, pools=None),
                               lambda r, kw: _history_ok(r["history"], kw) and _trace_ok(r["final"], kw)),
}
EXTRA.update({
    "name": ["nope", "rlvr-trace", "/nowhere"], "device": ["gpu", "cuda:9", 0], "models": ["MODELS", {}, "MODEL"],
    "text": ["", "37*29", "1+1"], "default": ["", "nope"], "base": ["TOK"], "tok": ["MODEL"],
    "make_reward": [lambda seed: None, lambda seed: "x", strict_reward, None],
    "seeds": [[], [0, 0], [-1], "0", 0, (1,)], "train": [(PROMPTS,), (PROMPTS, ANSWERS[:1]), "DS", ROWS],
    "heldout": [(PROMPTS,), ([], []), (PROMPTS, ANSWERS[:1])], "test": [dict(ROWS, prompt=[]), [ROWS]],
    "eval_k": [0, -1, 2.5], "pools": [[np.arange(2)], "x", [[5]]],
})

# loss_fn and advantage_fn keep their defaults in the good call
ARGS = [(case, name) for case in sorted(CASES) for name in sorted(CASES[case][1])] + \
    [("loop.train_grpo", "loss_fn"), ("loop.train_grpo", "advantage_fn")]


@functools.lru_cache(maxsize=1)
def _lookup_model():
    """A tiny random GPT-2 on the lookup task's alphabet (utils.tasks.lookup): the calculator needs its tokens."""
    from utils.runs.build_base_model import make_model
    from utils.tasks import lookup
    tok = pol.char_tokenizer(lookup.ALPHABET, max_length=64)
    torch.manual_seed(0)
    return make_model("gpt2", dict(n_layer=1, n_embd=16, n_head=2), tok, 64).eval(), tok


def _resolve(value, model, ro):
    """The stand-ins of CASES and EXTRA made real: the model, the tokenizer, a rollout's tensors or bad ones."""
    if not isinstance(value, str):
        return value
    policy, tok = model
    if value == "JUDGE":
        return judge_model.make_judge(tok, judge_model.JudgeConfig(n_layer=1, n_embd=16, n_head=2))
    if value in ("LOOKUP_MODEL", "LOOKUP_TOK"):
        return _lookup_model()[value == "LOOKUP_TOK"]
    return {"MODEL": policy, "TOK": tok, "MODELS": {"base": policy}, "prompt_ids": ro.prompt_ids,
            "prompt_mask": ro.prompt_mask,
            "completion_ids": ro.completion_ids, "completion_mask": ro.completion_mask,
            "IDS1D": ro.completion_ids[0], "IDS_FLOAT": ro.completion_ids.float() + 0.5,
            "IDS_OOV": ro.completion_ids + 1000, "IDS_SHORT": ro.completion_ids[:1]}.get(value, value)


FIELDS = sorted(vars(GRPOConfig()))


def _names_it(err, name):
    """The message names the argument as a word (a config: GRPOConfig or its field; a model's pair: either)."""
    text = str(err)
    names = {"cfg": ["cfg", "GRPOConfig", *FIELDS], "policy": ["policy", "model"]}.get(name, [name])
    return any(re.search(rf"(?<![A-Za-z_]){re.escape(n)}(?![A-Za-z_])", text) for n in names)


@pytest.mark.parametrize("case, name", ARGS)
@settings(max_examples=draws(30), deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_bad_arguments_fail_by_name(model, case, name, data):
    fn, good, check = CASES[case]
    ro = _rollout(model)
    bad = data.draw(st.one_of(BAD, st.sampled_from(EXTRA.get(name, [None]))), label="value")
    kwargs = {k: _resolve(v, model, ro) for k, v in dict(good, **{name: bad}).items()}
    shown = f"{case}({name}={bad!r})"
    out = call_or_named(shown, fn, kwargs, name, _names_it)
    assert out is NAMED or check(out, kwargs), f"{shown} returned {out!r} without complaint"


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_good_call_is_good(model, case):
    """The baseline each property varies: the good arguments give a good result."""
    fn, good, check = CASES[case]
    kwargs = {k: _resolve(v, model, _rollout(model)) for k, v in good.items()}
    assert check(fn(**kwargs), kwargs)


def _numbers(v):
    """A list of answers spelled as text ("46") as the numbers a dataset column of numbers holds (46, and 46.0 in a
    column of floats), or []."""
    if isinstance(v, list) and v and all(isinstance(x, str) and x.lstrip("-").isdigit() for x in v):
        return [[int(x) for x in v], [float(x) for x in v]]
    return []


@pytest.mark.parametrize("case", sorted(CASES))
def test_numpy_values_and_numeric_answers_are_the_values_they_hold(model, case):
    """Issue 60's kinds for the functions that take a model: an argument as numpy holds it (test_properties._numpy)
    and answers as numbers (834.0 for "834", a column of floats) give the same result, or an error that names the
    argument (every call seeded alike, so that two samples can be compared)."""
    from tests.test_properties import _numpy, _same
    fn, good, check = CASES[case]
    ro = _rollout(model)

    def call(kw):
        torch.manual_seed(0)
        return fn(**{k: _resolve(v, model, ro) for k, v in kw.items()})
    want = call(good)
    forms = [(name, twin) for name in sorted(good) for twin in (
        _numbers(good[name]) if name == "answers" else [] if isinstance(good[name], str) else [_numpy(good[name])])
        if twin is not None]
    for name, twin in forms:
        torch.manual_seed(0)
        kwargs = {k: _resolve(v, model, ro) for k, v in dict(good, **{name: twin}).items()}
        out = call_or_named(f"{case}({name}={twin!r})", fn, kwargs, name, _names_it)
        assert out is NAMED or _same(out, want), f"{case}({name}={twin!r}) gave {out!r}, with {good[name]!r} {want!r}"


# train_with_trl: one step of 8 completions on 8 prompts (TRL builds a trainer each call: about 0.4 s), so few draws
TRL_GOOD = dict(policy="MODEL", tokenizer="TOK", train_dataset="DS", reward_fn=strict_reward,
                cfg=_cfg(batch_size=8, group_size=4), eval_prompts=["1+1="], eval_answers=["2"], progress=False,
                eval_rewards=None, eval_sets=None, correct_fn=None, peft_config=None, use_cpu=True, bf16=False)


@pytest.fixture(scope="module")
def datasets():
    from datasets import Dataset

    ds = load_split("train", n=8)
    return {"DS": ds, "DS_NO_ANSWER": ds.remove_columns("answer"), "DS_EMPTY": ds.select([]),
            "DS_LONG": Dataset.from_dict({"prompt": [LONG] * 8, "answer": ["2"] * 8})}


@functools.wraps(train_with_trl)
def _trl(policy, tokenizer, **kw):
    """train_with_trl on a copy of the model (it trains in place)."""
    return train_with_trl(copy.deepcopy(policy) if isinstance(policy, torch.nn.Module) else policy, tokenizer, **kw)


def _trl_ok(out, kw):
    history, trainer = out
    return isinstance(history, list) and len(history) == kw["cfg"].steps and \
        all(_finite(h["reward_mean"]) and _finite(h["loss"]) for h in history)


@pytest.mark.parametrize("name", sorted(TRL_GOOD))
@settings(max_examples=draws(4), deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_train_with_trl_bad_arguments_fail_by_name(model, datasets, name, data):
    ro = _rollout(model)
    bad = data.draw(st.one_of(BAD, st.sampled_from(EXTRA.get(name, [None]))), label="value")
    kwargs = {k: datasets.get(v, v) if isinstance(v, str) else v for k, v in dict(TRL_GOOD, **{name: bad}).items()}
    kwargs = {k: _resolve(v, model, ro) for k, v in kwargs.items()}
    shown = f"train_with_trl({name}={bad!r})"
    out = call_or_named(shown, _trl, kwargs, name, _names_it)
    assert out is NAMED or _trl_ok(out, kwargs), f"{shown} returned {out!r} without complaint"


def test_train_with_trl_good_call_is_good(model, datasets):
    kwargs = {k: _resolve(datasets.get(v, v) if isinstance(v, str) else v, model, _rollout(model))
              for k, v in TRL_GOOD.items()}
    assert _trl_ok(_trl(**kwargs), kwargs)


@pytest.mark.parametrize("case, name", [(c, n) for c in sorted(FEW_CASES) for n in sorted(FEW_CASES[c][1])])
@settings(max_examples=draws(3), deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_bad_arguments_fail_by_name_few_draws(model, datasets, case, name, data):
    """The same property for the recipes (a run each call), the widgets that sample and load_policy."""
    fn, good, check = FEW_CASES[case]
    ro = _rollout(model)
    bad = data.draw(st.one_of(BAD, st.sampled_from(EXTRA.get(name, [None]))), label="value")
    kwargs = {k: datasets.get(v, v) if isinstance(v, str) else v for k, v in dict(good, **{name: bad}).items()}
    kwargs = {k: _resolve(v, model, ro) for k, v in kwargs.items()}
    shown = f"{case}({name}={bad!r})"
    out = call_or_named(shown, fn, kwargs, name, _names_it)
    assert out is NAMED or check(out, kwargs), f"{shown} returned {out!r} without complaint"


@pytest.mark.parametrize("case", sorted(FEW_CASES))
def test_the_good_call_is_good_few_draws(model, datasets, case):
    fn, good, check = FEW_CASES[case]
    kwargs = {k: _resolve(datasets.get(v, v) if isinstance(v, str) else v, model, _rollout(model))
              for k, v in good.items()}
    assert check(fn(**kwargs), kwargs)
