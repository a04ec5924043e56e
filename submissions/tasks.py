"""Celery tasks: thin wrappers that claim, call a service and store."""
import logging
import os
import time

from celery import shared_task
from django.utils import timezone

from . import lifecycle, services

log = logging.getLogger(__name__)


@shared_task(name="submissions.tasks.score_submission", acks_late=True, reject_on_worker_lost=True)
def score_submission(submission_id):
    submission = lifecycle.start_run(submission_id)
    if submission is None:
        return "skipped"
    # Fault-injection hook for the worker-kill test: holds the claimed run open so the test
    # can kill the worker mid-scoring. Unset in normal operation.
    delay = float(os.environ.get("EXPBENCH_TEST_SCORING_DELAY", "0") or 0)
    if delay:
        time.sleep(delay)
    services.run_scoring(submission)
    return submission.status


@shared_task(name="submissions.tasks.reap_stuck_submissions")
def reap_stuck_submissions():
    from . import diagnostics

    counts = {**lifecycle.reap_stuck(), **diagnostics.reap_stuck()}
    if any(counts.values()):
        log.warning("reaper: %s", counts)
    return counts


@shared_task(name="submissions.tasks.compute_diagnostics", acks_late=True, reject_on_worker_lost=True)
def compute_diagnostics(submission_id, n_permutations=None):
    from . import diagnostics
    from .models import DiagnosticsStatus, Submission

    if not diagnostics.claim(submission_id):
        return "skipped"
    submission = Submission.objects.select_related("task", "test_set").get(pk=submission_id)
    try:
        result = diagnostics.run(submission, n_permutations=n_permutations)
    except Exception as exc:
        # The type only: a message could quote hidden gold.
        log.error("diagnostics of submission %s failed: %s", submission_id, type(exc).__name__)
        Submission.objects.filter(pk=submission_id).update(
            diagnostics_status=DiagnosticsStatus.FAILED, diagnostics_updated_at=timezone.now(),
            diagnostics={"error": "The diagnostics failed on this submission; the maintainers have been told."},
        )
        return DiagnosticsStatus.FAILED
    Submission.objects.filter(pk=submission_id, diagnostics_status=DiagnosticsStatus.RUNNING).update(
        diagnostics_status=DiagnosticsStatus.DONE, diagnostics=result, diagnostics_updated_at=timezone.now()
    )
    return DiagnosticsStatus.DONE


@shared_task(name="submissions.tasks.run_code_submission", acks_late=True, reject_on_worker_lost=True)
def run_code_submission(submission_id):
    from . import code_runs

    submission = lifecycle.start_run(submission_id)
    if submission is None:
        return "skipped"
    try:
        code_runs.run(submission)
    except Exception as exc:
        log.error("code submission %s: runner raised %s", submission_id, type(exc).__name__)
        from .models import ErrorCategory

        lifecycle.fail_run(submission, ErrorCategory.SCORER_ERROR, "The sandbox runner failed; the maintainers have been told.")
    return submission.status
