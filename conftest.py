"""Test-session set-up for the whole suite (tests/, and the notebooks of solutions/ under nbval).

What runs. `python -m pytest` runs the unit tests and every solution notebook under nbval, in this
environment. Two passes run only when asked, and always in CI (.ci/run):
  --browser  every lab (labs/) in JupyterLab in headless Chromium (tests/test_browser.py);
  --colab    every solution down the setup cell's Colab branch in a stand-in for Colab's runtime
             (tests/test_colab.py; builds a 5.4 GB virtual environment the first time).
Asked for, a pass whose tools are missing fails instead of skipping.

Workers and threads. pytest.ini runs the suite on pytest-xdist workers, one per core (-n auto). Every
test that executes notebooks (each solution under nbval, the Colab pass, the browser pass) is one unit of
xdist's work (pytest_xdist_make_scheduler below): one worker runs them one after another, each kernel on
torch's default thread count, as a learner's would. Not two notebooks side by side at 1 thread each: on
this 2-core machine that finished the eight labs in 17.0 min against 17.4 min one at a time at 2 threads
(the latter measured on another day), and it moves the numbers (a CPU run's bits depend on the thread
count: Lab 07's extrapolation check failed at 1 thread). The unit tests, which mostly wait (on sandboxes,
subprocesses, timeouts: 2.4 min of CPU in 4.1 min alone), go first, a file at a time on each worker, at 1
torch thread each (tests/conftest.py). In the unit of work the solutions run here first, then down the Colab
branch, then the labs in the browser, whose kernel is Colab's: the browser's runs and samples come from
the Colab pass through the run cache.

The run cache (tests/run_cache.py): each session gets a fresh folder, so a training run that appears
more than once in the session (a lab in the browser test, the same lab's solution down the Colab
branch) is computed once and loaded after that, with the same numbers. The notebooks' kernels get it
through IPYTHONDIR: an IPython directory whose startup file wraps the trainers (run_cache.install).
Set RLVR_LABS_CACHE=off to compute every run every time, or to a folder of your own to keep runs
between sessions.

Set at import, not in a hook: pytest imports tests/conftest.py (which hands the folder to the tests
that start notebooks in other processes) before it calls pytest_configure, and xdist's workers inherit
the environment of the process that starts them.
"""
import importlib.util
import os
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

ENV = "RLVR_LABS_CACHE"
_MADE = []
if ENV not in os.environ:
    os.environ[ENV] = tempfile.mkdtemp(prefix="rlvr-labs-run-cache-")
    os.environ["RLVR_LABS_CACHE_BY_SUITE"] = "1"
    _MADE.append(os.environ[ENV])
# tests/run_cache.py, loaded by path (tests/ is not a package): the kernels' start-up file and the ledger's reader
_spec = importlib.util.spec_from_file_location(
    "rlvr_labs_run_cache", os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "run_cache.py"))
_run_cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_run_cache)
if os.environ[ENV].lower() not in ("", "0", "off") and "RLVR_LABS_IPYTHONDIR" not in os.environ:
    _MADE.append(tempfile.mkdtemp(prefix="rlvr-labs-ipython-"))
    os.environ["IPYTHONDIR"] = os.environ["RLVR_LABS_IPYTHONDIR"] = _run_cache.kernel_startup_dir(_MADE[-1])

PASSES = {"browser": "tests/test_browser.py", "colab": "tests/test_colab.py"}


def _workers(config):
    if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
        return int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    n = getattr(config.option, "numprocesses", None)
    if not n or getattr(config.option, "dist", "no") == "no":
        return 1
    return (os.cpu_count() or 1) if n in ("auto", "logical") else int(n)


def pytest_addoption(parser):
    group = parser.getgroup("rlvr-labs")
    group.addoption("--browser", action="store_true",
                    help="also run every lab in JupyterLab in headless Chromium (tests/test_browser.py)")
    group.addoption("--colab", action="store_true",
                    help="also run every solution down the Colab branch in the Colab stand-in (tests/test_colab.py)")
    group.addoption("--skip-solutions", action="store_true",
                    help="leave out the solutions under nbval here (CI, until the labs fit its budget twice)")


def pytest_configure(config):
    if config.getoption("browser"):  # tests/test_browser.py fails, not skips, when asked for without its tools
        os.environ["RLVR_LABS_REQUIRE_BROWSER"] = "1"
    config._rlvr_started = time.time()


# The verifier tests look for sandboxed processes machine-wide (a leak may be reparented anywhere), so they
# run on one worker, first, before any notebook (Lab 02 runs the verifiers) and beside no other sandbox.
SANDBOXING = ("tests/test_code_verifier.py", "tests/test_sql_verifier.py")


