"""Intake, the web side of submissions: validate an upload, check the daily quota, store it
and queue it (or keep it as rejected with a precise message); cancel and retry. The named
functions the views, the API, the admin and the commands call. What the workers do with a
queued submission is in ``runs`` and ``code_runs``."""
import hashlib
import logging
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, time, timedelta
from datetime import timezone as dt_timezone
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile, File
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.teams import team_of
from benchmark.kinds import CODE
from benchmark.models import Phase, Task
from scoring import sandbox
from scoring.sandbox import bundle_check

from . import lifecycle, upload_checks
from .models import PLATFORM_CATEGORIES, ErrorCategory, Status, Submission
from .scorers import InvalidPredictions, scorer_for

log = logging.getLogger(__name__)


class SubmissionRefused(Exception):
    """The upload cannot be accepted at all (closed task, quota); nothing is stored. Its message is
    in the active language (the upload page's; English for the API: config/locale.py); it is
    never stored, so no other reader gets it in that language.
    ``problem_type``: the API's problem type (config/errors.py) when not ``submission-refused``."""

    def __init__(self, message: str, status_code: int = 400, problem_type: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.problem_type = problem_type


class DeclarationRequired(SubmissionRefused):
    """An upload without a link the task requires (its code, its paper): ``missing`` holds
    (field, why) for each, which the API lists as field errors and the form shows by its field."""

    def __init__(self, task: Task, missing: list[tuple[str, str]]) -> None:
        names = " and ".join(name for name, _ in missing)
        message = (_("%(task)s requires every upload to give %(names)s: add them and upload again; nothing was "
                     "stored.") if len(missing) > 1 else
                   _("%(task)s requires every upload to give %(names)s: add it and upload again; nothing was "
                     "stored."))
        super().__init__(message % {"task": task.slug, "names": names}, 400, "declaration-required")
        self.missing = missing


#: The links a task may require of every upload: (declaration field, what it is).
REQUIRABLE_LINKS = (("code_url", "requires_code_url", "the URL of the system's code"),
                    ("paper_url", "requires_paper_url", "the URL of a paper that describes the system"))


def missing_links(task: Task, declarations: dict[str, str]) -> list[tuple[str, str]]:
    """(field, why) of each link ``task`` requires that ``declarations`` leave empty."""
    return [(name, f"required on this task: {what}") for name, flag, what in REQUIRABLE_LINKS
            if getattr(task, flag) and not (declarations.get(name) or "").strip()]


class QuotaExceeded(SubmissionRefused):
    """Today's quota is used up; ``quota`` is :func:`quota_status` at the moment of refusal, so the
    API can say when to retry."""

    def __init__(self, quota: dict[str, Any], task: Task) -> None:
        if quota.get("phase_limit") is not None and quota["phase_used"] >= quota["phase_limit"]:
            message = (_("Phase limit reached: %(limit)s submissions in phase %(phase)s of %(task)s.")
                       % {"limit": quota["phase_limit"], "phase": repr(quota["phase"]), "task": task.slug})
        else:
            message = (_("Daily limit reached: %(limit)s submissions per day for %(task)s. It resets at %(resets)s "
                         "UTC.") % {"limit": quota["limit"], "task": task.slug,
                                    "resets": f"{quota['resets_at']:%Y-%m-%d %H:%M}"})
        super().__init__(message, status_code=429)
        self.quota = quota


def quota_for(task: Task) -> int:
    return task.daily_quota if task.daily_quota is not None else settings.SUBMISSIONS_PER_DAY


def utc_day_bounds(now: datetime | None = None) -> tuple[datetime, datetime]:
    now = now or timezone.now()
    start = datetime.combine(now.astimezone(dt_timezone.utc).date(), time.min, tzinfo=dt_timezone.utc)
    return start, start + timedelta(days=1)


def counted(submissions: QuerySet[Submission]) -> int:
    """How many of ``submissions`` use up quota: everything accepted, except failures that were
    the platform's fault (refunded). Rejected files never count."""
    return submissions.exclude(status__in=[Status.REJECTED, Status.CANCELLED]).exclude(
        status=Status.FAILED, error_category__in=PLATFORM_CATEGORIES
    ).count()


def of_entrant(user: User) -> Q:
    """The submissions that share ``user``'s quota: their team's, or their own made alone."""
    team = team_of(user)
    return Q(submitting_team=team) if team is not None else Q(user=user, submitting_team__isnull=True)


def submissions_counted_today(user: User, task: Task) -> int:
    start, end = utc_day_bounds()
    return counted(Submission.objects.filter(of_entrant(user), task=task, created_at__gte=start, created_at__lt=end))


def open_phase(task: Task, now: datetime | None = None) -> Phase | None:
    return task.phases.open_at(now or timezone.now()).first()


def quota_status(user: User, task: Task, phase: Phase | None = None) -> dict[str, Any]:
    """Today's quota (``limit``, ``used``, ``remaining``, ``resets_at``); in an open phase its
    daily quota, and with a total quota ``remaining`` is also bounded by what is left of it
    (``phase``, ``phase_limit``, ``phase_used``)."""
    phase = phase or open_phase(task)
    limit = phase.daily_quota if phase is not None and phase.daily_quota is not None else quota_for(task)
    used = submissions_counted_today(user, task)
    _, reset = utc_day_bounds()
    status: dict[str, Any] = {"limit": limit, "used": used, "remaining": max(limit - used, 0), "resets_at": reset}
    if phase is not None:
        status["phase"] = phase.name
        if phase.total_quota is not None:
            phase_used = counted(Submission.objects.filter(of_entrant(user), task=task, phase=phase))
            status.update(phase_limit=phase.total_quota, phase_used=phase_used,
                          remaining=min(status["remaining"], max(phase.total_quota - phase_used, 0)))
    return status


def check_open(task: Task, now: datetime | None = None) -> Phase | None:
    """Whether ``task`` takes an upload now: it accepts submissions and, if it has phases, one
    of them is open (which is returned). Refused otherwise, with the windows in the message."""
    if not task.accepts_submissions:
        raise SubmissionRefused(_("Task %(task)s does not accept submissions at the moment.") % {"task": task.slug})
    now = now or timezone.now()
    phases = list(task.phases.all())
    if not phases:
        return None
    current = next((phase for phase in phases if phase.is_open(now)), None)
    if current is not None:
        return current
    windows = "; ".join(f"{phase.name!r} {phase.window}" + (" (ended)" if phase.has_ended(now) else "")
                        for phase in phases)
    raise SubmissionRefused(_("%(task)s takes submissions only while a phase is open; it is %(now)s UTC now. "
                              "Phases: %(windows)s.") % {"task": task.slug, "now": f"{now:%Y-%m-%d %H:%M}",
                                                         "windows": windows}, 403, "outside-phase")


def queue_accepted(submission: Submission, store: Callable[[], None], *, enforce_quota: bool) -> None:
    """Charge the upload to the quota, store its file (``store``) and queue it, as one step. The
    task row is locked so that concurrent uploads by the same user cannot both pass the quota
    check (PostgreSQL: row lock; SQLite: IMMEDIATE transactions serialise writers)."""
    with transaction.atomic():
        Task.objects.select_for_update().get(pk=submission.task_id)
        quota = quota_status(submission.user, submission.task, submission.phase)
        if enforce_quota and quota["remaining"] <= 0:
            raise QuotaExceeded(quota, submission.task)
        store()
        submission.save()
        lifecycle.mark_queued(submission)


def submit(*, task: Task, kind: str = Submission.PREDICTIONS, declarations: dict[str, str] | None = None,
           **fields: Any) -> Submission:
    """Any upload: interpreter code and models go to the sandbox runner, every file to its
    scorer. ``declarations``: ``Submission.DECLARATION_FIELDS`` the submitter stated."""
    declarations = declarations or {}
    if task.inputs_hidden and kind != Submission.MODEL:
        raise inputs_hidden_refusal(task)
    missing = missing_links(task, declarations)
    if missing:
        raise DeclarationRequired(task, missing)
    if kind == Submission.CODE:
        return submit_code(task=task, declarations=declarations, **fields)
    if kind == Submission.MODEL:
        return submit_model(task=task, declarations=declarations, **fields)
    return submit_predictions(task=task, kind=kind, declarations=declarations, **fields)


def inputs_hidden_refusal(task: Task) -> SubmissionRefused:
    """A prediction file (or interpreter code) sent to a task whose inputs are hidden: say to
    submit a model, since predictions would need the inputs."""
    return SubmissionRefused(
        f"The test inputs of {task.slug} are hidden, so prediction files cannot be scored here: upload a model "
        "instead (kind=model: a .zip whose root holds predict.py defining predict(examples)), which runs on "
        "the hidden inputs on the server. See docs/model_submissions.md.", 400, "inputs-hidden")


def submit_predictions(*, user: User, task: Task, uploaded_file: UploadedFile, method_name: str,
                       description: str = "", url: str = "", public: bool = True, kind: str = Submission.PREDICTIONS,
                       enforce_quota: bool = True, declarations: dict[str, str] | None = None) -> Submission:
    """Validate an uploaded prediction file and create the submission.

    Returns the Submission: ``queued`` when the file is valid (scoring is sent after commit),
    ``rejected`` with a precise message when it is not (kept, so the researcher sees it in
    their list; it costs no quota). Raises SubmissionRefused when nothing can be accepted.
    """
    phase = check_open(task)
    try:
        scorer = scorer_for(task, kind)
    except LookupError as exc:
        raise SubmissionRefused(str(exc)) from None
    test_set = task.current_test_set()
    if test_set is None:
        raise SubmissionRefused(_("Task %(task)s has no test set yet.") % {"task": task.slug})

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
        phase=phase,
        submitting_team=team_of(user),
        **(declarations or {}),
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
            if upload_checks.checked_at_upload(raw):  # else the scoring worker checks it first
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
    queue_accepted(submission, lambda: submission.file.save(submission_upload_name(), ContentFile(raw), save=False),
                   enforce_quota=enforce_quota)
    return submission


def submit_code(*, user: User, task: Task, uploaded_file: UploadedFile, method_name: str,
                description: str = "", url: str = "", public: bool = True, enforce_quota: bool = True,
                declarations: dict[str, str] | None = None) -> Submission:
    """Validate and queue an interpreter (.py, or .zip with one entry module)."""
    if not task.kind_definition.accepts(CODE) or not hasattr(task, "track"):
        raise SubmissionRefused("Code submissions are for QUACKIE tracks only.")
    phase = check_open(task)
    available, reason = sandbox.sandbox_available(settings.SANDBOX)
    if not available:
        raise SubmissionRefused(f"Code submissions are disabled on this server: no sandbox is available ({reason}). "
                                "Submit a score file instead.", 503)
    test_set = task.current_test_set()
    if test_set is None:
        raise SubmissionRefused(f"Track {task.slug} is not ready yet (inclusion flags: {task.track.status}).")
    size: int = uploaded_file.size  # type: ignore[assignment]  # an uploaded file knows its size
    submission = Submission(user=user, task=task, test_set=test_set, kind=Submission.CODE, method_name=method_name,
                            description=description, url=url, public=public, size=size, phase=phase,
                            submitting_team=team_of(user),
                            original_filename=(uploaded_file.name or "")[-255:], **(declarations or {}))
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
    submission.details = {"progress": {"done": 0, "total": test_set.n_items}}
    queue_accepted(submission, lambda: submission.file.save(name, ContentFile(raw), save=False),
                   enforce_quota=enforce_quota)
    return submission


def model_max_bytes(task: Task) -> int:
    return task.model_max_bytes or settings.MODEL_MAX_BYTES


def submit_model(*, user: User, task: Task, uploaded_file: UploadedFile, method_name: str, description: str = "",
                 url: str = "", public: bool = True, enforce_quota: bool = True,
                 declarations: dict[str, str] | None = None) -> Submission:
    """Check and queue a model bundle (docs/model_submissions.md). The bundle is never held in
    memory: Django has streamed it to a temporary file, which is hashed, checked (zip safety,
    ``predict.py``) and copied to storage in chunks. A bundle that fails the check is rejected
    (no quota); a valid one is charged when it is queued, the smoke run's refund aside."""
    if not task.kind_definition.takes_models:
        raise SubmissionRefused(f"{task.kind_definition.label} tasks take no model submissions.")
    phase = check_open(task)
    available, reason = sandbox.sandbox_available(settings.SANDBOX)
    if not available:
        raise SubmissionRefused(f"Model submissions are disabled on this server: no sandbox is available ({reason}).",
                                503)
    test_set = task.current_test_set()
    if test_set is None:
        raise SubmissionRefused(f"Task {task.slug} has no test set yet.")
    limit = model_max_bytes(task)
    size: int = uploaded_file.size  # type: ignore[assignment]  # an uploaded file knows its size
    if size > limit:
        raise SubmissionRefused(f"The bundle is {size:,} bytes; {task.slug} accepts bundles of at most {limit:,} "
                                "bytes.", 413)
    submission = Submission(user=user, task=task, test_set=test_set, kind=Submission.MODEL, method_name=method_name,
                            description=description, url=url, public=public, size=size, phase=phase,
                            submitting_team=team_of(user),
                            original_filename=(uploaded_file.name or "")[-255:], **(declarations or {}))
    with uploaded_bundle_path(uploaded_file) as path:
        try:
            submission.sha256 = bundle_check.check_bundle(path, max_bytes=limit).sha256
        except bundle_check.BundleRefused as exc:
            submission.sha256 = bundle_check.bundle_sha256(path)
            # The check names the file it read: the upload's name, not the temporary copy's.
            message = str(exc).replace(Path(path).name, Path(submission.original_filename or "bundle.zip").name)
            lifecycle.transition(submission, Status.REJECTED, error_category=ErrorCategory.INVALID_INPUT,
                                 error_message=f"{exc.category}: {message}")
            return submission
        submission.details = {"progress": {"done": 0, "total": test_set.n_items}}
        with open(path, "rb") as bundle:
            queue_accepted(submission, lambda: submission.file.save("model.zip", File(bundle), save=False),
                           enforce_quota=enforce_quota)
    return submission


@contextmanager
def uploaded_bundle_path(uploaded_file: UploadedFile) -> Iterator[str]:
    """A path to the upload's bytes: Django's own temporary file for a large upload, else a
    temporary copy written chunk by chunk (removed afterwards)."""
    if isinstance(uploaded_file, TemporaryUploadedFile):
        yield uploaded_file.temporary_file_path()
        return
    with tempfile.NamedTemporaryFile(suffix=".zip") as copy:
        for chunk in uploaded_file.chunks():
            copy.write(chunk)
        copy.flush()
        yield copy.name


def submission_upload_name() -> str:
    return "predictions.json"


def cancel(submission: Submission) -> Submission:
    """Withdraw a submission that has not started scoring."""
    if submission.status != Status.QUEUED:
        raise SubmissionRefused(_("Only queued submissions can be cancelled; this one is %(status)s.")
                                % {"status": submission.status}, 409)
    if not lifecycle.transition(submission, Status.CANCELLED, finished_at=timezone.now()):
        raise SubmissionRefused(_("The submission started scoring meanwhile; it can no longer be cancelled."), 409)
    return submission


def retry(submission: Submission) -> bool:
    """Maintainers: send a failed or scored submission back to the queue."""
    if submission.status not in (Status.FAILED, Status.SCORED):
        raise SubmissionRefused(f"Cannot retry a {submission.status} submission.", 409)
    with transaction.atomic():
        return lifecycle.mark_queued(submission)
