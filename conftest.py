"""Test-session set-up for the whole suite (tests/, and the notebooks of solutions/ under nbval).

What runs. `python -m pytest` runs the unit tests and every solution notebook under nbval, in this
environment. Two passes run only when asked, and always in CI (.ci/run):
  --browser  every lab (labs/) in JupyterLab in headless Chromium (tests/test_browser.py), its kernel in
             Colab's versions with the setup cell down its Colab branch;
  --colab    the stand-in for Colab's runtime (tests/test_colab.py; builds a 5.4 GB virtual environment the
             first time): the setup cell's install there, the widgets on ipywidgets 7, and, without
             --browser, every solution down the Colab branch (with --browser, the browser pass is that);
  --checks   the lower-bounds, newcomer and drift checks, each in an environment of its own
             (tests/test_environments.py; installs three virtual environments the first time).
Asked for, a pass whose tools are missing fails instead of skipping.

Workers and threads. pytest.ini runs the suite on pytest-xdist workers, one per core (-n auto). A lab's
tests (its solution under nbval, then down the Colab branch, then in the browser) are one unit of xdist's
work (pytest_xdist_make_scheduler below): one worker runs them in that order (a notebook's cells share a
kernel; the later passes load the runs the first computed), and the workers take labs side by side, each
kernel on cores / workers torch threads (OMP_NUM_THREADS, set below; 1 on a 2-core machine). Measured here
(2026-11-27, 2 cores, run cache off): Labs 01 and 03 under nbval side by side at 1 thread took 157 s, one
after the other at 2 threads 224 s (1.43x); 40 GRPO steps of Lab 01 took 7.6 s at 1 thread alone and 8.0
beside a second such process, 6.3 s at 2 threads (medians). A CPU run's bits depend on its thread count, so under
xdist the labs run at 1 thread, and their stored outputs and asserted findings must hold there as they do
at 2, where a learner on 2 cores (and tools/make_labs.py --execute, which stores the outputs) runs them:
a finding that holds at one thread count only is not one. `-n 0` runs everything in this one process, each
kernel on torch's default. The unit tests go first, a file at a time on each worker, at 1 torch thread each
(tests/conftest.py); the verifier tests and Labs 02 and 11 (which run the verifiers) are one unit on one worker
(SANDBOXING below).

The run cache (tests/run_cache.py): each session gets a fresh folder, so a training run that appears
more than once in the session (a solution under nbval here, the same lab in the browser) is computed once
and loaded after that, with the same numbers, where the two environments key alike: in CI's (the lock's:
Colab's version of every library a key names) the solutions here train and the browser's Colab kernel loads.
The notebooks' kernels get it through IPYTHONDIR: an IPython directory whose startup file wraps the trainers
(run_cache.install).
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

PASSES = {"browser": "tests/test_browser.py", "colab": "tests/test_colab.py", "checks": "tests/test_environments.py"}
# Under xdist each worker's notebook kernels (nbval's, the Colab stand-in's, JupyterLab's, and what they
# start) get cores / workers torch threads, so that the labs two workers run side by side share the cores.
# Set at import, in each worker, and passed down to every process it starts.
_KERNEL_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
if _KERNEL_WORKERS > 1 and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // _KERNEL_WORKERS))


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
    group.addoption("--checks", action="store_true",
                    help="also run the lower-bounds, newcomer and drift checks in environments of their own "
                         "(tests/test_environments.py)")
    group.addoption("--skip-solutions", action="store_true",
                    help="leave out the solutions under nbval here (the passes alone, e.g. after a change to them)")


def pytest_configure(config):
    if config.getoption("browser"):  # tests/test_browser.py fails, not skips, when asked for without its tools
        os.environ["RLVR_LABS_REQUIRE_BROWSER"] = "1"
    config._rlvr_started = time.time()


# The verifier tests look for sandboxed processes machine-wide (a leak may be reparented anywhere), so they
# run on one worker, first, beside no other sandbox; Labs 02 and 11, the labs that run the code verifier, go in
# the same unit of work after them.
# tests/test_properties.py runs the code verifier too (its property suite over every public function): left
# among the unit tests, its sandboxes met the code verifier's leak check on the other worker (CI, cf44147). So do
# the program task's checker (test_programs.py), Lab 11's figure and widget (test_figures.py, test_widgets.py) and
# program_report's property case (test_properties_models.py): seen here (2026-11-28) beside the leak check.
# tools/grade.py grades behind the same wall (tests/test_grade.py), so it joins them too.
SANDBOXING = ("tests/test_code_verifier.py", "tests/test_sql_verifier.py", "tests/test_properties.py",
              "tests/test_programs.py", "tests/test_figures.py", "tests/test_widgets.py",
              "tests/test_properties_models.py", "tests/test_grade.py")
SANDBOXING_LABS = ("02_", "11_")
_LAB_TESTS = {PASSES["colab"]: "test_solution_runs_down_the_colab_branch",
              PASSES["browser"]: "test_lab_runs_in_jupyterlab"}


def _lab(nodeid):
    """(lab, pass) of a test that executes a lab's notebook (pass 0 nbval here, 1 Colab, 2 browser), else None."""
    path, _, rest = nodeid.partition("::")
    if path.endswith(".ipynb"):
        return Path(path).stem, 0
    if path in _LAB_TESTS and rest.startswith(_LAB_TESTS[path] + "["):
        return rest.partition("[")[2].rstrip("]").removesuffix(".ipynb"), 1 if path == PASSES["colab"] else 2
    return None


