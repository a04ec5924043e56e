"""The model runner: ``run_model_bundle`` runs a model bundle's ``predict`` on a task's examples
inside the bubblewrap sandbox (docs/model_submissions.md, "Running a bundle").

One sandboxed child per run (``model_child.py``, copied into the jail as
``layout.MODEL_CHILD_FILE``) imports ``predict.py`` from the read-only bundle and answers one
JSON line per batch of examples; the parent checks every reply (``model_contract``), merges the
batches and returns the predictions as JSON bytes for the task's strict parser. The jail is the
interpreter sandbox's (docs/sandbox.md): its namespaces (no network), a uid of its own, read-only
minimal filesystem, rlimits, cgroups, seccomp, the same command line and child-process
handling. Unlike an interpreter run, nothing is per-sample: the first failure ends the run,
since a hidden run must predict every example to be scored.

A bundle up to ``COPY_LIMIT_BYTES`` unpacked is copied into a read-only tmpfs like interpreter
code (the jail's mountinfo names no job path); a larger one (weights) is bound read-only from
the job directory instead of being held in memory twice.
"""
from __future__ import annotations

import atexit
import glob
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

from .availability import check_mode, sandbox_available
from .bundle_check import (
    DEFAULT_BUNDLE_MAX_BYTES,
    DEFAULT_MAX_UNPACKED_BYTES,
    BundleRefused,
    bundle_sha256,
    extract_bundle,
)
from .cgroups import Cgroups
from .child_process import (
    CappedBuffer,
    Child,
    ChildDied,
    CpuBudgetExceeded,
    OutputFlood,
    ProtocolViolation,
    ReplyTimeout,
)
from .command import (
    SANDBOX_UID,
    CommandFiles,
    bwrap_command,
    cgroup_wrapper,
    child_env,
    find_tool,
    host_env,
    niced,
    options_from_fd,
    rlimit_command,
)
from .errors import SandboxUnavailable
from .job_dir import SANDBOX_DIR, write_file
from .layout import CHILD_FILE, INSIDE, MODEL_CHILD_FILE, MODEL_ENTRY_MODULE
from .limits import SandboxLimits
from .model_contract import (
    DEFAULT_BATCH_SIZE,
    DEVICE_VARIABLE,
    ModelBudget,
    ModelFailure,
    ModelRunResult,
    batches,
    check_batch_reply,
    check_examples,
    environment,
    hardware,
    merged_json,
)
from .uids import UidLease, acquire

logger = logging.getLogger(__name__)

COPY_LIMIT_BYTES = 64 * 2**20
GRACEFUL_EXIT_SECONDS = 5  # after its last batch, for the child to exit by itself
# The device nodes the NVIDIA driver creates; a GPU run passes those present into the jail.
GPU_DEVICE_PATTERNS = ("/dev/nvidia[0-9]*", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                       "/dev/nvidia-modeset", "/dev/nvidia-caps/*")
STARTUP_EVENTS = {"ready": {"event", "seconds", "seccomp", "seccomp_problem"},
                  "import_error": {"event", "type", "message", "traceback"},
                  "no_predict": {"event", "type", "message", "traceback"}}


def gpu_device_nodes() -> tuple[str, ...]:
    """The NVIDIA character devices of this machine (empty without a GPU)."""
    nodes = []
    for pattern in GPU_DEVICE_PATTERNS:
        for path in sorted(glob.glob(pattern)):
            try:
                if stat.S_ISCHR(os.stat(path).st_mode):
                    nodes.append(path)
            except OSError:
                continue
    return tuple(nodes)


def install_model_runtime(destination: Path) -> None:
    """The model child and the interpreter child whose helpers it imports."""
    write_file(destination / CHILD_FILE, (SANDBOX_DIR / "child.py").read_bytes())
    write_file(destination / MODEL_CHILD_FILE, (SANDBOX_DIR / "model_child.py").read_bytes())


