"""Code verifiers (Lab 02): unit tests judge a candidate Python function, run in a sandbox.

A row's `tests` is a list of {"input": [args], "output": expected}, plain JSON values. The weak
naive_code_reward appends asserts to the candidate and trusts how the script ends (exit 0 or "all
passed"), so exit(0), an always-True __eq__ or a print fool it. The strong code_reward has a trusted
harness return the results as JSON and compares them in the parent. The child never sees the
expected outputs: a forged result line is no stronger than hard-coding the visible outputs, which
does pass (keep held-out tests).

run_sandboxed, the same for both: a separate `python -I -S` process in its own session, its group
killed at a wall timeout (<= 5 s); limits on CPU, memory, file size, open files and processes, set
by the harness before any candidate code runs (not in a preexec_fn: Popen stays on vfork, cheap from
a big training process); an empty environment; a fresh scratch folder as cwd, removed afterwards;
an audit hook refusing writes outside the scratch folder, reads outside it and the stdlib, new
processes, signals, sockets and ctypes. Where the OS allows (probed once, sandbox_config) it also
runs as nobody in new network and PID namespaces: no network, and its processes die with it.
Candidates get the standard library only. A verifier never raises: unjudgeable -> 0.0.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from utils import DATA_DIR
from utils.verifiers.signature import Shared, per_completion

SUITE_PATH = os.path.join(DATA_DIR, "code", "adversarial.jsonl")
MAX_CODE_CHARS = 20_000     # longer candidates are rejected unread
MAX_TIMEOUT_S = 5.0         # hard cap on the wall timeout of one run
FILE_LIMIT = 1 << 20        # RLIMIT_FSIZE: any file the child writes, its stdout and stderr included
NPROC, NOFILE = 16, 64      # RLIMIT_NPROC (processes and threads), RLIMIT_NOFILE
CLIP = 2048                 # stdout / stderr returned, in characters
NOBODY = 65534
MARKER = "@@RLVR_RESULT@@"
SCRATCH_PREFIX = "rlvr_sbx_"
HARNESS_TAG = "rlvr-sandbox-harness"

# Trusted; run as `python -I -S -c HARNESS`. Reads {code, func, inputs, limits, audit} on stdin.
HARNESS = "# " + HARNESS_TAG + r"""
import builtins, json, os, resource, sys
job = json.loads(sys.stdin.buffer.read())
for name, n in job["limits"].items():
    resource.setrlimit(getattr(resource, name), (n, n))
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
write(1, ("\n" + job["marker"] + line + "\n").encode())
exit_now(0)
"""

# the child's interpreter must be whole: a binary nobody cannot fully read may run on another
# Python's library (a pyenv under /root did, here), so its executable must lie under its prefix
_PROBE = """import os, sys
def solve():
    whole = os.path.realpath(sys.executable).startswith(os.path.realpath(sys.prefix) + os.sep)
    return [whole, sys.version.split()[0]]
