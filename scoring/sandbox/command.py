"""The command lines that start the child (docs/sandbox.md, "The sandbox").

``bwrap_command`` builds bwrap + (as root) ``setpriv`` + ``prlimit`` + the inner command;
``cgroup_wrapper`` puts a shell in front that joins the run's cgroups; ``child_env`` is the
child's whole environment and ``host_env`` that of bwrap itself (nothing of the worker's);
``find_tool`` finds the helper programs.

When the worker runs as root (this project's machines), ``bwrap`` is started **without** a user
namespace, so it can bind the Python runtime from wherever it lives (the venv's interpreter is
under root's mode-700 home) read-only at the same path, creating the parent directories
world-traversable (``--perms 0755 --dir``); it keeps only CAP_SETUID/CAP_SETGID for
``setpriv``, which drops to the run's own uid and gid (``uids.acquire``: one per child, so
RLIMIT_NPROC counts that run's processes only) with no groups, an empty capability bounding set
and no_new_privs before ``prlimit`` and Python start. The child therefore is a real
unprivileged uid (RLIMIT_NPROC is enforced, nothing root-owned is readable), in new pid,
net, ipc, uts and cgroup namespaces, with a read-only minimal filesystem: ``/usr``
(libraries), the Python runtime and its site-packages, the model directory, a private copy of
the code and of the ``scoring`` runtime subset, a size-capped private tmpfs ``/tmp``, minimal
``/dev`` and a ``/proc`` of its own pid namespace. Not root: ``bwrap --unshare-user`` runs the
child as the worker's own unprivileged uid instead (no setpriv, no cgroups).

What the jail can learn of the host is kept small: the submission's code and the runtime copy
are not bound from the job directory but copied into fresh read-only tmpfs mounts
(``--file``, descriptors from ``CommandFiles``), so ``/proc/self/mountinfo`` names no job path;
bwrap's own options are read from a descriptor (``--args``), so ``/proc/1/cmdline`` (the jail's
init) holds no host path either. ``niced`` starts everything at a lower priority.
"""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import PurePosixPath

from .errors import SandboxUnavailable
from .limits import SandboxLimits

SANDBOX_UID = 65534  # nobody / nogroup: the probe's uid and gid; a run takes its own (uids.py)


def _runtime_roots() -> list[str]:
    """Directories holding the running interpreter, its stdlib and site-packages."""
    executable = os.path.realpath(sys.executable)
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.dirname(executable))]
    roots: list[str] = []
    for candidate in candidates:
        path = os.path.normpath(os.path.abspath(candidate))
        if path == "/" or path == "/usr" or path.startswith("/usr/") or path in roots:
            continue
        roots.append(path)
    roots = [r for r in roots if not any(r != o and r.startswith(o + "/") for o in roots)]
    for root in roots:
        if os.path.exists(os.path.join(root, "manage.py")):
            raise SandboxUnavailable(f"the Python runtime directory {root} looks like a project "
                                     "checkout; use a virtualenv outside it")
    return sorted(roots)


def _top_level_links() -> list[str]:
    args: list[str] = []
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    return args


def child_env(home: str, tmp: str) -> dict[str, str]:
    bin_dir = os.path.join(sys.prefix, "bin")
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": tmp,
        "OMP_WAIT_POLICY": "PASSIVE",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        # cache directories of matplotlib / numba (imported by shap) into the private tmp
        "MPLCONFIGDIR": os.path.join(tmp, "matplotlib"),
        "NUMBA_CACHE_DIR": os.path.join(tmp, "numba"),
    }


def rlimit_command(limits: SandboxLimits, prlimit: str) -> list[str]:
    cpu = max(1, int(limits.cpu_seconds))
    return [prlimit, f"--as={int(limits.address_space)}", f"--cpu={cpu}:{cpu + 5}",
            f"--nofile={int(limits.open_files)}", f"--fsize={int(limits.file_size)}",
            f"--nproc={int(limits.processes)}", "--core=0", "--"]


def find_tool(name: str) -> str | None:
    return shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin:" + os.environ.get("PATH", ""))


class CommandFiles:
    """Descriptors a command line refers to (bwrap reads them while it starts): opened
    close-on-exec, handed to the child through ``pass_fds`` and closed once it started."""

    def __init__(self):
        self.fds: list[int] = []

    def open(self, path) -> int:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        self.fds.append(fd)
        return fd

    def data(self, data: bytes) -> int:
        fd = os.memfd_create("expbench-sandbox", os.MFD_CLOEXEC)
        self.fds.append(fd)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def copied_tree(source: str, destination: str, files: CommandFiles) -> list[str]:
    """bwrap options that give ``destination`` a fresh tmpfs holding a copy of ``source`` (its
    directories 0755, files 0644), then remount it read-only. Unlike a bind mount, it shows no
    host path in the jail's mountinfo."""
    directories: list[str] = []
    copies: list[tuple[str, str]] = []
    size = 1 << 20
    for root, dirs, names in os.walk(source):
        dirs.sort()
        relative = os.path.relpath(root, source)
        target = destination if relative == "." else f"{destination}/{relative}"
        if relative != ".":
            directories.append(target)
        for name in sorted(names):
            path = os.path.join(root, name)
            if os.path.isfile(path) and not os.path.islink(path):
                copies.append((path, f"{target}/{name}"))
                size += os.path.getsize(path) + 4096
        size += 4096 * len(dirs)
    args = ["--perms", "0755", "--size", str(size), "--tmpfs", destination]
    for directory in directories:
        args += ["--perms", "0755", "--dir", directory]
    for path, target in copies:
        args += ["--perms", "0644", "--file", str(files.open(path)), target]
    return args + ["--remount-ro", destination]


