"""The isolated wall's syscall filter: a seccomp-BPF program (the kernel's classic BPF; Documentation/
userspace-api/seccomp_filter.rst) that bwrap loads just before it starts the candidate (`--seccomp FD`).

What it refuses, and why: each is a way a candidate could take more than the wall's per-process limits
allow, or reach the kernel's rarer corners. With no second process, the candidate's rlimits (address space,
CPU seconds) are limits on the candidate as a whole: threads share one address space and one CPU clock.

  new processes       fork, vfork; clone without CLONE_THREAD (threads stay allowed); clone3 answers
                      ENOSYS, so that the C library falls back to clone, whose flags a filter can read
  namespaces, mounts  unshare, setns, clone with a CLONE_NEW* flag, mount and the new mount API, chroot,
                      pivot_root: no nested user namespace with a tmpfs of its own
  System V IPC        shared memory, message queues, semaphores: memory the address-space limit does not
                      count (bwrap's fresh IPC namespace has no cap of its own)
  memfd               memfd_create, memfd_secret: anonymous files outside the size-capped /tmp
  other processes     ptrace, process_vm_readv/writev
  kernel surfaces     bpf, perf_event_open, userfaultfd, io_uring, the key ring
  sockets             socket, socketpair: the candidate has no network and needs none, and a socket's buffers
                      (TCP on its own loopback, Unix pairs) are kernel memory no rlimit counts
  pipe splicing       vmsplice, splice, tee: pages spliced into a pipe and then unmapped stay held by the pipe,
                      outside the address-space limit (a 2 MB huge page for each 4 KB spliced)
  extended attributes setxattr, lsetxattr, fsetxattr, setxattrat: kernel memory on the private /tmp

Everything else is allowed. A refused call fails with EPERM (a Python candidate sees PermissionError).

Per architecture (the filter first checks the architecture the call comes from, and kills a process that
makes a call of any other: the numbers mean other calls there):

  x86_64     x86-64's numbers (arch/x86/entry/syscalls/syscall_64.tbl); a 32-bit call (int 0x80) or an x32
             call (number + 0x40000000) kills the process
  aarch64    the generic table (include/uapi/asm-generic/unistd.h), which has no fork or vfork (a new
             process is clone or clone3 there, judged as above); an AArch32 call kills the process
  any other  no filter: program() is None, the isolated wall runs without one and says so, naming the
             machine (isolation.describe())

x86-64's filter is run by the kernel in the tests (tests/test_code_verifier.py); aarch64's is checked by
interpreting its program against a hand-written table of the generic numbers, and against the kernel
headers where they are installed, not on an aarch64 machine. Both are little-endian: args[0]'s low half
is at offset 16 of struct seccomp_data.

Stdlib only: this module imports on a bare Python.
"""
import errno
import os
import platform
import struct
import sys

AUDIT_ARCH_X86_64 = 0xC000003E    # linux/audit.h: EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
AUDIT_ARCH_AARCH64 = 0xC00000B7   # EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
X32_SYSCALL_BIT = 0x40000000
CLONE_THREAD = 0x00010000
CLONE_NEW = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
             "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
             "CLONE_NEWNET": 0x40000000}

