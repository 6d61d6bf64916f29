"""utils.setup: seeding and the environment record that benchmarks and the test log carry."""
import importlib.metadata as md
import platform
import random

import numpy as np
import torch

from utils.setup import environment, seed_everything


def test_seed_everything_repeats_every_generator():
    seed_everything(3)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(3)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == a


def test_environment_names_what_decides_a_run():
    env = environment()
    for key in ("python", "torch", "transformers", "trl", "tokenizers", "numpy", "cpu", "cpu_kernels", "torch_threads"):
        assert key in env, f"environment() lacks {key}"
    assert env["python"] == platform.python_version()
    assert env["torch"] == md.version("torch") and env["numpy"] == md.version("numpy")
    assert env["torch_threads"] == torch.get_num_threads()
    assert isinstance(env["cpu"], str) and env["cpu"]
    assert env["cpu_kernels"].startswith(torch.backends.cpu.get_cpu_capability())


def test_environment_names_a_knob_that_forced_other_kernels(monkeypatch):
    for knob in ("MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA"):
        monkeypatch.delenv(knob, raising=False)   # the lower-bounds check runs under some of them
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    assert environment()["cpu_kernels"].endswith("(MKL_CBWR=COMPATIBLE)")
