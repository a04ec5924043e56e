"""Creating and scoring submissions: the named functions views, the API and tasks call."""
import hashlib
import logging
import math
from datetime import datetime, time, timedelta, timezone as dt_timezone

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from benchmark.models import Task
from scoring import stats

from . import lifecycle
from .models import PLATFORM_CATEGORIES, ErrorCategory, Status, Submission
from .scorers import InvalidPredictions, scorer_for

log = logging.getLogger(__name__)

class SubmissionRefused(Exception):
    """The upload cannot be accepted at all (closed task, quota); nothing is stored."""

    def __init__(self, message, status_code=400):
        super().__init__(message)
        self.message = message
        self.status_code = status_code


class QuotaExceeded(SubmissionRefused):
    def __init__(self, message):
        super().__init__(message, status_code=429)


def quota_for(task):
    return task.daily_quota if task.daily_quota is not None else settings.SUBMISSIONS_PER_DAY


def utc_day_bounds(now=None):
    now = now or timezone.now()
    start = datetime.combine(now.astimezone(dt_timezone.utc).date(), time.min, tzinfo=dt_timezone.utc)
    return start, start + timedelta(days=1)


def submissions_counted_today(user, task):
    """Submissions that use up today's quota: everything accepted, except failures that were
    the platform's fault (refunded). Rejected files never count."""
    start, end = utc_day_bounds()
    today = Submission.objects.filter(user=user, task=task, created_at__gte=start, created_at__lt=end)
    return today.exclude(status__in=[Status.REJECTED, Status.CANCELLED]).exclude(
        status=Status.FAILED, error_category__in=PLATFORM_CATEGORIES
    ).count()


def quota_status(user, task):
    limit = quota_for(task)
    used = submissions_counted_today(user, task)
    _, reset = utc_day_bounds()
    return {"limit": limit, "used": used, "remaining": max(limit - used, 0), "resets_at": reset}


def submit(*, kind=Submission.PREDICTIONS, **fields):
    """Any upload: interpreter code goes to the sandbox runner, every file to its scorer."""
    if kind == Submission.CODE:
        from .code_runs import submit_code

        return submit_code(**fields)
    return submit_predictions(kind=kind, **fields)


def submit_predictions(*, user, task, uploaded_file, method_name, description="", url="", public=True,
                       kind=Submission.PREDICTIONS, enforce_quota=True):
    """Validate an uploaded prediction file and create the submission.

    Returns the Submission: ``queued`` when the file is valid (scoring is sent after commit),
    ``rejected`` with a precise message when it is not (kept, so the researcher sees it in
    their list; it costs no quota). Raises SubmissionRefused when nothing can be accepted.
    """
    if not task.accepts_submissions:
        raise SubmissionRefused(f"Task {task.slug} does not accept submissions at the moment.")
    try:
        scorer = scorer_for(task, kind)
    except LookupError as exc:
        raise SubmissionRefused(str(exc)) from None
    test_set = task.current_test_set()
    if test_set is None:
        raise SubmissionRefused(f"Task {task.slug} has no test set yet.")

    submission = Submission(
        user=user,
        task=task,
        test_set=test_set,
        kind=kind,
        method_name=method_name,
        description=description,
        url=url,
        public=public,
        original_filename=(getattr(uploaded_file, "name", "") or "")[-255:],
        size=uploaded_file.size,
    )
    error = None
    raw = None
    if uploaded_file.size > settings.SUBMISSION_MAX_BYTES:
        error = (
            f"File is {uploaded_file.size:,} bytes; the limit is {settings.SUBMISSION_MAX_BYTES:,} bytes."
        )
    else:
        raw = b"".join(uploaded_file.chunks())
        try:
            scorer.parse(raw, test_set, max_bytes=settings.SUBMISSION_MAX_BYTES)
        except InvalidPredictions as exc:
            error = str(exc)

    if error is not None:
        submission.status = Status.REJECTED
        submission.error_category = ErrorCategory.INVALID_INPUT
        submission.error_message = error
        if raw is not None:
            submission.sha256 = hashlib.sha256(raw).hexdigest()
            submission.file.save(submission_upload_name(), ContentFile(raw), save=False)
        submission.save()
        return submission

    submission.sha256 = hashlib.sha256(raw).hexdigest()
    with transaction.atomic():
        # Lock the task row so concurrent uploads by the same user cannot both pass the quota
        # check (PostgreSQL: row lock; SQLite: IMMEDIATE transactions serialise writers).
        Task.objects.select_for_update().get(pk=task.pk)
        quota = quota_status(user, task)
        if enforce_quota and quota["remaining"] <= 0:
            raise QuotaExceeded(
                f"Daily limit reached: {quota['limit']} submissions per day for {task.slug}. "
                f"It resets at {quota['resets_at']:%Y-%m-%d %H:%M} UTC."
            )
        submission.file.save(submission_upload_name(), ContentFile(raw), save=False)
        submission.save()
        lifecycle.mark_queued(submission)
    return submission


