"""The runner: ``run_interpreter`` runs a submitted interpreter on the samples (docs/sandbox.md,
"API" and "Failure categories").

It starts ONE sandboxed child per submission (``scoring/sandbox/child.py``, copied into the jail
as ``layout.CHILD_FILE``) that loads the hosted model once and imports the code, sends it one
JSON line per sample (id, question, context, n_sentences and optionally the public sentence
list; never any gold), validates every reply and returns a ``RunResult``. A per-sample timeout
or death is that sample's fail and a fresh child goes on; everything else that goes wrong ends
the submission with one of ``SUBMISSION_FAILURES``.

``mode="none"`` (SANDBOX=none, development only) runs the same child with rlimits only and logs
``LOUD_WARNING``.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable

from .availability import check_mode, sandbox_available
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
from .errors import InvalidCode, SandboxUnavailable
from .job_dir import Job, check_model_dir
from .layout import CHILD_FILE, INSIDE
from .limits import RunResult, SandboxLimits, public_sample, validate_scores
from .protocol import check_reply, check_startup
from .uids import UidLease, acquire
from .upload_check import DEFAULT_MAX_BYTES

logger = logging.getLogger(__name__)

LOUD_WARNING = ("SANDBOX=none: submitted interpreter code runs WITHOUT a sandbox (no "
                "namespaces, no uid change, no filesystem or network isolation; only rlimits "
                "and the seccomp filter). "
                "Development only: never use it where gold, databases or secrets live.")


class _Fail(Exception):
    """Ends the submission: ``category`` is a ``SUBMISSION_FAILURES`` key."""

    def __init__(self, category: str, message: str, *, signal_name: str | None = None,
                 exit_code: int | None = None):
        super().__init__(message)
        self.category = category
        self.message = message
        self.signal_name = signal_name
        self.exit_code = exit_code


def _crash_message(signal_name: str | None, exit_code: int | None, when: str,
                   limits: SandboxLimits, oom: bool) -> str:
    if oom:
        return (f"memory limit exceeded: the sandbox's processes together used more than its limit of "
                f"{limits.memory_bytes} bytes, and the memory cgroup killed the sandboxed process {when}")
    if signal_name:
        hint = {"SIGXCPU": f" (the CPU-time limit of {limits.cpu_seconds} s)",
                "SIGKILL": " (killed: memory, CPU hard limit or a kill)",
                "SIGSEGV": " (a segmentation fault)",
                "SIGSYS": " (a forbidden system call: the seccomp filter kills the whole process "
                          "on a 32-bit or x32 system call)",
                "SIGXFSZ": f" (the file-size limit of {limits.file_size} bytes)"}.get(
                    signal_name, "")
        return f"the sandboxed process was killed by {signal_name}{hint} {when}"
    return f"the sandboxed process exited (exit code {exit_code}) {when}"


class _Runner:
    """Starts (and restarts) the child of one run and releases what each start took."""

    def __init__(self, job: Job, model_dir: Path, model_kind: str, limits: SandboxLimits,
                 mode: str, result: RunResult, require_cgroups: bool = False,
                 interrupt: Callable[[], None] | None = None):
        self.job = job
        self.interrupt = interrupt
        self.model_dir = model_dir
        self.model_kind = model_kind
        self.limits = limits
        self.mode = mode
        self.result = result
        self.stderr = CappedBuffer(limits.stderr_bytes)
        self.cgroups: Cgroups | None = None
        self.uid: UidLease | None = None  # the running child's own uid (as root)
        self.model_bind: Path | None = None
        self.require_cgroups = require_cgroups
        self.children: list[Child] = []   # every child started, for the run's CPU total

    def cpu_spent(self) -> float:
        return sum(child.cpu_used for child in self.children)

    def cpu_exceeded(self, error: CpuBudgetExceeded) -> _Fail:
        used = self.cpu_spent()
        restarts = f", {len(self.children) - 1} restarts" if len(self.children) > 1 else ""
        return _Fail("cpu_limit", f"the sandbox's processes used {used:.1f} s of CPU time together, "
                                  f"over the run's budget of {self.limits.cpu_budget_seconds:g} s "
                                  f"(every child process and thread counted{restarts}); the run was "
                                  f"stopped after {self.result.done} of {self.result.total} samples")

    def _command(self, files: CommandFiles) -> tuple[list[str], dict[str, str], str]:
        if self.mode == "none":
            config = {"model_dir": str(self.model_dir), "model_kind": self.model_kind,
                      "code_dir": str(self.job.code), "runtime_dir": str(self.job.runtime),
                      "entry": self.job.entry, "seccomp": True}
            inner = [sys.executable, "-B", "-s", str(self.job.runtime / CHILD_FILE),
                     json.dumps(config)]
            prlimit = find_tool("prlimit")
            command = (rlimit_command(self.limits, prlimit) if prlimit else []) + inner
            tmp = str(self.job.tmp)
            return niced(command, self.limits), child_env(tmp, tmp), tmp
        config = {"model_dir": f"{INSIDE}/model", "model_kind": self.model_kind,
                  "code_dir": f"{INSIDE}/code", "runtime_dir": f"{INSIDE}/runtime",
                  "entry": self.job.entry, "seccomp": True}
        inner = [sys.executable, "-B", "-s", f"{INSIDE}/runtime/{CHILD_FILE}",
                 json.dumps(config)]
        if self.model_bind is None:
            started = time.monotonic()
            self.model_bind, how = self.job.model_source(self.model_dir)
            if how == "copied":
                logger.info("sandbox: %s is not world-readable; copied it for the sandbox user "
                            "in %.2f s (chmod -R o+rX it to bind it directly)", self.model_dir,
                            time.monotonic() - started)
        # The code and the runtime are copied into read-only tmpfs mounts, not bound: the jail's
        # mountinfo then shows no job path. The model is bound (it can be gigabytes).
        binds = [(str(self.model_bind), f"{INSIDE}/model")]
        copies = [(str(self.job.code), f"{INSIDE}/code"),
                  (str(self.job.runtime), f"{INSIDE}/runtime")]
        self.cgroups = Cgroups(f"{self.job.name}-{uuid.uuid4().hex[:8]}", self.limits)
        if self.require_cgroups and self.cgroups.missing():
            reason = self.cgroups.refusal()
            self._release_cgroups()
            raise SandboxUnavailable(reason)
        if os.geteuid() == 0:
            try:
                self.uid = acquire()
            except SandboxUnavailable:
                self._release_cgroups()
                raise
        uid = self.uid.uid if self.uid is not None else SANDBOX_UID
        command = options_from_fd(bwrap_command(binds, self.limits, inner, copies, files, uid=uid), files)
        command = niced(cgroup_wrapper(self.cgroups.procs_files(), command), self.limits)
        return command, host_env(), str(self.job.root)

    def oom_kills(self) -> int:
        """Processes of the running child's sandbox killed by its memory limit so far."""
        return self.cgroups.oom_kills() if self.cgroups is not None else 0

    def _release_cgroups(self) -> bool:
        """Kill what is left of the child, remove its cgroups and give its uid back; True when
        the memory cgroup killed a process of it."""
        oom = False
        if self.cgroups is not None:
            oom = self.cgroups.oom_killed()
            self.cgroups.remove()
            self.cgroups = None
        if self.uid is not None:
            self.uid.release()
            self.uid = None
        return oom

    def start(self, total_deadline: float) -> Child:
        """Launch a child and wait for "ready"; raise _Fail on a submission-level failure."""
        files = CommandFiles()
        try:
            command, env, cwd = self._command(files)
            if not self.result.isolation:
                self.result.isolation = self._isolation()
            started = time.monotonic()
            allowance = self.limits.cpu_budget_seconds - self.cpu_spent()
            if allowance <= 0:  # earlier children used the budget up
                self._release_cgroups()
                raise self.cpu_exceeded(CpuBudgetExceeded(self.cpu_spent()))
            try:
                child = Child(command, env, cwd, self.limits, self.stderr, self.cgroups,
                              wraps_signals=self.mode == "bwrap", pass_fds=tuple(files.fds),
                              cpu_allowance=allowance, interrupt=self.interrupt)
            except OSError as error:
                self._release_cgroups()
                raise _Fail("load_error", f"the sandbox could not be started: {error}") from None
        finally:
            files.close()  # bwrap holds its own copies of the descriptors
        self.children.append(child)
        deadline = min(started + self.limits.startup_seconds, total_deadline)
        phase = "model"
        try:
            reply = check_startup(child.exchange(None, deadline), "loaded", "load_error")
            if reply["event"] == "load_error":
                raise _Fail("load_error", f"the model could not be loaded: {reply['type']}: "
                                          f"{reply['message']}")
            if self.result.model_load_seconds is None:
                self.result.model_load_seconds = reply["seconds"]
            if reply["seccomp"]:
                if "seccomp" not in self.result.isolation:
                    self.result.isolation.append("seccomp")
            elif self.mode == "bwrap":
                logger.info("sandbox: seccomp not installed (%s)", reply["seccomp_problem"])
            phase = "import"
            reply = check_startup(child.exchange(None, deadline), "ready", "import_error")
            if reply["event"] == "import_error":
                summary = f"{reply['type']}: {reply['message']}"
                trace = reply["traceback"].rstrip()
                said = summary + (f"\n{trace}" if trace and trace != summary else "")
                if reply["type"] == "MemoryError" or self.oom_kills():
                    raise _Fail("memory", f"memory limit exceeded while importing the code: {said}")
                raise _Fail("import_error", f"importing the code failed: {said}")
            if self.result.import_seconds is None:
                self.result.import_seconds = reply["seconds"]
        except ReplyTimeout:
            child.kill()
            self._release_cgroups()
            if time.monotonic() >= total_deadline:
                raise _Fail("total_timeout", f"the submission exceeded its total limit of "
                                             f"{self.limits.total_seconds} s while starting") from None
            if phase == "model":
                raise _Fail("load_error", f"loading the model took more than "
                                          f"{self.limits.startup_seconds} s") from None
            raise _Fail("import_error", f"importing the code took more than "
                                        f"{self.limits.startup_seconds} s") from None
        except ChildDied:
            signal_name, code = child.death()
            child.kill()
            oom = self._release_cgroups()
            if phase == "model":
                raise _Fail("load_error", "the sandboxed process ended while loading the model "
                            f"(exit code {code}, {signal_name or 'no signal'}): "
                            f"{self.stderr.text()[-600:]}", signal_name=signal_name,
                            exit_code=code) from None
            raise _Fail("memory" if oom else "crashed",
                        _crash_message(signal_name, code, "while importing the code", self.limits, oom),
                        signal_name=signal_name, exit_code=code) from None
        except OutputFlood as error:
            child.kill()
            self._release_cgroups()
            raise _Fail("output_flood", f"output flood during start-up: {error}") from None
        except ProtocolViolation as error:
            child.kill()
            self._release_cgroups()
            raise _Fail("protocol_error", str(error)) from None
        except CpuBudgetExceeded as error:
            child.kill()
            self._release_cgroups()
            raise self.cpu_exceeded(error) from None
        except _Fail:
            child.finish(graceful=False)
            self._release_cgroups()
            raise
        except BaseException:
            child.kill()
            self._release_cgroups()
            raise
        seconds = time.monotonic() - started
        self.result.startups.append(seconds)
        if self.result.startup_seconds is None:
            self.result.startup_seconds = seconds
        return child

    def _isolation(self) -> list[str]:
        if self.mode == "none":
            return ["rlimits", f"nice {self.limits.nice}"]
        layers = ["bwrap", "pid/net/ipc/uts/cgroup namespaces", "read-only minimal filesystem"]
        layers.append(f"uid {self.uid.uid} (its own)" if self.uid is not None else
                      f"user namespace (uid {os.getuid()})")
        layers.append("rlimits")
        layers.append(f"nice {self.limits.nice}")
        if self.cgroups is not None:
            layers += self.cgroups.isolation()
        return layers

    def stop(self, child: Child | None, *, graceful: bool) -> None:
        if child is not None:
            child.finish(graceful=graceful)
        self._release_cgroups()


