"""Background work: one way to send a Celery task, one protocol for work that must finish.

Every kind of background job (scoring a submission, its diagnostics, a QUACKIE inclusion run,
a skill-set build, an ICQ cue discovery) follows the same protocol (docs/operations.md#background-jobs):

1. **schedule**: the job's state becomes ``queued`` (attempts 0) and its message is sent after
   the surrounding transaction commits (:func:`send_after_commit`), so a worker never looks
   for a row it cannot see yet; a broker outage only delays it (the reaper sends it again).
2. **claim**: a worker moves ``queued`` to ``running`` in one conditional update that counts
   the attempt. A duplicate message, or a second worker, finds nothing to claim.
3. **heartbeat**: a long run renews its heartbeat (and records progress) while it owns the
   job, i.e. while the state still names its attempt. :class:`Heartbeat` renews it by time
   from a side thread, so a run stays owned however long one step takes (a sandbox starting,
   a slow import, a model load), and a dead worker's run is noticed one lease after its
   last renewal.
4. **finish**: ``running`` becomes ``done`` or ``failed``, again only for the owning attempt.
5. **reap**: beat calls :meth:`Job.reap`; a running job whose heartbeat is older than its
   lease (its worker died) and a queued job whose message seems lost are sent again, and a
   job that was claimed ``SCORING_MAX_ATTEMPTS`` times gives up with a note people can read.

Jobs differ only in where they keep their state: :class:`ColumnState` (columns of a model
row) or :class:`JsonPartState` (one part of a JSON column, for the dataset-level jobs of a
test set). Submissions keep theirs in their own state machine (``submissions.lifecycle``),
which implements the same :class:`JobState` interface through its transition function.
Tasks are sent by name, so no module imports a ``tasks.py``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from types import TracebackType
from typing import Any, Generic, TypeVar, overload

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import connection, models, transaction
from django.db.models import F, Q
from django.utils import timezone

log = logging.getLogger(__name__)


class JobStatus(models.TextChoices):
    """The one vocabulary of background jobs (a submission's own states extend it)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


WAITING = (JobStatus.QUEUED, JobStatus.RUNNING)


#: Tasks whose messages coalesce: while one with given arguments waits in its queue, sending it
#: again with the same arguments sends nothing, since the waiting one reads the state when it
#: runs and so does the work of both (a board rebuild computes the board's latest generation).
#: Scoring a board change per entry scored used to leave hundreds of rebuilds waiting.
COALESCED_TASKS = frozenset({"leaderboards.tasks.rebuild_boards"})


def _pending_key(task_name: str, args: Any) -> str:
    text = json.dumps([task_name, list(args)], sort_keys=True, default=str)
    return f"expbench-pending-{hashlib.sha256(text.encode()).hexdigest()[:32]}"


def _already_pending(task_name: str, args: tuple[Any, ...]) -> bool:
    """Mark the message of a coalesced task as waiting; True when one already was. The mark
    expires after QUEUE_LEASE_SECONDS, so a message the broker lost blocks no later one for
    longer than that. A cache that fails coalesces nothing."""
    if task_name not in COALESCED_TASKS:
        return False
    try:
        return not cache.add(_pending_key(task_name, args), 1, timeout=settings.QUEUE_LEASE_SECONDS)
    except Exception as exc:
        log.warning("could not mark %s as pending (%s); sent anyway", task_name, type(exc).__name__)
        return False


def task_starting(sender: Any = None, args: Any = None, **kwargs: Any) -> None:
    """Celery's ``task_prerun``: a coalesced task no longer waits once it starts, so a change
    made from now on sends a new message (the one starting may read the state before it)."""
    name = getattr(sender, "name", "")
    if name in COALESCED_TASKS:
        try:
            cache.delete(_pending_key(name, args or ()))
        except Exception as exc:
            log.warning("could not clear the pending mark of %s (%s)", name, type(exc).__name__)


@dataclass(frozen=True)
class _Named:
    name: str


def send_after_commit(task_name: str, *args: Any, countdown: float | None = None) -> None:
    """Send the Celery task ``task_name`` with ``args`` once the current transaction commits
    (at once outside a transaction); ``countdown``: not before that many seconds. Routing
    follows ``CELERY_TASK_ROUTES`` by name. A broker that is down is logged, not raised: the
    job stays queued and the reaper sends it again."""

    def send() -> None:
        if _already_pending(task_name, args):
            return
        try:
            current_app.send_task(task_name, args=list(args), countdown=countdown)
        except Exception:  # broker down: nothing is lost, the reaper retries
            log.exception("could not send %s%s; the reaper will send it again", task_name, tuple(args))
            if task_name in COALESCED_TASKS:  # nothing waits: the next change must send again
                task_starting(_Named(task_name), args)

    transaction.on_commit(send)


def stopped(attempts: int) -> str:
    """How a job that kept losing its worker is explained to the people waiting for it."""
    return f"stopped {attempts} time{'s' if attempts != 1 else ''} without finishing (worker lost or timed out)"


class Heartbeat:
    """Calls ``beat()`` every ``interval`` seconds from a side thread while the ``with`` block
    runs: the renewal of a run's lease by time, whatever the run is doing (a sandbox starting,
    an import, a model load, one long sample), not by its progress. ``beat`` returns False once
    the run no longer owns its job; then the renewals stop and :attr:`lost` is set, for the
    run to stop at its next check. A database error stops the renewals without killing the
    worker: the lease then runs out and the reaper decides."""

    def __init__(self, beat: Callable[[], bool], interval: float, name: str = "heartbeat") -> None:
        self.beat = beat
        self.interval = interval
        self.lost = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)

    def run(self) -> None:
        try:
            while not self.stop.wait(self.interval):
                if not self.beat():
                    self.lost.set()
                    return
        except Exception as exc:
            log.warning("%s: renewals stopped (%s)", self.thread.name, type(exc).__name__)
        finally:
            connection.close()  # the thread's own connection

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop.set()
        self.thread.join()