# Seconds of one core each unit of work took in CI (.ci/run from a clean clone on the 2-core machine at dac779e, Lab
# 10 at 8eac726, Lab 09 at 14671d3, Lab 12 at f89ac9a: a lab's solution
# under nbval at 1 thread plus its browser pass; each check's part). The labs and the checks are handed out longest
# first, so that the last units are short ones: xdist gives a worker its next unit before its current one ends, so a
# long unit handed out last leaves the other worker idle while it runs (CI at cf44147: one worker idle for 262 s at
# the end). A lab not in the table (a new one) counts as the longest. A check waits for its environment, which
# installs in the background (about 400-590 s from the start of CI): at least CHECKS_AFTER_S seconds of labs a worker
# go before one. The check parts are tests/test_environments.py's PARTS; a part not in the table goes last.
UNIT_COST = {"01": 200, "03": 263, "04": 280, "05": 158, "06": 377, "07": 225, "08": 96, "09": 153, "10": 199,
             "12": 96, "lowest-units": 226, "drift-units": 234, "lowest-lab": 172, "newcomer": 200, "drift-lab": 60}
CHECKS_AFTER_S = 300


def _unit_rank():
    """{lab number or check part: its place in the hand-out order} (see UNIT_COST)."""
    cost = lambda k: UNIT_COST.get(k, 10**4)  # noqa: E731
    labs = sorted({p.name[:2] for p in (Path(__file__).parent / "solutions").glob("*.ipynb")}
                  - {lab[:2] for lab in SANDBOXING_LABS}, key=lambda k: (cost(k), k), reverse=True)   # ties by name:
    # the same order in every xdist worker (a set's order is not)
    checks = sorted((k for k in UNIT_COST if not k[:2].isdigit()), key=cost, reverse=True)
    order, labs_s = [], 0.0
    while labs or checks:
        ready = checks and labs_s >= CHECKS_AFTER_S * 2   # two workers
        if labs and (not ready or cost(labs[0]) >= cost(checks[0])):
            labs_s += cost(labs[0])
            order.append(labs.pop(0))
        else:
            order.append(checks.pop(0))
    return {k: i for i, k in enumerate(order)}


_RANK = _unit_rank()


def _order(nodeid):
    """Where a test goes: the verifier tests and then Labs 02 and 11 (-1), the other unit tests (0), the passes' own
    tests (1: the Colab stand-in's set-up, the README in the browser), then each lab's tests and each part of the
    checks in other environments (2), in _RANK's order (longest first), a lab's passes in turn."""
    path = nodeid.split("::")[0]
    lab = _lab(nodeid)
    if lab and lab[0].startswith(SANDBOXING_LABS):
        return (-1, 1, lab[0], lab[1])
    if lab:
        return (2, _RANK.get(lab[0][:2], -1), lab[0], lab[1])
    if path in SANDBOXING:
        return (-1, 0, "", 0)
    if path == PASSES["checks"]:
        part = nodeid.partition("[")[2].rstrip("]")
        return (2, _RANK.get(part, len(_RANK)), part, 0)
    return (1 if path in PASSES.values() else 0, 0, "", 0)


