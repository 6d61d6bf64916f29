"""Test-session set-up for the whole suite (tests/, and the notebooks under nbval).

The run cache (utils/cache.py): each session gets a fresh folder, so a training run that the same
lab repeats (labs/ under nbval through the Colab branch, labs/ in the browser, solutions/ under
nbval) is computed once and loaded after that, with the same numbers. Set RLVR_LABS_CACHE=off to
compute every run every time, or to a folder of your own to keep runs between sessions.
"""
import os
import shutil
import tempfile

ENV = "RLVR_LABS_CACHE"


def pytest_configure(config):
    if ENV not in os.environ:
        os.environ[ENV] = config._rlvr_run_cache = tempfile.mkdtemp(prefix="rlvr-labs-run-cache-")


def pytest_unconfigure(config):
    d = getattr(config, "_rlvr_run_cache", None)
    if d:
        shutil.rmtree(d, ignore_errors=True)
        os.environ.pop(ENV, None)
