"""The system calls a worker may not make: those through which two processes that share nothing
but the kernel and some read-only files could pass data to each other.

Workers of different submissions (and a submission's own workers with and without PyTorch) run
side by side on one machine and see the same read-only files: the system, the Python
installation. The kernel keeps state about those files that any process may set and any other
may read back, whatever the mount namespace: advisory locks (a lock's byte range alone carries
128 bits, read with F_GETLK), leases, change notifications (inotify, fanotify, dnotify), which of
a file's pages are in memory (mincore, cachestat, a read that refuses to wait for the disk:
preadv2/pwritev2 with RWF_NOWAIT, or the same through asynchronous I/O and io_uring, whose
queues cannot be set up; and evicting pages with fadvise), and the keyrings of the one user,
nobody, that every worker runs as. So does sysinfo, which tells the whole machine's load, free
memory and number of processes, as the files of /proc that a sandbox's own /proc covers
(autograder/isolation/zygote.py); statfs, fstatfs, ustat and quotactl, which tell the free blocks and
inodes of the machine's disks below the lab's data that a worker reads, as every write there
moves them; syslog, the kernel's log, where a worker that crashes leaves a line (where the machine
lets every user read it); and perf_event_open, which counts events of the whole machine (where the
machine lets every user count them). And sockets but Unix ones: the kernel counts the packets and socket
memory of every network namespace together and shows the sums in each process's /proc/PID/net
(softnet_stat, sockstat), which no mount can cover for every process a worker starts; without a
network socket, a worker cannot move those counters. Refusing these calls with EPERM closes those
channels; no honest notebook makes them (IPython keeps its history in memory in the worker;
os.getloadavg() raises).

`program()` is a classic BPF filter for seccomp, in the binary form that both bubblewrap's
`--seccomp FD` and prctl(PR_SET_SECCOMP) take. Calls of another architecture's ABI (32-bit x86,
x32) kill the process: their numbers differ, so the filter could not tell what they are.
"""
import errno
import os
import struct

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
NR, ARCH, ARG0_LOW, ARG1_LOW = 0, 4, 16, 24
LD_ABS, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
ALLOW, KILL_PROCESS, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
X32_BIT = 0x40000000

# fcntl commands that lock, lease or watch: F_GETLK, F_SETLK, F_SETLKW, their OFD forms,
# F_SETLEASE, F_GETLEASE and F_NOTIFY (the same numbers on every 64-bit Linux).
FCNTL_REFUSED = (5, 6, 7, 36, 37, 38, 1024, 1025, 1026)

AF_UNIX = 1  # the one kind of socket a worker may open

# Per architecture: the audit value of its ABI, the numbers of fcntl and socket, and the calls
# refused outright.
SYSCALLS = {
    "x86_64": (0xC000003E, 72, 41, {"flock": 73, "inotify_init": 253, "inotify_add_watch": 254,
                                "inotify_init1": 294, "fanotify_init": 300, "fanotify_mark": 301,
                                "mincore": 27, "fadvise64": 221, "add_key": 248, "request_key": 249,
                                "keyctl": 250, "preadv2": 327, "pwritev2": 328, "cachestat": 451,
                                "io_setup": 206, "io_uring_setup": 425, "sysinfo": 99, "statfs": 137,
                                "fstatfs": 138, "ustat": 136, "quotactl": 179, "quotactl_fd": 443,
                                "syslog": 103, "perf_event_open": 298}),
    "aarch64": (0xC00000B7, 25, 198, {"flock": 32, "inotify_init1": 26, "inotify_add_watch": 27,
                                 "fanotify_init": 262, "fanotify_mark": 263, "mincore": 232,
                                 "fadvise64": 223, "add_key": 217, "request_key": 218, "keyctl": 219,
                                 "preadv2": 286, "pwritev2": 287, "cachestat": 451, "io_setup": 0,
                                 "io_uring_setup": 425, "sysinfo": 179, "statfs": 43, "fstatfs": 44,
                                 "quotactl": 60, "quotactl_fd": 443, "syslog": 116, "perf_event_open": 241}),
}


def instruction(code, k, jt=0, jf=0):
    return struct.pack("HBBI", code, jt, jf, k)


def program(machine=None):
    """The filter's instructions as bytes, for this machine's architecture; None where it is unknown
    (the grader then says so and runs without it)."""
    found = SYSCALLS.get(machine or os.uname().machine)
    if found is None:
        return None
    arch, fcntl, socket, refused = found
    refuse = instruction(RET, ERRNO | errno.EPERM)
    code = [instruction(LD_ABS, ARCH), instruction(JEQ, arch, jt=1), instruction(RET, KILL_PROCESS),
            instruction(LD_ABS, NR)]
    if arch == SYSCALLS["x86_64"][0]:
        code += [instruction(JGE, X32_BIT, jf=1), instruction(RET, KILL_PROCESS)]
    for number in refused.values():  # each test falls through to the next unless it matches
        code += [instruction(JEQ, number, jf=1), refuse]
    code += [instruction(JEQ, socket, jf=4), instruction(LD_ABS, ARG0_LOW), instruction(JEQ, AF_UNIX, jf=1),
             instruction(RET, ALLOW), refuse]
    code += [instruction(JEQ, fcntl, jt=1), instruction(RET, ALLOW), instruction(LD_ABS, ARG1_LOW)]
    for command in FCNTL_REFUSED:
        code += [instruction(JEQ, command, jf=1), refuse]
    code.append(instruction(RET, ALLOW))
    return b"".join(code)
