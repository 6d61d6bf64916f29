"""Build a stand-in for a fresh Google Colab runtime: a virtual environment that cannot see this repo
or the packages of the Python that runs this script, holding what Colab ships (torch, transformers,
matplotlib, pandas, ipywidgets, ...), but not TRL or datasets, which the setup cell has to install.
Versions are those of the current environment, so runs agree with the rest of the test session.

    python tools/colab_runtime.py [FOLDER]     # default build/colab-runtime; prints the venv's python

Used by tests/test_colab.py (which builds it when missing) and by .ci/run (which builds it while
installing, so that the tests' time is the tests').
"""
import hashlib
import subprocess
import sys
import venv
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "build" / "colab-runtime"
# what a Colab runtime has before the setup cell runs (trl, datasets are deliberately missing),
# plus what runs the notebooks there (Colab's own kernel; here ipykernel, pytest and nbval)
PREINSTALLED = ["torch", "transformers", "tokenizers", "safetensors", "accelerate", "numpy", "matplotlib",
                "pandas", "ipywidgets", "tqdm", "ipykernel", "pytest", "nbval"]
MISSING = ["trl", "datasets"]


def spec():
    return [f"{name}=={metadata.version(name)}" for name in PREINSTALLED]


def python_of(folder):
    return Path(folder) / "bin" / "python"


def build(folder=DEFAULT, quiet=True):
    """Create (or reuse, if built with the same spec) the runtime; returns the path of its python."""
    folder = Path(folder)
    want = hashlib.sha256(" ".join(spec()).encode()).hexdigest()
    stamp = folder / "rlvr-labs-spec.txt"
    if stamp.exists() and stamp.read_text() == want and python_of(folder).exists():
        return python_of(folder)
    venv.EnvBuilder(clear=True, with_pip=True, system_site_packages=False).create(folder)
    py = str(python_of(folder))
    q = ["--quiet"] if quiet else []
    torch = [s for s in spec() if s.startswith("torch==")]
    # torch on its own first, so that a local CPU wheel is used and no CUDA build is pulled in
    subprocess.run([py, "-m", "pip", "install", *q, *torch], check=True)
    subprocess.run([py, "-m", "pip", "install", *q, *spec()], check=True)
    subprocess.run([py, "-m", "pip", "uninstall", "--yes", "--quiet", *MISSING], check=False)
    stamp.write_text(want)
    return python_of(folder)


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else DEFAULT, quiet=False))
