"""Intake, the web side of submissions: validate an upload, check the daily quota, store it
and queue it (or keep it as rejected with a precise message); cancel and retry. The named
functions the views, the API, the admin and the commands call. What the workers do with a
queued submission is in ``runs`` and ``code_runs``."""
import hashlib
import logging
from datetime import datetime, time, timedelta
from datetime import timezone as dt_timezone
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from benchmark.kinds import CODE
from benchmark.models import Task
from scoring import sandbox

from . import lifecycle
from .models import PLATFORM_CATEGORIES, ErrorCategory, Status, Submission
from .scorers import InvalidPredictions, scorer_for

log = logging.getLogger(__name__)


class SubmissionRefused(Exception):
    """The upload cannot be accepted at all (closed task, quota); nothing is stored."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


class QuotaExceeded(SubmissionRefused):
    """Today's quota is used up; ``quota`` is :func:`quota_status` at the moment of refusal, so the
    API can say when to retry."""

    def __init__(self, quota: dict[str, Any], task: Task) -> None:
        super().__init__(
            f"Daily limit reached: {quota['limit']} submissions per day for {task.slug}. "
            f"It resets at {quota['resets_at']:%Y-%m-%d %H:%M} UTC.",
            status_code=429,
        )
        self.quota = quota


def quota_for(task: Task) -> int:
    return task.daily_quota if task.daily_quota is not None else settings.SUBMISSIONS_PER_DAY


def utc_day_bounds(now: datetime | None = None) -> tuple[datetime, datetime]:
    now = now or timezone.now()
    start = datetime.combine(now.astimezone(dt_timezone.utc).date(), time.min, tzinfo=dt_timezone.utc)
    return start, start + timedelta(days=1)


def submissions_counted_today(user: User, task: Task) -> int:
    """Submissions that use up today's quota: everything accepted, except failures that were
    the platform's fault (refunded). Rejected files never count."""
    start, end = utc_day_bounds()
    today = Submission.objects.filter(user=user, task=task, created_at__gte=start, created_at__lt=end)
    return today.exclude(status__in=[Status.REJECTED, Status.CANCELLED]).exclude(
        status=Status.FAILED, error_category__in=PLATFORM_CATEGORIES
    ).count()


def quota_status(user: User, task: Task) -> dict[str, Any]:
    limit = quota_for(task)
    used = submissions_counted_today(user, task)
    _, reset = utc_day_bounds()
    return {"limit": limit, "used": used, "remaining": max(limit - used, 0), "resets_at": reset}


def submit(*, kind: str = Submission.PREDICTIONS, **fields: Any) -> Submission:
    """Any upload: interpreter code goes to the sandbox runner, every file to its scorer."""
    if kind == Submission.CODE:
        return submit_code(**fields)
    return submit_predictions(kind=kind, **fields)


def submit_predictions(*, user: User, task: Task, uploaded_file: UploadedFile, method_name: str,
                       description: str = "", url: str = "", public: bool = True, kind: str = Submission.PREDICTIONS,
                       enforce_quota: bool = True) -> Submission:
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

    size: int = uploaded_file.size  # type: ignore[assignment]  # an uploaded file knows its size
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
        size=size,
    )
    error = None
    raw = None
    if size > settings.SUBMISSION_MAX_BYTES:
        error = (
            f"File is {size:,} bytes; the limit is {settings.SUBMISSION_MAX_BYTES:,} bytes."
        )
    else:
        raw = b"".join(uploaded_file.chunks())
        try:
            scorer.parse(raw, test_set, max_bytes=settings.SUBMISSION_MAX_BYTES)
        except InvalidPredictions as exc:
            error = str(exc)

    if error is not None:
        # The row and its message are kept; the file is not stored (nothing reads it again,
        # and rejected files cost no quota: storing them let anyone fill the disk).
        if raw is not None:
            submission.sha256 = hashlib.sha256(raw).hexdigest()
        lifecycle.transition(submission, Status.REJECTED, error_category=ErrorCategory.INVALID_INPUT,
                             error_message=error)
        return submission

    assert raw is not None  # no error: the file passed the size check and was read
    submission.sha256 = hashlib.sha256(raw).hexdigest()
    with transaction.atomic():
        # Lock the task row so concurrent uploads by the same user cannot both pass the quota
        # check (PostgreSQL: row lock; SQLite: IMMEDIATE transactions serialise writers).
        Task.objects.select_for_update().get(pk=task.pk)
        quota = quota_status(user, task)
        if enforce_quota and quota["remaining"] <= 0:
            raise QuotaExceeded(quota, task)
        submission.file.save(submission_upload_name(), ContentFile(raw), save=False)
        submission.save()
        lifecycle.mark_queued(submission)
    return submission


