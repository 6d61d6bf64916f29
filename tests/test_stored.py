"""utils.eval.stored: a run checked beside the benchmark's seeds."""
import pytest

from utils.eval.stored import beside

SEEDS = {"a": [0.50, 0.55, 0.525], "b": [0.25, 0.25, 0.25], "wide": [0.0, 0.5, 0.25]}


def test_within_the_band_passes_and_names_what_was_checked(capsys):
    assert beside({"a": 0.5, "b": 0.25}, SEEDS) == ["a", "b"]
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["pass@1", "this", "run"] and "3 seeds" in out[0]
    assert out[1].split() == ["a", "0.500", "0.500-0.550", "within"]
    assert out[2].split() == ["b", "0.250", "0.250-0.250", "within"]


def test_the_band_edges_count_as_within():
    # 0.25 - 0.125 and 0.25 + 0.125 are exact in binary: the edges themselves pass
    assert beside({"b": 0.125}, SEEDS, band=0.125, show=False) == ["b"]
    assert beside({"b": 0.375}, SEEDS, band=0.125, show=False) == ["b"]


@pytest.mark.parametrize("x", [0.19, 0.31])  # below and above the seeds' range widened by 0.05
def test_outside_the_band_fails_naming_the_condition(x):
    with pytest.raises(AssertionError, match=r"b: 0\.(190|310) against 0\.250-0\.250"):
        beside({"a": 0.52, "b": x}, SEEDS, show=False)


def test_seeds_far_apart_are_shown_not_checked(capsys):
    assert beside({"wide": 0.99, "a": 0.52}, SEEDS) == ["a"]  # 0.99 is far outside, but the seeds span 0.5
    assert "seeds 0.50 apart: not checked" in capsys.readouterr().out
    with pytest.raises(AssertionError):
        beside({"wide": 0.99}, SEEDS, max_spread=0.6, show=False)  # allowed that spread, it is checked


def test_a_condition_the_benchmark_lacks_is_an_error():
    with pytest.raises(ValueError, match="no seeds for \\['c'\\]"):
        beside({"c": 0.5}, SEEDS)


def test_show_false_prints_nothing(capsys):
    beside({"a": 0.52}, SEEDS, show=False)
    assert capsys.readouterr().out == ""