def run_interpreter(code_path, model_dir, model_kind: str, samples: Iterable[dict], *,
                    limits: SandboxLimits | None = None, mode: str | None = "bwrap",
                    progress: Callable[[int, int], None] | None = None,
                    protected: Iterable = (), models_root=None,
                    code_max_bytes: int = DEFAULT_MAX_BYTES,
                    require_cgroups: bool = False,
                    interrupt: Callable[[], None] | None = None) -> RunResult:
    """Run a submitted interpreter on ``samples`` inside the sandbox; see the module docstring.

    ``samples``: dicts with ``id``, ``question``, ``context``, ``n_sentences`` and optionally
    the public ``sentences`` list (passed to ``interpret`` as ``sentences=`` when it accepts
    that keyword); any other key is dropped. ``progress(done, total)`` is called after every
    sample; an exception it raises stops the run (the sandbox is cleaned up) and propagates.
    A per-sample timeout or a death of the child during a sample is that sample's fail
    (``timeout`` / ``crashed``) and a fresh child is started for the next sample; a child that
    keeps dying fails the submission (``too_many_crashes``). ``protected``/``models_root``:
    see ``check_model_dir``, applied before anything is bound (``UnsafeModelDir``).
    ``code_max_bytes``: the upload limit the stored code was accepted under (CODE_MAX_BYTES);
    the run applies the upload's check with it before unpacking (``invalid_code`` if it fails).
    Timeouts are capped like deaths (``too_many_timeouts``), and a run in which every sample
    failed ends ``all_samples_failed``: a run that produced nothing must not rank. The CPU time
    of all the sandbox's processes together is capped by ``cpu_budget_seconds`` (``cpu_limit``).
    ``require_cgroups`` (SANDBOX_REQUIRE_CGROUPS): raise ``SandboxUnavailable`` instead of
    running with rlimits only when the cgroup limits cannot be applied (fail closed).
    ``interrupt()`` is called about every quarter second while the parent waits on the child,
    start-up included (a slow import or model load); like ``progress``, an exception it raises
    stops the run and propagates: the worker's way to stop a run whose lease it lost.
    """
    limits = limits or SandboxLimits()
    mode = check_mode(mode)
    require_cgroups = bool(require_cgroups) and mode == "bwrap"
    available, reason = (sandbox_available(mode, require_cgroups=True) if require_cgroups
                         else sandbox_available(mode))
    if not available:
        raise SandboxUnavailable(reason)
    if mode == "none":
        logger.warning(LOUD_WARNING)
    code_path, model_dir = Path(code_path), Path(model_dir)
    if not model_dir.is_dir():
        raise FileNotFoundError(f"model directory {model_dir} does not exist")
    check_model_dir(model_dir, protected, models_root=models_root)
    public = [public_sample(sample) for sample in samples]
    ids = [sample["id"] for sample in public]
    if len(set(ids)) != len(ids):
        raise ValueError("sample ids must be unique")

    result = RunResult(total=len(public), mode=mode)
    began = time.monotonic()
    total_deadline = began + limits.total_seconds
    try:
        job = Job(code_path, code_max_bytes)
    except InvalidCode as error:  # the submission's own fault (the Job removed its directory)
        result.status, result.failure = "failed", "invalid_code"
        result.message = f"the stored code does not pass the upload check: {error}"
        result.total_seconds = time.monotonic() - began
        return result
    result.job = job.name
    runner = _Runner(job, model_dir, model_kind, limits, mode, result,
                     require_cgroups=require_cgroups, interrupt=interrupt)
    child: Child | None = None
    graceful = False
    crashes = consecutive_crashes = timeouts = consecutive_timeouts = 0
    try:
        index = 0
        while index < len(public):
            if child is None:
                child = runner.start(total_deadline)
            sample = public[index]
            sample_id = sample["id"]
            sent = time.monotonic()
            deadline = min(sent + limits.per_sample_seconds, total_deadline)
            oom_before = runner.oom_kills()
            try:
                reply = check_reply(child.exchange(sample, deadline), sample_id)
            except ReplyTimeout:
                runner.stop(child, graceful=False)
                child = None
                if time.monotonic() >= total_deadline:
                    raise _Fail("total_timeout", f"the submission exceeded its total limit of "
                                                 f"{limits.total_seconds} s") from None
                result.failures[sample_id] = "timeout"
                result.failure_details[sample_id] = (f"interpret ran longer than "
                                                     f"{limits.per_sample_seconds} s")
                timeouts += 1
                consecutive_timeouts += 1
                if consecutive_timeouts >= limits.max_consecutive_timeouts or timeouts > limits.max_timeouts:
                    how = (f"on {consecutive_timeouts} samples in a row"
                           if consecutive_timeouts >= limits.max_consecutive_timeouts
                           else f"on {timeouts} samples (the limit is {limits.max_timeouts})")
                    raise _Fail("too_many_timeouts", f"interpret ran longer than the per-sample limit of "
                                f"{limits.per_sample_seconds} s {how}; the run was stopped "
                                f"after {result.done} of {result.total} samples") from None
            except ChildDied:
                # Like a timeout: this sample fails (QUACKIE counts it), a fresh child goes on.
                signal_name, code = child.death()
                child.kill()
                child = None
                oom = runner._release_cgroups()
                message = _crash_message(signal_name, code, f"while scoring sample {sample_id}",
                                         limits, oom)
                result.failures[sample_id] = "memory" if oom else "crashed"
                result.failure_details[sample_id] = message
                crashes += 1
                consecutive_crashes += 1
                if consecutive_crashes >= limits.max_consecutive_crashes \
                        or crashes > limits.max_crashes:
                    how = (f"on {consecutive_crashes} samples in a row"
                           if consecutive_crashes >= limits.max_consecutive_crashes
                           else f"on {crashes} samples (the limit is {limits.max_crashes})")
                    raise _Fail("too_many_crashes", f"the sandboxed process died {how}; the "
                                f"last time: {message}", signal_name=signal_name,
                                exit_code=code) from None
            except OutputFlood as error:
                raise _Fail("output_flood", f"sample {sample_id}: {error}") from None
            except ProtocolViolation as error:
                raise _Fail("protocol_error", f"sample {sample_id}: {error}") from None
            except CpuBudgetExceeded as error:
                runner.stop(child, graceful=False)
                child = None
                raise runner.cpu_exceeded(error) from None
            else:
                consecutive_crashes = consecutive_timeouts = 0
                result.sample_seconds[sample_id] = time.monotonic() - sent
                _record(result, sample, reply)
                if result.failures.get(sample_id) == "exception" \
                        and (reply["error"]["type"] == "MemoryError" or runner.oom_kills() > oom_before):
                    _memory_exceeded(result, sample_id, limits)
            if child is None:  # killed by a timeout or dead: the next sample gets a new one
                result.sample_seconds[sample_id] = time.monotonic() - sent
                if index + 1 < len(public):
                    result.restarts += 1
            index += 1
            if progress:
                progress(result.done, result.total)
        if public and not result.scores:
            raise _Fail("all_samples_failed", f"every sample failed: {_failure_counts(result)}")
        graceful = True
    except _Fail as failure:
        result.status = "failed"
        result.failure = failure.category
        result.message = failure.message
        result.signal = failure.signal_name
        result.exit_code = failure.exit_code
    finally:
        runner.stop(child, graceful=graceful)
        job.cleanup()
        result.total_seconds = time.monotonic() - began
        result.cpu_seconds = runner.cpu_spent()
        result.stderr = runner.stderr.text()
    if result.status == "ok":
        fails = len(result.failures)
        result.message = (f"{len(result.scores)} of {result.total} samples scored"
                          + (f", {fails} failed" if fails else ""))
    return result


