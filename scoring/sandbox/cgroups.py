"""Control groups for one sandbox, cgroup v1 or v2, when the worker runs as root (docs/sandbox.md,
"cgroups").

``Cgroups`` makes fresh groups under ``CGROUP_PARENT`` that cap the processes (``pids``), the
memory (``memory``) and the CPU share (``cpu``: a quota of ``cpu_cores`` cores and a lower weight
than ordinary processes), and account the CPU time of every process in them together
(``cpu_seconds``). A wrapper shell joins them before bwrap starts (``command.cgroup_wrapper``),
so every descendant is inside; afterwards every process still in them is killed and the groups
are removed.

Which hierarchy: cgroup v2 when ``/sys/fs/cgroup/cgroup.controllers`` exists (Debian 12, Ubuntu
22.04 and later), else the v1 controllers mounted below ``/sys/fs/cgroup/<controller>`` (a
hybrid host's empty ``unified`` v2 mount holds no controllers and is not used). Whatever cannot be
applied is recorded in ``problems``; ``missing()`` names the required controllers that are not in
force, which the runner turns into a refusal when the deployment requires cgroups
(``require_cgroups``, the ``SANDBOX_REQUIRE_CGROUPS`` setting).
"""
from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import time
from pathlib import Path

from .limits import SandboxLimits

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "expbench-sandbox"
# Without these a run is refused when cgroups are required: processes, memory and CPU share.
REQUIRED_CONTROLLERS = ("pids", "memory", "cpu")
CPU_PERIOD_US = 100_000
V1_CONTROLLERS = ("pids", "memory", "cpu", "cpuacct")


def cgroup_version(root: Path) -> str | None:
    """"v2", "v1" or None (no usable hierarchy at ``root``)."""
    if (root / "cgroup.controllers").is_file():
        return "v2"
    if any((root / controller / "cgroup.procs").is_file() for controller in V1_CONTROLLERS):
        return "v1"
    return None


def _cpu_quota_us(limits: SandboxLimits) -> int:
    return max(1000, int(round(limits.cpu_cores * CPU_PERIOD_US)))


def _write(path: Path, value: object) -> None:
    path.write_text(f"{value}\n")


