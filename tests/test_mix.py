"""The task mix (utils.tasks.mix, utils.verifiers.mix, rollout.MixRollout, metrics.per_task_pass) and the free-length
trace (scratchpad.with_check), worked out by hand."""
import math
import random

import numpy as np
import pytest
import torch

from utils.eval.metrics import per_task_pass
from utils.rl.grpo import GRPOConfig
from utils.rl.loop import train_grpo
from utils.rl.rollout import MixRollout, _counts
from utils.tasks import mix, scratchpad
from utils.verifiers.mix import task_reward

# ---------------------------------------------------------------- the splits and the verifier


def test_multiply_splits_cover_every_problem_once():
    s = mix.make_multiply_splits()
    prompts = [r["prompt"] for rows in s.values() for r in rows]
    assert {k: len(v) for k, v in s.items()} == mix.SPLIT_SIZES and len(set(prompts)) == 1000
    assert all(r["answer"] == str(r["a"] * r["b"]) and r["prompt"] == f"{r['a']}*{r['b']}=" for r in s["test"])
    assert mix.make_multiply_splits() == s and mix.make_multiply_splits(seed=1) != s   # seeded


def test_load_mix_has_each_tasks_rows_and_a_task_column():
    d = mix.load_mix("test", n=3)
    assert d.column_names == ["prompt", "answer", "a", "b", "task"] and len(d) == 9
    assert d["task"] == ["arithmetic"] * 3 + ["traces"] * 3 + ["multiply"] * 3
    assert d["prompt"][3].endswith(":") and "*" in d["prompt"][6]
    with pytest.raises(ValueError, match="tasks must be distinct names"):
        mix.load_mix("test", tasks=("traces", "traces"))
    with pytest.raises(ValueError, match="unknown split"):
        mix.load_mix("ood")


def test_task_reward_judges_each_row_by_its_own_task():
    texts = ["8", "8+6+0=14 >14", "282", ">14", "14", "282", None]
    r = task_reward(texts, answer=["8", "14", "282", "14", "14", "283", "1"],
                    task=["arithmetic", "traces", "multiply", "poem", "traces", "multiply", "traces"])
    # a trace's answer after '>' (no steps needed); "14" for a trace row has no '>' (0); an unknown task 0; None 0
    assert r == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="no `task` column"):     # no task column: named, not 0.0 for all
        task_reward(["8"], answer=["8"])
    assert task_reward(["08"], answer=["8"], task=["arithmetic"]) == [0.0]  # strict: no leading zero


def test_pretrain_example_draws_every_task():
    rows = {t: list(mix.load_task(t, "train", n=20)) for t in mix.TASKS}
    rng = random.Random(0)
    seen = [mix.pretrain_example(rng, rows) for _ in range(4000)]
    kind = lambda p: "multiply" if "*" in p else "traces" if p.endswith(":") else "arithmetic"  # noqa: E731
    share = {t: sum(kind(p) == t for p, _ in seen) / len(seen) for t in mix.TASKS}
    assert all(abs(share[t] - mix.PRETRAIN_SHARES[t]) < 0.03 for t in mix.TASKS), share
    assert all(c == str(eval(p[:-1])) for p, c in seen if "*" in p)   # multiply: the answer alone


# ---------------------------------------------------------------- the check pass (Lab 06's free length)

def test_with_check_writes_the_working_twice():
    assert scratchpad.with_check("8+6+0=14 >14") == "8+6+0=14 8+6+0=14 >14"
    assert scratchpad.with_check("2+3+0=5 1+0+0=1 >15") == "2+3+0=5 1+0+0=1 2+3+0=5 1+0+0=1 >15"
    assert scratchpad.with_check(">15") == ">15"                    # no working: nothing to check
    for bad in (None, "15", 15):
        with pytest.raises(ValueError, match="with_check: text must be a trace"):
            scratchpad.with_check(bad)