# each architecture's numbers for the syscalls refused with EPERM, by reason (setxattrat, Linux 6.13, has the same
# number everywhere, as every call added since 5.1 has)
REFUSED = {
    # arch/x86/entry/syscalls/syscall_64.tbl
    "x86_64": {
        "new processes": {"fork": 57, "vfork": 58},
        "namespaces, mounts": {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
                               "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
                               "fsmount": 432, "fspick": 433, "mount_setattr": 442},
        "System V IPC": {"shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "msgget": 68},
        "memfd": {"memfd_create": 319, "memfd_secret": 447},
        "other processes": {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311},
        "kernel surfaces": {"bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
                            "io_uring_enter": 426, "io_uring_register": 427, "add_key": 248, "request_key": 249,
                            "keyctl": 250},
        "sockets": {"socket": 41, "socketpair": 53},
        "pipe splicing": {"vmsplice": 278, "splice": 275, "tee": 276},
        "extended attributes": {"setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "setxattrat": 463},
    },
    # include/uapi/asm-generic/unistd.h: no fork, no vfork (clone is judged by its flags)
    "aarch64": {
        "new processes": {},
        "namespaces, mounts": {"unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
                               "chroot": 51, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
                               "fsmount": 432, "fspick": 433, "mount_setattr": 442},
        "System V IPC": {"shmget": 194, "shmat": 196, "shmctl": 195, "shmdt": 197, "semget": 190, "msgget": 186},
        "memfd": {"memfd_create": 279, "memfd_secret": 447},
        "other processes": {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271},
        "kernel surfaces": {"bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425,
                            "io_uring_enter": 426, "io_uring_register": 427, "add_key": 217, "request_key": 218,
                            "keyctl": 219},
        "sockets": {"socket": 198, "socketpair": 199},
        "pipe splicing": {"vmsplice": 75, "splice": 76, "tee": 77},
        "extended attributes": {"setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "setxattrat": 463},
    },
}
AUDIT_ARCH = {"x86_64": AUDIT_ARCH_X86_64, "aarch64": AUDIT_ARCH_AARCH64}
CLONE = {"x86_64": (56, 435), "aarch64": (220, 435)}   # (clone, clone3)
ARCHITECTURES = tuple(REFUSED)

# classic BPF (linux/filter.h, linux/seccomp.h)
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
ALLOW, KILL_PROCESS, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
NR, ARCH, ARG0 = 0, 4, 16   # offsets in struct seccomp_data; ARG0: the low 32 bits of args[0] (little-endian)


def machine():
    """This machine's architecture as uname names it (platform.machine()), e.g. x86_64, aarch64."""
    return platform.machine()


def architecture():
    """The architecture whose filter applies here (one of ARCHITECTURES), or None: not Linux, a machine
    whose numbers this module does not have, or a 32-bit or big-endian Python (its calls are of another ABI)."""
    if platform.system() != "Linux" or sys.maxsize < 2**32 or sys.byteorder != "little":
        return None
    return {"x86_64": "x86_64", "aarch64": "aarch64"}.get(machine())


def supported():
    """True where this module has the syscall numbers (Linux on x86-64 or aarch64, a 64-bit Python)."""
    return architecture() is not None


def describe():
    """What filter applies here, in one phrase: the architecture's, or none and why (naming the machine)."""
    arch = architecture()
    if arch:
        return f"the {arch} syscall filter"
    if platform.system() != "Linux":
        return f"no syscall filter on {platform.system() or 'this system'} (seccomp is Linux's)"
    return (f"no syscall filter on {machine() or 'this machine'} with this Python (seccomp.py has the numbers "
            f"of {' and '.join(ARCHITECTURES)}, for a 64-bit little-endian Python)")


def _arch(arch):
    arch = architecture() if arch is None else arch
    if not isinstance(arch, str) or arch not in REFUSED:
        raise ValueError(f"seccomp: no syscall numbers for architecture {arch!r}; it has {list(ARCHITECTURES)}")
    return arch


def instructions(arch=None):
    """The filter for `arch` (default: this machine's; a ValueError for one without numbers here) as a list
    of (code, jt, jf, k): read top to bottom, the first RET decides."""
    arch = _arch(arch)

    def ret(value):
        return (RET_K, 0, 0, value)

    eperm = ret(ERRNO | errno.EPERM)
    clone, clone3 = CLONE[arch]
    prog = [(LD_W_ABS, 0, 0, ARCH), (JEQ_K, 1, 0, AUDIT_ARCH[arch]), ret(KILL_PROCESS), (LD_W_ABS, 0, 0, NR)]
    if arch == "x86_64":  # the x32 ABI shares x86-64's audit arch: its numbers carry this bit
        prog += [(JGE_K, 0, 1, X32_SYSCALL_BIT), ret(KILL_PROCESS)]
    for numbers in REFUSED[arch].values():
        for nr in numbers.values():
            prog += [(JEQ_K, 0, 1, nr), eperm]
    prog += [(JEQ_K, 0, 1, clone3), ret(ERRNO | errno.ENOSYS),
             (JEQ_K, 1, 0, clone), ret(ALLOW),
             # clone: a thread (CLONE_THREAD) without any CLONE_NEW* flag, or nothing
             (LD_W_ABS, 0, 0, ARG0), (JSET_K, 0, 1, sum(CLONE_NEW.values())), eperm,
             (JSET_K, 1, 0, CLONE_THREAD), eperm, ret(ALLOW)]
    return prog


def program(arch=None):
    """The compiled filter (struct sock_filter[], little-endian like every architecture here) for bwrap
    --seccomp; None where this machine has no filter (arch None and not supported())."""
    if arch is None and not supported():
        return None
    return b"".join(struct.pack("<HBBI", *ins) for ins in instructions(arch))


def filter_fd():
    """A file descriptor to hand bwrap (--seccomp FD, and pass_fds): the read end of a pipe holding
    program(), which bwrap reads to its end. The caller closes it once the process has started."""
    r, w = os.pipe()
    try:
        os.write(w, program())
    finally:
        os.close(w)
    return r


def refused(arch=None):
    """{syscall name: reason} for every syscall the filter for `arch` (default: this machine's; {} where it has
    none) refuses outright (clone is judged by its flags)."""
    if arch is None and not supported():
        return {}
    return {name: why for why, numbers in REFUSED[_arch(arch)].items() for name in numbers}
