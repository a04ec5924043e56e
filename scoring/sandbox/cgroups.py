"""cgroups v1 for one sandbox, when the worker runs as root (docs/sandbox.md, "cgroups v1"):
fresh ``pids`` and ``memory`` groups under ``CGROUP_PARENT``, joined by a wrapper shell before
bwrap starts (``command.cgroup_wrapper``), swept with SIGKILL and removed afterwards."""
from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

from scoring.sandbox.limits import SandboxLimits

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "expbench-sandbox"


class Cgroups:
    """Fresh cgroup v1 ``pids`` and ``memory`` groups for one sandbox (root only)."""

    def __init__(self, name: str, limits: SandboxLimits):
        self.directories: dict[str, Path] = {}
        if os.geteuid() != 0:
            return
        wanted = {"pids": {"pids.max": limits.processes},
                  "memory": {"memory.limit_in_bytes": limits.memory_bytes,
                             "memory.memsw.limit_in_bytes": limits.memory_bytes}}
        for controller, settings in wanted.items():
            base = CGROUP_ROOT / controller
            if not (base / "cgroup.procs").is_file():
                continue
            directory = base / CGROUP_PARENT / name
            try:
                directory.mkdir(parents=True)
                for key, value in settings.items():
                    if (directory / key).exists():
                        (directory / key).write_text(str(value))
            except OSError as error:
                logger.warning("sandbox: cgroup %s unavailable (%s)", controller, error)
                _remove_cgroup(directory)
                continue
            self.directories[controller] = directory

    def procs_files(self) -> list[str]:
        return [str(directory / "cgroup.procs") for directory in self.directories.values()]

    def isolation(self) -> list[str]:
        return [f"cgroup {controller}" for controller in self.directories]

    def oom_killed(self) -> bool:
        directory = self.directories.get("memory")
        if directory is None:
            return False
        try:
            for line in (directory / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def kill_all(self) -> None:
        for directory in self.directories.values():
            for _ in range(200):
                try:
                    pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
                except OSError:
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
        for directory in self.directories.values():
            _remove_cgroup(directory)
        self.directories = {}


def _remove_cgroup(directory: Path) -> None:
    for _ in range(100):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    logger.warning("sandbox: could not remove cgroup %s", directory)