def submission_upload_name():
    return "predictions.json"


def run_scoring(submission):
    """Score a claimed (running) submission and store the result. Called by the worker.

    Any unexpected exception (scorer, confidence intervals, storing) fails the run at once as
    a scorer error: left running, it would wait for the reaper to call it a lost worker."""
    try:
        finished = _score_and_store(submission)
    except Exception as exc:
        # Only the exception type is logged: messages could quote gold text.
        log.error("submission %s: scorer raised %s", submission.pk, type(exc).__name__)
        return lifecycle.fail_run(
            submission, ErrorCategory.SCORER_ERROR, "The scorer failed on this file; the maintainers have been told."
        )
    if finished and submission.status == Status.SCORED and submission.task.kind in (
            "span", "multichoice", "classification"):
        from . import diagnostics

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
        predictions = scorer.parse(raw, submission.test_set, max_bytes=settings.SUBMISSION_MAX_BYTES)
    except InvalidPredictions as exc:
        return lifecycle.reject_run(submission, str(exc))
    run = scorer.score(submission.task, submission.test_set, predictions)
    return lifecycle.store_scores(
        submission,
        scores=run.scores,
        ci=confidence_intervals(submission.task, run.item_rows),
        item_scores=run.item_rows,
        total=run.total,
        unanswered=run.unanswered,
        scorer_version=scorer.version,
        details=run.details,
    )


def confidence_intervals(task, item_rows):
    """95% bootstrap CI per metric (0-100 scale). Metrics defined on every item share one
    resample matrix; a metric with undefined items (None, e.g. QUACKIE fails or an undefined
    SNR) is resampled over its defined items only, like its mean."""
    keys = [key for key, _ in task.metric_columns]
    per_metric = {key: [row[i] for row in item_rows] for i, key in enumerate(keys)}
    complete = {k: [v * 100 for v in values] for k, values in per_metric.items() if None not in values}
    cis = {k: list(b) for k, b in stats.bootstrap_cis(complete, n_resamples=settings.BOOTSTRAP_RESAMPLES, seed=0).items()}
    for key, values in per_metric.items():
        if key not in complete:
            defined = [v * 100 for v in values if v is not None]
            cis[key] = list(stats.bootstrap_ci(defined, n_resamples=settings.BOOTSTRAP_RESAMPLES, seed=0))
    # No defined item (NaN) or an overflow (inf): no interval (JSON null; jsonb refuses both).
    return {key: bounds if all(math.isfinite(b) for b in bounds) else None for key, bounds in cis.items()}


def cancel(submission):
    """Withdraw a submission that has not started scoring."""
    if submission.status != Status.QUEUED:
        raise SubmissionRefused(f"Only queued submissions can be cancelled; this one is {submission.status}.", 409)
    if not submission.transition(Status.CANCELLED, finished_at=timezone.now()):
        raise SubmissionRefused("The submission started scoring meanwhile; it can no longer be cancelled.", 409)
    return submission


def retry(submission):
    """Maintainers: send a failed or scored submission back to the queue."""
    if submission.status not in (Status.FAILED, Status.SCORED):
        raise SubmissionRefused(f"Cannot retry a {submission.status} submission.", 409)
    with transaction.atomic():
        return lifecycle.mark_queued(submission)