class Cgroups:
    """Fresh cgroups for one sandbox (root only); ``root`` defaults to ``CGROUP_ROOT``."""

    def __init__(self, name: str, limits: SandboxLimits, root: Path | None = None):
        self.root = Path(CGROUP_ROOT if root is None else root)
        self.version: str | None = None
        self.directories: dict[str, Path] = {}   # controller in force -> its group directory
        self.accounting: Path | None = None      # the group whose CPU counter covers the sandbox
        self.problems: list[str] = []
        self._v2_directory: Path | None = None   # v2: the group, even with no controller in force
        if os.geteuid() != 0:
            self.problems.append("the worker does not run as root")
            return
        self.version = cgroup_version(self.root)
        if self.version == "v2":
            self._make_v2(name, limits)
        elif self.version == "v1":
            self._make_v1(name, limits)
        else:
            self.problems.append(f"no cgroup v1 or v2 hierarchy at {self.root}")

    # ------------------------------------------------------------------ set-up

    def _make_v1(self, name: str, limits: SandboxLimits) -> None:
        wanted = {
            "pids": [("pids.max", limits.processes, True)],
            "memory": [("memory.limit_in_bytes", limits.memory_bytes, True),
                       ("memory.memsw.limit_in_bytes", limits.memory_bytes, False)],
            "cpu": [("cpu.cfs_period_us", CPU_PERIOD_US, True),
                    ("cpu.cfs_quota_us", _cpu_quota_us(limits), True),
                    ("cpu.shares", max(2, 1024 * limits.cpu_weight // 100), True)],
            "cpuacct": [],
        }
        made: dict[Path, Path] = {}  # real controller mount -> group (cpu and cpuacct may share one)
        for controller, settings in wanted.items():
            base = self.root / controller
            if not (base / "cgroup.procs").is_file():
                self.problems.append(f"cgroup v1 controller {controller} is not mounted")
                continue
            mount = base.resolve()
            directory = made.get(mount)
            try:
                if directory is None:
                    directory = base / CGROUP_PARENT / name
                    directory.mkdir(parents=True)
                    made[mount] = directory
                for key, value, needed in settings:
                    if needed or (directory / key).exists():
                        _write(directory / key, value)
            except OSError as error:
                self.problems.append(f"cgroup v1 {controller}: {error}")
                if directory is not None and directory not in self.directories.values():
                    _remove_cgroup(directory)
                    made.pop(mount, None)
                continue
            self.directories[controller] = directory
        if "cpuacct" in self.directories:
            self.accounting = self.directories["cpuacct"]

    def _make_v2(self, name: str, limits: SandboxLimits) -> None:
        try:
            available = set((self.root / "cgroup.controllers").read_text().split())
        except OSError as error:
            self.problems.append(f"cgroup v2: {error}")
            return
        wanted = [c for c in ("pids", "memory", "cpu") if c in available]
        self.problems += [f"cgroup v2 controller {c} is not available" for c in ("pids", "memory", "cpu")
                          if c not in available]
        parent = self.root / CGROUP_PARENT
        try:
            parent.mkdir(exist_ok=True)
        except OSError as error:
            self.problems.append(f"cgroup v2: cannot create {parent}: {error}")
            return
        # A v2 controller reaches a group only when every ancestor lists it in its
        # cgroup.subtree_control; a group holding processes itself (other than the root) cannot
        # delegate (EBUSY), which is why the worker must not live in CGROUP_ROOT of a container.
        for where in (self.root, parent):
            for controller in list(wanted):
                try:
                    _write(where / "cgroup.subtree_control", f"+{controller}")
                except OSError as error:
                    wanted.remove(controller)
                    hint = (" (that group holds processes: start the worker in a leaf cgroup, "
                            "docs/sandbox.md)" if error.errno == errno.EBUSY else "")
                    self.problems.append(f"cgroup v2: cannot enable {controller} in {where}: "
                                         f"{error.strerror or error}{hint}")
        directory = parent / name
        try:
            directory.mkdir()
        except OSError as error:
            self.problems.append(f"cgroup v2: cannot create {directory}: {error}")
            return
        settings: dict[str, list[tuple[str, object, bool]]] = {
            "pids": [("pids.max", limits.processes, True)],
            # memory.oom.group: an OOM kill takes the whole sandbox, not one random thread's process
            "memory": [("memory.max", limits.memory_bytes, True), ("memory.swap.max", 0, False),
                       ("memory.oom.group", 1, False)],
            "cpu": [("cpu.max", f"{_cpu_quota_us(limits)} {CPU_PERIOD_US}", True),
                    ("cpu.weight", max(1, min(10000, limits.cpu_weight)), True)],
        }
        for controller in wanted:
            try:
                for key, value, needed in settings[controller]:
                    try:
                        _write(directory / key, value)
                    except OSError:
                        if needed:
                            raise
            except OSError as error:
                self.problems.append(f"cgroup v2 {controller}: {error}")
                continue
            self.directories[controller] = directory
        # cpu.stat (usage_usec) exists in every v2 group, with or without the cpu controller.
        self.accounting = directory
        self._v2_directory = directory

    # ------------------------------------------------------------------ queries

    def _groups(self) -> list[Path]:
        groups = list(dict.fromkeys(self.directories.values()))
        if self._v2_directory is not None and self._v2_directory not in groups:
            groups.append(self._v2_directory)
        return groups

    def procs_files(self) -> list[str]:
        return [str(directory / "cgroup.procs") for directory in self._groups()]

    def isolation(self) -> list[str]:
        return [f"cgroup {self.version} {controller}" for controller in self.directories]

    def missing(self, required=REQUIRED_CONTROLLERS) -> list[str]:
        return [controller for controller in required if controller not in self.directories]

    def refusal(self, required=REQUIRED_CONTROLLERS) -> str:
        """Why the required limits are not in force (for the platform-side error)."""
        why = "; ".join(self.problems) or "unknown"
        return (f"the sandbox requires cgroup limits ({', '.join(required)}) but "
                f"{', '.join(self.missing(required))} could not be applied ({why}); code is not "
                "run without them (SANDBOX_REQUIRE_CGROUPS)")

    def cpu_seconds(self) -> float | None:
        """CPU time of every process that ever ran in the sandbox's group, or None."""
        if self.accounting is None:
            return None
        try:
            if self.version == "v2":
                for line in (self.accounting / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
                return None
            return int((self.accounting / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int:
        """How many processes of the group the memory limit killed (v2 ``memory.events``, v1
        ``memory.oom_control``: ``oom_kill``); 0 without a memory group."""
        directory = self.directories.get("memory")
        if directory is None:
            return 0
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            for line in (directory / name).read_text().splitlines():
                field, _, value = line.partition(" ")
                if field == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def oom_killed(self) -> bool:
        return self.oom_kills() > 0

    # ------------------------------------------------------------------ ending

    def kill_all(self) -> None:
        for directory in self._groups():
            if self.version == "v2" and (directory / "cgroup.kill").exists():
                try:
                    _write(directory / "cgroup.kill", 1)  # the kernel kills every member at once
                except OSError:
                    pass
            for _ in range(200):
                try:
                    pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
                except (OSError, ValueError):
                    break
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for directory in self._groups():
            _remove_cgroup(directory)
        self.directories = {}
        self._v2_directory = None


def leftover_groups(prefix: str, root: Path | None = None) -> list[str]:
    """Groups whose name starts with ``prefix`` still present under ``CGROUP_PARENT`` (v1: in any
    controller; v2: in the one hierarchy). A group can only be removed once its processes died."""
    root = Path(CGROUP_ROOT if root is None else root)
    parents = [root / CGROUP_PARENT] + [root / c / CGROUP_PARENT for c in V1_CONTROLLERS]
    return [str(group) for parent in parents if parent.is_dir()
            for group in parent.iterdir() if group.is_dir() and group.name.startswith(prefix)]


def _remove_cgroup(directory: Path) -> None:
    for _ in range(100):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno == errno.ENOTEMPTY:
                # Only a stand-in directory (tests) has real files in it; on cgroupfs the
                # interface files cannot be unlinked and the leaf never has child groups.
                shutil.rmtree(directory, ignore_errors=True)
                if not directory.exists():
                    return
            time.sleep(0.02)
    logger.warning("sandbox: could not remove cgroup %s", directory)
