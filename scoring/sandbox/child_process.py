"""The parent's side of one sandboxed child process: ``Child`` starts the command line, writes
one JSON line per sample and reads the reply through non-blocking pipes, drains stderr into a
``CappedBuffer``, and kills the child (its process group and cgroups). What goes wrong on the
pipes is raised as ``ReplyTimeout``, ``OutputFlood``, ``ChildDied`` or ``ProtocolViolation``
for the runner to turn into a failure category; ``CpuBudgetExceeded`` when the CPU time of all
the sandbox's processes together (the cgroup's counter, else the process tree's) passes what the
run has left of ``cpu_budget_seconds``. The protocol itself is described in
``scoring/sandbox/child.py``.

Every read of the child's stdout, whichever path does it (waiting for a reply, writing a
message while the child floods, draining stderr at the end), keeps at most one reply line
(``output_bytes`` and its line end) and counts the rest as dropped; stderr goes to a
``CappedBuffer``. So nothing the child writes grows the worker's memory past the caps."""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable
from typing import IO

from .cgroups import Cgroups
from .limits import SandboxLimits
from .protocol import ProtocolViolation, decode, storable

__all__ = ["CappedBuffer", "Child", "ChildDied", "CpuBudgetExceeded", "OutputFlood", "ProtocolViolation",
           "ReplyTimeout", "process_tree_cpu_seconds"]

CPU_CHECK_SECONDS = 0.25  # how often the CPU counter is read while waiting for the child


class ReplyTimeout(Exception):
    """No reply before the deadline."""


class OutputFlood(Exception):
    """A reply line (or unterminated output) longer than ``output_bytes``."""


class ChildDied(Exception):
    """The child closed its stdout (it exited or was killed)."""


class CpuBudgetExceeded(Exception):
    """The sandbox's processes together used more CPU time than the run has left."""

    def __init__(self, used: float):
        super().__init__(f"{used:.1f} s of CPU time")
        self.used = used


def process_tree_cpu_seconds(root_pid: int) -> float | None:
    """CPU time of ``root_pid`` and all its descendants, the reaped children of each included
    (utime + stime + cutime + cstime from /proc). The fallback where no cgroup counts: in the
    sandbox's pid namespace every orphan is re-parented to bwrap's init, itself a descendant, so
    no process leaves the tree; only children no one waited for before they exited are missed."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2:].split()
        try:
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = sum(int(value) for value in fields[11:15])
        except (IndexError, ValueError):
            continue
    if root_pid not in times:
        return None
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total / ticks


class CappedBuffer:
    """Keeps the first 3/4 and the last 1/4 of ``limit`` bytes; counts what it drops."""

    def __init__(self, limit: int):
        self.head_limit = max(0, limit * 3 // 4)
        self.tail_limit = max(0, limit - self.head_limit)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail and self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.tail_size -= len(self.tail[0])
            self.dropped += len(self.tail.popleft())
        if self.tail_size > self.tail_limit and self.tail:
            excess = self.tail_size - self.tail_limit
            self.tail[0] = self.tail[0][excess:]
            self.tail_size -= excess
            self.dropped += excess

    def text(self) -> str:
        tail = b"".join(self.tail)
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode() \
            if self.dropped else b""
        return str(storable((bytes(self.head) + middle + tail).decode("utf-8", "replace")))


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """One of the child's standard streams, all three opened as pipes (so never None)."""
    if stream is None:
        raise RuntimeError("the child was started without a pipe for this stream")
    return stream


