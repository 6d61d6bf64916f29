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

Everything else is allowed. A refused call fails with EPERM (a Python candidate sees PermissionError); a
syscall of another ABI (32-bit int 0x80, x32) kills the process. Built for x86-64, the one architecture
whose syscall numbers are here and tested (the Debian headers' asm/unistd_64.h); elsewhere program() is
None and the isolated wall runs without a filter, which isolation.describe() says.

Stdlib only: this module imports on a bare Python.
"""
import errno
import os
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_THREAD = 0x00010000
CLONE_NEW = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
             "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
             "CLONE_NEWNET": 0x40000000}

# x86-64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl), refused with EPERM, by reason
REFUSED = {
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
}
CLONE, CLONE3 = 56, 435

# classic BPF (linux/filter.h, linux/seccomp.h)
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
ALLOW, KILL_PROCESS, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
NR, ARCH, ARG0 = 0, 4, 16   # offsets in struct seccomp_data; ARG0: the low 32 bits of args[0] (little-endian)


def supported():
    """True where this module has the syscall numbers (Linux on x86-64)."""
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")


def instructions():
    """The filter as a list of (code, jt, jf, k): read top to bottom, the first RET decides."""
    def ret(value):
        return (RET_K, 0, 0, value)

    eperm = ret(ERRNO | errno.EPERM)
    prog = [(LD_W_ABS, 0, 0, ARCH), (JEQ_K, 1, 0, AUDIT_ARCH_X86_64), ret(KILL_PROCESS),
            (LD_W_ABS, 0, 0, NR), (JGE_K, 0, 1, X32_SYSCALL_BIT), ret(KILL_PROCESS)]
    for numbers in REFUSED.values():
        for nr in numbers.values():
            prog += [(JEQ_K, 0, 1, nr), eperm]
    prog += [(JEQ_K, 0, 1, CLONE3), ret(ERRNO | errno.ENOSYS),
             (JEQ_K, 1, 0, CLONE), ret(ALLOW),
             # clone: a thread (CLONE_THREAD) without any CLONE_NEW* flag, or nothing
             (LD_W_ABS, 0, 0, ARG0), (JSET_K, 0, 1, sum(CLONE_NEW.values())), eperm,
             (JSET_K, 1, 0, CLONE_THREAD), eperm, ret(ALLOW)]
    return prog


def program():
    """The compiled filter (struct sock_filter[], native byte order) for bwrap --seccomp, or None where
    this architecture is not supported."""
    if not supported():
        return None
    return b"".join(struct.pack("=HBBI", *ins) for ins in instructions())


def filter_fd():
    """A file descriptor to hand bwrap (--seccomp FD, and pass_fds): the read end of a pipe holding
    program(), which bwrap reads to its end. The caller closes it once the process has started."""
    r, w = os.pipe()
    try:
        os.write(w, program())
    finally:
        os.close(w)
    return r


def refused():
    """{syscall name: reason} for every syscall the filter refuses outright (clone is judged by its flags)."""
    return {name: why for why, numbers in REFUSED.items() for name in numbers}
