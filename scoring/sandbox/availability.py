"""Whether a sandbox can run here (docs/sandbox.md, "API"): ``sandbox_available(mode)`` runs
the real sandbox command line once per mode and caches the answer, with the reason when it
cannot (bubblewrap missing, no namespaces, an interpreter the sandbox user cannot run). With
``require_cgroups`` it also creates (and removes) a probe cgroup and answers no when the
required cgroup limits cannot be applied: the deployment then refuses code (fail closed)
instead of running it under rlimits only."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid

from .cgroups import Cgroups
from .command import bwrap_command, find_tool, host_env
from .errors import SandboxUnavailable
from .limits import SandboxLimits
from .uids import POOL_FIRST, POOL_SIZE, UidLease, acquire

MODES = ("bwrap", "none")

_PROBES: dict[tuple[str, bool], tuple[bool, str]] = {}
_PROBE_LOCK = threading.Lock()


def check_mode(mode: str | None) -> str:
    """``mode`` by its name in ``MODES`` ("bwrap" when it is None or empty); ValueError else."""
    mode = "bwrap" if mode in (None, "") else str(mode).lower()
    if mode not in MODES:
        raise ValueError(f"sandbox mode must be one of {MODES}, not {mode!r}")
    return mode


def sandbox_available(mode: str | None = None, *, require_cgroups: bool = False) -> tuple[bool, str]:
    """(usable, reason). Probes once per mode (cached): runs the sandboxed interpreter; with
    ``require_cgroups`` (bwrap only) the cgroup limits must be applicable too."""
    mode = check_mode(mode)
    require_cgroups = bool(require_cgroups) and mode == "bwrap"
    with _PROBE_LOCK:
        key = (mode, require_cgroups)
        if key not in _PROBES:
            usable, reason = _probe(mode)
            if usable and require_cgroups:
                usable, reason = _probe_cgroups(reason)
            _PROBES[key] = (usable, reason)
        return _PROBES[key]


def _clear_probe_cache() -> None:
    with _PROBE_LOCK:
        _PROBES.clear()


sandbox_available.cache_clear = _clear_probe_cache  # type: ignore[attr-defined]


def _probe(mode: str) -> tuple[bool, str]:
    if mode == "none":
        return True, "SANDBOX=none: no sandbox (development only; rlimits only)"
    if not sys.platform.startswith("linux"):
        return False, "the bubblewrap sandbox needs Linux"
    if not find_tool("bwrap"):
        return False, "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    if not find_tool("prlimit"):
        return False, "prlimit (util-linux) is not installed"
    if os.geteuid() == 0 and not find_tool("setpriv"):
        return False, "setpriv (util-linux) is not installed"
    if not find_tool("nice"):
        return False, "nice (coreutils) is not installed"
    limits = SandboxLimits()
    probe = "import os, sys; print(os.getuid(), os.getgid(), sys.version_info[0])"
    lease: UidLease | None = None
    try:
        lease = acquire() if os.geteuid() == 0 else None
        expected_uid = lease.uid if lease is not None else os.getuid()
        command = bwrap_command([], limits, [sys.executable, "-B", "-s", "-c", probe], uid=expected_uid)
        completed = subprocess.run(command, env=host_env(), capture_output=True, timeout=120,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    except SandboxUnavailable as error:
        return False, str(error)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"bwrap could not run: {error}"
    finally:
        if lease is not None:
            lease.release()
    stderr = completed.stderr.decode("utf-8", "replace").strip()
    if completed.returncode != 0:
        lowered = stderr.lower()
        if "namespace" in lowered or "operation not permitted" in lowered:
            return False, f"user/pid/net namespaces are not available here (bwrap: {stderr[-300:]})"
        if "permission denied" in lowered or "can't find source path" in lowered \
                or "no such file" in lowered:
            return False, (f"the sandbox user cannot run the interpreter {sys.executable} "
                           f"(bwrap: {stderr[-300:]})")
        return False, f"bwrap failed with exit code {completed.returncode}: {stderr[-300:]}"
    words = completed.stdout.decode("utf-8", "replace").split()
    if len(words) != 3 or words[0] != str(expected_uid) or (lease is not None and words[1] != str(lease.gid)):
        return False, f"the sandbox probe answered {completed.stdout[:100]!r}"
    who = (f"uid {words[0]}, one of {POOL_SIZE} per-run uids from {POOL_FIRST}" if lease is not None
           else f"uid {words[0]}, the worker's own in a user namespace")
    return True, f"bubblewrap sandbox usable ({who}, interpreter {sys.executable})"


def _probe_cgroups(reason: str) -> tuple[bool, str]:
    """The cgroup limits a run would get, tried on a probe group that is removed at once."""
    probe = Cgroups(f"probe-{uuid.uuid4().hex[:12]}", SandboxLimits())
    try:
        if probe.missing():
            return False, probe.refusal()
        return True, f"{reason}; cgroup {probe.version} limits: {', '.join(probe.directories)}"
    finally:
        probe.remove()