def _scope(nodeid):
    """xdist's unit of work of a test: a lab (all its passes), the sandboxing unit, one part of a check in
    another environment, or a unit-test file."""
    order, lab = _order(nodeid), _lab(nodeid)
    if order[0] < 0:
        return "sandboxing"
    if nodeid.split("::")[0] == PASSES["checks"]:
        return nodeid
    return f"lab {lab[0]}" if lab else nodeid.split("::")[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's scheduler with a lab's tests in one unit of work (_scope), handed out in collection order
    (pytest_collection_modifyitems): the unit tests first, then the labs, each to the next free worker.
    (Not xdist_group marks: xdist 3.8 groups by rewriting a test's id, which pytest 9.2 no longer allows, and
    the drift check saw the notebooks' cells scattered.)"""
    from xdist.scheduler import LoadScopeScheduling

    class LabsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return _scope(nodeid)

    config.option.loadscopereorder = False
    return LabsTogether(config, log)


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
_SPANS = []  # (start, stop, lab, pass, worker) of each report of a test that executes notebooks
_COLUMNS = {"nbval": "here (nbval)", "colab": "Colab branch", "browser": "browser"}


def pytest_runtest_logreport(report):
    """Add a report's seconds (set-up, call and tear-down) to its lab and pass, or to the unit tests."""
    path = report.nodeid.split("::")[0]
    lab = _lab(report.nodeid)
    name = lab[0] if lab else ""   # a pass's own tests (its set-up) go in the table's "set-up" row
    kind = "nbval" if path.endswith(".ipynb") else next((k for k, f in PASSES.items() if f == path), "unit")
    if kind == "checks":
        name = report.nodeid.partition("[")[2].rstrip("]")  # the part: lowest-units, newcomer, ...
    _TIMES[(name, kind)] += report.duration
    if kind not in ("unit", "checks") and getattr(report, "start", None):  # xdist's reports carry their node
        worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "")
        _SPANS.append((report.start, report.stop, name, kind, worker))


def _ledger_table(w):
    """What each lab's runs did in each pass (the run cache's ledger): computed, and for how long, or loaded.
    A run computed again in a later pass is one whose key differed (another environment, another function).
    A ledger line belongs to the test that ran on its worker at its time (two workers run two labs at once)."""
    d = os.environ.get(ENV, "")
    if d.lower() in ("", "0", "off") or not _SPANS:
        return
    cells, why = defaultdict(lambda: [0, 0.0, 0]), defaultdict(int)  # (lab, pass) -> [computed, s, loaded]
    spans = sorted(_SPANS)
    for row in _run_cache.ledger(d):
        span = next((sp for sp in spans if sp[0] <= row["t"] <= sp[1] and sp[4] == row.get("worker", "")), None)
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
    labs = sorted({lab for (lab, k), v in _TIMES.items() if lab and k != "checks" and v >= 0.05})  # skipped: ~0 s
    w.line(f"{'':40s}" + "".join(f"{c:>15s}" for c in _COLUMNS.values()))
    for lab in labs:
        w.line(f"{lab[:40]:40s}" + "".join(f"{_TIMES.get((lab, k), 0):15.1f}" for k in _COLUMNS))
    other = {k: v for (lab, k), v in _TIMES.items() if not lab and k in _COLUMNS}
    w.line(f"{'set-up and other tests of the passes':40s}" + "".join(f"{other.get(k, 0):15.1f}" for k in _COLUMNS))
    w.line(f"{'in all':40s}" + "".join(f"{sum(v for (lab, kk), v in _TIMES.items() if kk == k):15.1f}"
                                         for k in _COLUMNS))
    checks = {lab: v for (lab, k), v in _TIMES.items() if k == "checks" and v >= 0.05}
    if checks:
        w.line("checks in environments of their own (--checks): "
               + ", ".join(f"{p} {v:.1f} s" for p, v in checks.items()))
    w.line(f"unit tests: {_TIMES.get(('', 'unit'), 0):.1f} s over {_workers(config)} worker(s); wall clock "
           f"{time.time() - getattr(config, '_rlvr_started', time.time()):.1f} s")
    _ledger_table(w)


def pytest_unconfigure(config):
    for d in _MADE:
        shutil.rmtree(d, ignore_errors=True)