def submit_code(*, user: User, task: Task, uploaded_file: UploadedFile, method_name: str,
                description: str = "", url: str = "", public: bool = True, enforce_quota: bool = True) -> Submission:
    """Validate and queue an interpreter (.py, or .zip with one entry module)."""
    if not task.kind_definition.accepts(CODE) or not hasattr(task, "track"):
        raise SubmissionRefused("Code submissions are for QUACKIE tracks only.")
    if not task.accepts_submissions:
        raise SubmissionRefused(f"Task {task.slug} does not accept submissions at the moment.")
    available, reason = sandbox.sandbox_available(settings.SANDBOX)
    if not available:
        raise SubmissionRefused(f"Code submissions are disabled on this server: no sandbox is available ({reason}). "
                                "Submit a score file instead.", 503)
    test_set = task.current_test_set()
    if test_set is None:
        raise SubmissionRefused(f"Track {task.slug} is not ready yet (inclusion flags: {task.track.status}).")
    size: int = uploaded_file.size  # type: ignore[assignment]  # an uploaded file knows its size
    submission = Submission(user=user, task=task, test_set=test_set, kind=Submission.CODE, method_name=method_name,
                            description=description, url=url, public=public, size=size,
                            original_filename=(uploaded_file.name or "")[-255:])
    name = uploaded_file.name or "interpreter.py"
    try:
        if size > settings.CODE_MAX_BYTES:  # refused before a byte is read into memory
            raise sandbox.InvalidCode(f"{Path(name).name}: {size} bytes; "
                                      f"the limit is {settings.CODE_MAX_BYTES} bytes")
        raw = b"".join(uploaded_file.chunks())
        submission.sha256 = hashlib.sha256(raw).hexdigest()
        sandbox.check_submission_code(raw, name, max_bytes=settings.CODE_MAX_BYTES)
    except sandbox.InvalidCode as exc:
        lifecycle.transition(submission, Status.REJECTED, error_category=ErrorCategory.INVALID_INPUT,
                             error_message=str(exc))
        return submission
    with transaction.atomic():
        Task.objects.select_for_update().get(pk=task.pk)
        quota = quota_status(user, task)
        if enforce_quota and quota["remaining"] <= 0:
            raise QuotaExceeded(quota, task)
        submission.file.save(uploaded_file.name or "interpreter.py", ContentFile(raw), save=False)
        submission.details = {"progress": {"done": 0, "total": test_set.n_items}}
        submission.save()
        lifecycle.mark_queued(submission)
    return submission


def submission_upload_name() -> str:
    return "predictions.json"


def cancel(submission: Submission) -> Submission:
    """Withdraw a submission that has not started scoring."""
    if submission.status != Status.QUEUED:
        raise SubmissionRefused(f"Only queued submissions can be cancelled; this one is {submission.status}.", 409)
    if not lifecycle.transition(submission, Status.CANCELLED, finished_at=timezone.now()):
        raise SubmissionRefused("The submission started scoring meanwhile; it can no longer be cancelled.", 409)
    return submission


def retry(submission: Submission) -> bool:
    """Maintainers: send a failed or scored submission back to the queue."""
    if submission.status not in (Status.FAILED, Status.SCORED):
        raise SubmissionRefused(f"Cannot retry a {submission.status} submission.", 409)
    with transaction.atomic():
        return lifecycle.mark_queued(submission)
