"""Shared test set-up: the repo root on sys.path, offline hub, quiet tokenizers, headless plots,
a fixed small thread count, and a module-scoped fixture for the shipped base model."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# set before transformers / huggingface_hub / matplotlib are imported by any test module
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["MPLBACKEND"] = "Agg"

import pytest  # noqa: E402
import torch  # noqa: E402

# The suite is budgeted for a 2-core CPU. On xdist's workers (pytest.ini: -n auto) the unit tests run beside
# the notebooks' worker, at 1 thread (two 2-thread processes on 2 cores spin on each other); alone, at 2.
# RLVR_LABS_TEST_THREADS overrides. Notebook kernels are other processes and keep torch's default.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
torch.set_num_threads(int(os.environ.get("RLVR_LABS_TEST_THREADS") or (1 if _WORKERS > 1 else 2)))


@pytest.fixture(scope="module")
def shipped():
    """(model, tokenizer) of the shipped base model, loaded once per test module.
    Tests that train must deep-copy the model first."""
    from utils.models.policy import load_policy

    model, tok = load_policy()
    model.eval()
    return model, tok


# The run cache (tests/run_cache.py, set up in ../conftest.py) is for the notebooks. Unit tests run with
# it off, so that a test that trains twice to compare really trains twice; the tests that start
# notebooks in other processes (Colab branch, browser) hand the session's folder on explicitly.
SESSION_RUN_CACHE = os.environ.get("RLVR_LABS_CACHE", "off")


@pytest.fixture(autouse=True)
def _run_cache_off(monkeypatch):
    monkeypatch.setenv("RLVR_LABS_CACHE", "off")


@pytest.fixture(scope="session")
def session_run_cache():
    """The test session's run-cache setting, for notebooks started in other processes."""
    if os.environ.get("RLVR_LABS_CACHE_BY_SUITE") == "1":  # made by ../conftest.py: it must be a folder
        assert SESSION_RUN_CACHE not in ("", "0", "off"), "the suite's run cache was not set up"
    return SESSION_RUN_CACHE


def pytest_report_header(config):
    """The versions and CPU behind this run's numbers, at the top of every test log (CI's too)."""
    from utils.setup import environment

    return "rlvr-labs environment: " + ", ".join(f"{k} {v}" for k, v in environment().items())


@pytest.fixture(scope="session")
def course_repo(tmp_path_factory):
    """A git repository of this working tree as it is (file:// URL), which the setup cell's Colab branch clones
    instead of GitHub (RLVR_LABS_REPO): the Colab pass's and the browser pass's."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import colab_runtime

    return colab_runtime.course_snapshot(tmp_path_factory.mktemp("course-remote"))
