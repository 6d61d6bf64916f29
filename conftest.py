"""Test-session set-up for the whole suite (tests/, and notebooks run under nbval directly).

The run cache (utils/cache.py): each session gets a fresh folder, so a training run that appears
more than once in the session (a lab in the browser test, the same lab's solution down the Colab
branch) is computed once and loaded after that, with the same numbers. Set RLVR_LABS_CACHE=off to
compute every run every time, or to a folder of your own to keep runs between sessions.

Set at import, not in a hook: pytest imports tests/conftest.py (which hands the folder to the tests
that start notebooks in other processes) before it calls pytest_configure.
"""
import os
import shutil
import tempfile

ENV = "RLVR_LABS_CACHE"
_MADE = None
if ENV not in os.environ:
    os.environ[ENV] = _MADE = tempfile.mkdtemp(prefix="rlvr-labs-run-cache-")
    os.environ["RLVR_LABS_CACHE_BY_SUITE"] = "1"


def pytest_unconfigure(config):
    if _MADE:
        shutil.rmtree(_MADE, ignore_errors=True)