class Child:
    """One sandboxed child process and its pipes (non-blocking, multiplexed with selectors)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, limits: SandboxLimits,
                 stderr: CappedBuffer, cgroups: Cgroups | None, wraps_signals: bool,
                 pass_fds: tuple[int, ...] = (), cpu_allowance: float | None = None,
                 interrupt: Callable[[], None] | None = None):
        self.limits = limits
        # Called about every CPU_CHECK_SECONDS while waiting on the child; what it raises stops
        # the wait (the run's lease was lost: nothing this run computes would be stored).
        self.interrupt = interrupt
        self.stderr = stderr
        self.cgroups = cgroups
        self.wraps_signals = wraps_signals  # bwrap reports a signal N as exit code 128 + N
        self.cpu_allowance = cpu_allowance  # CPU seconds this child may use (None: no check)
        self.cpu_used = 0.0
        self.cpu_checked = 0.0
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd,
                                     start_new_session=True, close_fds=True,
                                     pass_fds=tuple(pass_fds))
        self.child_in, self.child_out, self.child_err = (_pipe(stream) for stream in (
            self.proc.stdin, self.proc.stdout, self.proc.stderr))
        self.out = bytearray()
        self.out_dropped = 0  # stdout bytes past the cap, never buffered
        self.selector = selectors.DefaultSelector()
        for stream in (self.child_in, self.child_out, self.child_err):
            os.set_blocking(stream.fileno(), False)
        self.selector.register(self.child_out, selectors.EVENT_READ, "out")
        self.selector.register(self.child_err, selectors.EVENT_READ, "err")
        self.stdout_open = True
        self.stdin_open = True
        self.closed = False
        self.closed_pipes = False

    # ------------------------------------------------------------------ CPU

    def _read_cpu(self) -> None:
        used = None
        if self.cgroups is not None and self.cgroups.accounting is not None:
            used = self.cgroups.cpu_seconds()
        if used is None and not self.closed:
            used = process_tree_cpu_seconds(self.proc.pid)
        if used is not None:
            self.cpu_used = max(self.cpu_used, used)

    def _check(self) -> None:
        """Between two reads: the run's interruption, then its CPU budget."""
        if self.interrupt is not None:
            self.interrupt()
        self._check_cpu()

    def _check_cpu(self) -> None:
        now = time.monotonic()
        if self.cpu_allowance is None or now - self.cpu_checked < CPU_CHECK_SECONDS:
            return
        self.cpu_checked = now
        self._read_cpu()
        if self.cpu_used > self.cpu_allowance:
            raise CpuBudgetExceeded(self.cpu_used)

    # ------------------------------------------------------------------ I/O

    def _keep_output(self, data: bytes) -> None:
        """Buffer what the child wrote on stdout up to one reply line and its line end; an
        honest child writes one line and waits for the next message, so anything beyond is a
        flood, dropped here and raised by the next ``_take_line``."""
        room = max(0, self.limits.output_bytes + 1 - len(self.out))
        if len(data) > room:
            self.out_dropped += len(data) - room
            data = data[:room]
        self.out += data

    def _check_flood(self) -> None:
        if self.out_dropped:
            where = "without a line end" if b"\n" not in self.out else "after a reply line"
            raise OutputFlood(f"more than {self.limits.output_bytes} bytes {where} "
                              f"({self.out_dropped} more dropped unread)")

    def _take_line(self) -> bytes | None:
        self._check_flood()
        end = self.out.find(b"\n")
        if end < 0:
            if len(self.out) > self.limits.output_bytes:
                raise OutputFlood(f"more than {self.limits.output_bytes} bytes without a line end")
            return None
        if end > self.limits.output_bytes:
            raise OutputFlood(f"a reply of {end} bytes (limit {self.limits.output_bytes})")
        line = bytes(self.out[:end])
        del self.out[:end + 1]
        return line

    def _pump(self, timeout: float) -> None:
        for key, _events in self.selector.select(timeout):
            if key.data == "in":
                continue  # handled by the writer loop
            try:
                data = os.read(key.fd, 1 << 16)
            except BlockingIOError:
                continue
            if key.data == "out":
                if data:
                    self._keep_output(data)
                else:
                    self.selector.unregister(key.fileobj)
                    self.stdout_open = False
            else:
                if data:
                    self.stderr.add(data)
                else:
                    self.selector.unregister(key.fileobj)

    def exchange(self, message: dict | None, deadline: float) -> dict:
        """Send ``message`` (if any), then return the next reply line as a dict (a JSON object;
        its fields are checked by ``protocol.check_startup`` / ``check_reply``)."""
        pending = memoryview(json.dumps(message).encode() + b"\n") if message is not None \
            else memoryview(b"")
        registered = bool(pending) and self.stdin_open
        if registered:
            self.selector.register(self.child_in, selectors.EVENT_WRITE, "in")
        try:
            while pending and self.stdin_open:
                try:
                    written = os.write(self.child_in.fileno(), pending)
                    pending = pending[written:]
                    continue
                except BlockingIOError:
                    pass
                except (BrokenPipeError, OSError):
                    self.stdin_open = False
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ReplyTimeout()
                self._pump(min(remaining, CPU_CHECK_SECONDS))
                self._check_flood()  # a child that floods instead of reading its message
                self._check()
        finally:
            if registered:
                self.selector.unregister(self.child_in)
        while True:
            line = self._take_line()
            if line is not None:
                return decode(line)  # bounded; raises ProtocolViolation
            if not self.stdout_open:
                raise ChildDied()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ReplyTimeout()
            self._pump(min(remaining, CPU_CHECK_SECONDS))
            self._check()

    # ------------------------------------------------------------------ ending

    def _pump_while(self, reading: Callable[[], bool], seconds: float, step: float) -> None:
        """Read the child's pipes while ``reading()`` holds and the pipes are open, at most
        ``seconds``; what arrives is kept as usual (a flood is dropped, not raised here)."""
        deadline = time.monotonic() + seconds
        while not self.closed_pipes and reading():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._pump(min(remaining, step))

    def await_output_end(self, seconds: float) -> None:
        """Read until the child's stdout ends (every process of the jail has exited)."""
        self._pump_while(lambda: self.stdout_open, seconds, CPU_CHECK_SECONDS)

    def _drain_stderr(self, seconds: float) -> None:
        self._pump_while(lambda: any(key.data == "err" for key in self.selector.get_map().values()), seconds, 0.2)

    def _close_pipes(self) -> None:
        self.closed_pipes = True
        self.selector.close()
        for stream in (self.child_in, self.child_out, self.child_err):
            try:
                stream.close()
            except OSError:
                pass

    def kill(self) -> None:
        if self.closed:
            return
        self._read_cpu()  # the process tree's last reading (a cgroup's counter outlives it)
        self.closed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.cgroups is not None:
            self.cgroups.kill_all()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._drain_stderr(0.2)
        self._close_pipes()
        self._read_cpu()

    def finish(self, *, graceful: bool) -> None:
        """End the child: close stdin and let it exit (graceful), else kill it."""
        if graceful and not self.closed:
            try:
                self.child_in.close()
            except OSError:
                pass
            self.stdin_open = False
            deadline = time.monotonic() + 5
            while self.proc.poll() is None and time.monotonic() < deadline:
                self._pump(0.05)
        self.kill()

    def death(self) -> tuple[str | None, int | None]:
        """After stdout closed: (signal name, exit code) of the child."""
        self._drain_stderr(1.0)
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        number = None
        if code is not None and code < 0:
            number = -code
        elif code is not None and self.wraps_signals and code > 128:
            number = code - 128
        if number is not None:
            try:
                return signal.Signals(number).name, code
            except ValueError:
                return f"signal {number}", code
        return None, code