def _failure_counts(result: RunResult) -> str:
    """``"5 timeout"``, ``"3 exception, 2 wrong_length"``: the most frequent first."""
    counts: dict[str, int] = {}
    for category in result.failures.values():
        counts[category] = counts.get(category, 0) + 1
    return ", ".join(f"{n} {category}" for category, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _memory_exceeded(result: RunResult, sample_id: str, limits: SandboxLimits) -> None:
    """A sample whose ``interpret`` raised after running out of memory: a MemoryError (the
    address-space limit of one process), or any exception after the memory cgroup killed one of
    the sandbox's processes (a helper it forked). Reported as ``memory``, not as an exception."""
    result.failures[sample_id] = "memory"
    result.failure_details[sample_id] = (f"memory limit exceeded (at most {limits.address_space} bytes of "
                                         f"address space per process, {limits.memory_bytes} bytes for the "
                                         f"whole sandbox): {result.failure_details[sample_id]}")


def _record(result: RunResult, sample: dict, reply: dict) -> None:
    """Store one reply that ``check_reply`` accepted (every field has its checked type)."""
    sample_id = sample["id"]
    if "seconds" in reply:
        result.compute_seconds[sample_id] = reply["seconds"]
    if "error" in reply:
        error = reply["error"]
        result.failures[sample_id] = "exception"
        detail = f"{error['type']}: {error['message']}"
        trace = error["traceback"]
        # The trace ends with the exception line itself: without user frames it adds nothing.
        useful = trace and trace.strip() != detail
        result.failure_details[sample_id] = f"{detail}\n{trace}".strip() if useful else detail
        return
    if "not_a_list" in reply:
        result.failures[sample_id] = "not_a_list"
        result.failure_details[sample_id] = (f"interpret returned "
                                             f"{reply['not_a_list'][:60]}, not a sequence")
        return
    scores, category, detail = validate_scores(reply["scores"], sample["n_sentences"])
    if scores is None:  # then validate_scores names the category
        result.failures[sample_id] = category or "not_a_list"
        result.failure_details[sample_id] = detail
    else:
        result.scores[sample_id] = scores
