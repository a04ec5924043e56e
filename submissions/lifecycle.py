"""The submission state machine, and scoring as a background job (core.jobs).

:func:`transition` is the one function that writes ``Submission.status``: it checks every move
against ``LEGAL_TRANSITIONS`` and makes it with one conditional UPDATE that names the status it
expects (and, for a running submission, the attempt that owns it). A duplicate message, a
second worker or a worker that comes back after the reaper gave its run away finds no
matching row and does nothing, so each submission is scored and stored exactly once.
"""
from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Expression, F, Max, Q
from django.utils import timezone

from benchmark.models import TestSet, boards_changed
from core.jobs import Heartbeat, Job, JobState, Stale, heartbeat_interval

from . import phases, storage
from .models import LEGAL_TRANSITIONS, ErrorCategory, IllegalTransition, ScoreRecord, Status, Submission
from .notifications import notify_run_finished

log = logging.getLogger(__name__)

TASK_FOR_KIND = {Submission.CODE: "submissions.tasks.run_code_submission",
                 Submission.MODEL: "submissions.tasks.run_model_submission"}
DEFAULT_TASK = "submissions.tasks.score_submission"


def transition(submission: Submission | int, new_status: Status, *, expect: Collection[Status] | None = None,
               where: Q | None = None, **fields: Any) -> bool:
    """Move a submission to ``new_status`` and write ``fields`` with it.

    ``expect``: the statuses the row may hold now (default: the one this instance holds); each
    move from one of them to ``new_status`` must be legal, else :class:`IllegalTransition`.
    ``where``: further conditions the row must meet (the attempt that owns a run, an expired
    lease). Returns True when this call made the change; False when the row moved on
    meanwhile. A submission not saved yet is created in ``new_status`` (from ``uploaded``)."""
    instance = submission if isinstance(submission, Submission) else None
    if expect is not None:
        expected = {Status(s) for s in expect}
    else:  # a submission given by id always comes with ``expect``
        expected = {Status(instance.status)}  # type: ignore[union-attr]
    illegal = [s for s in expected if new_status not in LEGAL_TRANSITIONS[s]]
    if illegal:
        raise IllegalTransition(f"{'/'.join(sorted(illegal))} -> {new_status}")
    if instance is not None and instance.pk is None:
        if expected != {Status.UPLOADED}:
            raise IllegalTransition(f"a new submission starts as uploaded, not {'/'.join(sorted(expected))}")
        instance.status = new_status
        for name, value in fields.items():
            setattr(instance, name, value)
        instance.save()
        return True
    pk = submission.pk if isinstance(submission, Submission) else submission
    rows = Submission.objects.filter(pk=pk, status__in=expected)
    if where is not None:
        rows = rows.filter(where)
    if not rows.update(status=new_status, **fields):
        return False
    if Status.SCORED in expected or new_status == Status.SCORED:  # a board shows scored entries (and re-scores)
        boards_changed([instance.task_id if instance is not None
                        else Submission.objects.filter(pk=pk).values_list("task_id", flat=True).first()])
    if instance is not None:
        instance.status = new_status
        for name, value in fields.items():
            if not isinstance(value, (Expression, F)):
                setattr(instance, name, value)
    return True


def task_name_for(kind: str) -> str:
    """Code submissions run in the sandbox worker; every file goes to its scorer."""
    return TASK_FOR_KIND.get(kind, DEFAULT_TASK)


def mark_queued(submission: Submission, **fields: Any) -> bool:
    """uploaded/failed/scored -> queued, and send it to the workers after commit."""
    if transition(submission, Status.QUEUED, queued_at=timezone.now(), error_category="", error_message="",
                  **fields):
        SCORING.send(submission.pk, task_name_for(submission.kind))
        return True
    return False


#: The kinds whose runs take turns between users (the sandbox queue: a run can take an hour).
FAIR_SHARE_KINDS = frozenset({Submission.CODE, Submission.MODEL})
#: How long a run that gave way to another user's waits before its message comes again.
FAIR_SHARE_RETRY_SECONDS = 5.0


