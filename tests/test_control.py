"""utils.eval.control and utils.verifiers.spurious: the random reward, the hit rate, the same-config guard
and the control check."""
import copy

import numpy as np
import pytest

from utils.eval.control import (
    CONTROL_HARMFUL,
    NEUTRAL,
    NOT_ONLY_VERIFIER,
    THRESHOLD,
    VERDICTS,
    check_same_config,
    control_check,
    hit_rate,
)
from utils.eval.metrics import evaluate
from utils.rl.grpo import GRPOConfig
from utils.tasks.arithmetic import load_split
from utils.verifiers.spurious import random_reward, wrong_answer_reward


def test_random_reward_rate_and_independence():
    r = random_reward(0.3, seed=1)
    xs = np.array(r(["66"] * 20000, [66] * 20000))
    assert set(xs) <= {0.0, 1.0} and abs(xs.mean() - 0.3) < 0.015
    # independent of the output: right and wrong answers are paid at the same rate
    a = np.array(random_reward(0.3, seed=2)(["66"] * 20000, [66] * 20000))
    b = np.array(random_reward(0.3, seed=2)(["oops"] * 20000, [66] * 20000))
    assert (a == b).all()  # same seed, same stream, whatever the text


def test_random_reward_seeded_and_edges():
    assert random_reward(0.5, 3)(["x"] * 50) == random_reward(0.5, 3)(["x"] * 50)
    assert random_reward(0.5, 3)(["x"] * 50) != random_reward(0.5, 4)(["x"] * 50)
    assert random_reward(0.0)(["x"] * 10) == [0.0] * 10
    assert random_reward(1.0)(["x"] * 10) == [1.0] * 10
    assert random_reward(1)(["x"] * 3) == [1.0] * 3


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan"), "0.3", None, True])
def test_random_reward_bad_p(p):
    with pytest.raises(ValueError, match="probability in \\[0, 1\\]"):
        random_reward(p)


def test_wrong_answer_reward():
    assert wrong_answer_reward(["66", "67", "", None], [66, 66, 66, 66]) == [0.0, 1.0, 1.0, 1.0]


def test_hit_rate_is_evaluate_pass_at_1(shipped):
    model, tok = shipped
    d = load_split("train", n=24)
    p = hit_rate(model, tok, d["prompt"], d["answer"], k=4, seed=5)
    assert p == evaluate(model, tok, d["prompt"], d["answer"], k=4, seed=5)["pass@1"]
    assert 0.0 < p < 1.0


def run(seed, after, **cfg):
    c = GRPOConfig(**{"steps": 10, **cfg}, seed=seed)
    return {"seed": seed, "config": vars(copy.deepcopy(c)), "after": after}


def test_check_same_config():
    check_same_config({"a": [run(0, {}), run(1, {})], "b": [run(2, {})]})  # seeds may differ
    with pytest.raises(ValueError, match=r"differ in \['lr'\]"):
        check_same_config({"a": [run(0, {})], "b": [run(0, {}, lr=1e-3)]})


def test_control_check_by_hand():
    before = {"pass@1": 0.30}
    true = [run(0, {"pass@1": 0.45}), run(1, {"pass@1": 0.43})]          # +15, +13 -> +14
    calm = [run(0, {"pass@1": 0.32}), run(1, {"pass@1": 0.30})]          # +2, 0 -> +1
    loud = [run(0, {"pass@1": 0.40}), run(1, {"pass@1": 0.38})]          # +10, +8 -> +9
    ok = control_check(before, true, calm)
    assert ok["true_gain"] == pytest.approx(0.14) and ok["random_gain"] == pytest.approx(0.01)
    assert not ok["flagged"] and ok["message"].startswith("OK")
    bad = control_check(before, true, loud)
    assert bad["flagged"] and "FLAG" in bad["message"] and "+9.0 points" in bad["message"]
    assert THRESHOLD == 0.05
    edge = control_check(before, true, [run(0, {"pass@1": 0.35})])       # exactly +5: not flagged
    assert not edge["flagged"]
    assert not ok["harmed"] and not bad["harmed"] and not edge["harmed"]
    assert (ok["verdict"], bad["verdict"], edge["verdict"]) == (NEUTRAL, NOT_ONLY_VERIFIER, NEUTRAL)


