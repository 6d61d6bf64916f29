"""Lab 07's data and compute tools: utils/tasks/curation.py, utils.eval.metrics.pass_rates and
utils/eval/scaling.py, by hand."""
import numpy as np
import pytest

from utils.eval.metrics import pass_rates
from utils.eval.scaling import fit_sigmoid, predict, sigmoid
from utils.tasks import curation
from utils.tasks.curation import curriculum, level_pools, random_subset, sweet_spot


def test_sweet_spot_by_hand():
    rates = [0.0, 0.25, 0.3, 0.5, 0.7, 0.75, 1.0]
    assert sweet_spot(rates).tolist() == [2, 3, 4], "the band's ends are inside"
    assert sweet_spot(rates, 0.0, 0.0).tolist() == [0]
    assert sweet_spot(rates, 0.2, 1.0).tolist() == [1, 2, 3, 4, 5, 6]
    for lo, hi, field in ((-0.1, 0.5, "lo"), (0.2, 1.5, "hi"), (float("nan"), 0.5, "lo"), ("0.3", 0.7, "lo"),
                          (True, 0.7, "lo")):
        with pytest.raises(ValueError, match=field):
            sweet_spot(rates, lo, hi)
    with pytest.raises(ValueError, match="above"):
        sweet_spot(rates, 0.8, 0.2)
    with pytest.raises(ValueError, match="no prompt"):
        sweet_spot([0.0, 1.0], 0.3, 0.7)


def test_random_subset():
    a = random_subset(100, 10, seed=1)
    assert len(set(a.tolist())) == 10 and a.tolist() == sorted(a.tolist()) and a.max() < 100
    assert random_subset(100, 10, seed=1).tolist() == a.tolist() and random_subset(100, 10, 2).tolist() != a.tolist()
    for size in (0, 101):
        with pytest.raises(ValueError, match="size"):
            random_subset(100, size)


def test_curriculum_by_hand():
    plan = curriculum([(2, [2]), (3, (2, 3)), (5, [4])], 5)
    assert plan == [[2], [2], [2, 3], [4], [4]]
    for bad, msg in (([], "empty"), ([(2, [2]), (2, [3])], "phase 1 ends at step 2"), ([(0, [2])], "phase 0"),
                     ([(3, [])], "no levels"), ([(3, [2])], "covers steps 1..3 but the run has 5"),
                     ([(6, [2])], "covers steps 1..6"), ([5], "not \\(until_step, levels\\)"),
                     ([(2.5, [2]), (5, [3])], "phase 0 ends")):
        with pytest.raises(ValueError, match=msg):
            curriculum(bad, 5)


def test_pass_rates_by_hand(monkeypatch):
    """Scripted samples: prompt 0 right 3 times of 4, prompt 1 never, prompt 2 always."""
    from utils.eval import metrics

    class Ro:
        texts = ["1", "1", "x", "1", "x", "x", "x", "x", "3", "3", "3", "3"]
    monkeypatch.setattr(metrics, "sample_in_batches", lambda *a, **k: iter([(0, Ro())]))
    seen = {}

    def correct(completions, answer, tag=None):
        seen["tag"] = tag
        return [1.0 if c == a else 0.0 for c, a in zip(completions, answer)]
    rates = pass_rates(None, None, ["p0", "p1", "p2"], ["1", "2", "3"], correct, n=4, columns={"tag": [7, 8, 9]})
    assert rates.tolist() == [0.75, 0.0, 1.0] and seen["tag"] == [7] * 4 + [8] * 4 + [9] * 4
    with pytest.raises(ValueError, match="n >= 1"):
        pass_rates(None, None, ["p"], ["1", "2"], correct)


def test_sigmoid_by_hand():
    assert sigmoid(0, 0.9, 100, 1.0, 0.3) == pytest.approx(0.3)
    assert sigmoid(100, 0.9, 100, 1.0, 0.3) == pytest.approx(0.6), "half the gain at the midpoint"
    assert sigmoid(1e9, 0.9, 100, 2.0, 0.3) == pytest.approx(0.9, abs=1e-6), "the asymptote"
    assert sigmoid(10, 0.9, 100, 1.0, 0.3) == pytest.approx(0.3 + 0.6 / 11)