def gives_way(submission_id: int) -> bool:
    """Fair shares between users: a queued run of a ``FAIR_SHARE_KINDS`` kind gives way while
    another user, served less recently, has a run of that kind queued; "served" is when the
    user's latest run of the kind started (never: least recently). So a user's second run never
    starts before another user's first, whether their first run is still running (several
    slots) or has just finished (one slot). The order is strict (the least recently served user
    never gives way, ties go to the queue's order), so runs cannot keep giving way to each
    other."""
    row = (Submission.objects.filter(pk=submission_id, status=Status.QUEUED, kind__in=FAIR_SHARE_KINDS)
           .values_list("user_id", "kind").first())
    if row is None:
        return False
    user_id, kind = row
    others = set(Submission.objects.filter(kind=kind, status=Status.QUEUED).exclude(user_id=user_id)
                 .values_list("user_id", flat=True))
    if not others:
        return False
    served = dict(Submission.objects.filter(kind=kind, user_id__in=others | {user_id}, started_at__isnull=False)
                  .values("user_id").annotate(last=Max("started_at")).values_list("user_id", "last"))
    mine = served.get(user_id)
    return mine is not None and any(served.get(other) is None or served[other] < mine for other in others)


def give_way(submission: int) -> bool:
    """Send a queued run's message again in ``FAIR_SHARE_RETRY_SECONDS`` (not a status change:
    it stays queued; its ``queued_at``, when its message was last sent, moves on so the reaper
    does not take it for lost). False when it is no longer queued."""
    row = Submission.objects.filter(pk=submission, status=Status.QUEUED).values_list("kind", flat=True).first()
    if row is None or not Submission.objects.filter(pk=submission, status=Status.QUEUED).update(
            queued_at=timezone.now()):
        return False
    SCORING.send(submission, task_name_for(row), countdown=FAIR_SHARE_RETRY_SECONDS)
    return True


def start_run(submission_id: int) -> Submission | None:
    """Claim a submission for scoring. Returns the claimed Submission with its attempt number,
    or None when there is nothing to do (already scored, cancelled, or running elsewhere
    under a live lease)."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.SCORING_LEASE_SECONDS)
    claimable = Q(status=Status.QUEUED) | Q(status=Status.RUNNING, lease_expires_at__lt=now)
    if not transition(submission_id, Status.RUNNING, expect={Status.QUEUED, Status.RUNNING}, where=claimable,
                      started_at=now, lease_expires_at=lease, attempts=F("attempts") + 1):
        return None
    return Submission.objects.select_related("task", "test_set", "rescore_test_set").get(pk=submission_id)


def heartbeat(submission: Submission, **fields: Any) -> bool:
    """Renew the run's lease (and record progress in ``fields``), so the reaper never takes a
    live run away. Returns False when this run no longer owns the submission."""
    lease = timezone.now() + timedelta(seconds=settings.SCORING_LEASE_SECONDS)
    return bool(Submission.objects.filter(pk=submission.pk, status=Status.RUNNING, attempts=submission.attempts)
                .update(lease_expires_at=lease, **fields))


def lease_renewal(submission: Submission, interval: float | None = None) -> Heartbeat:
    """The claimed run's lease, renewed by time from a side thread for as long as the ``with``
    block runs (every third of ``SCORING_LEASE_SECONDS``): a live run keeps its submission
    however long its start-up or one step takes; its ``lost`` is set once the reaper gave the
    submission to another attempt."""
    every = interval if interval is not None else heartbeat_interval(settings.SCORING_LEASE_SECONDS)
    return Heartbeat(lambda: heartbeat(submission), every, name=f"lease-{submission.pk}")


def _finish(submission: Submission, new_status: Status, **fields: Any) -> bool:
    """running -> new_status, only for the attempt that claimed it."""
    fields.setdefault("finished_at", timezone.now())
    rescore = is_rescore(submission)
    finished = transition(submission, new_status, expect={Status.RUNNING}, where=Q(attempts=submission.attempts),
                          lease_expires_at=None, **fields)
    if not finished:
        log.warning("submission %s attempt %s lost its lease; result discarded", submission.pk, submission.attempts)
    elif not rescore:  # a maintainers' re-score emails nobody
        notify_after_commit(submission.pk)
    return finished


def notify_after_commit(submission_id: int) -> None:
    """The owner's "run finished" email (if they asked for it), once the result is committed."""

    def send() -> None:
        submission = (Submission.objects.select_related("task__benchmark", "user__profile")
                      .defer("item_scores").filter(pk=submission_id).first())
        if submission is not None:
            notify_run_finished(submission)

    transaction.on_commit(send)


