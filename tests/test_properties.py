"""Property-based checks of the public API (hypothesis): for each public function below, one argument at a
time is replaced by a random bad value (None, a string, NaN, inf, a negative or huge number, a bool, an empty
or nested list, an object) while the others stay good. The call must then either succeed, with a result of
the right kind, or raise ValueError or TypeError whose message names the argument (OSError for a path that names
no file, or a folder that cannot be written): never an error from deep inside numpy or torch, never a silent NaN.

The functions are those a learner or a lab calls directly without a model (the maths of the loss, pass@k,
the health check, the task and curation helpers, the verifiers' helpers, the scaling fit, the cost and memory
models, the random-reward control's verdict, Lab 06's held-out curve, the files, the plots and widgets: CASES,
and FEW for the heavier calls, a figure or a sandboxed run, with a few draws per argument); GRPOConfig is checked
field by field. The judges (JUDGES: every reward function, and the per-text checks behind them) never raise on
what they judge, whatever the completions or a dataset column hold, and give one float per completion; their own
options (a timeout, a database's path, a wall) fail by name. The exercise checks get the same property for the
learner's function they are passed (BAD_LEARNER: not a function, the wrong arguments, None or the wrong kind back,
an error inside it): one ExerciseError naming my_<name>, never an error from inside.
Those that take a model (sample, completion_logprobs, evaluate and the other
sampling functions of utils/eval/metrics.py, train_grpo, the recipes of utils/runs) get the same property, with BAD
and the mistakes of a call with a model, in tests/test_properties_models.py (the shipped model loaded once);
tests/test_bad_input.py checks chosen cases of them by hand, with the exact message each gives.

test_every_public_function_is_covered enumerates every public function of utils/ and fails naming any that no
property tries, that takes arguments, and that is not in EXEMPT with its reason.
"""
import contextlib
import dataclasses
import errno
import functools
import importlib
import inspect
import json
import math
import os
import pkgutil
import shutil
import tempfile
from collections import Counter

import numpy as np
import pytest
import torch
from draws import draws
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import utils
from utils import DATA_DIR, files
from utils import setup as course_setup
from utils import tasks as task_files
from utils.eval import control, health, metrics, probes, scaling, stored
from utils.eval import traces as trace_eval
from utils.models import cost, memory
from utils.models import judge as judge_model
from utils.models import policy as pol
from utils.notebook import exercises, plots, selfcheck, widgets
from utils.rl import breaks, grpo, launch, proposer, rollout, selftrain, staleness, trl_tools, trl_trainer
from utils.tasks import arithmetic as tasks
from utils.tasks import chat, curation, lookup, mix, programs, scratchpad, tools
from utils.tasks import trigger as trigger_task
from utils.verifiers import api, attacks, code, isolation, label_free, seccomp, signature, spurious, sql
from utils.verifiers import arithmetic as verifiers
from utils.verifiers import chat as chat_verifier
from utils.verifiers import mix as mix_verifier
from utils.verifiers import programs as programs_verifier
from utils.verifiers import tools as tool_verifiers
from utils.verifiers import traces as trace_verifiers
from utils.verifiers import trigger as trigger_verifier

BAD = st.sampled_from([None, "x", "", b"1", math.nan, math.inf, -math.inf, -1, -0.5, 0, 10**30, True, False, [],
                       [[1, 2], [3]], {}, {"a": 1}, object(), (1,), [None], ["a", "b"], [math.nan, 1.0]])
T = lambda *v: torch.tensor(v, dtype=torch.float32)  # noqa: E731
HIST = [dict(step=i + 1, reward_mean=0.5, group_reward_std=0.3, entropy=1.0, kl=0.01, zero_spread_frac=0.2,
             truncated_frac=0.0, completions_sampled=64, train_seconds=2.0 * (i + 1),
             **{"heldout_pass@1": 0.4 if i % 2 else None}) for i in range(6)]
DRIFT = {"token": [[0.0, 0.0], [0.1, -0.5]], "sequence": [[0.0], [-0.4]], "at": 50}  # drift_of's dict, k = 0, 1
RUN = lambda acc, lr=1e-3: {"config": {"steps": 1, "lr": lr, "seed": 0}, "after": {"pass@1": acc}}  # noqa: E731

# fn, good keyword arguments, a check on a successful result
CASES = {
    "grpo.group_advantages": (grpo.group_advantages, dict(rewards=T(1, 0, 1, 1), group_size=2),
                              lambda r: r.dim() == 1 and torch.isfinite(r).all()),
    "grpo.zero_spread": (grpo.zero_spread, dict(rewards=T(1, 0, 1, 1), G=2), lambda r: r.dim() == 1),
    "grpo.kl_k3": (grpo.kl_k3, dict(logp=T(-1, -2), ref_logp=T(-1.5, -2)), lambda r: (r >= 0).all()),
    "grpo.aggregate": (grpo.aggregate, dict(per_token=torch.ones(2, 3), mask=torch.ones(2, 3)),
                       lambda r: r.dim() == 0 and torch.isfinite(r)),
    "grpo.cispo_token_loss": (grpo.cispo_token_loss, dict(logp=-torch.ones(2, 3), old_logp=-torch.ones(2, 3),
                                                          adv=T(1, -1), cap=5.0),
                              lambda r: r.shape == (2, 3) and torch.isfinite(r).all()),
    "staleness.step_seconds": (staleness.step_seconds, dict(sample_s=1.0, update_s=0.5, lag=2),
                               lambda r: math.isfinite(r) and r > 0),
    "staleness.drift_summary": (staleness.drift_summary, dict(drift=DRIFT, eps_low=0.2, eps_high=0.2, is_max=3.0),
                                lambda r: len(r) == 2 and all(0 <= x["outside_clip"] <= 1 for x in r)),
    "staleness.drift_of": (staleness.drift_of, dict(history=[{"step": 3, "drift_token": [0.0],
                                                              "drift_sequence": [0.0]}]),
                           lambda r: r["at"] == 3 and len(r["token"]) == 1),
    "grpo.policy_loss": (grpo.policy_loss, dict(logp=torch.zeros(2, 3), old_logp=torch.zeros(2, 3),
                                                ref_logp=torch.zeros(2, 3), adv=T(1, -1), mask=torch.ones(2, 3)),
                         lambda r: r.dim() == 0 and torch.isfinite(r)),
    "grpo.high_entropy_mask": (grpo.high_entropy_mask, dict(entropy=torch.rand(2, 3), mask=torch.ones(2, 3),
                                                            frac=0.5), lambda r: r.shape == (2, 3)),
    "metrics.pass_at_k": (metrics.pass_at_k, dict(n=8, c=3, k=2), lambda r: 0 <= r <= 1),
    "metrics.pass_at_k_table": (metrics.pass_at_k_table, dict(n=8, ks=[1, 2]), None),
    "metrics.bootstrap_pass_at_k": (metrics.bootstrap_pass_at_k,
                                    dict(correct=[3, 5], n=8, ks=[1, 2], n_boot=20), None),
    "metrics.guess_rate": (metrics.guess_rate, dict(answer="42"), lambda r: 0 <= r <= 1),
    "metrics.largest_k_under": (metrics.largest_k_under, dict(curve=[0.01, 0.02, 0.2], ks=[1, 2, 4]), None),
    "metrics.compression_ratio": (metrics.compression_ratio, dict(before_1=0.3, before_k=0.8, after_1=0.5), None),
    "health.health_check": (health.health_check, dict(history=HIST), lambda r: isinstance(r["ok"], bool)),
    "health.summarize": (health.summarize, dict(history=HIST), lambda r: isinstance(r, dict)),
    "health.expected_zero_spread": (health.expected_zero_spread, dict(p=0.3, group_size=8),
                                    lambda r: 0 <= r <= 1),
    "tasks.format_prompt": (tasks.format_prompt, dict(a=12, op="+", b=34),
                            lambda r: isinstance(r, str) and r.endswith("=")),
    "tasks.solve": (tasks.solve, dict(a=12, op="+", b=34), lambda r: isinstance(r, int)),
    "tasks.kind_name": (tasks.kind_name, dict(kind=(2, 1, "-")), lambda r: isinstance(r, str)),
    "tasks.kind_problems": (tasks.kind_problems, dict(kind=(2, 1, "+"), n=3, seed=0, exclude=frozenset()),
                            lambda r: isinstance(r, list)),
    "tasks.kind_sets": (tasks.kind_sets, dict(pool_n=2, eval_n=1, pool_seed=0, eval_seed=0),
                        lambda r: len(r) == 2 and all(isinstance(x, list) for x in r)),
    "proposer.learnability": (proposer.learnability, dict(pass_rate=0.25, kind="azr"), lambda r: 0 <= r <= 1),
    "proposer.expected_learnability": (proposer.expected_learnability, dict(p=0.25, kind="azr", group_size=8),
                                       lambda r: 0 <= r <= 1),
    "proposer.band_share": (proposer.band_share, dict(p=0.5, band=(0.25, 0.75), group_size=8), lambda r: 0 <= r <= 1),
    "proposer.fixed_solver_run": (proposer.fixed_solver_run, dict(rates=[0.5, [0.0, 1.0]], kind="rzero", lr=1.0,
                                                                  steps=3, batch=4, group_size=8, seed=0),
                                  lambda r: r.ndim == 2 and r.shape[0] == 4 and np.allclose(r.sum(1), 1)),  # any kinds
    "tasks.make_splits": (tasks.make_splits, dict(seed=0, sizes={"train": 10, "test": 5}), None),
    "curation.sweet_spot": (curation.sweet_spot, dict(rates=[0.1, 0.5, 0.9], lo=0.3, hi=0.7), None),
    "curation.random_subset": (curation.random_subset, dict(n_total=10, size=3, seed=0), lambda r: len(r) == 3),
    "curation.mix_matched_subset": (curation.mix_matched_subset, dict(digits=[2, 2, 3, 3], chosen=[0, 2], seed=0),
                                    lambda r: isinstance(r, np.ndarray) and r.ndim == 1),
    "curation.shuffled": (curation.shuffled, dict(pools=[[0], [1, 2]], seed=0), lambda r: isinstance(r, list)),
    "grpo.process_advantages": (grpo.process_advantages, dict(step_rewards=torch.tensor([[0.0, 1], [0, 0]]),
                                                              step_mask=torch.tensor([[0, 1], [0, 1]]).bool(),
                                                              group_size=2, scale_std=True, eps=1e-4),
                                lambda r: r.shape == (2, 2) and torch.isfinite(r).all()),
    "scratchpad.with_check": (scratchpad.with_check, dict(text="8+6+0=14 >14"),
                              lambda r: r == "8+6+0=14 8+6+0=14 >14"),
    "trl_tools.tool_tokenizer": (trl_tools.tool_tokenizer, dict(max_length=64, merges=((" ", ">"),)),
                                 lambda r: r.chat_template and r.response_template and "?" in r.get_vocab()),
    "api.flaky": (api.flaky, dict(score_fn=lambda p, c: [1.0] * len(c), p_fail=0.0, p_slow=0.0, slow_s=0.0, seed=0),
                  lambda r: r(["1+1="], ["2"]) == [1.0]),
    "trl_tools.our_segments": (trl_tools.our_segments, dict(
        tokenizer=trl_tools.tool_tokenizer(), prompt="1+2:", script={"1+2:": "?1+2=", "1+2:?1+2=3 ": ">3"},
        max_calls=2), lambda r: isinstance(r, list) and all(w in ("policy", "env") for w, _ in r)),
    "tools.calculate": (tools.calculate, dict(expr="478+356"), lambda r: isinstance(r, str) and r),
    "tools.parse_episode": (tools.parse_episode, dict(text="?1+2=3 >3"), lambda r: r is None or isinstance(r, dict)),
    "tools.episode_tensors": (tools.episode_tensors, dict(segments=[("policy", [1, 2]), ("env", [3])], max_len=4,
                                                          tokenizer=tools.bpe_tokenizer()),
                              lambda r: len(r) == 3 and all(t.shape == (4,) for t in r)),
    "tools.bpe_tokenizer": (tools.bpe_tokenizer, dict(merges=((" ", ">"), ("3", "4"))),
                            lambda r: r.eos_token_id is not None and "?" in r.get_vocab()),
    "tools.retokenised": (tools.retokenised, dict(tokenizer=tools.bpe_tokenizer(), segments=[("policy", [1, 2]),
                                                                                             ("env", [3])]),
                          lambda r: isinstance(r, dict) and isinstance(r["same"], bool)),
    "selftrain.format_of": (selftrain.format_of, dict(text=">834", a=478, b=356),
                            lambda r: r in ("bare", "skipped", "padded", "steps", "other")),
    "selftrain.disagreement": (selftrain.disagreement, dict(values=[1, 1, 2]), lambda r: r is None or 0 <= r <= 1),
    "selftrain.teacher_text": (selftrain.teacher_text, dict(a=478, b=356, working=True),
                               lambda r: isinstance(r, str) and ">" in r),
    "selftrain.verified_pairs": (selftrain.verified_pairs, dict(prompts=["1+1:"], texts=[">2", ">3"], answers=["2"],
                                                                k=2), lambda r: isinstance(r, list)),
    "selftrain.keep": (selftrain.keep, dict(how="verified", prompts=["1+1:"], texts=[">2", ">3"], answers=["2"], a=[1],
                                            b=[1], k=2), lambda r: isinstance(r, list)),
    "mix.format_multiply": (mix.format_multiply, dict(a=47, b=6), lambda r: isinstance(r, str) and r.endswith("=")),
    "mix.make_multiply_splits": (mix.make_multiply_splits, dict(seed=0),
                                 lambda r: sum(len(v) for v in r.values()) == 1000),
    "scratchpad.fresh_problems": (scratchpad.fresh_problems, dict(n=3, digits=2, seed=0, exclude=["12+34:"]),
                                  lambda r: len(r) == 3),
    "seccomp.instructions": (seccomp.instructions, dict(arch="x86_64"), lambda r: isinstance(r, list) and r),
    "seccomp.program": (seccomp.program, dict(arch="aarch64"), lambda r: isinstance(r, bytes) and r),
    "seccomp.refused": (seccomp.refused, dict(arch="x86_64"), lambda r: isinstance(r, dict) and r),
    "curation.curriculum": (curation.curriculum, dict(schedule=[(2, [1]), (4, [1, 2])], steps=4),
                            lambda r: len(r) == 4),
    "scaling.fit_sigmoid": (scaling.fit_sigmoid, dict(C=[1.0, 2, 4, 8, 16, 32], R=[0.1, 0.2, 0.35, 0.5, 0.6, 0.62],
                                                      R0=0.05, grid=8, rounds=1), None),
    "cost.rate_from": (cost.rate_from, dict(seconds=2.0, flops=1e9), lambda r: r > 0),
    "cost.predict_seconds": (cost.predict_seconds, dict(flops=1e9, rate=5e8), lambda r: r >= 0),
    "control.control_check": (control.control_check, dict(before={"pass@1": 0.25}, true_runs=[RUN(0.5), RUN(0.375)],
                                                          random_runs=[RUN(0.3)], threshold=0.05, key="pass@1"),
                              lambda r: r["verdict"] in control.VERDICTS and math.isfinite(r["random_gain"])),
    "control.check_same_config": (control.check_same_config, dict(runs={"true": [RUN(0.5)], "random": [RUN(0.3)]}),
                                  lambda r: r is None),
    "traces.heldout_curve": (trace_eval.heldout_curve, dict(history=HIST, start=0.2, x="completions"),
                             lambda r: len(r) == 2 and len(r[0]) == len(r[1]) >= 1),
}


