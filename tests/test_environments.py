"""The three checks in other environments, as units of the suite's own schedule (--checks; CI always asks):
  lower-bounds (fatal): the unit tests, then Lab 01 under nbval, at the lowest versions the ranges allow (.ci/lowest);
  newcomer (fatal): labs/01 run top to bottom in the README's own learner install (.ci/newcomer);
  drift (reported, not fatal): the unit tests, then Lab 08, at the newest versions the ranges allow (.ci/drift).
Each part is one xdist unit of work, handed out among the labs longest first (conftest.py's UNIT_COST), so that
no core idles at the end: the checks used to run after the suite, three at once on two cores (CI's log at
8f01a12: 700 s after a suite of 1,376). Each part runs in one process at 1 torch thread (-n 0 inside), like
every lab under xdist.

Their environments install in the background while the suite starts (.ci/run, at nice 19); each install writes
its exit status to build/<check>-install.rc, which a part waits for. Asked for outside CI, a part installs its
environment itself when none is there (a few minutes each; delete build/<check>-venv to install afresh).
A drift failure is reported as an expected failure (x) and in build/drift-result.txt, which .ci/run prints:
it names what a future move of the lock would break, and CI stays green until the lock is moved on purpose.
Each part's log is build/<check>-<part>.log; under .ci/run each adds its row to CI's table of legs.
"""
import fcntl
import os
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
WAIT_S = 3600       # for a background install to finish (it took about 390 s on a fast day beside the suite)
RUN_S = 2400        # one part: the lower-bounds unit tests took about 300 s at 1 thread on a fast day (2x, x4)

# test id -> (script, part, what it proves, fatal)
PARTS = {
    "lowest-units": ("lowest", "units", "the unit tests at the lowest allowed versions, under a second instruction "
                     "set", True),
    "drift-units": ("drift", "units", "the unit tests at the newest allowed versions", False),
    "newcomer": ("newcomer", None, "labs/01 in the README's learner install", True),
    "lowest-lab": ("lowest", "lab", "Lab 01 under nbval at the lowest allowed versions, under a second instruction "
                   "set", True),
    "drift-lab": ("drift", "lab", "Lab 08 under nbval at the newest allowed versions", False),
}
pytestmark = pytest.mark.slow

# What the suite sets for its own processes and must not reach a check's: the check is a suite of its own
# (its own run cache, its own IPython start-up, its own thread count), as if started by hand.
_SUITE_ONLY = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS",
               "RLVR_LABS_CACHE", "RLVR_LABS_CACHE_BY_SUITE", "RLVR_LABS_IPYTHONDIR", "IPYTHONDIR",
               "VIRTUAL_ENV", "PYTHONPATH")


def _env():
    env = {k: v for k, v in os.environ.items() if k not in _SUITE_ONLY}
    env.update(OMP_NUM_THREADS="1", RLVR_LABS_TEST_THREADS="1")
    return env


def _tail(path, n=40):
    lines = Path(path).read_text(errors="replace").splitlines() if Path(path).exists() else []
    return "\n".join(lines[-n:])


# where each check's install leaves its venv (the newcomer check's is the README's own, inside its fresh clone)
VENVS = {"newcomer": BUILD / "newcomer" / "rlvr-labs" / ".venv"}


def environment(script):
    """Wait for (or make) the check's venv (build/<script>-venv, VENVS); fail with the install's log if it did not
    install."""
    BUILD.mkdir(exist_ok=True)
    rc_file, log = BUILD / f"{script}-install.rc", BUILD / f"{script}-install.log"
    with open(BUILD / f"{script}-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two parts of one check on two workers: one installs, one waits
        if os.environ.get("RLVR_LABS_CHECKS_INSTALLING") == "1":  # .ci/run installs it in the background
            t = time.time()
            while not rc_file.exists():
                if time.time() - t > WAIT_S:
                    pytest.fail(f"the {script} environment did not finish installing in {WAIT_S} s ({log})")
                time.sleep(2)
        elif not rc_file.exists() or not VENVS.get(script, BUILD / f"{script}-venv").exists():
            with open(log, "w") as out:
                subprocess.run(["bash", f".ci/{script}", "install"], cwd=ROOT, env=_env(), stdout=out,
                               stderr=subprocess.STDOUT)
    rc = rc_file.read_text().strip()
    return rc, log


def _cpu():
    """The machine's busy and total CPU ticks (/proc/stat's first line), as .ci/run's cpu() reads them."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return f"{f[0] + f[1] + f[2] + f[5] + f[6] + f[7]} {sum(f[:8])}"
    except (OSError, ValueError, IndexError):
        return "0 0"


def _ci_row(name, start, rc, c0):
    """Under .ci/run: this part's row in CI's table of legs (build/ci-times.txt's format)."""
    times, t0 = os.environ.get("RLVR_LABS_CI_TIMES"), os.environ.get("RLVR_LABS_CI_T0")
    if times and t0:
        with open(times, "a") as f:
            f.write(f"  {name} (in the suite)|{int(start) - int(t0)}|{int(time.time()) - int(t0)}|{rc}|{c0}|"
                    f"{_cpu()}\n")


@pytest.mark.parametrize("part", list(PARTS))
def test_check(part):
    script, which, proves, fatal = PARTS[part]
    if script == "drift" and os.environ.get("RLVR_LABS_SKIP_DRIFT") == "1":
        pytest.skip("RLVR_LABS_SKIP_DRIFT=1: the drift check is left out")
    rc, install_log = environment(script)
    label = {"lowest": "LOWER-BOUNDS CHECK", "drift": "DRIFT CHECK", "newcomer": "NEWCOMER CHECK"}[script]
    if rc != "0":
        message = f"{label} FAILED to install (exit {rc}; {install_log}):\n{_tail(install_log)}"
        if not fatal:
            (BUILD / f"{script}-result-{which}.txt").write_text(message + "\n")
            pytest.xfail(message)
        pytest.fail(message)
    log = BUILD / f"{script}-{which or 'test'}.log"
    args = ["bash", f".ci/{script}", "test"] + ([which, "-n", "0"] if which else [])
    start, c0 = time.time(), _cpu()
    with open(log, "w") as out:
        try:
            r = subprocess.run(args, cwd=ROOT, env=_env(), stdout=out, stderr=subprocess.STDOUT, timeout=RUN_S)
            code = r.returncode
        except subprocess.TimeoutExpired:
            code = 124
    _ci_row(f"{script} check: {which or 'labs/01'}", start, code, c0)
    summary = [ln for ln in _tail(log, 400).splitlines()
               if ln.startswith(("FAILED", "ERROR", "AssertionError")) or " passed" in ln or "Timeout" in ln]
    verdict = f"{label} ({proves}): " + ("passed" if code == 0 else f"FAILED, exit {code} ({log})")
    if not fatal:
        (BUILD / f"{script}-result-{which}.txt").write_text("\n".join([verdict] + summary[-20:]) + "\n")
    if code != 0:
        message = verdict + "\n" + ("\n".join(summary[-30:]) or _tail(log))
        if not fatal:
            pytest.xfail(message)
        pytest.fail(message)
    print(verdict + "; " + " ".join(summary[-1:]))