def store_scores(submission: Submission, *, scores: dict, ci: dict, item_scores: list, total: int,
                 unanswered: int, scorer_version: str, details: dict | None = None, note: str = "") -> bool:
    """running -> scored. The score joins the submission's history (``ScoreRecord``), tagged with
    the test-set and scorer versions it was computed on (and ``note``, e.g. predictions ignored);
    a re-score's target test set becomes the submission's test set in the same transaction, so
    the board never mixes versions."""
    test_set = submission.scoring_test_set
    previous = last_score(submission)
    now = timezone.now()
    # A re-score keeps the entry's date (when it was first scored); its history has the new one.
    when = {"finished_at": submission.finished_at} if is_rescore(submission) else {}
    # An entry of a phase whose private part is not revealed yet stores its public part's score.
    scores, ci, item_scores, held = phases.hold_private_part(submission, scores, ci, item_scores)
    with transaction.atomic():
        finished = _finish(submission, Status.SCORED, scores=scores, ci=ci, item_scores=item_scores, total=total,
                           unanswered=unanswered, scorer_version=scorer_version, details=details or {},
                           test_set=test_set, rescore_test_set=None, error_category="", error_message="",
                           held_item_scores=held, **when)
        if finished:
            ScoreRecord.objects.create(
                submission=submission, test_set=test_set, test_set_version=test_set.version,
                scorer_version=scorer_version, scores=scores, ci=ci, total=total, unanswered=unanswered,
                reason=_with_note(score_change_reason(previous, test_set, scorer_version), note), scored_at=now)
    return finished


def score_change_reason(previous: ScoreRecord | None, test_set: Any, scorer_version: str) -> str:
    """What a new score was computed for, as the entry's history shows it."""
    if previous is None:
        return "first score"
    changes = []
    if previous.test_set_id != test_set.pk:
        note = f": {test_set.change_note}" if test_set.change_note else ""
        changes.append(f"test set {previous.test_set_version} → {test_set.version}{note}")
    if previous.scorer_version != scorer_version:
        changes.append(f"scorer {previous.scorer_version} → {scorer_version}")
    return "re-scored: " + "; ".join(changes) if changes else "re-scored (same test set and scorer)"


def _with_note(reason: str, note: str) -> str:
    """A history reason with its note, within the column's 300 characters (the note kept whole)."""
    if not note:
        return reason
    room = 300 - len(note) - 2
    return (reason if len(reason) <= room else reason[:room - 1] + "…") + "; " + note


def last_score(submission: Submission) -> ScoreRecord | None:
    """The latest stored score of the submission (failed re-scores have no scores: skipped)."""
    return submission.score_history.exclude(scores={}).order_by("-scored_at", "-pk").first()


def is_rescore(submission: Submission) -> bool:
    """A run of a submission that already has a score (a maintainer's re-score)."""
    return submission.rescore_test_set_id is not None


def reject_run(submission: Submission, message: str, category: ErrorCategory = ErrorCategory.INVALID_INPUT) -> bool:
    """running -> rejected: the upload is not a valid submission (no quota is charged)."""
    if is_rescore(submission):
        return _abandon_rescore(submission, message)
    rejected = _finish(submission, Status.REJECTED, error_category=category, error_message=message)
    if rejected:
        storage.discard_rejected_file(submission)  # the row and its message stay; the bytes go
    return rejected


def fail_run(submission: Submission, category: ErrorCategory, message: str) -> bool:
    if is_rescore(submission):
        return _abandon_rescore(submission, message)
    return _finish(submission, Status.FAILED, error_category=category, error_message=message)