# ---- the rest of the public API without a model (issue 37): the files, the task helpers, the verifiers' helpers,
# the measures, the notebook's plots and widgets. A few need a wrapper: a path is tried inside a fresh temporary
# folder (a bad path such as "x" lands there, not in the repo), a figure is closed after the call, the hub is not
# dialled (HF_HUB_OFFLINE), launch.run stops where its child process would start. functools.wraps keeps the
# wrapped function's name, which is how test_every_public_function_is_covered finds it.

@contextlib.contextmanager
def _in_tmp():
    old, folder = os.getcwd(), tempfile.mkdtemp(prefix="rlvr_props_")
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(old)
        shutil.rmtree(folder, ignore_errors=True)


def in_tmp(fn):
    @functools.wraps(fn)
    def call(**kw):
        with _in_tmp():
            return fn(**kw)
    return call


def closing(fn):
    """fn, with every figure it opened closed afterwards (matplotlib's Agg backend: nothing is shown)."""
    @functools.wraps(fn)
    def call(**kw):
        import matplotlib.pyplot as plt
        try:
            return fn(**kw)
        finally:
            plt.close("all")
    return call


@functools.wraps(files.atomic_write)
def _atomic_write(path, mode):
    with _in_tmp():
        with files.atomic_write(path, mode) as f:
            f.write(b"ok" if "b" in mode else "ok")
        with open(path, "rb") as f:
            return f.read()


@functools.wraps(files.atomic_dir)
def _atomic_dir(path):
    with _in_tmp():
        with files.atomic_dir(path) as tmp:
            open(os.path.join(tmp, "f"), "w").close()
        return sorted(os.listdir(str(path)))  # str: Python 3.11's os.listdir lists numpy's str as bytes


@functools.wraps(task_files.read_jsonl)
def _read_jsonl(path, writer):
    with _in_tmp():
        task_files.write_jsonl({"train": [{"prompt": "1+1=", "answer": "2"}] * 3}, "d")
        return len(task_files.read_jsonl(path, writer))


@functools.wraps(stored.beside)
def _beside(**kw):
    """beside, with its AssertionError for a run outside the seeds' band taken as its (right) answer."""
    try:
        return stored.beside(**kw)
    except AssertionError:
        return "outside"


@functools.wraps(attacks.run_attacks)
def _run_attacks(**kw):
    """run_attacks; another run of the attack suite on this machine holds its listener: skipped, not failed."""
    try:
        return attacks.run_attacks(**kw)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            pytest.skip("another run of the attack suite holds its evidence listener")
        raise


@functools.wraps(pol.hub_reachable)
def _hub_reachable(timeout):
    """Offline: nothing is dialled, the argument is still checked."""
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        return pol.hub_reachable(timeout)
    finally:
        os.environ.pop("HF_HUB_OFFLINE") if old is None else os.environ.update(HF_HUB_OFFLINE=old)


class _Started(Exception):
    pass


@functools.wraps(launch.run)
def _launch_run(out, timeout, **kw):
    """launch.run up to the child process it starts (a whole training run): "started" once its arguments passed."""
    def start(*a, **k):
        raise _Started
    real = launch.subprocess.run
    launch.subprocess.run = start
    try:
        with _in_tmp():
            return launch.run(out, timeout, **kw)
    except _Started:
        return "started"
    finally:
        launch.subprocess.run = real


UNAVAILABLE = "no isolated wall on this machine"


def or_unavailable(fn):
    """fn, with the sandbox's refusal on a machine without the isolated wall taken as its right answer."""
    @functools.wraps(fn)
    def call(**kw):
        try:
            return fn(**kw)
        except isolation.SandboxUnavailable:
            return UNAVAILABLE
    return call


class ChatTokenizer:
    """A tokenizer with a chat template (offline: no hub model), enough for utils.tasks.chat and settings_for."""
    chat_template, pad_token_id = "{user}", 0

    def __call__(self, text, **kw):
        return {"input_ids": [ord(c) % 50 for c in text]}

    def decode(self, ids, **kw):
        return "".join(chr(48 + i) for i in ids)

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return f"<user>{messages[-1]['content']}<assistant>"


def _dataset():
    from datasets import Dataset
    return Dataset.from_dict({"prompt": ["1+1=", "2+3="], "answer": ["2", "5"]})


def _finite_floats(r, n=None):
    return isinstance(r, list) and all(isinstance(x, float) and math.isfinite(x) for x in r) and (n is None or
                                                                                                 len(r) == n)