def test_pretrain_example_check_share_and_the_old_recipe():
    rows = list(scratchpad.load_split("train", n=50))
    a, b = random.Random(5), random.Random(5)
    assert [scratchpad.pretrain_example(a, rows) for _ in range(20)] == \
        [scratchpad.pretrain_example(b, rows, 0.0) for _ in range(20)]   # p_check 0: the trace model's draws
    rng = random.Random(1)
    out = [scratchpad.pretrain_example(rng, rows, 0.5) for _ in range(2000)]
    from utils.verifiers.traces import parse
    # the first step written again two or more steps on (trace_metrics' "checked"); a skipped step in a 2-column
    # trace leaves one step, its check pass next to it, so a few checks are not seen
    twice = [(s := parse(c)["steps"])[0] in s[2:] for p, c in out if not c.startswith(">")]
    assert 0.45 < np.mean(twice) < 0.53
    with pytest.raises(ValueError, match="p_check"):
        scratchpad.pretrain_example(rng, rows, 1.5)


# ---------------------------------------------------------------- MixRollout

@pytest.mark.parametrize("shares, n, want", [
    ({"a": 1, "b": 1, "c": 1}, 12, {"a": 4, "b": 4, "c": 4}),
    ({"a": 4, "b": 1, "c": 1}, 12, {"a": 8, "b": 2, "c": 2}),
    ({"a": 1, "b": 1, "c": 1}, 8, {"a": 3, "b": 3, "c": 2}),          # ties: the task named first
    ({"a": 0.5, "b": 0.3, "c": 0.2}, 7, {"a": 4, "b": 2, "c": 1}),    # 3.5, 2.1, 1.4: the largest remainder
])
def test_counts_by_hand(shares, n, want):
    assert _counts(shares, n) == want


PROMPTS = ["1+1=", "2+2=", "3+3=", "4+4=", "1-1=", "2-1=", "3-1=", "4-1="]
ANSWERS = ["2", "4", "6", "8", "0", "1", "2", "3"]
TASK = ["add"] * 4 + ["sub"] * 4
CFG = GRPOConfig(steps=3, batch_size=24, group_size=4, lr=1e-3, eval_every=0, eval_n=4, track_kl=False, seed=0)


def add_right(completions, answer, task, **kw):
    """1.0 on every 'add' row, alternately 1 and 0 on 'sub' rows: add groups have no spread, sub groups do."""
    return [1.0 if t == "add" else float(i % 2) for i, t in enumerate(task)]


def run(shipped, steps=3, **kw):
    import copy
    model, tok = shipped
    hist = train_grpo(copy.deepcopy(model), tok, PROMPTS, ANSWERS, add_right, GRPOConfig(**dict(
        CFG.__dict__, steps=steps)), rollout=MixRollout(columns={"task": TASK}, task=TASK, **kw), progress=False)
    return hist


def test_mix_draws_each_tasks_share_and_records_it(shipped):
    h = run(shipped, shares={"add": 2, "sub": 1})
    for rec in h:  # 6 groups: 4 add, 2 sub
        assert rec["share/add"] == 4 / 6 and rec["share/sub"] == 2 / 6
        assert rec["reward/add"] == 1.0 and rec["reward/sub"] == 0.5
        assert rec["zero_spread/add"] == 1.0 and rec["zero_spread/sub"] == 0.0
        assert rec["target_share/add"] == pytest.approx(2 / 3)


def test_mix_adapt_moves_the_share_to_the_worse_task_by_hand(shipped):
    h = run(shipped, adapt=0.1, floor=0.05)
    # step 1: shares alike (3 and 3 groups). Running rewards after it: add 0.8*0.5+0.2*1 = 0.6, sub 0.8*0.5+0.2*0.5
    # = 0.5; share of sub = 0.05 + 0.9 * e^-5 / (e^-6 + e^-5)
    want = 0.05 + 0.9 * math.exp(-5) / (math.exp(-6) + math.exp(-5))
    assert h[0]["share/add"] == 0.5 and h[1]["target_share/sub"] == pytest.approx(want)
    assert h[1]["share/sub"] == 4 / 6                                   # 0.708 of 6 groups: 4.25 -> 4
    # after step 2: add 0.8*0.6+0.2 = 0.68, sub 0.5: sub's share 0.05 + 0.9 / (1 + e^-1.8) = 0.822, 4.93 of 6 -> 5
    assert h[2]["target_share/sub"] == pytest.approx(0.05 + 0.9 / (1 + math.exp(-1.8))) and h[2]["share/sub"] == 5 / 6