def heartbeat_interval(lease_seconds: float) -> float:
    """How often a run renews a lease of ``lease_seconds``: three renewals per lease, so one
    slow database write never lets a live run's lease expire."""
    return max(0.5, lease_seconds / 3)


@dataclass(frozen=True)
class Stale:
    """A job the reaper must look at: its row, the status and attempt it was seen with (the
    conditional updates check both), and the task that runs it when that depends on the row."""

    pk: int
    status: str
    attempts: int
    task_name: str | None = None


class JobState:
    """Where one kind of job keeps its state. Every write is conditional on what was read."""

    def stale(self, now: datetime) -> Iterable[Stale]:
        raise NotImplementedError

    def requeue(self, job: Stale, now: datetime) -> bool:
        """Queued again (from running or queued), if still as seen."""
        raise NotImplementedError

    def give_up(self, job: Stale, now: datetime, note: str) -> bool:
        """Failed with ``note``, if still as seen."""
        raise NotImplementedError

    def claim(self, pk: int, *, whatever_state: bool = False) -> int | None:
        """queued -> running; the attempt number now owning the job, or None (nothing queued)."""
        raise NotImplementedError

    def take(self, pk: int) -> int:
        """A run started by hand (a management command) claims the job whatever its state."""
        attempt = self.claim(pk, whatever_state=True)
        if attempt is None:
            raise LookupError(f"no job row {pk} to take")
        return attempt


State = TypeVar("State", bound=JobState)


@dataclass(frozen=True)
class Job(Generic[State]):
    """One kind of background job: its Celery task, where its state lives, and how a give-up
    is explained (``what`` starts the sentence, ``advice`` ends it). Generic in its state, so
    that ``job.state`` has the methods of its kind (``JsonPartState.write``, ...)."""

    key: str
    task_name: str
    state: State
    what: str
    advice: str = ""

    def send(self, pk: int, task_name: str | None = None, countdown: float | None = None) -> None:
        send_after_commit(task_name or self.task_name, pk, countdown=countdown)

    def give_up_note(self, attempts: int) -> str:
        note = f"{self.what} {stopped(attempts)}"
        return f"{note}; {self.advice}." if self.advice else f"{note}."

    def reap(self, now: datetime | None = None) -> dict[str, int]:
        """Send stale jobs again; give up on the ones claimed too often. Returns counts
        ``{key}_resent`` and ``{key}_failed``."""
        now = now or timezone.now()
        resent = failed = 0
        for job in self.state.stale(now):
            if job.status == JobStatus.RUNNING and job.attempts >= settings.SCORING_MAX_ATTEMPTS:
                failed += bool(self.state.give_up(job, now, self.give_up_note(job.attempts)))
            elif self.state.requeue(job, now):
                self.send(job.pk, job.task_name)
                resent += 1
        return {f"{self.key}_resent": resent, f"{self.key}_failed": failed}


