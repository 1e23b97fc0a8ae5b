"""``landlock-run``: run a command under a Landlock ruleset (Linux 5.13+), the sandbox backend
dsh uses where bubblewrap cannot build a sandbox (no user namespaces: most containers).

Run as a script, never imported by dsh (stdlib and ``ctypes`` only; ``python -I`` runs it,
so no environment variable reaches the interpreter)::

    python -I landlock_run.py [--write DIR]... [--hide PATH]... [--read-only PATH]... [--net] -- COMMAND...
    python -I landlock_run.py --abi      # prints the kernel's Landlock ABI (0: none)

Everything stays readable and executable except the ``--hide`` paths; only the ``--write``
directories (less their ``--read-only`` paths), the devices under ``/dev`` and ``/dev/shm``
are writable; without ``--net`` TCP
``bind`` and ``connect`` are refused (Landlock ABI 4+) and abstract UNIX sockets are scoped
to the sandbox (ABI 6+), as are signals. The ruleset is inherited by every process the
command starts and cannot be lifted; the runner stays the parent (the subreaper) of all of
them and kills any left when the command ends, so nothing outlives the call. A refusal
reads ``Permission denied``. If the kernel cannot enforce all of it, ``landlock-run:
partial enforcement (older Landlock ABI)`` is printed and the command runs under what it
can. A failure before the command runs prints ``landlock-run: …`` on stderr and exits 125.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import signal
import stat
import sys
from collections.abc import Sequence

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
PATH_BENEATH = 1  # LANDLOCK_RULE_PATH_BENEATH
NO_NEW_PRIVS = 38  # PR_SET_NO_NEW_PRIVS
SET_CHILD_SUBREAPER = 36  # PR_SET_CHILD_SUBREAPER
SET_PDEATHSIG = 1  # PR_SET_PDEATHSIG
ORPHANED = signal.SIGUSR1
"""The signal the kernel sends the runner when its parent (dsh) dies, however it dies."""
CAPBSET_DROP, CAP_AMBIENT, AMBIENT_CLEAR_ALL = 24, 47, 4  # PR_CAPBSET_DROP, PR_CAP_AMBIENT, …_CLEAR_ALL
CAPSET = 126 if os.uname().machine in ("x86_64", "amd64") else 91  # capset(2): x86_64, else asm-generic
CAP_VERSION_3 = 0x20080522
FAILED = 125
STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
"""The signals that stop a call; the runner passes them on to the command."""

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
MAKE = sum(1 << b for b in range(4, 13))  # REMOVE_DIR, REMOVE_FILE, MAKE_CHAR … MAKE_SYM
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
MAKE_DIR, MAKE_REG = 1 << 7, 1 << 8
CREATE_EMPTY = MAKE_DIR | MAKE_REG
"""What a writable directory split around protected entries keeps: new empty files and directories."""
FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights a rule on a file (not a directory) may carry."""
NET_TCP = 0b11  # LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP
SCOPES = 0b11  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL

READ = EXECUTE | READ_FILE | READ_DIR
WRITE = WRITE_FILE | MAKE | REFER | TRUNCATE
DEVICES = READ | WRITE_FILE | IOCTL_DEV | TRUNCATE


class RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _fail(message: str) -> None:
    sys.stderr.write(f"landlock-run: {message}\n")
    sys.exit(FAILED)