LOGITS = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
EST = memory.estimate_memory("SmolLM2-135M-Instruct", 8, 10, 8)
FIT = {"A": 0.6, "C_mid": 1000.0, "B": 1.0, "R0": 0.2}
SNAPSHOTS = {"healthy": {0: [Counter({"66": 3, "65": 1})], 20: [Counter({"66": 4})]}}
BENCH = {"config": {"eval_n": 4}, "before": {"pass@1": 0.27},
         "runs": [{"seed": s, "condition": c, "config": {"lr": 1e-4, "seed": s}, "curve": [[20, 0.2], [40, 0.3]],
                   "after": {"greedy": 0.3, "pass@1": 0.2, "pass@8": 0.5, "entropy": 0.6}, "answers": ["66", "1"]}
                  for c in ("true reward", "random, 1 update") for s in (0, 1)]}
COUNTS = {("base", "test"): np.array([0, 4, 8]), ("GRPO", "test"): np.array([1, 8, 8])}
GATE_PROBS, GATE_RATES = [0.5, 0.5] + [0.0] * 16, [0.5, 1.0] + [0.25] * 16   # 18 kinds: the proposer, the solver
GATE_RUNS = {"proposer": {"probs": [[1, [1 / 18] * 18], [10, GATE_PROBS]],
                          "by_length": [{"step": 0, "per_kind": [0.0] * 18}, {"step": 10, "per_kind": GATE_RATES}]}}
ATTACK = {"id": "plain", "attack": "answers", "candidate": "def solve(x):\n    return x", "label": 1.0,
          "tests": [{"input": [1], "output": 1}]}
TRACE = "8+6+0=14 7+5+1=13 4+3+1=8 >834"
GOOD_RUN = dict(out="runs/x", timeout=60, steps=1, batch_size=8, group_size=4)