def running_lease(now: datetime) -> datetime:
    """Heartbeats older than this belong to a dead worker."""
    return now - timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS)


def queued_lease(now: datetime) -> datetime:
    """Queued this long and never claimed: the message was lost."""
    return now - timedelta(seconds=settings.QUEUE_LEASE_SECONDS)


@dataclass(frozen=True)
class ColumnState(JobState):
    """Job state in three columns of a model row: status, heartbeat time and attempts.
    ``scope`` limits the rows that can hold such a job (e.g. scored submissions only);
    ``on_give_up`` gives the other columns to write with the note."""

    model: type[models.Model]  # read through _default_manager, as Django's generic code does
    status: str = "status"
    beat: str = "updated_at"
    attempts: str = "attempts"
    scope: Q = field(default_factory=Q)
    on_give_up: Callable[[str], dict[str, Any]] = lambda note: {}

    def _rows(self) -> models.QuerySet:
        return self.model._default_manager.filter(self.scope)

    def schedule(self, pk: int, **fields: Any) -> bool:
        """Queued afresh (attempts back to 0), whatever it was."""
        return bool(self._rows().filter(pk=pk).update(**{
            self.status: JobStatus.QUEUED, self.beat: timezone.now(), self.attempts: 0, **fields}))

    def claim(self, pk: int, *, whatever_state: bool = False) -> int | None:
        """queued -> running; the attempt number now owning the job, or None. ``whatever_state``:
        a run started by hand (a management command) takes the job from any state."""
        rows = self._rows().filter(pk=pk)
        if not whatever_state:
            rows = rows.filter(**{self.status: JobStatus.QUEUED})
        if not rows.update(**{self.status: JobStatus.RUNNING, self.beat: timezone.now(),
                              self.attempts: F(self.attempts) + 1}):
            return None
        return self.model._default_manager.filter(pk=pk).values_list(self.attempts, flat=True).first()

    def _owned(self, pk: int, attempt: int) -> models.QuerySet:
        return self._rows().filter(pk=pk, **{self.status: JobStatus.RUNNING, self.attempts: attempt})

    def heartbeat(self, pk: int, attempt: int, **fields: Any) -> bool:
        return bool(self._owned(pk, attempt).update(**{self.beat: timezone.now(), **fields}))

    def finish(self, pk: int, attempt: int, status: str, **fields: Any) -> bool:
        return bool(self._owned(pk, attempt).update(**{self.status: status, self.beat: timezone.now(), **fields}))

    def stale(self, now: datetime) -> Iterable[Stale]:
        status, beat = self.status, self.beat
        rows = self._rows().filter(
            Q(**{status: JobStatus.RUNNING, f"{beat}__lt": running_lease(now)})
            | Q(**{status: JobStatus.QUEUED, f"{beat}__lt": queued_lease(now)})
            | Q(**{f"{status}__in": WAITING, f"{beat}__isnull": True}))
        return [Stale(pk, s, a) for pk, s, a in rows.values_list("pk", status, self.attempts)]

    def _seen(self, job: Stale) -> models.QuerySet:
        return self._rows().filter(pk=job.pk, **{self.status: job.status, self.attempts: job.attempts})

    def requeue(self, job: Stale, now: datetime) -> bool:
        return bool(self._seen(job).update(**{self.status: JobStatus.QUEUED, self.beat: now}))

    def give_up(self, job: Stale, now: datetime, note: str) -> bool:
        return bool(self._seen(job).update(**{self.status: JobStatus.FAILED, self.beat: now,
                                              **self.on_give_up(note)}))


def heartbeat_time(value: str | None) -> datetime:
    """A stored ISO time, or the epoch when missing (a job from before heartbeats: stale)."""
    try:
        moment = datetime.fromisoformat(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return datetime(1970, 1, 1, tzinfo=dt_timezone.utc)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, dt_timezone.utc)


