"""A cgroup per run of untrusted code (Lab 02's wall, utils/verifiers/isolation.py): where this machine lets us make
them, and the cgroups themselves.

Where this machine lets us (root, usually; cgroup v1's memory and pids hierarchies, or v2's root with those
controllers; an ordinary user where the system delegates cgroups to it: a v2 subtree of its own, as a systemd user
session has, or v1 folders an administrator made for it), isolation.launch() puts a run and all it starts in cgroups
of its own: capped in memory, the kernel's share included, and in tasks (memory_cgroup, pids_cgroup), and counting
its CPU time, all its processes' and threads' (cpu_cgroup: v1's cpuacct hierarchy, or v2's cpu.stat), which the
code verifier judges its CPU limit by (cpu_clock() says which clock a run gets here). Each run's cgroups are removed
when it ends, or, if it cannot be yet, at exit or by sweep_cgroups().

Stdlib only: this module imports on a bare Python.
"""
import atexit
import os
import time


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
