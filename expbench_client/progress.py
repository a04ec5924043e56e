"""``--wait``: poll a submission until it is finished, showing where it is.

On a terminal one status line is rewritten in place (``\\r``); in a log or a pipe a line is
printed only when something changed, and progress at most every few seconds, so a CI log stays
short. Polling backs off gently, 1 s growing to 5 s, and starts fast again after a change.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TextIO

TERMINAL = frozenset({"scored", "failed", "rejected", "cancelled"})
FIRST_POLL = 1.0
POLL_GROWTH = 1.5
LONGEST_POLL = 5.0
LOG_EVERY = 5.0  # seconds between two progress lines when not on a terminal


class WaitTimeout(Exception):
    def __init__(self, last: Mapping[str, Any] | None) -> None:
        super().__init__("timed out")
        self.last = last


def poll_delays(first: float = FIRST_POLL, growth: float = POLL_GROWTH,
                longest: float = LONGEST_POLL) -> Iterator[float]:
    delay = first
    while True:
        yield delay
        delay = min(longest, delay * growth)


def format_elapsed(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def progress_of(submission: Mapping[str, Any]) -> tuple[int, int] | None:
    """(done, total) of a code run from ``details.progress``, when the server reports it."""
    progress = (submission.get("details") or {}).get("progress")
    if not isinstance(progress, Mapping):
        return None
    done, total = progress.get("done"), progress.get("total")
    if not isinstance(done, int) or not isinstance(total, int) or total <= 0:
        return None
    return done, total


def format_progress(submission: Mapping[str, Any], elapsed: float) -> str:
    """``#12 running  340/1000 samples (34%)  1 min 05 s``."""
    parts = [f"#{submission.get('id', '?')} {submission.get('status', '?')}"]
    progress = progress_of(submission)
    if progress is not None:
        done, total = progress
        parts.append(f"{done}/{total} samples ({100 * done // total}%)")
    parts.append(format_elapsed(elapsed))
    return "  ".join(parts)


class ProgressLine:
    """Shows successive states of a submission on ``stream`` (stderr)."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.shown_width = 0
        self.last_key: tuple[Any, ...] | None = None
        self.last_status: Any = None
        self.last_logged = float("-inf")

    def update(self, submission: Mapping[str, Any], elapsed: float) -> None:
        line = format_progress(submission, elapsed)
        if self.tty:
            # Pad over the previous line instead of an ANSI "erase line": works in any terminal.
            self.stream.write("\r" + line.ljust(self.shown_width))
            self.stream.flush()
            self.shown_width = len(line)
            return
        key = (submission.get("status"), progress_of(submission))
        now = self.clock()
        status_changed = submission.get("status") != self.last_status
        if key != self.last_key and (status_changed or now - self.last_logged >= LOG_EVERY):
            self.stream.write(line + "\n")
            self.stream.flush()
            self.last_key, self.last_status, self.last_logged = key, submission.get("status"), now

    def finish(self) -> None:
        """End the rewritten line, so what follows starts on a line of its own."""
        if self.tty and self.shown_width:
            self.stream.write("\n")
            self.stream.flush()
            self.shown_width = 0


def wait_until_finished(fetch: Callable[[], Mapping[str, Any]], timeout: float, line: ProgressLine, *,
                        clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                        first: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """Poll ``fetch`` (the submission's JSON) until its status is final; raise WaitTimeout after
    ``timeout`` seconds. The caller ends the line (``line.finish()``), also on Ctrl-C."""
    start = clock()
    delays = poll_delays()
    submission = first if first is not None else fetch()
    last_key = None
    while True:
        elapsed = clock() - start
        line.update(submission, elapsed)
        if submission.get("status") in TERMINAL:
            return submission
        if elapsed >= timeout:
            raise WaitTimeout(submission)
        key = (submission.get("status"), progress_of(submission))
        if key != last_key:
            delays = poll_delays()  # something moved: look again soon
            last_key = key
        next_poll = clock() + min(next(delays), max(0.0, timeout - elapsed))
        while (remaining := next_poll - clock()) > 0:
            # Tick each second on a terminal, so the elapsed time counts up between polls.
            sleep(min(1.0, remaining) if line.tty else remaining)
            if line.tty and next_poll - clock() > 0:
                line.update(submission, clock() - start)
        submission = fetch()


def format_upload(what: str, sent: int, total: int, seconds: float) -> str:
    """``uploading model.zip: 123.4 of 2000.0 MB (6%)  41.2 MB/s``."""
    line = f"uploading {what}: {sent / 1e6:.1f} of {total / 1e6:.1f} MB ({100 * sent // max(total, 1)}%)"
    if seconds > 0 and sent:
        line += f"  {sent / 1e6 / seconds:.1f} MB/s"
    return line


class UploadMeter:
    """An upload's progress on one line of ``stream`` (stderr), rewritten in place like the wait
    line. Only on a terminal: in a log or a pipe, or with ``--json`` (``quiet``), it says
    nothing, since a line per megabyte would bury the answer. Redrawn at most every
    ``every`` seconds, and once more when the last byte is sent."""

    def __init__(self, stream: TextIO, what: str, *, quiet: bool = False,
                 clock: Callable[[], float] = time.monotonic, every: float = 0.2) -> None:
        self.stream, self.what, self.clock, self.every = stream, what, clock, every
        self.shown = not quiet and bool(getattr(stream, "isatty", lambda: False)())
        self.started = clock()
        self.drawn_at = float("-inf")
        self.width = 0

    def update(self, sent: int, total: int) -> None:
        if not self.shown:
            return
        now = self.clock()
        if sent < total and now - self.drawn_at < self.every:
            return
        line = format_upload(self.what, sent, total, now - self.started)
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width, self.drawn_at = len(line), now

    def finish(self) -> None:
        """End the line, so what follows starts on a line of its own."""
        if self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0
