"""Scoring runs, the worker side of prediction files: read the stored upload of a claimed
submission, parse and score it with its scorer, store the scores with their bootstrap CIs and
schedule the diagnostics. (Interpreter code runs are in ``code_runs``.)"""
import logging
import time
from collections.abc import Sequence

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from benchmark.models import Task
from core.cpu_budget import CpuBudgetExceeded, cpu_budget
from scoring import stats, withdrawn

from . import diagnostics, lifecycle, upload_checks
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
    except CpuBudgetExceeded as exc:
        # The same rule for CPU time: the budget is the task's (scoring_cpu_seconds).
        log.warning("submission %s: scoring CPU budget of %s s used up", submission.pk, exc.seconds)
        return lifecycle.fail_run(
            submission, ErrorCategory.SCORING_TIME,
            f"Scoring this file used more than {exc.seconds:g} CPU seconds, the budget of {submission.task.slug} "
            "for one file, and was stopped. Predictions should be short spans of their passage; long answers or "
            "evidence make scoring slow.")
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


def scoring_cpu_seconds(task: Task) -> int:
    """CPU seconds one prediction file of ``task`` may take to parse and score: the task's
    ``scoring_cpu_seconds`` (declared in its benchmark file), else ``SCORING_CPU_SECONDS``."""
    declared = (task.model_budget or {}).get("scoring_cpu_seconds")
    return int(declared) if declared else settings.SCORING_CPU_SECONDS


def _score_and_store(submission):
    """Read, parse, score and store: the run ends scored, rejected (invalid file) or failed
    (file lost). Parsing and scoring run within the task's CPU budget. Returns whether this
    attempt still owned the run and finished it."""
    scorer = scorer_for(submission.task, submission.kind)
    try:
        with submission.file.open("rb") as handle:
            raw = handle.read()
    except OSError:
        log.error("submission %s: stored file missing", submission.pk)
        return lifecycle.fail_run(submission, ErrorCategory.SCORER_ERROR, "The uploaded file could not be read back.")
    with cpu_budget(scoring_cpu_seconds(submission.task)):
        # A first run of a file too large for the web worker to check (submissions.upload_checks)
        # checks it as strictly as the upload form; any other run reads a file accepted before.
        first_check = not lifecycle.is_rescore(submission) and not upload_checks.checked_at_upload(raw)
        try:
            if first_check:
                predictions, withdrawn_keys = scorer.parse(raw, submission.test_set,
                                                           max_bytes=settings.SUBMISSION_MAX_BYTES), []
            else:
                predictions, withdrawn_keys = scorer.parse_stored(raw, submission.scoring_test_set,
                                                                  max_bytes=settings.SUBMISSION_MAX_BYTES)
        except InvalidPredictions as exc:
            refusal = str(exc)
        else:
            refusal = None
            run = scorer.score(submission.task, submission.scoring_test_set, predictions)
            ci = confidence_intervals(submission.task, run.item_rows)
    # The status is written outside the budget, so that its timer never interrupts a write.
    if refusal is not None and first_check:  # stored and queued: charged to its sender, the bytes kept
        return lifecycle.fail_run(submission, ErrorCategory.INVALID_INPUT, upload_checks.refusal_after_upload(refusal))
    if refusal is not None:
        return lifecycle.reject_run(submission, refusal)
    note = ""
    if withdrawn_keys:
        # The policy of re-scoring on a corrected version (docs/operations.md#re-scoring): the
        # predictions for withdrawn questions are ignored and counted; added questions score 0.
        run.details["withdrawn_predictions"] = len(withdrawn_keys)
        note = withdrawn.note(len(withdrawn_keys))
    return lifecycle.store_scores(
        submission,
        scores=run.scores,
        ci=ci,
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