def test_control_check_two_sided():
    """A random reward that costs accuracy is reported too (harmed): the control is not neutral, so the
    true-reward gain is not a like-with-like measure of the verifier. Values exact in binary, threshold 1/16."""
    before = {"pass@1": 0.25}
    true = [run(0, {"pass@1": 0.5}), run(1, {"pass@1": 0.375})]          # +25, +12.5 -> +18.75
    hurt = [run(0, {"pass@1": 0.125}), run(1, {"pass@1": 0.0625})]       # -12.5, -18.75 -> -15.625
    out = control_check(before, true, hurt, threshold=0.0625)
    assert out["true_gain"] == 0.1875 and out["random_gain"] == -0.15625
    assert out["harmed"] and not out["flagged"] and out["verdict"] == CONTROL_HARMFUL
    assert out["message"].startswith("HARMED") and "-15.6 points" in out["message"]
    assert "not neutral" in out["message"]
    at_minus = control_check(before, true, [run(0, {"pass@1": 0.1875})], threshold=0.0625)   # exactly -6.25
    assert at_minus["random_gain"] == -0.0625 and not at_minus["harmed"] and at_minus["verdict"] == NEUTRAL
    at_plus = control_check(before, true, [run(0, {"pass@1": 0.3125})], threshold=0.0625)    # exactly +6.25
    assert at_plus["random_gain"] == 0.0625 and not at_plus["flagged"] and at_plus["verdict"] == NEUTRAL
    # the mean decides, not one run: -12.5 and +6.25 -> -3.125, within the threshold
    mixed = control_check(before, true, [run(0, {"pass@1": 0.125}), run(1, {"pass@1": 0.3125})], threshold=0.0625)
    assert mixed["random_gain"] == -0.03125 and mixed["verdict"] == NEUTRAL and mixed["message"].startswith("OK")
    assert set(out) == {"true_gain", "random_gain", "flagged", "harmed", "verdict", "message"}


def test_control_check_verdicts_are_three_constants():
    assert VERDICTS == (NOT_ONLY_VERIFIER, CONTROL_HARMFUL, NEUTRAL) and len(set(VERDICTS)) == 3
    assert NOT_ONLY_VERIFIER == "not only the verifier" and CONTROL_HARMFUL == "control harmful"
    assert NEUTRAL == "neutral control: the gain is the verifier's"
    before = {"pass@1": 0.5}
    for after, verdict in ((0.75, NOT_ONLY_VERIFIER), (0.25, CONTROL_HARMFUL), (0.5, NEUTRAL)):
        out = control_check(before, [run(0, {"pass@1": 0.75})], [run(0, {"pass@1": after})])
        assert out["verdict"] == verdict and out["verdict"] in VERDICTS and f"({verdict})" in out["message"]
        assert out["flagged"] == (verdict == NOT_ONLY_VERIFIER) and out["harmed"] == (verdict == CONTROL_HARMFUL)


def test_control_check_bad_inputs():
    with pytest.raises(ValueError, match="at least one run"):
        control_check({"pass@1": 0.3}, [], [run(0, {"pass@1": 0.3})])
    with pytest.raises(ValueError, match="differ in"):
        control_check({"pass@1": 0.3}, [run(0, {"pass@1": 0.4})], [run(0, {"pass@1": 0.3}, steps=20)])


def test_run_condition_tiny_and_reproducible(shipped):
    """Two seeds -> two runs with their own config seed; the same seed twice -> the same numbers;
    an empty seed list is refused before any training."""
    from utils.runs.control import run_condition
    from utils.verifiers.arithmetic import strict_reward

    model, tok = shipped
    tr, te = load_split("train", n=64), load_split("test", n=16)
    splits = ((tr["prompt"], tr["answer"]), (te["prompt"], te["answer"]))
    cfg = GRPOConfig(steps=2, batch_size=16, group_size=4, eval_every=0, eval_n=16)
    runs = run_condition(model, tok, lambda s: random_reward(0.3, s), cfg, [0, 1], *splits, progress=False)
    assert [r["seed"] for r in runs] == [0, 1] and [r["config"]["seed"] for r in runs] == [0, 1]
    assert set(runs[0]["after"]) == {"greedy", "pass@1", "pass@8", "entropy"} and len(runs[0]["history"]) == 2
    again = run_condition(model, tok, lambda s: random_reward(0.3, s), cfg, [0], *splits, progress=False)
    assert again[0]["after"] == runs[0]["after"]
    with pytest.raises(ValueError, match="seeds is empty"):
        run_condition(model, tok, lambda s: strict_reward, cfg, [], *splits)
