"""Code verifiers (Lab 02): unit tests judge a candidate Python function, run in a sandbox.

A row's `tests` is a list of {"input": [args], "output": expected}, plain JSON values. The weak
naive_code_reward appends asserts to the candidate and trusts how the script ends (exit 0 or "all
passed"), so exit(0), an always-True __eq__ or a print fool it. The strong code_reward has a trusted
harness return the results as JSON and compares them in the parent. The child never sees the
expected outputs: a forged result line is no stronger than hard-coding the visible outputs, which
does pass (keep held-out tests).

run_sandboxed, the same for both: a separate `python -I -S` process behind the wall isolation.py
builds (bubblewrap: a world of its own with no host files, every namespace unshared, a private /tmp capped
in bytes and in files, and a syscall filter that allows no second process, socket, pipe splicing or
extended attribute, so its limits are the candidate's as a whole), in its own
session; limits on CPU, memory, file size, open files and threads, set by the harness before any
candidate code runs (not in a preexec_fn: Popen stays on vfork, cheap from a big training process);
where this machine lets us make cgroups (root, usually), the run and all it starts in its own, capped
in memory (the kernel's share too) and in tasks, and counting its CPU time (isolation.launch); an empty
environment. A run is judged by its CPU time (timeout_s, at most 5 s), so a busy neighbour in the same batch
cannot turn a right answer into a timeout; the wall clock (wall_deadline) only stops one that waits. Which CPU
time: its cgroup's where it has one that counts CPU (everything it starts, all their threads: _run_cpu), else
its own as it reaches us: the harness's report (os.times() after the results: none in script mode, and
candidate code can patch it) and the CPU of the processes the wall's processes waited for (bwrap passes none
on); cgroups.cpu_clock() and describe() say which. Inside, an audit hook refuses
writes outside the scratch folder, reads outside it and the stdlib, new processes, signals, sockets
and ctypes: a second wall, and a teaching device; it can be taken down from inside (Lab 02 shows how),
so nothing relies on it. Without the isolated wall, run_sandboxed and both verifiers refuse to run
anything (SandboxUnavailable, saying how to get it) unless called with allow_weaker_wall=True.
Candidates get the standard library only. Otherwise a verifier never raises: one score per
completion, unjudgeable -> 0.0.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from utils import DATA_DIR, checks
from utils.verifiers.isolation import (  # noqa: F401 - re-exported: the wall is part of this API
    NOBODY,
    SandboxUnavailable,
    available_walls,
    describe,
    launch,
    require,
    sandbox_config,
)
from utils.verifiers.signature import Shared, per_completion

SUITE_PATH = os.path.join(DATA_DIR, "code", "adversarial.jsonl")
MAX_CODE_CHARS = 20_000     # longer candidates are rejected unread
MAX_TIMEOUT_S = 5.0         # hard cap on the wall timeout of one run
FILE_LIMIT = 1 << 20        # RLIMIT_FSIZE: any file the child writes, its stdout and stderr included
NPROC, NOFILE = 16, 64      # RLIMIT_NPROC (processes and threads), RLIMIT_NOFILE
MAX_TASKS = NPROC + 4       # a run's pids cgroup (where there is one): its processes and threads, the wall's too
CGROUP_SLACK = 80 << 20     # a run's cgroup (where there is one): its memory limit plus the /tmp and the kernel's share
CLIP = 2048                 # stdout / stderr returned, in characters
MARKER = "@@RLVR_RESULT@@"
CPU_MARKER = "@@RLVR_CPU@@"  # the harness's own CPU seconds, after the result (a wall's processes may not pass
                             # their children's on: bwrap does not)
SCRATCH_PREFIX = "rlvr_sbx_"
HARNESS_TAG = "rlvr-sandbox-harness"
EVIDENCE_DIR = "/tmp/rlvr_evidence"  # attack cases aim here: world-writable on the host (attacks.py)
ESCAPE_MARKER = "rlvr-escaped"      # ... and leave processes carrying this in their command line

# Trusted; run as `python -I -S -c HARNESS`. Reads {code, func, inputs, limits, audit} on stdin.
HARNESS = "# " + HARNESS_TAG + r"""
import builtins, json, os, sys
job = json.loads(sys.stdin.buffer.read())
if job["limits"]:  # none where there is no `resource` module (Windows)
    import resource
    for name, n in job["limits"].items():  # CPU: SIGXCPU at n seconds (a timeout), SIGKILL a second later
        resource.setrlimit(getattr(resource, name), (n, n + (name == "RLIMIT_CPU")))