def _syscall(number: int, *args: object) -> int:
    result = int(_libc().syscall(number, *args))
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI (0: not enforced here)."""
    try:
        return _syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(VERSION))
    except OSError:
        return 0


def handled_fs(abi: int) -> int:
    """Every file-system right the kernel of ``abi`` knows."""
    rights = READ | WRITE_FILE | MAKE
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def rules(
    root: str, rights: int, hidden: Sequence[str], protected: Sequence[str] = ()
) -> list[tuple[str, int]]:
    """``(path, rights)`` granting ``rights`` under ``root`` except under each ``hidden`` and
    ``protected`` path (neither gets a rule here: a protected one is read under the ``/`` grant).

    A Landlock rule covers the whole tree beneath its path, so a directory holding such a path
    is split into its entries. The directory itself keeps the right to be listed (which,
    inherited, lets a hidden directory's names be listed but no file in it be read) and, when
    it holds only protected paths (a workspace's ``.git``, ``hooks.json``), to create *empty*
    files and directories (:data:`CREATE_EMPTY`: ``touch .marker`` at the top of a git
    workspace works, as under bubblewrap); never to write a file, remove, rename, link or make a
    symbolic link (a protected entry stays as it is, and nothing lands in it with content or a
    target). A symbolic link among the entries gets no rule (a rule on it would grant its target,
    a hidden path perhaps)."""
    if any(h == root for h in [*hidden, *protected]):
        return []
    prefix = root.rstrip("/") + "/"
    hidden_in = [h for h in hidden if h.startswith(prefix)]
    protected_in = [p for p in protected if p.startswith(prefix)]
    if not hidden_in and not protected_in:
        return [(root, rights)]
    kept = READ_DIR if hidden_in else READ_DIR | CREATE_EMPTY
    out: list[tuple[str, int]] = [(root, rights & kept)]
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for name in names:
        entry = os.path.join(root, name)
        if os.path.islink(entry):  # a rule would follow it: its target is granted where it is, or not
            continue
        out += rules(entry, rights, hidden_in, protected_in)
    return out


def _add(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path that does not exist (or vanished) grants nothing
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_ONLY
        if rights:
            attr = PathBeneath(rights, fd)
            _syscall(ADD_RULE, ruleset, PATH_BENEATH, ctypes.byref(attr), ctypes.c_uint32(0))
    finally:
        os.close(fd)


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]


def drop_capabilities() -> None:
    """Empty every capability set, the bounding set included, so neither the command nor
    anything it executes (a setuid or file-capability program: ``no_new_privs`` follows) ever
    holds one — root keeps uid 0 (Landlock has no user namespace to map it) but not its powers.
    A caller without ``CAP_SETPCAP`` (a normal user) has nothing to drop from the bounding set."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        # EPERM: no CAP_SETPCAP, nothing of ours to drop
        if _libc().prctl(CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EPERM:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    _libc().prctl(CAP_AMBIENT, AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL on kernels before 4.3: nothing ambient
    data = (CapData * 2)()
    _syscall(CAPSET, ctypes.byref(CapHeader(CAP_VERSION_3, 0)), data)


def _private_temp(temps: list[str], kept: list[str]) -> None:
    """Give the command a temp dir it can create files in when a ``--temp`` root's own top
    level cannot get new entries (it holds a hidden or read-only path, e.g. a workspace with
    ``.git`` under ``/tmp``: its grant is split into its entries): ``<root>/dsh-landlock-<uid>``,
    made before the ruleset so it is one of the entries granted, as ``$TMPDIR`` (unless the
    command's ``$TMPDIR`` already points elsewhere)."""
    for root in temps:
        if not any(k.startswith(root.rstrip("/") + "/") for k in kept):
            continue
        if os.environ.get("TMPDIR", root).rstrip("/") not in (root.rstrip("/"), "/tmp"):
            return
        mine = os.path.join(root, f"dsh-landlock-{os.getuid()}")
        with contextlib.suppress(FileExistsError):
            os.mkdir(mine, 0o700)
        st = os.lstat(mine)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
            os.environ["TMPDIR"] = mine
        return


def main(argv: list[str]) -> None:
    if argv == ["--abi"]:
        sys.stdout.write(f"{abi_version()}\n")
        return
    paths: dict[str, list[str]] = {"--write": [], "--hide": [], "--read-only": [], "--temp": []}
    network = False
    while argv and argv[0] != "--":
        flag = argv.pop(0)
        if flag == "--net":
            network = True
        elif flag in paths and argv:
            paths[flag].append(os.path.realpath(argv.pop(0)))
        else:
            _fail(f"unknown option {flag}")
    writes, hidden, read_only = paths["--write"], paths["--hide"], paths["--read-only"]
    _private_temp(paths["--temp"], hidden + read_only)
    command = argv[1:]
    if not command:
        _fail(
            "no command given (usage: [--write DIR]... [--hide PATH]... [--read-only PATH]... [--net] "
            "-- COMMAND...)"
        )
    abi = abi_version()
    if abi < 1:
        _fail("Landlock is not enforced by this kernel")
    fs = handled_fs(abi)
    net = NET_TCP if abi >= 4 and not network else 0
    scoped = (SCOPES if not network else SCOPES & ~1) if abi >= 6 else 0
    size = ctypes.sizeof(ctypes.c_uint64) * (3 if abi >= 6 else 2 if abi >= 4 else 1)
    try:
        ruleset = _syscall(CREATE_RULESET, ctypes.byref(RulesetAttr(fs, net, scoped)), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))  # fmt: skip
        grants = rules("/", READ, hidden) + rules("/dev", DEVICES, hidden)
        for root in [*writes, "/dev/shm"]:  # /dev/shm: shared memory, writable like /tmp
            grants += rules(root, READ | WRITE, hidden, read_only)  # read_only: read under "/" only
        for path, rights in grants:
            _add(ruleset, path, rights & fs)
        drop_capabilities()
        if _libc().prctl(NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        _syscall(RESTRICT_SELF, ruleset, ctypes.c_uint32(0))
        os.close(ruleset)
    except OSError as exc:
        _fail(f"cannot enforce the ruleset: {exc.strerror}")
    if abi < 3 or (not network and abi < 4):
        sys.stderr.write("landlock-run: partial enforcement (older Landlock ABI)\n")
        sys.stderr.flush()
    _run_and_reap(command)


def _children(pid: int) -> list[int]:
    """The live children of ``pid`` (``/proc``; an orphan re-parented to us counts)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(name))
    return out


def _run_and_reap(command: list[str]) -> None:
    """Run ``command`` as our child and, once it ends, kill whatever it left behind.

    Landlock has no PID namespace, so the runner stands in for one: it is the subreaper of
    everything the command starts (a ``setsid`` daemon included), forwards the signals that
    stop a call to the command, and after the command ends SIGKILLs every descendant still
    running before it ends itself, with the command's status (a signal re-raised). When its
    parent dies — dsh SIGKILLed too — the kernel's parent-death signal (:data:`ORPHANED`)
    ends the command the same way, so a background job never outlives dsh."""
    if _libc().prctl(SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        _fail(f"cannot become a subreaper: {os.strerror(ctypes.get_errno())}")
    parent = os.getppid()
    signal.signal(ORPHANED, lambda _n, _f: sys.exit(FAILED))  # dsh gone before the command started
    if _libc().prctl(SET_PDEATHSIG, int(ORPHANED), 0, 0, 0) != 0:
        _fail(f"cannot ask for a parent-death signal: {os.strerror(ctypes.get_errno())}")
    if os.getppid() != parent:  # dsh died before the request took effect
        sys.exit(FAILED)
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"landlock-run: cannot run {command[0]}: {exc.strerror}\n")
        os._exit(FAILED)

    def pass_on(number: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):  # it may have ended meanwhile
            os.kill(child, number)

    def orphaned(_number: int, _frame: object) -> None:  # dsh died (even by SIGKILL): so does the call
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)

    for stop in STOPS:
        signal.signal(stop, pass_on)
    signal.signal(ORPHANED, orphaned)
    _, status = os.waitpid(child, 0)
    for stop in (*STOPS, ORPHANED):
        signal.signal(stop, signal.SIG_IGN)
    while True:  # every descendant left: killed, reaped, until none is left
        for pid in _children(os.getpid()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else FAILED)


if __name__ == "__main__":
    main(sys.argv[1:])