def test_fit_recovers_known_parameters_and_predicts():
    C = np.geomspace(500, 50000, 12)
    R = sigmoid(C, 0.72, 4000, 1.3, 0.3)
    fit = fit_sigmoid(C, R, R0=0.3)
    assert fit["A"] == pytest.approx(0.72, abs=0.01) and fit["C_mid"] == pytest.approx(4000, rel=0.05)
    assert fit["B"] == pytest.approx(1.3, abs=0.05) and fit["rmse"] < 1e-3
    early = fit_sigmoid(C[:8], R[:8], R0=0.3)  # fit the first part, predict the rest
    assert np.abs(predict(early, C[8:]) - R[8:]).max() < 0.01
    noisy = R + np.random.default_rng(0).normal(0, 0.01, R.size)
    assert fit_sigmoid(C, noisy, 0.3)["A"] == pytest.approx(0.72, abs=0.05)


def test_fit_refuses_bad_input():
    with pytest.raises(ValueError, match="2 points cannot fit 3 parameters"):
        fit_sigmoid([1, 2], [0.1, 0.2], 0.0)
    with pytest.raises(ValueError, match="one length"):
        fit_sigmoid([1, 2, 3], [0.1, 0.2], 0.0)
    with pytest.raises(ValueError, match="> 0"):
        fit_sigmoid([0, 2, 3], [0.1, 0.2, 0.3], 0.0)
    with pytest.raises(ValueError, match="finite"):
        fit_sigmoid([1, 2, 3], [0.1, float("nan"), 0.3], 0.0)


def test_level_pools_by_hand():
    digits = [2, 3, 4, 2, 4, 3]
    pools = level_pools([[2], [2, 3], [4]], digits)
    assert [p.tolist() for p in pools] == [[0, 3], [0, 1, 3, 5], [2, 4]]
    assert [p.tolist() for p in level_pools(curriculum([(1, [3]), (2, [2, 4])], 2), digits)] == [[1, 5], [0, 2, 3, 4]]
    with pytest.raises(ValueError, match="no prompt has level \\[5\\]"):
        level_pools([[2], [5]], digits)


def test_shipped_pass_rates_match_the_split_and_the_band():
    from utils.tasks.scratchpad import load_split
    rates, n = curation.load_pass_rates(), curation.PASS_RATES_CONFIG["n"]
    assert n >= 16 and rates.shape == (len(load_split("train")),)
    assert ((rates * n) == np.round(rates * n)).all() and rates.min() >= 0 and rates.max() <= 1
    kept = sweet_spot(rates)
    assert 0.1 * len(rates) < len(kept) < 0.9 * len(rates), "the band keeps some prompts and drops some"


def test_forecasts_by_hand():
    """Each simple forecast is exact on the data it describes, and the rmse is over the second half only."""
    from utils.eval.scaling import forecasts

    C = np.array([100.0, 200.0, 400.0, 800.0, 1600.0])              # first half: C <= 800
    line = 0.1 + 0.05 * np.log(C)                                    # straight in log C
    f = forecasts(C, line, 0.1)
    assert abs(f["line in log C"]["rmse"]) < 1e-12
    assert f["nothing changes"]["pred"].tolist() == [line[3]]       # the first half's last point
    assert abs(f["nothing changes"]["rmse"] - (line[4] - line[3])) < 1e-12
    flat = np.full(5, 0.4)
    assert f is not None and forecasts(C, flat, 0.4)["nothing changes"]["rmse"] == 0.0
    with pytest.raises(ValueError, match="need 3 points"):
        forecasts(C[:3], line[:3], 0.1)


def test_mix_matched_subset_by_hand():
    """The same number of prompts per level as `chosen`, drawn from all of that level, seeded."""
    digits = [2, 2, 3, 3, 3, 4]
    got = curation.mix_matched_subset(digits, [0, 2, 3], seed=0)
    assert sorted(np.asarray(digits)[got].tolist()) == [2, 3, 3] and len(set(got.tolist())) == 3
    assert (got == np.sort(got)).all() and (curation.mix_matched_subset(digits, [0, 2, 3], seed=0) == got).all()
    assert curation.mix_matched_subset(digits, [5], seed=1).tolist() == [5]   # the only 4-digit prompt
    draws = {tuple(curation.mix_matched_subset(digits, [2], seed=s).tolist()) for s in range(20)}
    assert draws == {(2,), (3,), (4,)}, "every prompt of the level can be drawn"
    for bad in ([], [6], [-1], [0.5]):
        with pytest.raises(ValueError, match="chosen"):
            curation.mix_matched_subset(digits, bad)


def test_shuffled_keeps_the_pools_and_changes_their_order():
    pools = [np.array([i]) for i in range(10)]
    got = curation.shuffled(pools, seed=0)
    assert sorted(int(p[0]) for p in got) == list(range(10)) and [int(p[0]) for p in got] != list(range(10))
    assert [int(p[0]) for p in curation.shuffled(pools, seed=0)] == [int(p[0]) for p in got]
    with pytest.raises(ValueError, match="pools"):
        curation.shuffled([])
