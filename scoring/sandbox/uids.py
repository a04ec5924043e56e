"""A uid and gid of its own for every sandboxed child, from a pool (docs/sandbox.md, "User").

RLIMIT_NPROC counts the processes (threads included) of one real uid over the whole host. With
one sandbox uid for every run, a fork bomb in one run held the limit for all of them: every
other run's forks (and thread starts) failed while it lasted. Each start of a child therefore
takes a uid that no other sandbox holds, and ``setpriv`` drops to it (gid the same number), so
the RLIMIT_NPROC that binds is the run's own, like its pids cgroup.

The pool is ``POOL_FIRST`` .. ``POOL_FIRST + POOL_SIZE - 1``: numbers no account or container
range of a usual host uses (above systemd's container ranges, below its "foreign" range), so no
file on the host belongs to them and nothing else runs as them. A uid is held by an exclusive
``flock`` on its lock file in ``LOCK_DIR`` (root-owned, mode 0700) for as long as the child
lives; the kernel drops the lock when the worker dies, so a crashed worker leaks nothing. A
free lock is not enough: a uid is taken only when no process runs as it (``/proc``), so a
process that outlived its run (which would be a bug of its own) never shares its count with the
next run.

Only a worker running as root drops to another uid; without root, bwrap's user namespace runs
the child as the worker's own uid and there is no pool.
"""
from __future__ import annotations

import errno
import fcntl
import os
import random
import tempfile
from pathlib import Path

from .errors import SandboxUnavailable

POOL_FIRST = 2_000_000_000
POOL_SIZE = 4096


def lock_dir() -> Path:
    """Where the lock files live: ``/run`` (a tmpfs, emptied at boot) when it is writable, else
    the temporary directory."""
    base = Path("/run") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir())
    return base / "expbench-sandbox-uids"


def uids_in_use() -> set[int]:
    """The real uids of every process on the host (from /proc/<pid>/status)."""
    found: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Uid:"):
                        found.add(int(line.split()[1]))
                        break
        except (OSError, ValueError, IndexError):
            continue  # the process exited meanwhile
    return found


class UidLease:
    """One uid of the pool, held until ``release``."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self.gid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _directory() -> Path:
    directory = lock_dir()
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        info = directory.lstat()
    except OSError as error:
        raise SandboxUnavailable(f"the sandbox's uid pool cannot use {directory}: {error.strerror or error}") from None
    if not directory.is_dir() or directory.is_symlink() or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise SandboxUnavailable(f"the sandbox's uid pool directory {directory} must be a directory of "
                                 f"uid {os.geteuid()} with mode 0700")
    return directory


def acquire(first: int = POOL_FIRST, size: int = POOL_SIZE) -> UidLease:
    """A uid of the pool that no other sandbox holds and no process runs as; raises
    ``SandboxUnavailable`` when every one is taken (more sandboxes at once than ``size``)."""
    directory = _directory()
    busy = uids_in_use()
    start = random.randrange(size)  # spreads concurrent workers over the pool
    for step in range(size):
        uid = first + (start + step) % size
        if uid in busy:
            continue
        fd = os.open(directory / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                continue
            raise
        return UidLease(uid, fd)
    raise SandboxUnavailable(f"every uid of the sandbox's pool ({size} from {first}) is in use")
