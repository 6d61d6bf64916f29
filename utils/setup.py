"""The one setup call every notebook makes after finding the course: seeds, threads, plot style."""
import os
import random

import numpy as np
import torch


def seed_everything(seed=0):
    """Seed Python, NumPy and torch (CPU and CUDA). seed: an integer from 0 to 2**32 - 1 (NumPy's range)."""
    from utils import checks

    seed = checks.number("seed_everything", "seed", seed, lo=0, hi=2**32 - 1, integer=True)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def setup(seed=0, quiet=False):
    """Seed everything, quiet the libraries' chatter (their UserWarnings, never the course's own
    utils.CourseWarning), set one plot style. Returns the device name."""
    import warnings

    import matplotlib.pyplot as plt

    from utils import checks

    checks.number("setup", "seed", seed, lo=0, hi=2**32 - 1, integer=True)
    checks.flag("setup", "quiet", quiet)

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    from utils import CourseWarning

    warnings.filterwarnings("default", category=CourseWarning)  # ahead of the two above: the course's own show
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        import datasets

        datasets.disable_progress_bars()
        datasets.logging.set_verbosity_error()
    except ImportError:
        pass
    seed_everything(seed)
    plt.rcParams.update({"figure.figsize": (10, 3.4), "figure.dpi": 90, "axes.grid": True,
                         "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False})
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if not quiet:
        print(f"torch {torch.__version__} on {device}; seed {seed}")
    return device


def environment():
    """What produced a set of numbers: Python, the libraries that decide a run, the CPU, the kernels torch runs
    on it (its instruction set, and any knob that forced another: tools/isa.py) and its thread count. Benchmarks
    store it beside their results; the test suite prints it in its header."""
    import importlib.metadata as md
    import platform

    libs = {}
    for name in ("torch", "transformers", "trl", "tokenizers", "numpy", "accelerate", "datasets", "safetensors"):
        try:
            libs[name] = md.version(name)
        except md.PackageNotFoundError:
            libs[name] = None
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    knobs = " ".join(f"{k}={os.environ[k]}" for k in ("MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "ATEN_CPU_CAPABILITY",
                                                       "ONEDNN_MAX_CPU_ISA") if k in os.environ)
    kernels = torch.backends.cpu.get_cpu_capability() + (f" ({knobs})" if knobs else "")
    return {"python": platform.python_version(), **libs, "cpu": cpu, "cpu_kernels": kernels,
            "torch_threads": torch.get_num_threads(), "platform": platform.platform()}