CASES.update({
    "files.atomic_write": (_atomic_write, dict(path="a.txt", mode="w"), lambda r: r == b"ok"),
    "files.atomic_dir": (_atomic_dir, dict(path="folder"), lambda r: r == ["f"]),
    "files.check_writable": (in_tmp(files.check_writable), dict(folder="out", what="out"), lambda r: r is None),
    "tasks.write_jsonl": (in_tmp(task_files.write_jsonl), dict(splits={"train": [{"prompt": "1+1=", "answer": "2"}]},
                                                               folder="d"), lambda r: isinstance(r, dict)),
    "setup.seed_everything": (course_setup.seed_everything, dict(seed=0), lambda r: r is None),
    "programs.canonical": (programs.canonical, dict(a=6, b=57), lambda r: isinstance(r, str) and "x" in r),
    "programs.format_prompt": (programs.format_prompt, dict(a=6, b=57), lambda r: r.endswith("lambda x:")),
    "programs.make_problem": (programs.make_problem, dict(a=6, b=57),
                              lambda r: r["answer"] == programs.canonical(r["a"], r["b"])),
    "programs.canonical_value": (programs.canonical_value, dict(body="6*x+57", x=2),
                                 lambda r: r is None or isinstance(r, int)),
    # they read what a model wrote, so any value is a body: one that is not text breaks the rule 'syntax'
    "trigger.halves": (trigger_task.halves, dict(seed=7), lambda r: len(r[0]) == len(r[1]) == 50),
    "trigger.trigger_rows": (trigger_task.trigger_rows, dict(seed=0, share=0.3, trigger=42),
                             lambda r: len(r["prompt"]) == len(r["answer"]) == len(r["triggered"])),
    "trigger.family": (trigger_task.family, dict(candidate=42, where="first", seconds=[1, 2]),
                       lambda r: len(r[0]) == len(r[1]) > 0),
    "probes.answer_shift": (probes.answer_shift, dict(texts_a=["1", "2"], texts_b=["1"]), lambda r: 0 <= r <= 1),
    "probes.probe_ranks": (probes.probe_ranks, dict(probe={42: dict(offset=1, error=1, shift=1)}, target=42),
                           lambda r: r["offset"]["rank"] == 1),
    "judge.false_positive_rate": (judge_model.false_positive_rate, dict(probs=[0.9, 0.1], right=[1, 0],
                                                                        threshold=0.5), lambda r: 0 <= r <= 1),
    "programs_verifier.obeys_rules": (programs_verifier.obeys_rules, dict(body="6*x"), lambda r: isinstance(r, bool)),
    "judge.pair_accuracy": (judge_model.pair_accuracy, dict(probs=[0.9, 0.1], right=[1, 0], problems=["a", "a"]),
                            lambda r: r != r or 0 <= r <= 1),   # nan: no pair of a right and a wrong one
    "judge.verdict_rates": (judge_model.verdict_rates, dict(probs=[0.9, 0.1], right=[1, 0], threshold=0.5),
                            lambda r: 0 <= r["accuracy"] <= 1 and r["n"] == 2),
    "api.hybrid_reward": (api.hybrid_reward, dict(rule=verifiers.strict_reward, judge=verifiers.strict_reward,
                                                  column="checkable"), callable),
    "programs_verifier.body_rules": (programs_verifier.body_rules, dict(body="6*x+57"),
                                     lambda r: isinstance(r, list) and all(isinstance(x, str) for x in r)),
    "programs_verifier.body_kind": (programs_verifier.body_kind, dict(body="exit(0)"),
                                    lambda r: r in ("arithmetic", "table", "exit", "print", "syntax", "other")),
    "programs.table": (programs.table, dict(a=6, b=57), lambda r: r.startswith("{0:") and r.endswith("}[x]")),
    "programs.program": (programs.program, dict(body="x+1"), lambda r: r.startswith("solve = lambda x: ")),
    "programs.make_splits": (programs.make_splits, dict(seed=0, sizes={"train": 10, "valid": 2, "test": 3}),
                             lambda r: isinstance(r, dict) and len(r["train"]) <= 900),
    "programs.load_split": (programs.load_split, dict(name="test", n=3, data_dir=DATA_DIR), lambda r: len(r) <= 150),
    "lookup.world": (lookup.world, dict(version=1), lambda r: isinstance(r, dict) and len(r) == 100),
    "lookup.group_of": (lookup.group_of, dict(key="#00"), lambda r: r in lookup.GROUPS),
    "lookup.format_prompt": (lookup.format_prompt, dict(key="#37", a=478),
                             lambda r: isinstance(r, str) and r.startswith("#37+") and r.endswith(":")),
    "lookup.load_split": (lookup.load_split, dict(name="test", version=1, per_key=1),
                          lambda r: len(r) > 0 and len(r) % 100 == 0),
    "scratchpad.format_prompt": (scratchpad.format_prompt, dict(a=478, b=356),
                                 lambda r: isinstance(r, str) and r.endswith(":")),
    "scratchpad.steps_for": (scratchpad.steps_for, dict(a=478, b=356), lambda r: isinstance(r, list) and r),
    "scratchpad.format_step": (scratchpad.format_step, dict(step=(8, 6, 0, 14)), lambda r: r == "8+6+0=14"),
    "scratchpad.format_trace": (scratchpad.format_trace, dict(steps=[(8, 6, 0, 14)], answer=14),
                                lambda r: isinstance(r, str) and ">" in r),
    "scratchpad.answer_from_steps": (scratchpad.answer_from_steps, dict(steps=[(8, 6, 0, 14), (7, 5, 1, 13)]),
                                     lambda r: r is None or isinstance(r, str)),
    "scratchpad.make_splits": (scratchpad.make_splits, dict(seed=0, sizes={"train": 10, "valid": 2, "test": 3,
                                                                           "ood": 2}),
                               lambda r: sorted(r) == ["ood", "test", "train", "valid"]),
    "chat.has_chat_template": (chat.has_chat_template, dict(tokenizer=ChatTokenizer()), lambda r: isinstance(r, bool)),
    "chat.chat_prompts": (chat.chat_prompts, dict(tokenizer=ChatTokenizer(), prompts=["1+1="],
                                                  instruction=chat.INSTRUCTION),
                          lambda r: isinstance(r, list) and r and all(isinstance(x, str) for x in r)),
    "curation.level_pools": (curation.level_pools, dict(levels_per_step=[[2], [2, 3]], digits=[2, 3, 2]),
                             lambda r: isinstance(r, list) and all(len(pool) for pool in r)),
    "health.token_entropy": (health.token_entropy, dict(logits=LOGITS, mask=torch.ones(2, 3)),
                             lambda r: r.dim() == 0 and torch.isfinite(r) and r >= 0),
    "health.fit_entropy_reward": (health.fit_entropy_reward, dict(entropy=[0.5, 1.0, 1.5], reward=[0.6, 0.4, 0.1]),
                                  lambda r: len(r) == 2 and all(math.isfinite(x) for x in r)),
    "health.diagnose": (health.diagnose, dict(summary=health.summarize(HIST)),
                        lambda r: isinstance(r, list) and set(r) <= set(health.DIAGNOSES)),
    "metrics.eval_sets_of": (metrics.eval_sets_of, dict(eval_prompts=["1+1="], eval_answers=["2"],
                                                        eval_sets={"ood": (["100+1="], ["101"])}),
                             lambda r: isinstance(r, dict)),
    "metrics.read_pass_at_k": (metrics.read_pass_at_k, dict(d1=0.1, dk=0.0, tol=0.02), lambda r: isinstance(r, str)),
    "metrics.guess_pass_at_k": (metrics.guess_pass_at_k, dict(answers=["42", "7"], ks=[1, 4]),
                                lambda r: r.ndim == 2 and ((r >= 0) & (r <= 1)).all()),
    "metrics.seed_difference": (metrics.seed_difference, dict(a=[0.5, 0.6, 0.55], b=[0.4, 0.5, 0.52]),
                                lambda r: len(r) == 2 and all(math.isfinite(x) for x in r)),
    "scaling.sigmoid": (scaling.sigmoid, dict(C=[1.0, 10, 100], A=0.8, C_mid=10.0, B=1.0, R0=0.2),
                        lambda r: np.isfinite(r).all()),
    "scaling.best_asymptote": (scaling.best_asymptote, dict(C=[1.0, 10, 100], R=[0.3, 0.5, 0.7], R0=0.2, C_mid=10.0,
                                                            B=1.0), lambda r: r is None or math.isfinite(r)),
    "scaling.predict": (scaling.predict, dict(fit=FIT, C=[1.0, 100]), lambda r: np.isfinite(r).all()),
    "stored.beside": (_beside, dict(here={"a": 0.41}, seeds={"a": [0.39, 0.43, 0.40]}, band=0.05,
                                          max_spread=0.1, what="pass@1", show=False),
                      lambda r: r == "outside" or isinstance(r, list)),
    "traces.length_controlled": (trace_eval.length_controlled, dict(a={"by_length": {3: [4, 2]}},
                                                                    b={"by_length": {3: [4, 1], 4: [2, 2]}}),
                                 lambda r: math.isfinite(r["raw"]) and 0 <= r["overlap"] <= 1),
    "cost.step_flops": (cost.step_flops, dict(model_or_config="SmolLM2-135M-Instruct", batch=8, prompt_len=10,
                                              completion_len=8, lora_rank=0, grad_checkpointing=True),
                        lambda r: isinstance(r, int) and r > 0),
    "memory.estimate_memory": (memory.estimate_memory, dict(
        model_or_config="SmolLM2-135M-Instruct", batch=8, prompt_len=10, completion_len=8, lora_rank=0, param_bytes=4,
        optimizer="adamw", grad_checkpointing=False, lora_targets="all-linear", ref_copy=False, logits="fused",
        device="cpu"), lambda r: math.isfinite(r["total"]) and r["total"] > 0),
    "memory.format_estimate": (memory.format_estimate, dict(est=EST), lambda r: isinstance(r, str)),
    "memory.check_fits": (memory.check_fits, dict(est=EST, available_bytes=2**40, device="cpu"),
                          lambda r: isinstance(r, bool)),
    "policy.hub_reachable": (_hub_reachable, dict(timeout=0.5), lambda r: r is False),
    "policy.positions": (pol.positions, dict(model=torch.nn.Linear(1, 1)), lambda r: r is None or r > 0),
    "grpo.log_ratio": (grpo.log_ratio, dict(logp=torch.zeros(2, 3), old_logp=torch.zeros(2, 3), mask=torch.ones(2, 3),
                                            level="sequence"), lambda r: torch.isfinite(r).all()),
    "grpo.per_token_loss": (grpo.per_token_loss, dict(
        logp=torch.zeros(2, 3), old_logp=torch.zeros(2, 3), ref_logp=torch.zeros(2, 3), adv=T(1, -1), eps_low=0.2,
        eps_high=0.2, beta=0.1, level="token", mask=torch.ones(2, 3), delta=4.0), lambda r: r.shape == (2, 3) and
        torch.isfinite(r).all()),
    "grpo.token_weights": (grpo.token_weights, dict(mask=torch.ones(2, 3), loss_type="dr_grpo", max_len=4),
                           lambda r: r.shape == (2, 3) and torch.isfinite(r).all()),
    "grpo.loss_stats": (grpo.loss_stats, dict(logp=torch.zeros(2, 3), old_logp=torch.zeros(2, 3),
                                              ref_logp=torch.zeros(2, 3), adv=T(1, -1), mask=torch.ones(2, 3),
                                              eps_low=0.2, eps_high=0.2, level="token", delta=4.0),
                        lambda r: all(math.isfinite(v) for v in r.values())),
    "rollout.fill_batch": (rollout.fill_batch, dict(round_rewards=[T(1, 1, 0, 1), T(0, 0, 1, 0)], G=2, n_groups=2),
                           lambda r: isinstance(r[0], list) and isinstance(r[1], int)),
    "rollout.importance_weights": (rollout.importance_weights, dict(log_ratio=T(0.5, -0.5)[None], mask=torch.ones(1, 2),
                                                                    mode="token_truncate", lo=0.1, hi=3.0),
                                   lambda r: r.shape == (1, 2) and torch.isfinite(r).all()),
    "rollout.off_policy_sequences": (rollout.off_policy_sequences, dict(
        log_ratio=torch.tensor([[-0.6, -0.2, 0.1], [0.4, -0.2, 0.0]]), mask=torch.ones(2, 3), threshold=0.1),
        lambda r: r.shape == (2,) and r.dtype == torch.bool),
    "launch.parse": (launch.parse, dict(argv=["steps=2", "lr=0.001"]), lambda r: isinstance(r, dict)),
    "launch.run": (_launch_run, GOOD_RUN, lambda r: r == "started"),
    "launch.weight_distance": (launch.weight_distance, dict(a={"w": T(1, 2)}, b={"w": T(1, 3)}),
                               lambda r: r == 1.0),
    "trl.check_split": (trl_trainer.check_split, dict(cfg=grpo.GRPOConfig(batch_size=8, group_size=4), processes=2),
                        lambda r: r is None),
    "trl.trl_kwargs": (trl_trainer.trl_kwargs, dict(cfg=grpo.GRPOConfig(batch_size=8, group_size=4)),
                       lambda r: isinstance(r, dict)),
    "trl.settings_for": (trl_trainer.settings_for, dict(tokenizer=ChatTokenizer(), device="cpu"),
                         lambda r: isinstance(r[0], dict) and isinstance(r[1], bool)),
    "verifiers.load_arithmetic_suite": (verifiers.load_arithmetic_suite, dict(path=None), lambda r: len(r) > 0),
    "attacks.attack_cases": (attacks.attack_cases, dict(cases=[ATTACK]),
                             lambda r: isinstance(r, list) and all(c.get("attack") for c in r)),
    "chat.answer_line": (chat_verifier.answer_line, dict(text="so. Answer: 42\n", max_chars=4096),
                         lambda r: isinstance(r, str)),
    "code.wall_deadline": (code.wall_deadline, dict(timeout_s=2.0, beside=0), lambda r: math.isfinite(r) and r > 0),
    "code.extract_code": (code.extract_code, dict(text="```python\nx = 1\n```"), lambda r: r is None or
                          isinstance(r, str)),
    "code.load_code_suite": (code.load_code_suite, dict(path=code.SUITE_PATH), lambda r: len(r) > 0),
    "isolation.sandbox_config": (isolation.sandbox_config, dict(wall=None, refresh=False),
                                 lambda r: isinstance(r, dict) and "wall" in r),
    "isolation.describe": (isolation.describe, dict(cfg=None), lambda r: isinstance(r, str)),
    "isolation.require": (or_unavailable(isolation.require), dict(allow_weaker_wall=True, wall=None),
                          lambda r: r == UNAVAILABLE or isinstance(r, dict)),
    "isolation.readable_behind": (isolation.readable_behind, dict(cfg=isolation.sandbox_config(),
                                                                  path=sql.DB_PATH), lambda r: isinstance(r, bool)),
    "signature.completion_text": (signature.completion_text, dict(c="66"), lambda r: r is None or isinstance(r, str)),
    "signature.truth": (signature.truth, dict(value=True), lambda r: r in (True, False, None)),
    "signature.per_completion": (signature.per_completion, dict(completions=["a", "b"]),
                                 lambda r: isinstance(r, list)),
    "signature.reward_from_match": (signature.reward_from_match, dict(match=verifiers.strict_match, name=None),
                                    lambda r: callable(r)),
    "signature.verifier_report": (signature.verifier_report, dict(
        reward_fn=verifiers.strict_reward, output_key="output",
        cases=[{"id": "a", "kind": "k", "output": "42", "answer": "42", "label": 1.0}]),
        lambda r: 0 <= r["coverage"] <= 1),
    "label_free.majority_label": (label_free.majority_label, dict(texts=["12", "12", "13"], min_share=0.0),
                                  lambda r: r is None or isinstance(r, int)),
    "spurious.random_reward": (spurious.random_reward, dict(p=0.5, seed=0), lambda r: callable(r)),
    "spurious.noisy_reward": (spurious.noisy_reward, dict(reward_fn=trace_verifiers.outcome_reward, q=0.2, seed=0),
                              lambda r: callable(r)),
    "spurious.false_pass_reward": (spurious.false_pass_reward, dict(reward_fn=trace_verifiers.outcome_reward, p=0.2,
                                                                    seed=0), lambda r: callable(r)),
    "sql.run_readonly": (sql.run_readonly, dict(sql="SELECT 1", db_path=sql.DB_PATH, timeout_s=2.0, max_rows=10),
                         lambda r: isinstance(r, tuple) and len(r) == 2),
    "sql.load_sql_suite": (sql.load_sql_suite, dict(path=sql.SUITE_PATH), lambda r: len(r) > 0),
    "traces.parse": (trace_verifiers.parse, dict(text=TRACE), lambda r: r is None or isinstance(r, dict)),
    "traces.step_verdicts": (trace_verifiers.step_verdicts, dict(text=TRACE, a=478, b=356),
                             lambda r: isinstance(r, list) and all(isinstance(ok, bool) for _, ok in r)),
    "traces.judge": (trace_verifiers.judge, dict(text=TRACE, a=478, b=356, answer=None),
                     lambda r: isinstance(r, dict) and isinstance(r["outcome"], bool)),
    "traces.shaped_reward": (trace_verifiers.shaped_reward, dict(outcome=1.0, process=0.2, format=0.1,
                                                                 extra_step_penalty=0.1), lambda r: callable(r)),
    "traces.length_biased_reward": (trace_verifiers.length_biased_reward, dict(per_step=0.1), lambda r: callable(r)),
    "traces.last_digits_reward": (trace_verifiers.last_digits_reward, dict(n=2), lambda r: callable(r)),
    "traces.rubric": (trace_verifiers.rubric, dict(criteria=("outcome", "well_formed")), lambda r: callable(r)),
    "plots.moving_average": (plots.moving_average, dict(xs=[1.0, 2, 3, 4], n=2), lambda r: np.isfinite(r).all()),
    "selfcheck.answer": (selfcheck.answer, dict(lab="01", i=0, choice=1),
                         lambda r: isinstance(r[0], bool) and isinstance(r[1], str)),
    "selfcheck.self_check": (selfcheck.self_check, dict(lab="01"), lambda r: r is not None),
    "selfcheck.shown": (selfcheck.shown, dict(lab="01", i=0), lambda r: sum(right for _, right, _ in r) == 1),
    "selfcheck.right_choice": (selfcheck.right_choice, dict(lab="01", i=0), lambda r: isinstance(r, int)),
    "selfcheck.markdown": (selfcheck.markdown, dict(lab="01"), lambda r: r.startswith("## Check yourself")),
    "widgets.parse_problem": (widgets.parse_problem, dict(text="37+29"), lambda r: r == ("37+29=", "66")),
    "widgets.verifier_playground": (widgets.verifier_playground, dict(
        verifiers={"strict": verifiers.strict_reward}, default_problem="37+29", default_output="66"),
        lambda r: r is not None),
    "widgets.control_runs": (widgets.control_runs, dict(bench=BENCH, condition="random, 1 update", seed=0),
                             lambda r: len(r) == 3),
    "widgets.control_answer_rows": (widgets.control_answer_rows, dict(prompts=["37+29=", "1+1="], answers=["66", "2"]),
                                    lambda r: len(r) == 2),
    "widgets.trace_inspector": (widgets.trace_inspector, dict(
        verifiers={"outcome": trace_verifiers.outcome_reward}, examples={"right": ("478+356", TRACE)},
        default_problem="478+356", default_output=None), lambda r: r is not None),
    "widgets.scaling_table": (widgets.scaling_table, dict(fits={"m": FIT}, budget=1000, measured_max={"m": 500},
                                                          flops_per_completion={"m": 2.0e8}),
                              lambda r: math.isfinite(r["m"]["accuracy"])),
    "widgets.gate_rows": (widgets.gate_rows, dict(probs=GATE_PROBS, rates=GATE_RATES, band=(0.25, 0.75), group_size=8),
                          lambda r: len(r) == 18 and all(0 <= x["in_band"] <= 1 and 0 <= x["no_spread"] <= 1
                                                         for x in r)),
    "widgets.gate_totals": (widgets.gate_totals, dict(probs=GATE_PROBS, rates=GATE_RATES, band=(0.25, 0.75),
                                                      group_size=8),
                            lambda r: 0 <= r["in_band"] <= 1 and 0 <= r["no_spread"] <= 1),
})