def _abandon_rescore(submission: Submission, message: str) -> bool:
    """A re-score that failed loses nothing: the entry goes back to its previous score (running ->
    scored, on its previous test set) and the failed attempt joins its history with the reason.
    Its quota is untouched either way: a re-score is the maintainers' doing."""
    finished = abandon_rescore(submission, submission.attempts, submission.scoring_test_set, message)
    if not finished:
        log.warning("submission %s attempt %s lost its lease; result discarded", submission.pk, submission.attempts)
    return finished


def abandon_rescore(submission: Submission | int, attempt: int, target: TestSet, message: str) -> bool:
    """running -> scored for ``attempt`` of a re-score, keeping the previous score, date and test
    set; the failed attempt on ``target`` joins the history. Used by a failed run and by the
    reaper's give-up alike."""
    with transaction.atomic():
        back = transition(submission, Status.SCORED, expect={Status.RUNNING}, where=Q(attempts=attempt),
                          lease_expires_at=None, rescore_test_set=None)
        if back:
            record_failed_rescore(submission if isinstance(submission, int) else submission.pk, target, message)
    return back


def record_failed_rescore(submission_id: int, target: Any, message: str) -> None:
    ScoreRecord.objects.create(
        submission_id=submission_id, test_set=target, test_set_version=target.version, scorer_version="", scores={},
        reason=f"re-scoring on test set {target.version} failed: {message}", scored_at=timezone.now())


class ScoringState(JobState):
    """Scoring keeps its state in the submission's own columns: a running submission's lease
    expires at ``lease_expires_at``, a queued one's message counts as lost ``QUEUE_LEASE_SECONDS``
    after ``queued_at``. Give-ups fail as ``worker_lost``, a platform fault (refunded)."""

    def stale(self, now: datetime) -> Iterable[Stale]:
        lost = now - timedelta(seconds=settings.QUEUE_LEASE_SECONDS)
        rows = Submission.objects.filter(Q(status=Status.RUNNING, lease_expires_at__lt=now)
                                         | Q(status=Status.QUEUED, queued_at__lt=lost))
        return [Stale(pk, status, attempts, task_name_for(kind))
                for pk, status, attempts, kind in rows.values_list("pk", "status", "attempts", "kind")]

    def requeue(self, job: Stale, now: datetime) -> bool:
        if job.status == Status.QUEUED:  # not a status change: the message is sent once more
            lost = now - timedelta(seconds=settings.QUEUE_LEASE_SECONDS)
            return bool(Submission.objects.filter(pk=job.pk, status=Status.QUEUED, queued_at__lt=lost)
                        .update(queued_at=now))
        return transition(job.pk, Status.QUEUED, expect={Status.RUNNING},
                          where=Q(attempts=job.attempts, lease_expires_at__lt=now),
                          queued_at=now, lease_expires_at=None)

    def give_up(self, job: Stale, now: datetime, note: str) -> bool:
        # A re-score whose workers kept dying goes back to the score it had, as a failed one does.
        target_id = Submission.objects.filter(pk=job.pk).values_list("rescore_test_set", flat=True).first()
        if target_id is not None:
            return abandon_rescore(job.pk, job.attempts, TestSet.objects.defer("gold", "public_inputs")
                                   .get(pk=target_id), note)
        gave_up = transition(job.pk, Status.FAILED, expect={Status.RUNNING}, where=Q(attempts=job.attempts),
                             finished_at=now, lease_expires_at=None,
                             error_category=ErrorCategory.WORKER_LOST, error_message=note)
        if gave_up:
            notify_after_commit(job.pk)
        return gave_up


SCORING = Job(key="scoring", task_name=DEFAULT_TASK, state=ScoringState(), what="Scoring")


def reap_stuck(now: datetime | None = None) -> dict[str, int]:
    """Give back runs whose lease expired (their worker died) and re-send queued submissions
    whose message seems lost; after SCORING_MAX_ATTEMPTS claimed runs a submission fails as
    ``worker_lost`` (refunded). Returns counts for the log."""
    return SCORING.reap(now)
