"""utils/checks.py by hand: what each check takes, converts and refuses, and the words of its message."""
import math

import numpy as np
import pytest
import torch

from utils import checks


def test_number_by_hand():
    assert checks.number("f", "x", 3) == 3.0 and type(checks.number("f", "x", 3)) is float
    assert checks.number("f", "x", np.int64(4), integer=True) == 4 and type(checks.number("f", "x", np.int64(4),
                                                                                          integer=True)) is int
    assert checks.number("f", "x", np.float32(0.5), lo=0, hi=1) == 0.5
    assert checks.number("f", "x", 0, lo=0) == 0.0                       # a closed end takes its bound
    for bad, says in [(True, "f: x=True must be a finite number"), (None, "x=None"), ("1", "x='1'"),
                      (math.nan, "x=nan"), (math.inf, "x=inf"), ([1], "x=[1]")]:
        with pytest.raises(ValueError) as e:
            checks.number("f", "x", bad)
        assert says in str(e.value), (bad, str(e.value))
    with pytest.raises(ValueError, match=r"f: k=3.0 must be an integer >= 1"):
        checks.number("f", "k", 3.0, lo=1, integer=True)                 # 3.0 is not an integer argument
    with pytest.raises(ValueError, match=r"p=0 must be a finite number > 0 and <= 1"):
        checks.number("f", "p", 0, lo=0, hi=1, lo_open=True)
    with pytest.raises(ValueError, match=r"p=1.0 must be a finite number >= 0 and < 1"):
        checks.number("f", "p", 1.0, lo=0, hi=1, hi_open=True)
    with pytest.raises(ValueError, match=r"n=-1 must be an integer >= 0"):
        checks.number("f", "n", -1, lo=0, integer=True)


def test_tensor_keeps_a_tensor_and_converts_a_list():
    t = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert checks.tensor("f", "t", t) is t                               # no copy, no dtype change
    got = checks.tensor("f", "t", [1, 2, 3], dims=1)
    assert got.dtype == torch.float32 and got.tolist() == [1.0, 2.0, 3.0]
    for bad, says in [(None, "t must be a tensor"), ("ab", "t must be a tensor"), ([[1, 2], [3]], "t must be"),
                      (torch.zeros(2, 2), "t must have 1 dimension(s), got shape (2, 2)"),
                      ([1.0, math.nan], "t holds NaN or inf")]:
        with pytest.raises(ValueError) as e:
            checks.tensor("f", "t", bad, dims=1)
        assert says in str(e.value) and str(e.value).startswith("f: "), (bad, str(e.value))
    assert checks.tensor("f", "t", [1.0, math.inf], finite=False).shape == (2,)
    assert checks.tensor("f", "t", 0.5, dims=(0, 1)).dim() == 0


def test_array_is_float64_and_checked():
    a = checks.array("f", "a", [1, 2**40 + 1], dims=1)
    assert a.dtype == np.float64 and a[1] == 2**40 + 1                   # no float32 rounding
    assert checks.array("f", "a", torch.tensor([0.25])).tolist() == [0.25]
    for bad, says in [({}, "a must be a list or array"), ([1, "x"], "a must be a list or array"),
                      ([[1.0]], "a must have 1 dimension(s)"), ([math.inf], "a holds NaN or inf")]:
        with pytest.raises(ValueError) as e:
            checks.array("f", "a", bad, dims=1)
        assert says in str(e.value), (bad, str(e.value))


def test_same_shape_and_short():
    checks.same_shape("f", a=torch.zeros(2, 3), b=torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"f: a \(2, 3\), b \(3, 2\) must have one shape"):
        checks.same_shape("f", a=torch.zeros(2, 3), b=torch.ones(3, 2))
    assert checks._short("x" * 1000).endswith("...") and len(checks._short("x" * 1000)) == 60
    assert checks._short(1.5) == "1.5"


def test_sequence_by_hand():
    assert checks.sequence("f", "answers", ("1", 2)) == ["1", 2]
    assert checks.sequence("f", "answers", np.array([3, 4]), length=2) == [3, 4]
    for bad in ("12", {"a": 1}, {1}, 5, None):
        with pytest.raises(ValueError, match=r"f: answers must be a list \(one entry per problem\)"):
            checks.sequence("f", "answers", bad)
    with pytest.raises(ValueError, match=r"f: answers has 2 entries and prompts has 3: answers must have one per "
                                         r"entry of prompts"):
        checks.sequence("f", "answers", [1, 2], length=3)
    with pytest.raises(ValueError, match=r"tests has 1 entries and texts has 2"):
        checks.sequence("f", "tests", [1], length=2, of="texts")