@dataclass(frozen=True)
class JsonPartState(JobState):
    """Job state inside ``row.<column>[part]`` (a JSON object with ``status``, ``attempts`` and
    the heartbeat ``updated_at``, plus whatever the job stores there). Every read-and-write
    happens under a row lock, so two jobs writing different parts of one row never drop each
    other's update."""

    model: type[models.Model]
    part: str
    column: str = "diagnostics"

    @overload
    def change(self, pk: int, new_part: Callable[[dict], dict]) -> dict: ...

    @overload
    def change(self, pk: int, new_part: Callable[[dict], dict | None]) -> dict | None: ...

    def change(self, pk: int, new_part: Callable[[dict], dict | None]) -> dict | None:
        """Under the row lock, replace the part by ``new_part(part)`` stamped with a fresh
        heartbeat; ``new_part`` returns None to leave the row alone. Returns the part written."""
        with transaction.atomic():
            stored = (self.model._default_manager.select_for_update().filter(pk=pk)
                      .values_list(self.column, flat=True).first()) or {}
            part = new_part(stored.get(self.part) or {})
            if part is None:
                return None
            stored[self.part] = {**part, "updated_at": timezone.now().isoformat()}
            self.model._default_manager.filter(pk=pk).update(**{self.column: stored})
        return stored[self.part]

    def write(self, pk: int, *, replace: bool = False, expect: Callable[[dict], bool] | None = None,
              **fields: Any) -> dict | None:
        """Merge ``fields`` into (or, with ``replace``, set) the part if ``expect(part)`` holds
        (always without ``expect``). Returns the new part, or None when the expectation failed."""
        return self.change(pk, lambda part: None if expect is not None and not expect(part)
                           else {**({} if replace else part), **fields})

    def read(self, pk: int) -> dict:
        stored = self.model._default_manager.filter(pk=pk).values_list(self.column, flat=True).first() or {}
        return stored.get(self.part) or {}

    def schedule(self, pk: int, **fields: Any) -> dict | None:
        return self.write(pk, replace=True, status=JobStatus.QUEUED, attempts=0, **fields)

    def claim(self, pk: int, *, whatever_state: bool = False) -> int | None:
        """queued -> running, as :meth:`ColumnState.claim`."""
        part = self.change(pk, lambda part: {**part, "status": JobStatus.RUNNING,
                                             "attempts": part.get("attempts", 0) + 1}
                           if whatever_state or part.get("status") == JobStatus.QUEUED else None)
        return None if part is None else part["attempts"]

    def _owned(self, attempt: int) -> Callable[[dict], bool]:
        return lambda part: part.get("status") == JobStatus.RUNNING and part.get("attempts") == attempt

    def heartbeat(self, pk: int, attempt: int, **fields: Any) -> bool:
        return self.write(pk, expect=self._owned(attempt), **fields) is not None

    def finish(self, pk: int, attempt: int, status: str, *, replace: bool = False, **fields: Any) -> bool:
        if replace:
            fields.setdefault("attempts", attempt)
        return self.write(pk, replace=replace, expect=self._owned(attempt), status=status, **fields) is not None

    def stale(self, now: datetime) -> Iterable[Stale]:
        waiting = self.model._default_manager.filter(**{f"{self.column}__{self.part}__status__in": list(WAITING)})
        found = []
        for pk, stored in waiting.values_list("pk", self.column):
            part = stored[self.part]
            lease = running_lease(now) if part["status"] == JobStatus.RUNNING else queued_lease(now)
            if heartbeat_time(part.get("updated_at")) < lease:
                found.append(Stale(pk, part["status"], part.get("attempts", 0)))
        return found

    def _seen(self, job: Stale) -> Callable[[dict], bool]:
        return lambda part: part.get("status") == job.status and part.get("attempts", 0) == job.attempts

    def requeue(self, job: Stale, now: datetime) -> bool:
        return self.write(job.pk, expect=self._seen(job), status=JobStatus.QUEUED) is not None

    def give_up(self, job: Stale, now: datetime, note: str) -> bool:
        return self.write(job.pk, expect=self._seen(job), status=JobStatus.FAILED, note=note) is not None
