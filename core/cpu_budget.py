"""A budget of CPU seconds for one step of a background job, enforced by the kernel's profiling timer.

A job's wall-clock limit (Celery's soft time limit) stops a step that waits; it does not stop a
step that computes for minutes below that limit while its worker serves nobody else. Within
:func:`cpu_budget`, ``ITIMER_PROF`` counts the CPU time the process spends (user and system, all
threads) and, once ``seconds`` are used, its signal raises :class:`CpuBudgetExceeded` in the main
thread, at the next Python instruction: the step stops, the worker is free, and the caller records
the failure through its job protocol (``submissions.lifecycle.fail_run`` for a scoring run).

Signals reach the main thread only: elsewhere (a thread pool, a test thread) the budget cannot be
enforced and :func:`cpu_budget` yields ``False``; the wall-clock limit still applies there.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class CpuBudgetExceeded(Exception):
    """The step used up its CPU seconds (``seconds``)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"used more than {seconds:g} CPU seconds")
        self.seconds = seconds


@contextmanager
def cpu_budget(seconds: float) -> Iterator[bool]:
    """Stop the block with :class:`CpuBudgetExceeded` once it has used ``seconds`` of CPU time.

    Yields whether the budget is enforced (main thread only). The previous handler and timer are
    put back on exit, so budgets do not leak into the rest of the worker's life."""
    if seconds <= 0:
        raise ValueError("a CPU budget is a positive number of seconds")
    if threading.current_thread() is not threading.main_thread():
        yield False
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise CpuBudgetExceeded(seconds)

    previous_handler = signal.signal(signal.SIGPROF, stop)
    previous_timer = signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_PROF, *previous_timer)
        signal.signal(signal.SIGPROF, previous_handler)
