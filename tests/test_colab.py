"""The Colab branch of the setup cell, as close to Colab as we get offline, with every solution notebook
under nbval: each notebook alone in an empty folder, in a fresh virtual environment that cannot import
this repo and lacks TRL (tools/colab_runtime.py), the setup cell forced down its Colab branch
(RLVR_LABS_FORCE_COLAB=1) and fetching the course with git from a snapshot of this working tree
(RLVR_LABS_REPO) instead of GitHub. The only network use is the setup cell's pip install of the
requirements (trl and what it adds) from the package registry, as on Colab.

A Colab badge opens the lab (labs/); its setup cell is the same cell, character for character
(tests/test_notebooks.py), and the labs themselves run in a real browser (tests/test_browser.py). Here
the solutions run, so each notebook of the course runs once in the suite, not twice.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import colab_runtime  # noqa: E402

LOCK = ROOT / "requirements-lock.txt"
SOLUTIONS = sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))
pytestmark = pytest.mark.slow


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def course_repo(tmp_path_factory):
    """A git repository holding this working tree as it is (tracked and untracked, not ignored files):
    what `git clone` of the course would give, uncommitted edits included."""
    repo = tmp_path_factory.mktemp("course-remote")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split("\0")
    for f in filter(None, files):
        if (ROOT / f).is_file():
            (repo / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, repo / f)
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "snapshot", cwd=repo)
    return f"file://{repo}"


@pytest.fixture(scope="module")
def runtime():
    """The stand-in runtime, without TRL (a previous session's setup cells may have installed it)."""
    py = str(colab_runtime.build())
    subprocess.run([py, "-m", "pip", "uninstall", "--yes", "--quiet", *colab_runtime.MISSING], capture_output=True)
    return py


def _has(runtime, module):
    out = subprocess.run([runtime, "-c", f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def test_runtime_is_fresh(runtime, tmp_path):
    """The stand-in runtime cannot import the course."""
    probe = "import importlib.util as u; print(u.find_spec('utils') is None)"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([runtime, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True"], "a package called utils is importable in the Colab stand-in"
    assert not _has(runtime, "trl") and _has(runtime, "torch"), "the stand-in should have torch and lack TRL"


@pytest.mark.parametrize("name", SOLUTIONS)
def test_solution_runs_down_the_colab_branch(runtime, course_repo, session_run_cache, tmp_path, name):
    content = tmp_path / "content"              # Colab's working folder, empty but for the notebook
    content.mkdir()
    shutil.copy2(ROOT / "solutions" / name, content / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(RLVR_LABS_FORCE_COLAB="1", RLVR_LABS_REPO=course_repo, RLVR_LABS_CACHE=session_run_cache,
               HF_HUB_OFFLINE="1", MPLBACKEND="Agg", PATH=f"{Path(runtime).parent}{os.pathsep}{env['PATH']}")
    if LOCK.exists():  # the setup cell's pip install of TRL takes the lock's versions, as CI's own install does
        env["PIP_CONSTRAINT"] = str(LOCK)
    r = subprocess.run([runtime, "-m", "pytest", "--nbval-lax", "--current-env", "--nbval-cell-timeout=600",
                        "-p", "no:cacheprovider", "-q", "-x", name], cwd=content, env=env,
                       capture_output=True, text=True)
    tail = (r.stdout + r.stderr)[-4000:]
    assert r.returncode == 0, f"{name} failed down the Colab branch:\n{tail}"
    assert (content / "rlvr-labs" / "utils" / "setup.py").exists(), "the setup cell did not fetch the course"
    assert _has(runtime, "trl"), "the setup cell did not install the requirements"
