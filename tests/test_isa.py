"""tools/isa.py: the second instruction set the lower-bounds check runs under, worked out by hand for each kind of
machine and each knob a run may already have set."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import isa  # noqa: E402

AVX512 = {"sse4_2", "avx", "avx2", "avx512f", "avx512bw", "avx512vl"}
AVX2 = {"sse4_2", "avx", "avx2"}


@pytest.fixture
def x86(monkeypatch):
    monkeypatch.setattr(isa.platform, "machine", lambda: "x86_64")


def test_one_level_below_the_machine(x86):
    assert isa.second({}, AVX512) == isa.SETTINGS["AVX2"]
    assert isa.second({}, AVX2) == isa.SETTINGS["SSE4_2"]
    assert isa.second({}, {"sse4_2"}) == {}                                  # nothing lower: no knob to unset


def test_one_level_below_a_run_already_forced(x86):
    assert isa.run_level(AVX512, {"MKL_ENABLE_INSTRUCTIONS": "AVX2"}) == "AVX2"
    assert isa.second({"MKL_CBWR": "AVX2"}, AVX512) == isa.SETTINGS["SSE4_2"]
    assert isa.second({"ATEN_CPU_CAPABILITY": "avx512"}, AVX512) == isa.SETTINGS["AVX2"]  # a cap at the top
    assert isa.second({"MKL_CBWR": "AUTO"}, AVX512) == isa.SETTINGS["AVX2"]              # names no level


def test_a_run_at_the_lowest_gets_the_machine_own_kernels(x86):
    env = {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "default", "PATH": "/bin"}
    assert isa.second(env, AVX512) == {"MKL_CBWR": "", "ATEN_CPU_CAPABILITY": ""}
    assert isa.applied(env, isa.second(env, AVX512)) == {"PATH": "/bin"}


def test_arm64_has_only_atens_knob(monkeypatch):
    monkeypatch.setattr(isa.platform, "machine", lambda: "aarch64")
    assert isa.machine_level({"asimd", "sve"}) is None
    assert isa.second({}, {"asimd", "sve"}) == {"ATEN_CPU_CAPABILITY": "default"}
    assert isa.second({"ATEN_CPU_CAPABILITY": "default"}, {"asimd"}) == {}


def test_applied_sets_and_unsets():
    assert isa.applied({"A": "1", "MKL_CBWR": "AVX2"}, {"MKL_CBWR": "", "ATEN_CPU_CAPABILITY": "avx2"}) == \
        {"A": "1", "ATEN_CPU_CAPABILITY": "avx2"}