def test_mix_weights_scale_each_tasks_advantages(shipped):
    from utils.rl import rollout as R
    model, tok = shipped
    draw = MixRollout(columns={"task": TASK}, task=TASK, weights={"add": 0.0, "sub": 2.0}).start(
        model, tok, PROMPTS, ANSWERS, add_right, CFG)
    b = draw(0)
    rows = np.asarray(TASK)[np.repeat(b.prompt_idx, CFG.group_size)]
    assert b.weights.shape == b.ro.completion_mask.shape
    assert torch.equal(b.weights[:, 0], torch.tensor([0.0 if t == "add" else 2.0 for t in rows]))
    assert isinstance(R.Batch, type)


def test_a_zero_weight_task_does_not_move_the_model(shipped):
    """Only 'add' rows, weight 0: every advantage is 0, so the weights stay as they were."""
    import copy
    model, tok = shipped
    m = copy.deepcopy(model)
    before = [p.clone() for p in m.parameters()]
    train_grpo(m, tok, PROMPTS, ANSWERS, lambda completions, answer, task, **kw: [float(i % 2) for i in
                                                                                 range(len(task))],
               CFG, rollout=MixRollout(columns={"task": TASK}, task=TASK, shares={"add": 1, "sub": 1e-9},
                                       weights={"add": 0.0, "sub": 1.0}), progress=False)
    assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))


@pytest.mark.parametrize("kw, match", [
    (dict(task=TASK[:3]), "task must be a list of task names, one per prompt"),
    (dict(task="add"), "task must be a list"),
    (dict(task=TASK, shares={"add": 1}), r"shares must be a dict with one value per task \['add', 'sub'\]"),
    (dict(task=TASK, shares={"add": 1, "sub": 0}), r"shares\['sub'\]"),
    (dict(task=TASK, weights={"add": -1, "sub": 1}), r"weights\['add'\]"),
    (dict(task=TASK, adapt=-1), "adapt"),
    (dict(task=TASK, floor=0.6), "floor"),
    (dict(task=TASK, pools=[[0]] * 3), "set pools=None and dynamic_sampling=False"),
])
def test_mix_refuses_bad_knobs(shipped, kw, match):
    model, tok = shipped
    with pytest.raises(ValueError, match=match):
        MixRollout(columns={"task": TASK}, **kw).start(model, tok, PROMPTS, ANSWERS, add_right, CFG)


def test_mix_refuses_a_batch_too_small_for_its_tasks(shipped):
    model, tok = shipped
    with pytest.raises(ValueError, match="1 groups a step cannot hold 2 tasks: raise batch_size to at least 8"):
        MixRollout(task=TASK).start(model, tok, PROMPTS, ANSWERS, add_right,
                                    GRPOConfig(steps=1, batch_size=4, group_size=4))


def test_mix_runs_are_seeded(shipped):
    a, b = run(shipped, adapt=0.1), run(shipped, adapt=0.1)
    assert [r["loss"] for r in a] == [r["loss"] for r in b]


# ---------------------------------------------------------------- per_task_pass

def test_per_task_pass_by_hand(monkeypatch, shipped):
    from datasets import Dataset

    from utils.eval import metrics
    model, tok = shipped
    rows = Dataset.from_dict({"prompt": ["1+1=", "2+2=", "3*3=", "7+1:"], "answer": ["2", "4", "9", "8"],
                              "task": ["arithmetic", "arithmetic", "multiply", "traces"]})
    said = {"1+1=": "2", "2+2=": "5", "3*3=": "9", "7+1:": "7+1+0=8 >8"}

    class Ro:
        def __init__(self, ps, k):
            self.texts = [said[p] for p in ps for _ in range(k)]
    monkeypatch.setattr(metrics, "sample_in_batches", lambda m, t, ps, k, *a, **kw: iter([(0, Ro(ps, k))]))
    out = per_task_pass(model, tok, rows, k=2)
    assert out == {"arithmetic": 0.5, "multiply": 1.0, "traces": 1.0, "mean": 2.5 / 3, "worst": 0.5}
    assert per_task_pass(model, tok, rows, n=1)["arithmetic"] == 1.0   # the first problem of each task only
    with pytest.raises(ValueError, match="columns prompt, answer and task"):
        per_task_pass(model, tok, Dataset.from_dict({"prompt": ["1+1="], "answer": ["2"]}))