def check_startup_message(message: dict) -> dict:
    """``ready``, ``import_error`` or ``no_predict`` with exactly their fields, else
    ``ProtocolViolation`` (the bundle shares the child's process from its import on)."""
    event = message.get("event")
    if event not in STARTUP_EVENTS or set(message) != STARTUP_EVENTS[event]:
        raise ProtocolViolation("the start-up message is not one of the protocol's messages")
    if event == "ready":
        seconds = message["seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= 86_400 \
                or not isinstance(message["seccomp"], bool) or not isinstance(message["seccomp_problem"], str):
            raise ProtocolViolation("the ready message is malformed")
    elif not all(isinstance(message[key], str) for key in ("type", "message", "traceback")):
        raise ProtocolViolation(f"the {event} message is malformed")
    return message


def startup_failure(message: dict) -> ModelFailure:
    summary = f"{message['type'][:200]}: {message['message'][:1000]}"
    trace = message["traceback"][:4000].rstrip()
    text = summary + (f"\n{trace}" if trace and trace != summary else "")
    if message["event"] == "no_predict":
        return ModelFailure("no_predict", f"predict.py defines no callable predict(examples): {summary}")
    if message["type"] == "MemoryError":
        return ModelFailure("memory", f"importing predict.py ran out of memory: {text}")
    return ModelFailure("import_error", f"importing predict.py failed: {text}")


class _ModelJob:
    """A private directory (mode 0700, removed afterwards): ``code/`` (the unpacked bundle),
    ``runtime/`` (the two child programs) and ``tmp/``."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="expbench-model-"))
        self.name = self.root.name
        self.code, self.runtime, self.tmp = self.root / "code", self.root / "runtime", self.root / "tmp"
        for directory, mode in ((self.code, 0o755), (self.runtime, 0o755), (self.tmp, 0o700)):
            directory.mkdir()
            directory.chmod(mode)

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class _Sandbox:
    """Starts the child of one model run and releases what it took."""

    def __init__(self, job: _ModelJob, limits: SandboxLimits, mode: str, device: str,
                 devices: tuple[str, ...], bind_code: bool, require_cgroups: bool, ahead: bool = False):
        self.job, self.limits, self.mode, self.device = job, limits, mode, device
        self.devices, self.bind_code, self.require_cgroups = devices, bind_code, require_cgroups
        # Started ahead of its run: the child waits for "load" before importing the bundle,
        # which fills the (bound, read-only) code directory meanwhile.
        self.ahead = ahead
        self.waiting = False  # the child's "waiting" message was read
        self.stderr = CappedBuffer(limits.stderr_bytes)
        self.cgroups: Cgroups | None = None
        self.uid: UidLease | None = None  # the child's own uid (as root)
        self.child: Child | None = None

    def command(self, files: CommandFiles) -> tuple[list[str], dict[str, str], str]:
        if self.mode == "none":
            config = {"code_dir": str(self.job.code), "runtime_dir": str(self.job.runtime),
                      "entry": MODEL_ENTRY_MODULE, "seccomp": True, "await_bundle": self.ahead}
            inner = [sys.executable, "-B", "-s", str(self.job.runtime / MODEL_CHILD_FILE), json.dumps(config)]
            prlimit = find_tool("prlimit")
            command = (rlimit_command(self.limits, prlimit) if prlimit else []) + inner
            env = {**child_env(str(self.job.tmp), str(self.job.tmp)), **self.environment()}
            return niced(command, self.limits), env, str(self.job.tmp)
        config = {"code_dir": f"{INSIDE}/code", "runtime_dir": f"{INSIDE}/runtime",
                  "entry": MODEL_ENTRY_MODULE, "seccomp": True, "await_bundle": self.ahead}
        inner = [sys.executable, "-B", "-s", f"{INSIDE}/runtime/{MODEL_CHILD_FILE}", json.dumps(config)]
        code = (str(self.job.code), f"{INSIDE}/code")
        binds = [code] if self.bind_code else []
        copies = [(str(self.job.runtime), f"{INSIDE}/runtime")] + ([] if self.bind_code else [code])
        self.cgroups = Cgroups(f"{self.job.name}-{uuid.uuid4().hex[:8]}", self.limits)
        if self.require_cgroups and self.cgroups.missing():
            reason = self.cgroups.refusal()
            self.release()
            raise SandboxUnavailable(reason)
        if os.geteuid() == 0:
            try:
                self.uid = acquire()
            except SandboxUnavailable:
                self.release()
                raise
        uid = self.uid.uid if self.uid is not None else SANDBOX_UID
        command = bwrap_command(binds, self.limits, inner, copies, files, devices=self.devices,
                                extra_env=self.environment(), uid=uid)
        command = niced(cgroup_wrapper(self.cgroups.procs_files(), options_from_fd(command, files)), self.limits)
        return command, host_env(), str(self.job.root)

    def environment(self) -> dict[str, str]:
        """What a model run adds to the child's environment: its device, and a fixed hash
        seed, so that set and dict orders (and sums taken in them) repeat from run to run."""
        environment = {DEVICE_VARIABLE: self.device, "PYTHONHASHSEED": "0"}
        # The CUDA driver's libraries are found through the worker's own search path (the jail
        # starts from an empty environment and has no /etc/ld.so.cache).
        if self.device == "cuda" and os.environ.get("LD_LIBRARY_PATH"):
            environment["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
        return environment

    def isolation(self) -> list[str]:
        if self.mode == "none":
            return ["rlimits", f"nice {self.limits.nice}"]
        layers = ["bwrap", "pid/net/ipc/uts/cgroup namespaces", "read-only minimal filesystem",
                  f"uid {self.uid.uid} (its own)" if self.uid is not None else f"user namespace (uid {os.getuid()})",
                  "rlimits", f"nice {self.limits.nice}"]
        if self.cgroups is not None:
            layers += self.cgroups.isolation()
        if self.devices:
            layers.append(f"{len(self.devices)} GPU device nodes")
        return layers

    def start(self, interrupt: Callable[[], None] | None) -> Child:
        files = CommandFiles()
        try:
            command, env, cwd = self.command(files)
            extra = {"interrupt": interrupt} if interrupt is not None else {}
            try:
                self.child = Child(command, env, cwd, self.limits, self.stderr, self.cgroups,
                                   wraps_signals=self.mode == "bwrap", pass_fds=tuple(files.fds),
                                   cpu_allowance=self.limits.cpu_budget_seconds, **extra)
            except OSError as error:
                self.release()
                raise SandboxUnavailable(f"the sandbox could not be started: {error}") from None
        finally:
            files.close()  # bwrap holds its own copies of the descriptors
        return self.child

    def key(self) -> tuple:
        """What a run must ask for to use this sandbox (its limits are fixed at start)."""
        return (self.limits, self.mode, self.device, self.devices, self.require_cgroups)

    def await_waiting(self, deadline: float) -> None:
        """Read the ahead-started child's "waiting" message (it is up, its filter installed)."""
        if self.waiting or self.child is None:
            return
        if self.child.exchange(None, deadline) != {"event": "waiting"}:
            raise ProtocolViolation("the sandbox started ahead did not report waiting")
        self.waiting = True

    def startup_reply(self, deadline: float) -> dict:
        """The child's start-up message: the import of predict.py, told to start if the child
        was started ahead."""
        if self.child is None:
            raise RuntimeError("the sandbox was not started")
        if not self.ahead:
            return self.child.exchange(None, deadline)
        self.await_waiting(deadline)
        return self.child.exchange({"load": True}, deadline)

    def oom_killed(self) -> bool:
        """Whether the memory cgroup killed a process of this sandbox (its processes are gone)."""
        return self.cgroups is not None and self.cgroups.oom_killed()

    def discard(self) -> None:
        if self.child is not None:
            self.child.kill()
        self.release()
        self.job.cleanup()

    def release(self) -> bool:
        """Remove the cgroups and give the uid back; True when the memory limit killed something."""
        oom = False
        if self.cgroups is not None:
            oom = self.cgroups.oom_killed()
            self.cgroups.remove()
            self.cgroups = None
        if self.uid is not None:
            self.uid.release()
            self.uid = None
        return oom

    def death(self, child: Child, when: str) -> ModelFailure:
        signal_name, code = child.death()
        child.kill()
        oom = self.release()
        tail = self.stderr.text()[-600:].strip()
        said = f"; its last output: {tail}" if tail else ""
        if oom:
            return ModelFailure("memory", f"memory limit exceeded: the sandbox's processes together used more "
                                          f"than the memory budget of {self.limits.memory_bytes} bytes, and the "
                                          f"memory cgroup killed the sandboxed process {when}")
        if signal_name == "SIGXCPU":
            return ModelFailure("cpu_limit", f"the sandboxed process reached the CPU-time limit of "
                                             f"{self.limits.cpu_seconds} s {when}")
        if signal_name:
            return ModelFailure("crashed", f"the sandboxed process was killed by {signal_name} {when}{said}")
        return ModelFailure("crashed", f"the sandboxed process exited (exit code {code}) {when}{said}")


# --------------------------------------------------------------------------- started ahead

WARM_BOOT_SECONDS = 30  # for a sandbox started ahead to report waiting before it is given up
_ahead: list[_Sandbox] = []  # at most one: the sandbox this process started for its next run
_ahead_lock = threading.Lock()
_housekeeping: list[threading.Thread] = []  # the thread tidying after the last run, if any


def _replace_ahead(sandbox: _Sandbox | None) -> list[_Sandbox]:
    """Put ``sandbox`` (or nothing) in the slot; return what was there, for the caller to use
    or discard."""
    with _ahead_lock:
        previous, _ahead[:] = list(_ahead), ([sandbox] if sandbox is not None else [])
    return previous


def start_ahead(limits: SandboxLimits, mode: str, device: str, devices: tuple[str, ...],
                require_cgroups: bool) -> bool:
    """Start a sandbox for this process's next run with these limits (see ``run_model_bundle``'s
    ``keep_warm``): the job directory, cgroups, uid, bwrap, the interpreter and the seccomp
    filter, everything but the bundle. False (logged) when the sandbox cannot be started now."""
    job = _ModelJob()
    install_model_runtime(job.runtime)
    sandbox = _Sandbox(job, limits, mode, device, devices, bind_code=True, require_cgroups=require_cgroups,
                       ahead=True)
    try:
        sandbox.start(None)
    except SandboxUnavailable as error:
        job.cleanup()
        logger.warning("no sandbox started ahead: %s", error)
        return False
    for old in _replace_ahead(sandbox):
        old.discard()
    return True


def take_ahead(key: tuple) -> _Sandbox | None:
    """The sandbox started ahead, if it has ``key`` and is up and waiting; any other is
    discarded (a run never inherits a sandbox whose start-up went wrong: it starts its own)."""
    for sandbox in _replace_ahead(None):
        if sandbox.key() == key and sandbox.child is not None and sandbox.child.proc.poll() is None:
            try:
                sandbox.await_waiting(time.monotonic() + WARM_BOOT_SECONDS)
                return sandbox
            except (ChildDied, ReplyTimeout, ProtocolViolation, CpuBudgetExceeded, OutputFlood) as error:
                logger.warning("the sandbox started ahead was given up: %s", type(error).__name__)
        sandbox.discard()
    return None


def ahead_ready() -> bool:
    """Wait until the sandbox started ahead (if any) is up and waiting; False if there is
    none or it failed (it is then discarded)."""
    settle()
    with _ahead_lock:
        key = _ahead[0].key() if _ahead else None
    ready = take_ahead(key) if key is not None else None
    for old in _replace_ahead(ready):
        old.discard()
    return ready is not None


def _tidy(sandbox: _Sandbox | None, job: _ModelJob, ahead_key: tuple | None) -> None:
    """After a run whose processes have all exited: remove its cgroups, give its uid back,
    delete its job directory and, with ``ahead_key``, start the next run's sandbox. Without it,
    now; with it (a worker's runs), on a housekeeping thread, so that the run's caller stores
    its result meanwhile instead of waiting for cgroup removal (~10 ms) and a spawn."""
    def work() -> None:
        if sandbox is not None:
            sandbox.release()
        job.cleanup()
        if ahead_key is not None:
            start_ahead(*ahead_key)

    if ahead_key is None:
        work()
        return
    settle()  # one housekeeping at a time: the previous one has released its uid
    thread = threading.Thread(target=work, name="expbench-sandbox-housekeeping", daemon=True)
    _housekeeping[:] = [thread]
    thread.start()


def settle(timeout: float | None = None) -> None:
    """Wait for the last run's housekeeping (``_tidy``) to finish."""
    for thread in list(_housekeeping):
        thread.join(timeout)


def discard_ahead() -> None:
    """Stop the sandbox started ahead, if any (at exit; tests)."""
    settle()
    for sandbox in _replace_ahead(None):
        sandbox.discard()


atexit.register(discard_ahead)


def run_model_bundle(bundle_path, examples: list[dict], *, budget: ModelBudget | None = None,
                     batch_size: int = DEFAULT_BATCH_SIZE, mode: str | None = "bwrap", gpu: bool = False,
                     max_bytes: int = DEFAULT_BUNDLE_MAX_BYTES,
                     max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES,
                     progress: Callable[[int, int], None] | None = None,
                     interrupt: Callable[[], None] | None = None,
                     require_cgroups: bool = False, keep_warm: bool = False) -> ModelRunResult:
    """Run the bundle's ``predict`` on ``examples`` (flat records with a string ``id``, unique;
    ``scoring.model_bundles.examples`` builds them from a test set's public inputs) in batches of
    ``batch_size``, within ``budget``; see the module docstring.

    Returns a ``ModelRunResult``: ``ok`` with ``predictions_json`` (every example's prediction,
    in the examples' order), or ``failed`` with a ``MODEL_FAILURES`` category, its full
    ``message`` and the fixed ``hidden_message``. Raises ``SandboxUnavailable`` (no sandbox, or
    ``gpu`` without GPU device nodes, or missing cgroups with ``require_cgroups``) and
    ValueError (examples without unique string ids): platform faults, never the bundle's.
    ``progress(done, total)`` is called after every batch and ``interrupt()`` while waiting on
    the child; what either raises stops the run (the sandbox is cleaned up) and propagates.

    ``keep_warm``: when the run ends, start the sandbox of this process's next run with the
    same limits (``start_ahead``), so that run finds its interpreter up and its filter in place
    and pays only the bundle's import (docs/model_submissions.md, "Sandboxes started ahead").
    A run uses such a sandbox whether or not it asks to keep one: each serves one run.
    """
    budget = budget or ModelBudget()
    mode = check_mode(mode)
    require_cgroups = bool(require_cgroups) and mode == "bwrap"
    available, reason = (sandbox_available(mode, require_cgroups=True) if require_cgroups
                         else sandbox_available(mode))
    if not available:
        raise SandboxUnavailable(reason)
    devices = gpu_device_nodes() if gpu else ()
    if gpu and not devices:
        raise SandboxUnavailable("a GPU run was asked for, but this machine has no /dev/nvidia* device nodes")
    device = "cuda" if gpu else "cpu"
    ids = check_examples(examples)
    limits = budget.limits(gpu=gpu)
    bundle_path = Path(bundle_path)
    result = ModelRunResult(total=len(examples), batch_size=batch_size, mode=mode, device=device,
                            environment=environment(), hardware=hardware(limits, device))
    parts = batches(examples, batch_size)
    began = time.monotonic()
    deadline = began + limits.total_seconds
    key = (limits, mode, device, devices, require_cgroups)
    settle()  # the previous run's housekeeping may be starting this run's sandbox
    sandbox: _Sandbox | None = take_ahead(key)
    job = sandbox.job if sandbox is not None else _ModelJob()
    result.started_ahead = sandbox is not None
    graceful = False
    try:
        try:
            manifest = extract_bundle(bundle_path, job.code, max_bytes=max_bytes,
                                      max_unpacked_bytes=max_unpacked_bytes)
        except BundleRefused as error:
            result.bundle_sha256 = bundle_sha256(bundle_path) if bundle_path.is_file() else ""
            raise ModelFailure(error.category, str(error)) from None
        result.bundle_sha256 = manifest.sha256
        if sandbox is None:
            install_model_runtime(job.runtime)
            sandbox = _Sandbox(job, limits, mode, device, devices, manifest.unpacked_bytes > COPY_LIMIT_BYTES,
                               require_cgroups)
        _run(sandbox, parts, ids, result, deadline, progress, interrupt)
        graceful = True
    except ModelFailure as failure:
        result.fail(failure)
    finally:
        if sandbox is not None:
            if sandbox.child is not None:
                _end(sandbox.child, graceful=graceful)
                result.cpu_seconds = sandbox.child.cpu_used
            oom = sandbox.oom_killed()
            if oom and result.failure in ("crashed", "exception", None):
                result.fail(ModelFailure("memory", f"memory limit exceeded: the memory cgroup killed a process "
                                                   f"of the sandbox, over the memory budget of "
                                                   f"{limits.memory_bytes} bytes"))
            result.stderr = sandbox.stderr.text()
            result.isolation = result.isolation or sandbox.isolation()
        _tidy(sandbox, job, key if keep_warm else None)
        result.total_seconds = time.monotonic() - began
    return result


def _end(child: Child, *, graceful: bool) -> None:
    """Close the child's stdin and wait for it to exit (it returns at end of input), then
    kill what is left. ``Child.finish`` polls every 50 ms, a quarter of a small run's time."""
    if graceful and not child.closed:
        try:
            child.child_in.close()
            child.stdin_open = False
            child.await_output_end(GRACEFUL_EXIT_SECONDS)  # woken by the exit, not a polling wait
            child.proc.wait(timeout=GRACEFUL_EXIT_SECONDS)
        except (OSError, subprocess.TimeoutExpired):
            pass
    child.kill()


def _run(sandbox: _Sandbox, parts: list[list[dict]], ids: list[str], result: ModelRunResult,
         deadline: float, progress, interrupt) -> None:
    """Start the child, send the batches, check and merge the replies; raise ``ModelFailure``."""
    budget_text = f"{sandbox.limits.total_seconds:g} s"
    started = time.monotonic()
    if sandbox.child is None:
        child = sandbox.start(interrupt)
    else:
        child = sandbox.child
        child.interrupt = interrupt
    result.isolation = sandbox.isolation()
    when = "while importing predict.py"
    try:
        message = check_startup_message(sandbox.startup_reply(deadline))
        if message["event"] != "ready":
            raise startup_failure(message)
        result.import_seconds = float(message["seconds"])
        result.startup_seconds = time.monotonic() - started
        if message["seccomp"]:
            result.isolation.append("seccomp")
        predictions: dict = {}
        for number, batch in enumerate(parts):
            when = f"during batch {number} ({result.done} of {result.total} examples done)"
            sent = time.monotonic()
            reply = child.exchange({"batch": number, "examples": batch}, deadline)
            batch_predictions, seconds = check_batch_reply(reply, number, [example["id"] for example in batch])
            predictions.update(batch_predictions)
            result.batch_seconds.append(time.monotonic() - sent)
            result.predict_seconds += seconds
            result.batches += 1
            result.done += len(batch)
            if progress is not None:
                progress(result.done, result.total)
        result.predictions_json = merged_json(ids, predictions)
    except ReplyTimeout:
        raise ModelFailure("timeout", f"the run exceeded its wall-clock budget of {budget_text} {when}") from None
    except ChildDied:
        raise sandbox.death(child, when) from None
    except CpuBudgetExceeded as error:
        raise ModelFailure("cpu_limit", f"the sandbox's processes used {error.used:.1f} s of CPU time together, "
                                        f"over the run's budget of {sandbox.limits.cpu_budget_seconds:g} s, "
                                        f"{when}") from None
    except OutputFlood as error:
        raise ModelFailure("output_flood", f"{error} {when}") from None
    except ProtocolViolation as error:
        raise ModelFailure("protocol_error", f"{error} ({when})") from None