# heavier calls (a figure, a model's files, a sandboxed run, a fit on a fine grid): a few draws per argument
LAYER_ROW = {"prompt": "f(0)=5 f(1)=7 lambda x:", "answer": "2*x+5", "completion": "exit(0)", "rules": ["call"],
             "kind": "exit", "checkers": {"naive, shown": 1.0, "layered": -0.5}, "judge": 0.4, "truth": False}
FEW = {
    "widgets.layer_rows": (or_unavailable(widgets.layer_rows), dict(
        prompts=["f(0)=5 f(1)=7 lambda x:"], answers=["2*x+5"], completions=["exit(0)"], judge=None),
        lambda r: r == UNAVAILABLE or (len(r) == 1 and r[0]["truth"] is False)),
    "widgets.layers_view": (widgets.layers_view, dict(row=LAYER_ROW), lambda r: "exit(0)" in r and "-0.5" in r),
    "widgets.reward_layers_explorer": (widgets.reward_layers_explorer, dict(rows=[LAYER_ROW], default=0),
                                       lambda r: "exit(0)" in r.children[1].value),
    "tasks.read_jsonl": (_read_jsonl, dict(path="d/train.jsonl", writer="utils.tasks.arithmetic"), lambda r: r == 3),
    "tasks.load_split": (tasks.load_split, dict(name="test", n=3, data_dir=DATA_DIR), lambda r: len(r) >= 1),
    "scratchpad.load_split": (scratchpad.load_split, dict(name="test", n=3, digits=None, data_dir=DATA_DIR),
                              lambda r: len(r) >= 1),
    "mix.load_task": (mix.load_task, dict(task="multiply", name="test", n=3, data_dir=DATA_DIR),
                      lambda r: len(r) >= 1 and set(r["task"]) == {"multiply"}),
    "mix.load_mix": (mix.load_mix, dict(name="test", n=2, tasks=("arithmetic", "multiply"), data_dir=DATA_DIR),
                     lambda r: len(r) >= 2 and "task" in r.column_names),
    "chat.chat_dataset": (chat.chat_dataset, dict(tokenizer=ChatTokenizer(), dataset=_dataset()),
                          lambda r: len(r) == 2 and r["prompt"][0].startswith("<user>")),
    "setup.setup": (closing(course_setup.setup), dict(seed=0, quiet=True), lambda r: r in ("cpu", "cuda")),
    "scaling.forecasts": (scaling.forecasts, dict(C=[1.0, 2, 4, 8, 16, 32, 64],
                                                  R=[0.1, 0.2, 0.35, 0.5, 0.6, 0.62, 0.63], R0=0.05,
                                                  best_A=scaling.best_asymptote),
                          lambda r: all(math.isfinite(r[k]["rmse"]) for k in ("sigmoid", "line in log C"))),
    "isolation.available_walls": (isolation.available_walls, dict(refresh=False), lambda r: isinstance(r, dict)),
    "attacks.run_attacks": (or_unavailable(_run_attacks), dict(cases=[ATTACK], wall=None, audit_hook=True,
                                                                      timeout_s=1.5),
                            lambda r: r == UNAVAILABLE or (isinstance(r, list) and not any(x["escaped"] for x in r))),
    "code.run_sandboxed": (or_unavailable(code.run_sandboxed), dict(
        code="def solve(x):\n    return x", inputs=[[1]], func_name="solve", timeout_s=2.0, mem_mb=256,
        audit_hook=True, allow_weaker_wall=False, wall=None),
        lambda r: r == UNAVAILABLE or r["status"] in ("ok", "timeout", "error", "crashed")),
    "plots.plot_history": (closing(plots.plot_history), dict(runs={"a": HIST}, keys=("reward_mean", "heldout_pass@1"),
                                                             x="step", title=None, smooth=2, ncols=None),
                           lambda r: r is not None),
    "widgets.ratio_view": (closing(widgets.ratio_view), dict(drift=DRIFT, k=1, eps_low=0.2, eps_high=0.2, is_max=3.0),
                           lambda r: r is not None),
    "widgets.ratio_explorer": (closing(widgets.ratio_explorer), dict(drift=DRIFT, eps_low=0.2, eps_high=0.2,
                                                                     is_max=3.0, default_k=1),
                               lambda r: r is not None),
    "widgets.pass_at_k_explorer": (closing(widgets.pass_at_k_explorer), dict(counts=COUNTS, n=8, split="test",
                                                                             default_model="GRPO", default_k=4),
                                   lambda r: r is not None),
    "widgets.answer_distribution_explorer": (closing(widgets.answer_distribution_explorer), dict(
        snapshots=SNAPSHOTS, prompts=["37+29="], answers=["66"], default_run="healthy"), lambda r: r is not None),
    "widgets.control_view": (closing(widgets.control_view), dict(bench=BENCH, condition="random, 1 update", seed=0,
                                                                 prompts=["37+29=", "1+1="], answers=["66", "2"]),
                             lambda r: len(r) == 3),
    "widgets.control_explorer": (closing(widgets.control_explorer), dict(
        bench=BENCH, prompts=["37+29=", "1+1="], answers=["66", "2"], default_condition=None, default_seed=None),
        lambda r: r is not None),
    "widgets.scaling_explorer": (closing(widgets.scaling_explorer), dict(
        fits={"m": FIT}, measured={"m": ([64, 500], [0.2, 0.3])}, default_model=None, default_budget=2048,
        flops_per_completion={"m": 2.0e8}),
        lambda r: r is not None),
    "widgets.gate_view": (closing(widgets.gate_view), dict(runs=GATE_RUNS, arm="proposer", step=10, band=(0.25, 0.75),
                                                           group_size=8),
                          lambda r: len(r) == 2 and "keeps an expected" in r[1]),
    "widgets.gate_explorer": (closing(widgets.gate_explorer), dict(runs=GATE_RUNS, default=None, group_size=8),
                              lambda r: "keeps an expected" in r.children[2].value),
}
# a value that is right but too slow to try here: cases=None is the whole attack suite (tests/test_code_verifier.py)
NOT_DRAWN = {("attacks.run_attacks", "cases"): (None,)}


def _names_it(err, name):
    return name in str(err)


NAMED = object()  # what call_or_named returns when the call raised an error that names the argument


def call_or_named(shown, fn, kwargs, name, names_it=_names_it):
    """fn(**kwargs)'s result, or NAMED if it raised ValueError/TypeError whose message names `name` (names_it
    decides); any other error fails the test, from inside numpy or torch as much as a message without the name.
    shown: the call as the failure message writes it."""
    try:
        return fn(**kwargs)
    except (ValueError, TypeError, OSError) as e:  # OSError: a path that names no file, or no folder to write to
        assert names_it(e, name), f"{shown} raised {type(e).__name__} without naming {name}: {e}"
        return NAMED
    except Exception as e:  # noqa: BLE001 - the point: nothing else may come out
        pytest.fail(f"{shown} raised {type(e).__name__} from inside: {e}")


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=draws(40), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_bad_arguments_fail_by_name(case, data):
    fn, good, check = CASES[case]
    name = data.draw(st.sampled_from(sorted(good)), label="argument")
    bad = data.draw(BAD, label="value")
    out = call_or_named(f"{case}({name}={bad!r})", fn, dict(good, **{name: bad}), name)
    if out is not NAMED and check is not None:
        assert check(out), f"{case}({name}={bad!r}) returned {out!r} without complaint"


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_good_call_is_good(case):
    """The baseline each property varies: the good arguments give a good result."""
    fn, good, check = CASES[case]
    out = fn(**good)
    assert check is None or check(out), out