builtins.exit = builtins.quit = sys.exit  # as in an ordinary script (no site under -S)

def guard(scratch, readable):
    # A closure over names bound now: the candidate can patch os, os.path or builtins, not these.
    str_, bytes_, int_, type_, getcwd, stat = str, bytes, int, type, os.getcwd, os.stat
    W = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    BANNED = ("os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.kill", "os.symlink",
              "subprocess.", "socket.", "ctypes.", "gc.get_", "sys._current_frames", "sys.settrace",
              "sys.setprofile")
    PATHS = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.link",
             "os.truncate", "os.utime", "shutil.")

    def inside(p, dirs):  # lexical (no symlink can be made); exact str/bytes: no candidate code runs
        p = "." if p is None else p.decode("utf-8", "surrogateescape") if type_(p) is bytes_ else p
        if type_(p) is not str_:
            return False
        parts = []
        for part in (p if p.startswith("/") else getcwd() + "/" + p).split("/"):
            if part == "..":
                parts = parts[:-1]
            elif part != "" and part != ".":
                parts.append(part)
        p = "/" + "/".join(parts)
        for d in dirs:
            if p == d or p.startswith(d + "/"):
                return True
        return False

    def is_dir(p):  # no directory file descriptors: they would make dir_fd= paths unchecked
        try:
            return stat(p).st_mode & 0o170000 == 0o040000
        except Exception:
            return False

    def hook(event, args):
        if event == "open":
            mode = args[1] or ""
            write = (args[2] or 0) & W != 0 or "w" in mode or "a" in mode or "x" in mode or "+" in mode
            path = args[0]
            ok = type_(path) is int_ or (inside(path, (scratch,) if write else readable) and not is_dir(path))
        elif event == "os.listdir" or event == "os.scandir":
            ok = inside(args[0], readable)
        elif event.startswith(PATHS):
            ok = not [a for a in args[:2] if type_(a) is not int_ and not inside(a, (scratch,))]
        elif event == "import":
            ok = str_.__str__(args[0]).partition(".")[0] not in ("ctypes", "_ctypes", "_posixsubprocess")
        else:
            ok = not event.startswith(BANNED)
        if not ok:
            raise PermissionError("sandbox: " + event + " refused")
    return hook

write, exit_now, code, ns = os.write, os._exit, job["code"], {"__name__": "__main__"}
if job["audit"]:
    here = os.path.realpath(os.getcwd())
    stdlib = tuple(os.path.realpath(p) for p in sys.path if p)
    sys.addaudithook(guard(here, (here, "/dev/null", "/dev/urandom") + stdlib))
if job["inputs"] is None:  # script mode: as `python script.py` runs it, exit status and all
    exec(compile(code, "<candidate>", "exec"), ns)
    sys.exit(0)
try:
    exec(compile(code, "<candidate>", "exec"), ns)
    line = json.dumps([ns[job["func"]](*args) for args in job["inputs"]])
    sys.__stdout__.flush()
except BaseException as e:  # SystemExit too: exiting is not returning
    try:
        msg = type(e).__name__ + ": " + str(e)[:300]
    except BaseException:
        msg = "an exception"
    write(2, ("candidate raised " + msg + "\n").encode())
    exit_now(1)
write(1, ("\n" + job["marker"] + line + "\n" + job["cpu_marker"] + repr(sum(os.times()[:2])) + "\n").encode())
exit_now(0)
"""

def _wait(proc, timeout_s):
    """True if proc exited within timeout_s. Leaves it unreaped, so its group can still be killed."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(timeout_s * 1000))
    finally:
        os.close(fd)


