"""Test-session set-up for the whole suite (tests/, and notebooks run under nbval directly).

The run cache (tests/run_cache.py): each session gets a fresh folder, so a training run that appears
more than once in the session (a lab in the browser test, the same lab's solution down the Colab
branch) is computed once and loaded after that, with the same numbers. The notebooks' kernels get it
through IPYTHONDIR: an IPython directory whose startup file wraps the trainers (run_cache.install).
Set RLVR_LABS_CACHE=off to compute every run every time, or to a folder of your own to keep runs
between sessions.

Set at import, not in a hook: pytest imports tests/conftest.py (which hands the folder to the tests
that start notebooks in other processes) before it calls pytest_configure.
"""
import importlib.util
import os
import shutil
import tempfile

ENV = "RLVR_LABS_CACHE"
_MADE = []
if ENV not in os.environ:
    os.environ[ENV] = tempfile.mkdtemp(prefix="rlvr-labs-run-cache-")
    os.environ["RLVR_LABS_CACHE_BY_SUITE"] = "1"
    _MADE.append(os.environ[ENV])
if os.environ[ENV].lower() not in ("", "0", "off"):
    _spec = importlib.util.spec_from_file_location(
        "rlvr_labs_run_cache", os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "run_cache.py"))
    _run_cache = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_run_cache)
    _MADE.append(tempfile.mkdtemp(prefix="rlvr-labs-ipython-"))
    os.environ["IPYTHONDIR"] = _run_cache.kernel_startup_dir(_MADE[-1])


def pytest_unconfigure(config):
    for d in _MADE:
        shutil.rmtree(d, ignore_errors=True)