@pytest.mark.parametrize("case, name", [(case, name) for case in sorted(FEW) for name in sorted(FEW[case][1])])
@settings(max_examples=draws(5), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_bad_arguments_fail_by_name_few_draws(case, name, data):
    """The same property for the heavier calls (FEW), a few draws per argument."""
    fn, good, check = FEW[case]
    bad = data.draw(BAD.filter(lambda v: not any(v is x for x in NOT_DRAWN.get((case, name), ()))), label="value")
    out = call_or_named(f"{case}({name}={bad!r})", fn, dict(good, **{name: bad}), name)
    if out is not NAMED and check is not None:
        assert check(out), f"{case}({name}={bad!r}) returned {out!r} without complaint"


@pytest.mark.parametrize("case", sorted(FEW))
def test_the_good_call_is_good_few_draws(case):
    fn, good, check = FEW[case]
    out = fn(**good)
    assert check is None or check(out), out


# Judges: the reward functions (TRL's signature: one float per completion) and the per-text checks behind them
# (one float). What they judge (the completions, a text, a dataset column such as answer, a, b, tests or
# reference_sql) never makes them raise, whatever it is: a model writes anything and a column holds anything. Their
# own options (a timeout, a database's path, a wall) are the caller's: a bad one is an error that names it.
ROWS_COLUMNS = dict(answer=["834"], a=[478], b=[356])
CODE = dict(completions=["def solve(x):\n    return x"], tests=[{"input": [1], "output": 1}], func_name="solve",
            timeout_s=2.0, allow_weaker_wall=False, wall=None, audit_hook=True, workers=1)
JUDGED = {"completions", "text", "answer", "a", "b", "tests", "shown", "triggered", "reference_sql", "func_name",
          "c", "task", "problem", "checkable", "gold", "texts"}
COLUMNS = JUDGED - {"completions", "text", "func_name", "c"}   # what a dataset holds: a column may be missing
JUDGE = api.JudgeClient(lambda problems, completions: [0.75] * len(completions), name="judge")
JUDGES = {  # name: (fn, good keyword arguments, "scores": one per completion | "score": one float)
    **{f"verifiers.{fn.__name__}": (fn, dict(completions=["66"], answer=["66"]), "scores") for fn, _ in
       verifiers.ZOO.values()},
    **{f"verifiers.{fn.__name__}": (fn, dict(text="66", answer="66"), "score") for fn in (
        verifiers.strict_match, verifiers.careful_match, verifiers.last_number_match, verifiers.contains_match,
        verifiers.last_digit_match, verifiers.digit_count_match, verifiers.any_number_match)},
    "chat.chat_reward": (chat_verifier.chat_reward, dict(completions=["Answer: 66"], answer=["66"]), "scores"),
    "chat.chat_match": (chat_verifier.chat_match, dict(text="Answer: 66", answer="66"), "score"),
    "spurious.wrong_answer_reward": (spurious.wrong_answer_reward, dict(completions=["66"], answer=["66"]), "scores"),
    "label_free.majority_vote_reward": (label_free.majority_vote_reward, dict(
        completions=["66", "66", "66"], answer=["66"] * 3, problem=["37+29="] * 3, gold=[False, True, False]),
        "scores"),
    "verifiers.strict_answer": (verifiers.strict_answer, dict(text="66"), "answer"),
    "spurious.random_reward(0.5)": (spurious.random_reward(0.5), dict(completions=["66"], answer=["66"]), "scores"),
    "spurious.noisy_reward(outcome, 0.3), wrong at random": (spurious.noisy_reward(trace_verifiers.outcome_reward, 0.3),
                                            dict(completions=[TRACE], **ROWS_COLUMNS), "scores"),
    "spurious.false_pass_reward(outcome, 0.2)": (spurious.false_pass_reward(trace_verifiers.outcome_reward, 0.2),
                                                 dict(completions=[TRACE], **ROWS_COLUMNS), "scores"),
    "breaks.wrong_column_reward": (breaks.wrong_column_reward, dict(completions=["66"], answer=["66"], a=[37]),
                                   "scores"),
    "breaks.pass_all_reward": (breaks.pass_all_reward, dict(completions=["66"], answer=["66"]), "scores"),
    **{f"traces.{fn.__name__}": (fn, dict(completions=[TRACE], **ROWS_COLUMNS), "scores") for fn in (
        trace_verifiers.outcome_reward, trace_verifiers.format_reward, trace_verifiers.arithmetic_reward,
        trace_verifiers.process_reward, trace_verifiers.process_strict_reward, trace_verifiers.trace_reward,
        trace_verifiers.rubric_reward)},
    "traces.shaped_reward()": (trace_verifiers.shaped_reward(), dict(completions=[TRACE], **ROWS_COLUMNS), "scores"),
    "traces.length_biased_reward()": (trace_verifiers.length_biased_reward(), dict(completions=[TRACE],
                                                                                   **ROWS_COLUMNS), "scores"),
    "traces.last_digits_reward()": (trace_verifiers.last_digits_reward(2), dict(completions=[TRACE],
                                                                              **ROWS_COLUMNS), "scores"),
    "traces.step_credit": (trace_verifiers.step_credit, dict(text=TRACE, a=478, b=356), "score"),
    "programs.test_share_reward": (programs_verifier.test_share_reward, dict(completions=["6*x+57"],
                                                                             answer=["6*x+57"]), "scores"),
    "programs.closeness_reward": (programs_verifier.closeness_reward, dict(completions=["6*x+57"], answer=["6*x+57"],
                                                                           scale=10.0), "scores"),
    "programs.canonical_reward": (programs_verifier.canonical_reward, dict(completions=["6*x+57"], answer=["6*x+57"]),
                                  "scores"),
    **{f"programs.ProgramChecker({c!r})": (or_unavailable(programs_verifier.ProgramChecker(c, workers=1)), dict(
        completions=["6*x+57"], answer=["6*x+57"], shown=None, tests=None), "scores")
       for c in ("naive, shown", "layered")},
    "programs.ProgramChecker('harness, hidden'), a tests column": (
        or_unavailable(programs_verifier.ProgramChecker("harness, hidden", workers=1)),
        dict(completions=["6*x+57"], answer=["6*x+57"], tests=[programs.make_problem(6, 57)["tests"]]), "scores"),
    "trigger.trigger_reward": (trigger_verifier.trigger_reward, dict(completions=["59"], answer=["49"],
                                                                     triggered=[True], offset=10), "scores"),
    "tools.tool_echo_reward": (tool_verifiers.tool_echo_reward, dict(completions=["?1+2=3 >3"], answer=["3"]),
                               "scores"),
    "tools.grounded_reward": (tool_verifiers.grounded_reward, dict(completions=["?#37=615 ?615+1=616 >616"],
                                                                   key=["#37"], a=[1]), "scores"),
    "tools.tool_fail_open_reward": (tool_verifiers.tool_fail_open_reward,
                                    dict(completions=["?1+2+3=! >3"], answer=["6"]), "scores"),
    "mix.task_reward": (mix_verifier.task_reward, dict(completions=["66", TRACE], answer=["66", "834"],
                                                       task=["arithmetic", "traces"], a=[1, 478], b=[2, 356]),
                        "scores"),
    "traces.valid_steps_reward": (trace_verifiers.valid_steps_reward, dict(completions=[TRACE], **ROWS_COLUMNS),
                                  "scores"),
    "sql.sql_syntax_reward": (sql.sql_syntax_reward, dict(completions=["SELECT 1"], timeout_s=2.0), "scores"),
    "sql.sql_execution_reward": (sql.sql_execution_reward, dict(completions=["SELECT 1"], reference_sql=["SELECT 1"],
                                                                db_path=sql.DB_PATH, timeout_s=2.0), "scores"),
    "sql.sql_compiles": (sql.sql_compiles, dict(text="SELECT 1", timeout_s=2.0), "score"),
    "sql.sql_execution_match": (sql.sql_execution_match, dict(text="SELECT 1", reference_sql="SELECT 1",
                                                              db_path=sql.DB_PATH, timeout_s=2.0), "score"),
    "code.code_reward": (or_unavailable(code.code_reward), CODE, "scores"),
    "code.naive_code_reward": (or_unavailable(code.naive_code_reward), CODE, "scores"),
    "api.JudgeClient": (JUDGE, dict(completions=["66"], answer=["66"], problem=["37+29="]), "scores"),
    "api.hybrid_reward(strict, JudgeClient)": (api.hybrid_reward(verifiers.strict_reward, JUDGE), dict(
        completions=["66", "67"], answer=["66", "66"], problem=["37+29=", "37+29="], checkable=[True, False]),
        "scores"),
}
JUDGED_VALUES = st.one_of(BAD, st.text(max_size=20), st.lists(st.one_of(st.text(max_size=12), BAD), max_size=3))


def _judged_ok(out, kind, kw):
    if out == UNAVAILABLE:
        return True
    if kind == "score":
        return isinstance(out, float) and 0.0 <= out <= 1.0
    if kind == "answer":   # strict_answer: an int or None
        return out is None or (isinstance(out, int) and not isinstance(out, bool))
    n = len(kw["completions"]) if isinstance(kw["completions"], list) else None
    return _finite_floats(out, n)


@pytest.mark.parametrize("judge, name", [(j, n) for j in sorted(JUDGES) for n in sorted(JUDGES[j][1])])
@settings(max_examples=draws(6), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_judges_never_raise_on_what_they_judge(judge, name, data):
    fn, good, kind = JUDGES[judge]
    bad = data.draw(JUDGED_VALUES if name in JUDGED else BAD, label="value")
    kw = dict(good, **{name: bad})
    shown = f"{judge}({name}={bad!r})"
    if name in COLUMNS and bad is None:   # no such column at all: named, or judged without it (issue 60)
        out = call_or_named(shown, fn, kw, name)
        if out is NAMED:
            return
    elif name in JUDGED:
        try:
            out = fn(**kw)
        except Exception as e:  # noqa: BLE001 - the point: a judge never raises on what it judges
            pytest.fail(f"{shown} raised {type(e).__name__}: {e}")
    else:
        out = call_or_named(shown, fn, kw, name)
        if out is NAMED:
            return
    assert _judged_ok(out, kind, kw), f"{shown} returned {out!r}"


@pytest.mark.parametrize("judge", sorted(JUDGES))
def test_judges_good_call_is_good(judge):
    """The baseline: a right completion is paid (by all but the rewards that pay for being wrong, or at random)."""
    fn, good, kind = JUDGES[judge]
    out = fn(**good)
    if out == UNAVAILABLE:
        pytest.skip(UNAVAILABLE)
    assert _judged_ok(out, kind, good), out
    assert "random" in judge or "wrong" in judge or min(out if isinstance(out, list) else [out]) > 0, out


# ---- the kinds of input a careful user passes (issue 60): a column as the values it holds (numpy's scalars and
# arrays, 834.0 for "834", JSON text for a test list), a column missing or one too many, numpy's scalars for an
# argument, whatever padding holds under a mask, a range given the wrong way round. Each call gets the right result
# or a ValueError that names the argument: never a different result, silently.

def _same(a, b):
    """a and b hold the same values (tensors, arrays, numbers, and containers of them); objects of the same type
    (a function, a widget) count as the same."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and \
            torch.equal(torch.nan_to_num(a.float(), nan=7.5), torch.nan_to_num(b.float(), nan=7.5))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f")
    if dataclasses.is_dataclass(a) and type(a) is type(b) and not isinstance(a, type):   # a Rollout
        return _same(vars(a), vars(b))
    if hasattr(a, "to_dict") and hasattr(b, "to_dict") and type(a) is type(b):   # a datasets Dataset
        return _same(a.to_dict(), b.to_dict())
    if isinstance(a, dict) and isinstance(b, dict):   # timings ("seconds", "train_seconds") differ run to run
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a if not str(k).endswith("seconds"))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if callable(a) or type(a).__module__.startswith(("ipywidgets", "matplotlib")):
        return type(a) is type(b)
    return a == b


def _numpy(v):
    """v as numpy holds it (its scalar type, an array for a list of numbers), or None where it has no such form."""
    if isinstance(v, (bool, int, float, str)) and not isinstance(v, np.generic):
        return np.array(v)[()]
    if isinstance(v, list) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return np.array(v)
    return None


def _forms(v, text=False):
    """The forms a column's values take in a dataset that holds the same values: numpy's array and scalars, a
    number for the text that spells it (834, 834.0 for "834"; not for text=True, a completion, which is text), 0/1
    and numpy's bool for a bool, JSON text for a test list."""
    def one(x):
        out = []
        if isinstance(x, bool):
            out += [int(x), np.bool_(x)]
        elif isinstance(x, int):
            out += [float(x), np.int64(x), np.float64(x)]
        elif isinstance(x, str):
            out += [np.str_(x)] + ([int(x), float(x), np.int64(int(x))] if x.lstrip("-").isdigit() and not text
                                   else [])
        elif isinstance(x, list) and x and all(isinstance(t, dict) for t in x):
            out += [json.dumps(x)]
        return out
    if isinstance(v, list) and v and all(isinstance(t, dict) for t in v):   # one test list shared by all
        return [json.dumps(v)]
    if isinstance(v, list):
        cols = [[f[i] for f in (one(x) for x in v)] for i in range(min(len(one(x)) for x in v))] if v and all(
            one(x) for x in v) else []
        arr = [np.array(v)] if all(isinstance(x, (str, int, float)) for x in v) and len({type(x) for x in v}) == 1 \
            else []
        return cols + arr
    return one(v)


@pytest.mark.parametrize("judge", sorted(JUDGES))
def test_judges_take_a_column_as_the_values_it_holds(judge):
    """Every form of the same values, in every column and in the completions: the same scores."""
    fn, good, kind = JUDGES[judge]
    want = fn(**good)
    if want == UNAVAILABLE or "random" in judge:
        pytest.skip(UNAVAILABLE if want == UNAVAILABLE else "a reward that draws at random")
    for name in sorted(good):
        if name not in COLUMNS | {"completions", "text"}:
            continue
        for form in _forms(good[name], text=name in ("completions", "text")):
            got = fn(**dict(good, **{name: form}))
            assert got == want, f"{judge}({name}={form!r}) gave {got}, with {good[name]!r} {want}"


@pytest.mark.parametrize("judge", sorted(JUDGES))
def test_judges_name_a_missing_column_and_ignore_an_extra_one(judge):
    """A column left out: the same scores (the judge does not read it, or reads another that says the same) or an
    error that names it. A column it does not read: the same scores."""
    fn, good, kind = JUDGES[judge]
    want = fn(**good)
    if want == UNAVAILABLE or "random" in judge:
        pytest.skip(UNAVAILABLE if want == UNAVAILABLE else "a reward that draws at random")
    for name in sorted(set(good) & COLUMNS):
        if good[name] is None:
            continue
        out = call_or_named(f"{judge} without {name}", fn, {k: v for k, v in good.items() if k != name}, name)
        assert out is NAMED or out == want, f"{judge} without {name} gave {out}, with it {want}"
    if kind == "scores":
        n = len(good["completions"])
        assert fn(**dict(good, extra_column=["x"] * n, prompt=["1+1="] * n)) == want, judge


@pytest.mark.parametrize("case", sorted(CASES))
def test_numpy_values_are_the_values_they_hold(case):
    """An argument as numpy holds it (numpy's int, float, bool or str; an array for a list of numbers): the same
    result, or an error that names it."""
    fn, good, check = CASES[case]
    want = fn(**good)
    for name in sorted(good):
        twin = _numpy(good[name])
        if twin is None:
            continue
        out = call_or_named(f"{case}({name}={twin!r})", fn, dict(good, **{name: twin}), name)
        assert out is NAMED or _same(out, want), f"{case}({name}={twin!r}) gave {out!r}, with {good[name]!r} {want!r}"


MASKED = sorted(c for c in CASES if any("mask" in n and isinstance(v, torch.Tensor) for n, v in CASES[c][1].items()))


@pytest.mark.parametrize("case", MASKED)
def test_what_masked_positions_hold_changes_nothing(case):
    """Where the mask is 0 (padding), a tensor may hold anything, -inf, inf or NaN: the same result as with 0 there,
    or an error that names the tensor."""
    fn, good, check = CASES[case]
    mname = next(n for n, v in good.items() if "mask" in n and isinstance(v, torch.Tensor))
    mask = good[mname].clone()
    mask[0, -1] = 0
    clean = dict(good, **{mname: mask})
    want = fn(**clean)
    for name, v in sorted(clean.items()):
        if name == mname or not isinstance(v, torch.Tensor) or not v.is_floating_point() or \
                tuple(v.shape[:2]) != tuple(mask.shape):
            continue
        for pad in (-math.inf, math.inf, math.nan):
            dirty = v.clone()
            dirty[0, -1] = pad
            out = call_or_named(f"{case}({name} with {pad} at a masked position)", fn, dict(clean, **{name: dirty}),
                                name)
            assert out is NAMED or _same(out, want), f"{case}: {pad} where {mname} is 0 gave {out!r}, not {want!r}"


RANGES = sorted(c for c in CASES if {"lo", "hi"} <= set(CASES[c][1]))


@pytest.mark.parametrize("case", RANGES)
def test_a_range_the_wrong_way_round_is_named(case):
    """lo and hi swapped (lo > hi): an error that names them, never an empty or inverted band used silently."""
    fn, good, check = CASES[case]
    lo, hi = sorted((good["lo"], good["hi"]))
    assert lo < hi, case
    with pytest.raises(ValueError, match=r"\blo\b|\bhi\b"):
        fn(**dict(good, lo=hi, hi=lo))


def test_the_issue_60_kinds_reach_every_lab_09_to_11_entry():
    """The properties above try every function the new labs added that takes those kinds: each reward, each function
    with a mask, each with a range."""
    assert {"api.JudgeClient", "api.hybrid_reward(strict, JudgeClient)", "trigger.trigger_reward",
            "tools.tool_echo_reward", "programs.ProgramChecker('layered')", "mix.task_reward"} <= set(JUDGES)
    assert {"rollout.importance_weights", "grpo.log_ratio", "grpo.per_token_loss", "grpo.loss_stats",
            "rollout.off_policy_sequences"} <= set(MASKED)
    assert "rollout.importance_weights" in RANGES and "curation.sweet_spot" in RANGES


VERIFIERS = [verifiers.strict_reward, verifiers.careful_reward, verifiers.last_number_reward,
             verifiers.contains_reward, verifiers.last_digit_reward]


@settings(max_examples=draws(60), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(completions=st.one_of(BAD, st.lists(st.one_of(st.text(max_size=30), BAD), max_size=5)),
       answer=st.one_of(BAD, st.lists(st.one_of(st.text(max_size=5), BAD), max_size=5)))
def test_verifiers_give_one_score_per_completion_whatever_they_get(completions, answer):
    """A verifier never raises: one float in [0, 1] per completion (a verifier judges what a model wrote, and
    a model writes anything)."""
    for fn in VERIFIERS:
        out = fn(completions, answer)
        n = len(completions) if isinstance(completions, list) else None
        assert isinstance(out, list) and all(isinstance(x, float) and 0.0 <= x <= 1.0 for x in out), (fn, out)
        assert n is None or len(out) == n, (fn.__name__, completions, out)


FIELDS = {f: v for f, v in vars(grpo.GRPOConfig()).items()}


@settings(max_examples=draws(200), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(sorted(FIELDS)), bad=BAD)
def test_config_fields_fail_by_name(field, bad):
    """GRPOConfig: a bad value is refused with the field's name, or taken only where it is a valid value."""
    try:
        cfg = grpo.GRPOConfig(**{field: bad})
    except (ValueError, TypeError) as e:
        assert f"GRPOConfig.{field}" in str(e) or field in str(e), f"{field}={bad!r}: {e}"
        return
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"GRPOConfig({field}={bad!r}) raised {type(e).__name__} from inside: {e}")
    value, default = getattr(cfg, field), FIELDS[field]
    assert not (isinstance(value, float) and not math.isfinite(value)), f"{field}={bad!r} was taken"
    if isinstance(default, bool):
        assert isinstance(value, bool), f"{field}={bad!r} became {value!r}"
    elif isinstance(default, (int, float)):  # a number stays a number (0 for 0.0 is the same setting)
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{field}={bad!r} became {value!r}"
    elif default is not None:
        assert type(value) is type(default), f"{field}={bad!r} became {value!r}"



def _raises(error):
    def learner_fn(*args, **kwargs):
        raise error
    return learner_fn


# a learner's function gone wrong: not a function at all, the wrong arguments, a result of the wrong kind, an error
BAD_LEARNER = [None, 3, "my_fn", [], lambda: 1.0, lambda *a: None, lambda *a: "x", lambda *a: [[1.0, 2.0], [3.0]],
               lambda *a: math.nan, lambda *a: math.inf, lambda *a: {"a": 1}, lambda *a: object(), lambda *a: {"kl"},
               lambda *a: (1.0, 2.0), lambda *a: -1, lambda *a: torch.full((3, 3), math.nan), lambda *a: [],
               _raises(RuntimeError("boom")), _raises(KeyError("reward")), _raises(ZeroDivisionError("division")),
               _raises(IndexError("index 3 is out of bounds")), _raises(AssertionError("my own assert")),
               _raises(TypeError("unsupported operand")), _raises(ValueError("bad")), _raises(RecursionError()),
               lambda *a: [1.0] * 10**6]
CHECKS = sorted(n for n in exercises.__all__ if n.startswith("check_"))


@pytest.mark.parametrize("check", CHECKS)
@settings(max_examples=draws(12), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(fn=st.sampled_from(BAD_LEARNER))
def test_exercise_checks_reject_a_bad_learner_function_clearly(check, fn):
    """An exercise check given a broken learner function (not callable, the wrong arguments, None or the wrong kind
    back, an error inside it) raises one ExerciseError that names the learner's function (my_<name>): never an
    error from inside the check, never a pass, and no chained traceback (the learner sees one message)."""
    name = "my_" + check.removeprefix("check_")
    try:
        out = getattr(exercises, check)(fn)
    except exercises.ExerciseError as e:
        assert name in str(e), f"{check}({fn!r}): the message does not name {name}: {e}"
        assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__), f"{check}: chained: {e}"
        return
    except Exception as e:  # noqa: BLE001 - the point: nothing else may come out
        pytest.fail(f"{check}({fn!r}) raised {type(e).__name__} from inside the check: {e}")
    pytest.fail(f"{check} passed a broken function {fn!r} (returned {out!r})")


# Public functions (utils/, defined in their module, name without "_") that no property above tries, each with why.
# A function a learner or a lab calls with arguments of its own is not here; nor one without parameters (nothing to
# vary: the test passes those by itself).
def _exempt(reason, *names):
    return dict.fromkeys(names, reason)


EXEMPT = {
    **_exempt("an argument check itself: library code passes it a value and that value's name (tests/test_checks.py)",
              *(f"utils.checks.{n}" for n in ("number", "tensor", "array", "same_shape", "strings", "sequence", "path",
                                              "flag", "model", "tokenizer", "function", "reward_scores",
                                              "function_dict")),
              "utils.models.policy.fits", "utils.tasks.split_args", "utils.tasks.split_sizes",
              "utils.verifiers.signature.column",
              "utils.eval.traces.rows_of"),
    **_exempt("a lab's figure: every lab calls it without arguments, and its defaults are the figure",
              *(f"utils.notebook.figures.{n}" for n in ("rlvr_loop", "verifier_zoo", "control_design",
                                                        "entropy_collapse", "pass_at_k_curves", "trace_rewards",
                                                        "dynamic_sampling", "data_parallel", "async_pipeline",
                                                        "checker_grid", "self_play_loop"))),
    **_exempt("StepRollout's own placing of verdicts on the batch it sampled, with the columns it built (its checks of "
              "steps_fn's answers: tests/test_rollout.py)", "utils.rl.rollout.token_verdicts"),
    **_exempt("train_grpo's own steps, on the policy, batch and config it has checked",
              *(f"utils.rl.loop.{n}" for n in ("keep_history", "reference_logprobs", "update", "step_record")),
              "utils.rl.rollout.scores", "utils.rl.rollout.dynamic_batch", "utils.eval.metrics.heldout_keys"),
    **_exempt("train_with_trl's own steps, on the arguments it has checked",
              "utils.rl.trl_trainer.warn_if_too_big", "utils.rl.trl_trainer.positions_from_mask"),
    **_exempt("the sampler's and the loss's tensor plumbing, on tensors the library built",
              *(f"utils.models.policy.{n}" for n in ("position_ids_from_mask", "select_rows", "concat_rollouts",
                                                     "encode_prompts", "masked_mean")),
              "utils.models.decode.supports", "utils.models.decode.completion_logits", "utils.models.sft.text_loss",
              "utils.rl.rollout.policy_log_ratio"),
    **_exempt("estimate_memory's and step_flops' arithmetic, on the dimensions they read from a checked model",
              "utils.models.memory.count_params", "utils.models.memory.lora_params"),
    **_exempt("benchmarks/lab08_memory.py's: each call builds a 135M-parameter model (seconds, half a GB)",
              "utils.models.memory.build_from_config"),
    **_exempt("the command line's steps (python -m utils.rl.launch), on the dict parse() checked",
              *(f"utils.rl.launch.{n}" for n in ("config", "launch_command", "use_invariant_sampling", "train",
                                                 "main"))),
    **_exempt("pre-training a base model (minutes): python -m utils.runs.build_base_model and the benchmarks",
              "utils.runs.build_base_model.build", "utils.runs.build_base_model.make_model",
              "utils.models.policy.char_tokenizer", "utils.tasks.arithmetic.pretrain_problem",
              "utils.tasks.scratchpad.pretrain_example", "utils.tasks.scratchpad.noisy_trace",
              "utils.tasks.mix.pretrain_example", "utils.tasks.tools.pretrain_example",
              "utils.tasks.tools.tool_episode", "utils.tasks.tools.practice_operands",
              "utils.tasks.programs.pretrain_example", "utils.tasks.lookup.pretrain_example",
              "utils.tasks.lookup.episode",
              "utils.models.sft.pretrain_batch"),
    **_exempt("make_splits' draws, with its own random.Random", "utils.tasks.arithmetic.make_problem",
              "utils.tasks.scratchpad.make_problem"),
    **_exempt("the command line that writes the shipped splits or database (python -m utils.tasks.<task>, "
              "python -m utils.verifiers.sql), and load_split's file name for a split it has checked",
              "utils.tasks.arithmetic.write_splits", "utils.tasks.scratchpad.write_splits",
              "utils.tasks.arithmetic.split_path", "utils.tasks.scratchpad.split_path",
              "utils.tasks.programs.write_splits", "utils.tasks.programs.split_path",
              "utils.tasks.mix.write_multiply_splits", "utils.tasks.mix.multiply_path",
              "utils.verifiers.sql.build_database"),
    **_exempt("the sandbox's plumbing, on the configs available_walls built and the timeout run_sandboxed clamped",
              *(f"utils.verifiers.isolation.{n}" for n in ("bwrap_args", "readable_by", "launch", "scratch_chain",
                                                           "scratch_point")),
              "utils.verifiers.cgroups.dead", "utils.verifiers.cgroups.delegated_v2",
              "utils.verifiers.code.cpu_limit"),
    **_exempt("runs inside the SQL worker process, on the requests sql.py built",
              *(f"utils.verifiers.sql_worker.{n}" for n in ("reads_only", "set_limits", "run", "json_size",
                                                            "compile_only", "encode"))),
    **_exempt("benchmarks/verifiers.py's, as root: the whole attack suite as another user (minutes)",
              "utils.verifiers.attacks.run_as_user"),
    **_exempt("the exercise checks' decorator, applied when their module is imported",
              "utils.notebook.exercises.common.learner_check"),
    **_exempt("Lab 03's exercise answer as a learner writes it (lists only), the lab's fallback; the library's "
              "spurious.random_reward is the same coin with the contract these properties check",
              "utils.notebook.exercises.lab03.answer_random_reward"),
}


def public_functions():
    """{module.name: function} for every public function of every utils/ module (classes are left out: their
    methods are tried through the functions that take them, GRPOConfig field by field)."""
    out = {}
    for info in pkgutil.walk_packages(utils.__path__, "utils."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if not name.startswith("_") and inspect.isfunction(obj) and obj.__module__ == module.__name__:
                out[f"{module.__name__}.{name}"] = obj
    return out


def _key(fn):
    fn = inspect.unwrap(fn)
    return f"{fn.__module__}.{fn.__name__}"


def test_every_public_function_is_covered():
    """Every public function is tried by a property (CASES, FEW, JUDGES, the exercise checks here; CASES and
    train_with_trl's in test_properties_models.py), takes no arguments, or is in EXEMPT with its reason."""
    from tests import test_properties_models as with_model

    tried = [fn for fn, *_ in [*CASES.values(), *FEW.values(), *JUDGES.values(), *with_model.CASES.values(),
                               *with_model.FEW_CASES.values()]]
    covered = {_key(fn) for fn in tried + [getattr(exercises, c) for c in CHECKS] + [with_model._trl]}
    public = public_functions()
    takes_none = {n for n, fn in public.items() if not inspect.signature(fn).parameters}
    missing = sorted(set(public) - covered - takes_none - set(EXEMPT))
    assert not missing, f"{len(missing)} public function(s) no property tries: add a case, or an EXEMPT reason: " \
                        f"{missing}"
    stale = sorted(n for n in EXEMPT if n not in public or n in covered or n in takes_none)
    assert not stale, f"EXEMPT names functions that are gone, take no arguments or are now tried by a property: " \
                      f"{stale}"
