"""Celery entry points of submissions: each claims its job and calls one function (core.jobs)."""
import logging
import os

from celery import shared_task

from . import baseline_runs, code_runs, diagnostics, lifecycle, model_runs, phases, runs, storage

log = logging.getLogger(__name__)


@shared_task(name="submissions.tasks.score_submission", acks_late=True, reject_on_worker_lost=True)
def score_submission(submission_id: int) -> str:
    # Fault-injection hook for the worker-kill test: holds the claimed run open so the test
    # can kill the worker mid-scoring. Unset in normal operation.
    hold = float(os.environ.get("EXPBENCH_TEST_SCORING_DELAY", "0") or 0)
    return runs.claim_and_score(submission_id, hold_seconds=hold)


@shared_task(name="submissions.tasks.run_code_submission", acks_late=True, reject_on_worker_lost=True)
def run_code_submission(submission_id: int) -> str:
    return code_runs.claim_and_run(submission_id)


@shared_task(name="submissions.tasks.run_model_submission", acks_late=True, reject_on_worker_lost=True)
def run_model_submission(submission_id: int) -> str:
    return model_runs.claim_and_run(submission_id)


@shared_task(name="submissions.tasks.compute_diagnostics", acks_late=True, reject_on_worker_lost=True)
def compute_diagnostics(submission_id: int, n_permutations: int | None = None) -> str:
    return diagnostics.claim_and_run(submission_id, n_permutations)


@shared_task(name="submissions.tasks.run_track_baselines", acks_late=True)
def run_track_baselines(test_set_id: int) -> str:
    # A slice of a track's built-in baseline run (models queue); the next one is queued by it.
    return baseline_runs.claim_and_run(test_set_id)


@shared_task(name="submissions.tasks.purge_uploads")
def purge_uploads() -> str:
    # Housekeeping sent by beat (config/celery.py), as `manage.py purge_uploads` does by hand.
    report = storage.purge_rejected_files()
    log.info("purge_uploads: deleted %s", report)
    return str(report)


@shared_task(name="submissions.tasks.close_ended_phases")
def close_ended_phases() -> dict[str, int]:
    # Sent by beat every minute (config/celery.py); closing is idempotent.
    return phases.close_ended_phases()


@shared_task(name="submissions.tasks.reap_stuck_submissions")
def reap_stuck_submissions() -> dict[str, int]:
    counts = {**lifecycle.reap_stuck(), **diagnostics.reap_stuck()}
    if any(counts.values()):
        log.warning("reaper: %s", counts)
    return counts