"""
_CONFIG = None  # filled once by sandbox_config(): the OS protections that work on this machine


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


def _run(cfg, code, inputs, func_name, timeout_s, mem_mb, audit_hook):
    t0 = time.perf_counter()
    res = dict(status="error", outputs=None, stdout="", stderr="", seconds=0.0)
    scratch = None
    try:
        timeout_s = min(max(float(timeout_s), 0.05), MAX_TIMEOUT_S)
        limits = dict(RLIMIT_CPU=int(timeout_s) + 1, RLIMIT_AS=int(mem_mb) << 20, RLIMIT_FSIZE=FILE_LIMIT,
                      RLIMIT_NOFILE=NOFILE, RLIMIT_NPROC=NPROC)
        job = json.dumps(dict(code=code, func=func_name, inputs=inputs, limits=limits, audit=audit_hook,
                              marker=MARKER))
        scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        if cfg["uid"] == NOBODY and os.geteuid() == 0:
            os.chown(scratch, NOBODY, NOBODY)
        env = dict(HOME=scratch, TMPDIR=scratch, PYTHONDONTWRITEBYTECODE="1", LANG="C.UTF-8")
        cmd = cfg["prefix"] + [cfg["python"], "-I", "-S", "-c", HARNESS]
        with (tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout,
              tempfile.TemporaryFile() as ferr):
            fin.write(job.encode())
            fin.seek(0)
            proc = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=ferr, cwd=scratch, env=env,
                                    start_new_session=True, close_fds=True)
            finished = _wait(proc, timeout_s)
            try:  # the whole session's group, leader still unreaped: nothing stays behind
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            rc = proc.wait()
            out, err = (os.pread(f.fileno(), FILE_LIMIT + 1, 0) for f in (fout, ferr))
        res.update(stdout=_clip(out), stderr=_clip(err))
        lines = [ln for ln in out.decode("utf-8", "replace").splitlines() if ln.startswith(MARKER)]
        if not finished:
            res["status"] = "timeout"
        elif rc < 0:  # killed by a signal: a limit, or a segfault
            res["status"] = "crashed"
        elif rc == 0 and inputs is None:  # script mode: exit status 0 is all it takes
            res["status"] = "ok"
        elif rc == 0 and lines:  # function mode: the LAST result line counts
            res.update(status="ok", outputs=json.loads(lines[-1][len(MARKER):]))
    except Exception as e:  # noqa: BLE001 - a sandbox failure is a failed run, never an exception
        res.update(status="error", stderr=f"sandbox: {type(e).__name__}: {e}"[:CLIP])
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    res["seconds"] = time.perf_counter() - t0
    return res


def sandbox_config():
    """The first set-up that works here, probed once, kept in _CONFIG: dict(python, prefix (wrapped
    around python), netns, pidns, uid, version). As root: unshare -n -p + setpriv to nobody, else
    setpriv alone, else nothing; otherwise unshare -r -n -p, else nothing. Each tries sys.executable
    then /usr/bin/python3 (nobody must be able to run it whole)."""
    global _CONFIG
    if _CONFIG is None:
        unshare, setpriv, root = shutil.which("unshare"), shutil.which("setpriv"), os.geteuid() == 0
        ns = [unshare] + ([] if root else ["-r"]) + ["-n", "-p", "--fork", "--kill-child", "--"]
        drop = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--pdeathsig=KILL", "--"]
        layers = [(ns + drop, True, NOBODY), (drop, False, NOBODY)] if root else [(ns, True, os.geteuid())]
        layers = [la for la in layers if None not in la[0]] + [([], False, os.geteuid())]
        pythons = dict.fromkeys(p for p in (sys.executable, "/usr/bin/python3") if os.path.exists(p))
        for cfg in [dict(python=py, prefix=prefix, netns=iso, pidns=iso, uid=uid)
                    for prefix, iso, uid in layers for py in pythons]:
            r = _run(cfg, _PROBE, [[]], "solve", 5.0, 512, True)
            if r["status"] == "ok" and r["outputs"][0][0] is True:
                _CONFIG = dict(cfg, version=r["outputs"][0][1])
                break
        else:
            _CONFIG = dict(python=sys.executable, prefix=[], netns=False, pidns=False, uid=os.geteuid(),
                           version=None)
    return _CONFIG


def run_sandboxed(code, inputs, func_name="solve", timeout_s=5.0, mem_mb=512, audit_hook=True):
    """Run untrusted `code` in a sandboxed child process; call func_name(*args) for each args in
    `inputs` (a list of argument lists), or with inputs=None run `code` as a script.
    Returns dict(status: "ok" | "timeout" | "error" | "crashed", outputs: the JSON-decoded results
    (None unless ok in function mode), stdout, stderr (clipped to ~2 KB), seconds).
    audit_hook=False is only for showing what the OS layers alone stop."""
    if not isinstance(code, str) or len(code) > MAX_CODE_CHARS or not isinstance(func_name, str):
        return dict(status="error", outputs=None, stdout="", stderr="rejected unread", seconds=0.0)
    return _run(sandbox_config(), code, inputs, func_name, timeout_s, mem_mb, bool(audit_hook))


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


def _strong(code, tests, func_name, timeout_s):
    r = run_sandboxed(code, [t["input"] for t in tests], func_name, timeout_s)
    outs = r["outputs"] if r["status"] == "ok" and isinstance(r["outputs"], list) else []
    ok = len(outs) == len(tests) and all(_canon(o) == _canon(t["output"]) for o, t in zip(outs, tests))
    return 1.0 if ok else 0.0


def _naive(code, tests, func_name, timeout_s):
    asserts = "".join(f"assert {func_name}(*{t['input']!r}) == {t['output']!r}\n" for t in tests)
    r = run_sandboxed(code + "\n\n" + asserts + 'print("all passed")\n', None, func_name, timeout_s)
    return 1.0 if r["status"] == "ok" or "all passed" in r["stdout"] else 0.0


def _rewards(match, completions, tests, func_name, timeout_s):
    try:
        out = []
        shared = _tests(tests)
        for text, t, name in per_completion(completions, Shared(shared) if shared else tests, func_name):
            code, t = extract_code(text), t if shared else _tests(t)
            ok = code is not None and t is not None and isinstance(name, str) and name.isidentifier()
            out.append(match(code, t, name, timeout_s) if ok else 0.0)
        return out
    except Exception:  # noqa: BLE001 - a verifier never raises
        return []


def code_reward(completions, tests, func_name="solve", timeout_s=5.0, **kwargs):
    """Strong: 1.0 iff the harness returns, for every test, exactly its output (canonical JSON).
    `tests`: one test list for all completions, or a column of them (lists or JSON text). The code
    is a completion's last ```python block, else its whole text."""
    return _rewards(_strong, completions, tests, func_name, timeout_s)


def naive_code_reward(completions, tests, func_name="solve", timeout_s=5.0, **kwargs):
    """Weak: the candidate + `assert solve(*input) == output` lines + print("all passed"), run as a
    script in the same sandbox; 1.0 if it exits 0 or prints "all passed". The candidate's own code
    decides how the script ends, so it can end it well. Arguments as code_reward."""
    return _rewards(_naive, completions, tests, func_name, timeout_s)


def load_code_suite(path=SUITE_PATH):
    """The labelled adversarial suite: dicts with id, kind, task, tests, candidate, label (1.0: a
    correct solution that must pass; 0.0: must fail). "@DATA_DIR@" in a candidate becomes this
    checkout's data folder; a "pad": n field appends an n-character comment (the huge candidate)."""
    with open(path, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    for c in cases:
        if isinstance(c["candidate"], str):
            c["candidate"] = c["candidate"].replace("@DATA_DIR@", DATA_DIR)
            c["candidate"] += "\n#" + "x" * c["pad"] if c.get("pad") else ""
    return cases
