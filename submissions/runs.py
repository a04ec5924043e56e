"""Scoring runs, the worker side of prediction files: read the stored upload of a claimed
submission, parse and score it with its scorer, store the scores with their bootstrap CIs and
schedule the diagnostics. (Interpreter code runs are in ``code_runs``.)"""
import logging
import time
from collections.abc import Sequence

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from benchmark.models import Task
from scoring import stats, withdrawn

from . import diagnostics, lifecycle
from .models import ErrorCategory, Status, Submission
from .scorers import InvalidPredictions, SkillsScorer, scorer_for

log = logging.getLogger(__name__)


def claim_and_score(submission_id: int, *, hold_seconds: float = 0.0) -> str:
    """What the scoring worker does with a message: claim the submission, score it, store the
    result. Returns the status it ends in, or "skipped" when there was nothing to claim.
    ``hold_seconds`` holds the claimed run open first (fault injection in the tests only)."""
    submission = lifecycle.start_run(submission_id)
    if submission is None:
        return "skipped"
    with lifecycle.lease_renewal(submission):
        run_scoring(submission, hold_seconds=hold_seconds)
    return submission.status


def run_scoring(submission: Submission, *, hold_seconds: float = 0.0) -> bool:
    """Score a claimed (running) submission and store the result. Called by the worker.

    Any unexpected exception (scorer, confidence intervals, storing) fails the run at once as
    a scorer error: left running, it would wait for the reaper to call it a lost worker."""
    try:
        if hold_seconds:
            time.sleep(hold_seconds)
        finished = _score_and_store(submission)
    except SoftTimeLimitExceeded:
        # A valid file that takes this long costs its sender, like code over its time limit: a
        # free retry would let anyone hold the scoring workers.
        log.warning("submission %s: scoring time limit reached", submission.pk)
        return lifecycle.fail_run(
            submission, ErrorCategory.SCORING_TIME,
            f"Scoring this file took longer than {settings.SCORING_TIME_LIMIT} s, the limit for one file. "
            "Predictions should be short spans of their passage; long answers or evidence make scoring slow.")
    except Exception as exc:
        # Only the exception type is logged: messages could quote gold text.
        log.error("submission %s: scorer raised %s", submission.pk, type(exc).__name__)
        return lifecycle.fail_run(
            submission, ErrorCategory.SCORER_ERROR, "The scorer failed on this file; the maintainers have been told."
        )
    if (finished and submission.status == Status.SCORED and submission.task.kind_definition.has_entry_diagnostics
            and submission.held_item_scores is None):  # a held private part: diagnostics after the reveal
        diagnostics.schedule(submission)
    return finished


def _score_and_store(submission):
    """Read, parse, score and store: the run ends scored, rejected (invalid file) or failed
    (file lost). Returns whether this attempt still owned the run and finished it."""
    scorer = scorer_for(submission.task, submission.kind)
    try:
        with submission.file.open("rb") as handle:
            raw = handle.read()
    except OSError:
        log.error("submission %s: stored file missing", submission.pk)
        return lifecycle.fail_run(submission, ErrorCategory.SCORER_ERROR, "The uploaded file could not be read back.")
    try:
        predictions, withdrawn_keys = scorer.parse_stored(raw, submission.scoring_test_set,
                                                          max_bytes=settings.SUBMISSION_MAX_BYTES)
    except InvalidPredictions as exc:
        return lifecycle.reject_run(submission, str(exc))
    run = scorer.score(submission.task, submission.scoring_test_set, predictions)
    note = ""
    if withdrawn_keys:
        # The policy of re-scoring on a corrected version (docs/operations.md#re-scoring): the
        # predictions for withdrawn questions are ignored and counted; added questions score 0.
        run.details["withdrawn_predictions"] = len(withdrawn_keys)
        note = withdrawn.note(len(withdrawn_keys))
    return lifecycle.store_scores(
        submission,
        scores=run.scores,
        ci=confidence_intervals(submission.task, run.item_rows),
        item_scores=run.item_rows,
        total=run.total,
        unanswered=run.unanswered,
        scorer_version=scorer.version,
        details=run.details,
        note=note,
    )


def confidence_intervals(task: Task, item_rows: Sequence[Sequence[float | None]]) -> dict[str, list[float] | None]:
    """95% bootstrap CI per metric on the 0-100 scale (``scoring.stats.column_cis``)."""
    keys = [key for key, _ in task.metric_columns]
    return stats.column_cis(keys, item_rows, n_resamples=settings.BOOTSTRAP_RESAMPLES, seed=0)


def rescore_stale_skill_entries(sender: object, test_set_id: int, **kwargs: object) -> int:
    """Receiver of ``benchmark.signals.skill_sets_built``: the scored skill entries of the test
    set whose gaps came from an older skills scorer go back to the queue (scored -> queued, as a
    maintainer's re-score: no quota is charged). Returns how many."""
    stale = (Submission.objects.filter(test_set_id=test_set_id, kind=Submission.SKILLS, status=Status.SCORED)
             .exclude(scorer_version=SkillsScorer.version).defer("item_scores"))
    return sum(lifecycle.mark_queued(submission) for submission in stale)
