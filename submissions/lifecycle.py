"""Moving submissions through the state machine, safely under concurrency.

Every step is one conditional UPDATE that names the status (and, for a running submission,
the attempt number) it expects. A duplicate message, a second worker or a worker that comes
back after the reaper gave its run away finds no matching row and does nothing, so each
submission is scored and stored exactly once.
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from .models import ErrorCategory, Status, Submission

log = logging.getLogger(__name__)


def enqueue(submission_id, kind=Submission.PREDICTIONS):
    """Send the scoring message once the surrounding transaction has committed, so a worker
    never looks for a row it cannot see yet. A broker outage leaves the submission queued;
    the reaper sends it again later. Code submissions go to the sandbox queue."""

    def send():
        from .tasks import run_code_submission, score_submission

        task = run_code_submission if kind == Submission.CODE else score_submission
        try:
            task.apply_async(args=[submission_id])
        except Exception:  # broker down: nothing is lost, the reaper retries
            log.exception("could not enqueue submission %s; the reaper will retry", submission_id)

    transaction.on_commit(send)


def mark_queued(submission):
    """uploaded/failed/scored -> queued, and send it to the workers after commit."""
    if submission.transition(Status.QUEUED, queued_at=timezone.now(), error_category="", error_message=""):
        enqueue(submission.pk, submission.kind)
        return True
    return False


def start_run(submission_id):
    """Claim a submission for scoring. Returns the claimed Submission with its attempt number,
    or None when there is nothing to do (already scored, cancelled, or running elsewhere
    under a live lease)."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.SCORING_LEASE_SECONDS)
    claimable = Q(status=Status.QUEUED) | Q(status=Status.RUNNING, lease_expires_at__lt=now)
    claimed = (
        Submission.objects.filter(claimable, pk=submission_id)
        .update(status=Status.RUNNING, started_at=now, lease_expires_at=lease, attempts=F("attempts") + 1)
    )
    if not claimed:
        return None
    return Submission.objects.select_related("task", "test_set").get(pk=submission_id)


def heartbeat(submission, **fields):
    """A long run (sandboxed code) renews its lease and records progress, so the reaper never
    takes a live run away. Returns False when this run no longer owns the submission."""
    lease = timezone.now() + timedelta(seconds=settings.SCORING_LEASE_SECONDS)
    return bool(Submission.objects.filter(pk=submission.pk, status=Status.RUNNING, attempts=submission.attempts)
                .update(lease_expires_at=lease, **fields))


def _finish(submission, new_status, **fields):
    """running -> new_status, only for the attempt that claimed it."""
    fields.update(status=new_status, finished_at=timezone.now(), lease_expires_at=None)
    updated = Submission.objects.filter(
        pk=submission.pk, status=Status.RUNNING, attempts=submission.attempts
    ).update(**fields)
    if updated:
        for name, value in fields.items():
            setattr(submission, name, value)
    else:
        log.warning("submission %s attempt %s lost its lease; result discarded", submission.pk, submission.attempts)
    return bool(updated)


def store_scores(submission, *, scores, ci, item_scores, total, unanswered, scorer_version, details=None):
    return _finish(
        submission,
        Status.SCORED,
        scores=scores,
        ci=ci,
        item_scores=item_scores,
        total=total,
        unanswered=unanswered,
        scorer_version=scorer_version,
        details=details or {},
        error_category="",
        error_message="",
    )


def reject_run(submission, message):
    return _finish(submission, Status.REJECTED, error_category=ErrorCategory.INVALID_INPUT, error_message=message)


def fail_run(submission, category, message):
    return _finish(submission, Status.FAILED, error_category=category, error_message=message)


def stopped(attempts):
    """How a job that kept losing its worker is explained to the people waiting for it."""
    return f"stopped {attempts} time{'s' if attempts != 1 else ''} without finishing (worker lost or timed out)"


def reap_stuck(now=None):
    """Give back runs whose lease expired (their worker died) and re-send queued submissions
    whose message seems lost. After SCORING_MAX_ATTEMPTS claimed runs a submission fails
    with a platform category (refunded). Returns counts for the log."""
    now = now or timezone.now()
    counts = {"requeued": 0, "resent": 0, "failed": 0}
    expired = Submission.objects.filter(status=Status.RUNNING, lease_expires_at__lt=now)
    for sub in expired:
        if sub.attempts >= settings.SCORING_MAX_ATTEMPTS:
            if fail_run(
                sub,
                ErrorCategory.WORKER_LOST,
                f"Scoring {stopped(sub.attempts)}.",
            ):
                counts["failed"] += 1
        elif Submission.objects.filter(
            pk=sub.pk, status=Status.RUNNING, attempts=sub.attempts, lease_expires_at__lt=now
        ).update(status=Status.QUEUED, queued_at=now, lease_expires_at=None):
            enqueue(sub.pk, sub.kind)
            counts["requeued"] += 1
    stale = now - timedelta(seconds=settings.QUEUE_LEASE_SECONDS)
    for pk, kind in Submission.objects.filter(status=Status.QUEUED, queued_at__lt=stale).values_list("pk", "kind"):
        if Submission.objects.filter(pk=pk, status=Status.QUEUED, queued_at__lt=stale).update(queued_at=now):
            enqueue(pk, kind)
            counts["resent"] += 1
    return counts