def _order(nodeid):
    """Where a test goes: the verifier tests (-1), the other unit tests (0), then the notebooks here, the
    Colab pass, the browser (1, 2, 3)."""
    path = nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        return 1
    return {PASSES["colab"]: 2, PASSES["browser"]: 3}.get(path, -1 if path in SANDBOXING else 0)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scheduler, with every test that executes notebooks in one unit of work: one worker runs them
    in order (a notebook's cells share a kernel; the browser pass loads the Colab pass's runs), and the
    other workers share the unit tests. (Not xdist_group marks: xdist 3.8 groups by rewriting a test's id,
    which pytest 9.2 no longer allows, and the drift check saw the notebooks' cells scattered.)"""
    from xdist.scheduler import LoadScopeScheduling

    class NotebooksTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid):  # a unit-test file stays on one worker (its module fixtures)
            order = _order(nodeid)
            return "notebooks" if order > 0 else "sandboxing" if order < 0 else nodeid.split("::")[0]

    # in collection order (pytest_collection_modifyitems): the unit tests first, on every worker, and the
    # notebooks after them, alone: a 2-thread torch kernel beside a busy process ran 3.3x slower (10.3 s
    # against 3.1 s for 15 GRPO steps; its idle thread spins on a core the other process holds)
    config.option.loadscopereorder = False
    return NotebooksTogether(config, log)


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: _order(item.nodeid))  # stable: each file's and notebook's order kept
    for item in items:
        path = item.nodeid.split("::")[0]
        if path.endswith(".ipynb") and config.getoption("skip_solutions"):
            item.add_marker(pytest.mark.skip(reason="--skip-solutions: the solutions under nbval here are left out"))
        for name, file in PASSES.items():
            if path == file and not config.getoption(name):
                item.add_marker(pytest.mark.skip(reason=f"the {name} pass runs when asked: python -m pytest --{name} "
                                                        f"(CI always runs it)"))


# ---------------------------------------------------------------- the time table at the end of a run

_TIMES = defaultdict(float)  # (lab or "", pass) -> seconds
_SPANS = []  # (start, stop, lab, pass) of each report of a test that executes notebooks
_COLUMNS = {"nbval": "here (nbval)", "colab": "Colab branch", "browser": "browser"}


def pytest_runtest_logreport(report):
    """Add a report's seconds (set-up, call and tear-down) to its lab and pass, or to the unit tests."""
    path, _, rest = report.nodeid.partition("::")
    name = Path(path).stem if path.endswith(".ipynb") else rest.partition("[")[2].rstrip("]").removesuffix(".ipynb")
    kind = "nbval" if path.endswith(".ipynb") else next((k for k, f in PASSES.items() if f == path), "unit")
    _TIMES[(name if kind != "unit" else "", kind)] += report.duration
    if kind != "unit" and getattr(report, "start", None):
        _SPANS.append((report.start, report.stop, name, kind))


def _ledger_table(w):
    """What each lab's runs did in each pass (the run cache's ledger): computed, and for how long, or loaded.
    A run computed again in a later pass is one whose key differed (another environment, another function)."""
    d = os.environ.get(ENV, "")
    if d.lower() in ("", "0", "off") or not _SPANS:
        return
    cells, why = defaultdict(lambda: [0, 0.0, 0]), defaultdict(int)  # (lab, pass) -> [computed, s, loaded]
    spans = sorted(_SPANS)
    for row in _run_cache.ledger(d):
        span = next((sp for sp in spans if sp[0] <= row["t"] <= sp[1]), None)
        if span is None:
            continue
        c = cells[(span[2], span[3])]
        if row["outcome"] == "hit":
            c[2] += 1
        else:
            c[0], c[1] = c[0] + 1, c[1] + row["seconds"]
            if row["outcome"] == "uncached":
                why[(span[2], span[3], row["why"])] += 1
    if not cells:
        return
    w.section("rlvr-labs: runs and samplings computed (seconds) / loaded, per lab and pass (tests/run_cache.py)")
    w.line(f"{'':40s}" + "".join(f"{c:>20s}" for c in _COLUMNS.values()))
    for lab in sorted({lab for lab, _ in cells}):
        w.line(f"{lab[:40]:40s}" + "".join(
            f"{'%d (%.0f s) / %d' % tuple(cells[(lab, k)]) if (lab, k) in cells else '':>20s}" for k in _COLUMNS))
    for (lab, kind, reason), n in sorted(why.items()):
        w.line(f"  not storable: {lab}, {_COLUMNS[kind]}: {n} x {reason}")


def pytest_terminal_summary(terminalreporter, config):
    """One table at the end of every run: each lab's seconds in each pass, and the rest."""
    if not _TIMES:
        return
    w = terminalreporter
    w.section("rlvr-labs: seconds per lab and pass (xdist: the sum over workers; wall clock at the end)")
    labs = sorted({lab for (lab, _), v in _TIMES.items() if lab and v >= 0.05})  # a skipped pass takes ~0 s
    w.line(f"{'':40s}" + "".join(f"{c:>15s}" for c in _COLUMNS.values()))
    for lab in labs:
        w.line(f"{lab[:40]:40s}" + "".join(f"{_TIMES.get((lab, k), 0):15.1f}" for k in _COLUMNS))
    other = {k: v for (lab, k), v in _TIMES.items() if not lab and k != "unit"}
    w.line(f"{'set-up and other tests of the passes':40s}" + "".join(f"{other.get(k, 0):15.1f}" for k in _COLUMNS))
    w.line(f"{'in all':40s}" + "".join(f"{sum(v for (lab, kk), v in _TIMES.items() if kk == k):15.1f}"
                                         for k in _COLUMNS))
    w.line(f"unit tests: {_TIMES.get(('', 'unit'), 0):.1f} s over {_workers(config)} worker(s); wall clock "
           f"{time.time() - getattr(config, '_rlvr_started', time.time()):.1f} s")
    _ledger_table(w)


def pytest_unconfigure(config):
    for d in _MADE:
        shutil.rmtree(d, ignore_errors=True)