def _clip(b):
    s = b.decode("utf-8", "replace")
    return s if len(s) <= CLIP else s[: CLIP // 2] + "\n...[clipped]...\n" + s[-CLIP // 2:]


def cpu_limit(timeout_s):
    """RLIMIT_CPU for a run judged at timeout_s seconds of CPU: whole seconds, past the timeout."""
    return int(timeout_s) + 1


def wall_deadline(timeout_s, beside=0):
    """Seconds of wall clock a run gets, with `beside` other candidates judged at the same time. The verdict
    is by CPU time (the run's: all its threads', and where a cgroup counts it all it starts); the wall clock
    only stops a candidate that waits (a sleep, a blocked read). Room for twice its own CPU budget (a busy
    machine) and for all of its neighbours' (each uses at most cpu_limit(timeout_s) seconds of CPU) on the
    same core: what a neighbour does cannot turn a right run into a timeout."""
    timeout_s = checks.number("wall_deadline", "timeout_s", timeout_s, lo=0)
    beside = checks.number("wall_deadline", "beside", beside, lo=0, integer=True)
    return 2 * timeout_s + beside * cpu_limit(timeout_s) + 0.5


def _run(cfg, code, inputs, func_name, timeout_s, mem_mb, audit_hook, beside=0):
    t0 = time.perf_counter()
    res = dict(status="error", outputs=None, stdout="", stderr="", seconds=0.0, cpu_seconds=None)
    scratch = None
    try:
        timeout_s = min(max(float(timeout_s), 0.05), MAX_TIMEOUT_S)
        limits = dict(RLIMIT_CPU=cpu_limit(timeout_s), RLIMIT_AS=int(mem_mb) << 20, RLIMIT_FSIZE=FILE_LIMIT,
                      RLIMIT_NOFILE=NOFILE, RLIMIT_NPROC=NPROC) if cfg["rlimits"] else {}
        job = json.dumps(dict(code=code, func=func_name, inputs=inputs, limits=limits, audit=audit_hook,
                              marker=MARKER, cpu_marker=CPU_MARKER))
        if cfg["wall"] == "isolated":  # its own /tmp, in its own world: nothing on the host to clean
            cwd, env = "/", {}
        else:  # a scratch folder on the host, removed afterwards
            cwd = scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
            if cfg["uid"] == NOBODY and os.geteuid() == 0:
                os.chown(scratch, NOBODY, NOBODY)
            env = dict(HOME=scratch, TMPDIR=scratch, PYTHONDONTWRITEBYTECODE="1", LANG="C.UTF-8")
        with (tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout,
              tempfile.TemporaryFile() as ferr):
            fin.write(job.encode())
            fin.seek(0)
            with launch(cfg, cfg["python"], memory_bytes=(int(mem_mb) << 20) + CGROUP_SLACK,
                        max_tasks=MAX_TASKS) as (prefix, fds, cgroup_cpu):
                proc = subprocess.Popen(prefix + [cfg["python"], "-I", "-S", "-c", HARNESS], stdin=fin, stdout=fout,
                                        stderr=ferr, cwd=cwd, env=env, start_new_session=True, close_fds=True,
                                        pass_fds=fds)
                finished = _wait(proc, wall_deadline(timeout_s, beside))
                try:  # the whole session's group, leader still unreaped: nothing stays behind
                    os.killpg(proc.pid, signal.SIGKILL)
                except (OSError, AttributeError):
                    proc.kill()
                rc, cpu = _reap(proc)
                whole = cgroup_cpu()
            for f in (fout, ferr):
                f.seek(0)
            out, err = fout.read(FILE_LIMIT + 1), ferr.read(FILE_LIMIT + 1)
        res.update(stdout=_clip(out), stderr=_clip(err))
        text = out.decode("utf-8", "replace").splitlines()
        lines = [ln for ln in text if ln.startswith(MARKER)]
        cpu = _run_cpu(whole, cpu, [_float(ln[len(CPU_MARKER):]) for ln in text if ln.startswith(CPU_MARKER)])
        res["cpu_seconds"] = cpu
        signum = -rc if rc < 0 else rc - 128 if rc > 128 else 0  # bwrap reports its child's signal as 128 + it
        if not finished or cpu > timeout_s or signum == getattr(signal, "SIGXCPU", None):
            res["status"] = "timeout"   # waited past the wall clock, or computed past its CPU time
        elif signum:  # killed by a signal: a limit (memory, the CPU's hard limit), or a segfault
            res["status"] = "crashed"
        elif rc == 0 and inputs is None:  # script mode: exit status 0 is all it takes
            res["status"] = "ok"
        elif rc == 0 and lines:  # function mode: the LAST result line counts
            res.update(status="ok", outputs=json.loads(lines[-1][len(MARKER):]))
    except Exception as e:  # noqa: BLE001 - a sandbox failure is a failed run, never an exception
        res.update(status="error", stderr=f"sandbox: {type(e).__name__}: {e}"[:CLIP])
    finally:
        if scratch:
            _remove(scratch)
    res["seconds"] = time.perf_counter() - t0
    return res


def _run_cpu(cgroup, reaped, reported):
    """The CPU seconds a run is judged by: its cgroup's (everything it started, all their threads) where it has one
    that counts CPU; else the larger of what wait4 gave for it (reaped: the CPU of the processes the wall's
    processes waited for) and the harness's reports (a candidate can lower those only by patching os.times,
    within RLIMIT_CPU)."""
    if cgroup is not None:
        return cgroup
    return max([reaped or 0.0] + list(reported))


def _float(text):
    """A non-negative float from the harness's CPU line, 0.0 for anything else (a candidate may forge it:
    the CPU limit still stops it at cpu_limit seconds)."""
    try:
        x = float(text)
        return x if 0.0 <= x < 1e6 else 0.0
    except ValueError:
        return 0.0


def _reap(proc):
    """Reap proc: (its exit code as Popen gives it, the CPU seconds it and every descendant it waited for
    used, user and system; None where os.wait4 is missing). The wall's processes each wait for their
    child, so the candidate's CPU time reaches us through them."""
    if not hasattr(os, "wait4"):
        return proc.wait(), None
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def _remove(folder):
    """Remove a scratch folder whatever the candidate made of it: folders without permissions,
    nesting deeper than a recursive walk goes (`rm -rf` after `chmod -R`, which need no recursion)."""
    try:
        shutil.rmtree(folder, ignore_errors=True)
    except RecursionError:  # Python < 3.12 walks recursively
        pass
    if os.path.lexists(folder):
        subprocess.run(f"chmod -R u+rwx '{folder}'; rm -rf '{folder}'", shell=True, timeout=30,  # our own name
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_sandboxed(code, inputs, func_name="solve", timeout_s=5.0, mem_mb=512, audit_hook=True,
                  allow_weaker_wall=False, wall=None):
    """Run untrusted `code` in a sandboxed child process; call func_name(*args) for each args in
    `inputs` (a list of argument lists), or with inputs=None run `code` as a script.
    Returns dict(status: "ok" | "timeout" | "error" | "crashed", outputs: the JSON-decoded results
    (None unless ok in function mode), stdout, stderr (clipped to ~2 KB), seconds (wall clock),
    cpu_seconds (the run's CPU time: its cgroup's, everything it started, where it has one; else its own; see
    cgroups.cpu_clock())). "timeout": more than timeout_s seconds of CPU, or a wait past wall_deadline(timeout_s).
    Behind the isolated wall (isolation.py) only, unless allow_weaker_wall=True: else it raises
    SandboxUnavailable before running anything. wall= names a weaker wall to run behind (Lab 02's
    comparison); audit_hook=False shows what the OS walls do alone."""
    cfg = require(allow_weaker_wall, wall)
    timeout_s = checks.number("run_sandboxed", "timeout_s", timeout_s, lo=0, lo_open=True)
    mem_mb = checks.number("run_sandboxed", "mem_mb", mem_mb, lo=16, hi=1 << 20, integer=True)
    checks.flag("run_sandboxed", "audit_hook", audit_hook)
    if not isinstance(code, str) or len(code) > MAX_CODE_CHARS or not isinstance(func_name, str):
        return dict(status="error", outputs=None, stdout="", stderr="rejected unread", seconds=0.0, cpu_seconds=None)
    return _run(cfg, code, inputs, func_name, timeout_s, mem_mb, bool(audit_hook))


_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(text):
    """The code of a completion: the last ```python fenced block if there is one, else the text."""
    if not isinstance(text, str) or len(text) > MAX_CODE_CHARS:
        return None
    return (_FENCE.findall(text) or [text])[-1]


def _tests(t):
    """A usable test list (non-empty, of {"input": list, "output": ...}; JSON text accepted) or None."""
    try:
        t = json.loads(t) if isinstance(t, str) else t
        return t if t and all(isinstance(x["input"], list) and "output" in x for x in t) else None
    except (ValueError, TypeError, KeyError):
        return None


def _canon(x):
    return json.dumps(x, sort_keys=True)


def _strong(code, tests, func_name, timeout_s, cfg, audit_hook, beside=0):
    r = _run(cfg, code, [t["input"] for t in tests], func_name, timeout_s, 512, audit_hook, beside)
    outs = r["outputs"] if r["status"] == "ok" and isinstance(r["outputs"], list) else []
    ok = len(outs) == len(tests) and all(_canon(o) == _canon(t["output"]) for o, t in zip(outs, tests))
    return 1.0 if ok else 0.0


def _naive(code, tests, func_name, timeout_s, cfg, audit_hook, beside=0):
    asserts = "".join(f"assert {func_name}(*{t['input']!r}) == {t['output']!r}\n" for t in tests)
    r = _run(cfg, code + "\n\n" + asserts + 'print("all passed")\n', None, func_name, timeout_s, 512, audit_hook,
             beside)
    return 1.0 if r["status"] == "ok" or "all passed" in r["stdout"] else 0.0


def _rewards(match, completions, tests, func_name, timeout_s, allow_weaker_wall, wall, audit_hook, workers):
    cfg = require(allow_weaker_wall, wall)  # the one exception: no wall, no run (see run_sandboxed)
    timeout_s = checks.number("code_reward", "timeout_s", timeout_s, lo=0, lo_open=True)  # the caller's options
    checks.flag("code_reward", "audit_hook", audit_hook)
    if workers is not None:
        checks.number("code_reward", "workers", workers, lo=1, hi=1024, integer=True)
    rows = per_completion(completions, Shared(_tests(tests)) if _tests(tests) else tests, func_name)
    workers = max(1, min(len(rows), workers or os.cpu_count() or 1))

    def judge(row):
        text, t, name = row
        try:  # one score per completion, always: unjudgeable is 0.0 for that one alone
            code, t = extract_code(text), _tests(t)
            ok = code is not None and t is not None and isinstance(name, str) and name.isidentifier()
            ok = ok and len(code) <= MAX_CODE_CHARS
            return match(code, t, name, timeout_s, cfg, bool(audit_hook), workers - 1) if ok else 0.0
        except Exception:  # noqa: BLE001 - a verifier never raises
            return 0.0

    if workers <= 1:
        return [judge(r) for r in rows]
    with ThreadPoolExecutor(workers) as pool:  # threads that wait on child processes: one per core
        return list(pool.map(judge, rows))


def code_reward(completions, tests, func_name="solve", timeout_s=5.0, allow_weaker_wall=False, wall=None,
                audit_hook=True, workers=None, **kwargs):
    """Strong: 1.0 iff the harness returns, for every test, exactly its output (canonical JSON).
    `tests`: one test list for all completions, or a column of them (lists or JSON text). The code
    is a completion's last ```python block, else its whole text. Runs behind the isolated wall
    only, unless allow_weaker_wall=True (see run_sandboxed); never raises otherwise. wall= and
    audit_hook=False are for Lab 02's comparison of the walls. A batch is judged `workers` at a time
    (default: one per core)."""
    return _rewards(_strong, completions, tests, func_name, timeout_s, allow_weaker_wall, wall, audit_hook,
                    workers)


def naive_code_reward(completions, tests, func_name="solve", timeout_s=5.0, allow_weaker_wall=False,
                      wall=None, audit_hook=True, workers=None, **kwargs):
    """Weak: the candidate + `assert solve(*input) == output` lines + print("all passed"), run as a
    script in the same sandbox; 1.0 if it exits 0 or prints "all passed". The candidate's own code
    decides how the script ends, so it can end it well. Arguments as code_reward."""
    return _rewards(_naive, completions, tests, func_name, timeout_s, allow_weaker_wall, wall, audit_hook,
                    workers)


def load_code_suite(path=SUITE_PATH):
    """The labelled adversarial suite: dicts with id, kind, task, tests, candidate, label (1.0: a
    correct solution that must pass; 0.0: must fail). "@DATA_DIR@" in a candidate becomes this
    checkout's data folder, "@EVIDENCE@" EVIDENCE_DIR and "@MARKER@" ESCAPE_MARKER (attacks.py); a
    "pad": n field appends an n-character comment (the huge candidate)."""
    with open(checks.path("load_code_suite", "path", path, "file"), encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    for c in cases:
        if isinstance(c["candidate"], str):
            for key, value in (("@DATA_DIR@", DATA_DIR), ("@EVIDENCE@", EVIDENCE_DIR), ("@MARKER@", ESCAPE_MARKER)):
                c["candidate"] = c["candidate"].replace(key, value)
            c["candidate"] += "\n#" + "x" * c["pad"] if c.get("pad") else ""
    return cases