def options_from_fd(command: list[str], files: CommandFiles) -> list[str]:
    """``bwrap OPTIONS -- COMMAND`` as ``bwrap --args FD -- COMMAND``: the options (host paths
    of the runtime, the model, descriptors) are read from a memfd, so the jail's pid 1, a fork
    of bwrap, shows only ``bwrap --args FD -- COMMAND`` in /proc/1/cmdline."""
    separator = command.index("--")
    options = "".join(f"{option}\0" for option in command[1:separator]).encode()
    return [command[0], "--args", str(files.data(options)), *command[separator:]]


def bwrap_command(binds: list[tuple[str, str]], limits: SandboxLimits,
                  inner: list[str], copies: Sequence[tuple[str, str]] = (),
                  files: CommandFiles | None = None, devices: tuple[str, ...] = (),
                  extra_env: dict[str, str] | None = None, uid: int = SANDBOX_UID) -> list[str]:
    """bwrap + (root: setpriv to ``uid``) + prlimit + ``inner``; ``binds``: (source, dest) ro;
    ``copies``: (source directory, dest) copied into read-only tmpfs (``copied_tree``), their
    descriptors opened in ``files``; ``devices``: host device nodes passed in at the same path
    (a model run's GPU); ``extra_env``: variables added to ``child_env``; ``uid``: the uid and
    gid the child runs as (a run's own, from ``uids.acquire``; 65534 by default)."""
    as_root = os.geteuid() == 0
    args = [find_tool("bwrap") or "bwrap", "--die-with-parent", "--new-session", "--clearenv",
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try"]
    if not as_root:
        args += ["--unshare-user"]
    # the private tmpfs first: binds below /tmp would otherwise be hidden by it
    args += ["--size", str(int(limits.tmp_bytes)), "--perms", "1777", "--tmpfs", "/tmp"]
    args += ["--ro-bind", "/usr", "/usr"] + _top_level_links()
    made: set[str] = {"/", "/tmp", "/usr"}
    destinations = [(source, source) for source in _runtime_roots()] + binds
    for _, destination in destinations + list(copies):
        parents = list(PurePosixPath(destination).parents)[::-1][1:]  # without "/"
        for parent in map(str, parents):
            if parent not in made and not parent.startswith("/usr/"):
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
    for source, destination in destinations:
        args += ["--ro-bind", source, destination]
    if copies:
        if files is None:
            raise ValueError("copies need a CommandFiles for their descriptors")
        for source, destination in copies:
            args += copied_tree(source, destination, files)
    args += ["--proc", "/proc", "--dev", "/dev", "--chdir", "/tmp"]
    for device in devices:  # after --dev: the minimal /dev holds none of them
        args += ["--dev-bind", device, device]
    for key, value in {**child_env("/tmp", "/tmp"), **(extra_env or {})}.items():
        args += ["--setenv", key, value]
    if as_root:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 find_tool("setpriv") or "/usr/bin/setpriv", f"--reuid={int(uid)}",
                 f"--regid={int(uid)}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs"]
    else:
        args += ["--"]
    return args + rlimit_command(limits, find_tool("prlimit") or "/usr/bin/prlimit") + inner


def niced(command: list[str], limits: SandboxLimits) -> list[str]:
    """``nice -n <limits.nice>`` in front: every process of the sandbox inherits the lower
    priority (raising it again needs CAP_SYS_NICE, which the sandbox user lacks). The CPU share
    that works everywhere, with or without cgroups."""
    return [find_tool("nice") or "/usr/bin/nice", "-n", str(int(limits.nice)), *command]


def cgroup_wrapper(procs_files: list[str], command: list[str]) -> list[str]:
    """``sh`` joins the cgroups, then execs ``command`` (so every descendant is inside)."""
    if not procs_files:
        return command
    script = ('while [ "$1" != -- ]; do echo $$ > "$1" || exit 126; shift; done; shift; '
              'exec "$@"')
    return ["/bin/sh", "-c", script, "sh", *procs_files, "--", *command]


def host_env() -> dict[str, str]:
    """The environment of bwrap itself: nothing of the worker's (no secrets in /proc/1)."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
