"""Interpreter code submissions for QUACKIE tracks (SPEC §7): validated at upload, run by a
worker on the ``sandbox`` queue inside the sandbox (scoring.sandbox), scored like a score file.

The sandbox receives only (question, context, number of sentences) per sample: never the
ground truth, which stays in this process."""
import hashlib
import logging
import time
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from benchmark.models import Task

from . import lifecycle
from .models import ErrorCategory, Status, Submission

log = logging.getLogger(__name__)


def sandbox_mode():
    return settings.SANDBOX


def submit_code(*, user, task, uploaded_file, method_name, description="", url="", public=True, enforce_quota=True):
    """Validate and queue an interpreter (.py, or .zip with one entry module)."""
    from scoring import sandbox

    from .services import SubmissionRefused, quota_status, QuotaExceeded

    if task.kind != Task.INTERPRETATION or not hasattr(task, "track"):
        raise SubmissionRefused("Code submissions are for QUACKIE tracks only.")
    if not task.accepts_submissions:
        raise SubmissionRefused(f"Task {task.slug} does not accept submissions at the moment.")
    available, reason = sandbox.sandbox_available(sandbox_mode())
    if not available:
        raise SubmissionRefused(f"Code submissions are disabled on this server: no sandbox is available ({reason}). "
                                "Submit a score file instead.", 503)
    test_set = task.current_test_set()
    if test_set is None:
        raise SubmissionRefused(f"Track {task.slug} is not ready yet (inclusion flags: {task.track.status}).")
    submission = Submission(user=user, task=task, test_set=test_set, kind=Submission.CODE, method_name=method_name,
                            description=description, url=url, public=public, size=uploaded_file.size,
                            original_filename=(uploaded_file.name or "")[-255:])
    name = uploaded_file.name or "interpreter.py"
    try:
        if uploaded_file.size > settings.CODE_MAX_BYTES:  # refused before a byte is read into memory
            raise sandbox.InvalidCode(f"{Path(name).name}: {uploaded_file.size} bytes; "
                                      f"the limit is {settings.CODE_MAX_BYTES} bytes")
        raw = b"".join(uploaded_file.chunks())
        submission.sha256 = hashlib.sha256(raw).hexdigest()
        sandbox.check_submission_code(raw, name, max_bytes=settings.CODE_MAX_BYTES)
    except sandbox.InvalidCode as exc:
        submission.status = Status.REJECTED
        submission.error_category = ErrorCategory.INVALID_INPUT
        submission.error_message = str(exc)
        submission.save()
        return submission
    with transaction.atomic():
        Task.objects.select_for_update().get(pk=task.pk)
        quota = quota_status(user, task)
        if enforce_quota and quota["remaining"] <= 0:
            raise QuotaExceeded(f"Daily limit reached: {quota['limit']} submissions per day for {task.slug}.")
        submission.file.save(uploaded_file.name or "interpreter.py", ContentFile(raw), save=False)
        submission.details = {"progress": {"done": 0, "total": test_set.n_items}}
        submission.save()
        lifecycle.mark_queued(submission)
    return submission


def public_samples(test_set):
    """What the sandbox may see of each sample: exactly the public inputs (id, question,
    context and the frozen sentence list the scores must follow), never the ground truth."""
    inputs = type(test_set).objects.only("public_inputs").get(pk=test_set.pk).public_inputs
    return [{"id": s["sample_id"], "question": s["question"], "context": s["context"],
             "n_sentences": len(s["sentences"]), "sentences": s["sentences"]} for s in inputs["data"]]


def first_failures(result, max_chars=2000):
    """One example per failure category (sample id + what went wrong), so a researcher can
    debug: the sandbox only ever held public inputs, so its messages hold no gold."""
    examples = {}
    for sample_id, category in result.failures.items():
        if category not in examples:
            detail = result.failure_details.get(sample_id, "")
            examples[category] = {"sample_id": sample_id, "detail": detail[:max_chars]}
    return examples


class LeaseLost(Exception):
    """The reaper gave this run's submission away (its lease expired): stop working on it."""


class LeaseKeeper:
    """The sandbox's progress callback: renews the run's lease and records progress after every
    1% of the samples, and whenever ``interval`` seconds passed since the last renewal (a slow
    run must not outlive SCORING_LEASE_SECONDS and be re-queued with its work thrown away).
    Raises LeaseLost when the run no longer owns the submission, which stops the sandbox."""

    def __init__(self, submission, interval=None, clock=time.monotonic):
        self.submission = submission
        self.interval = interval if interval is not None else min(60.0, settings.SCORING_LEASE_SECONDS / 4)
        self.clock = clock
        self.last_done = -1
        self.last_time = clock()

    def __call__(self, done, total):
        due = (done == total or done - self.last_done >= max(1, total // 100)
               or self.clock() - self.last_time >= self.interval)
        if not due:
            return
        self.last_done, self.last_time = done, self.clock()
        if not lifecycle.heartbeat(self.submission, details={"progress": {"done": done, "total": total}}):
            raise LeaseLost(f"submission {self.submission.pk} attempt {self.submission.attempts} lost its lease")


def protected_paths():
    """What the hosted model directory must never expose to the sandbox: the server's data
    directory (secret key, broker), uploaded files (other submissions) and the database."""
    paths = [settings.VAR_DIR, settings.MEDIA_ROOT]
    database = settings.DATABASES["default"]
    name = str(database.get("NAME") or "")
    if database["ENGINE"].endswith("sqlite3") and name and name != ":memory:" and not name.startswith("file:"):
        paths.append(Path(name).resolve().parent)
    return paths


def run(submission):
    """Run a claimed code submission in the sandbox and store its QUACKIE scores."""
    from scoring import sandbox

    from .scorers import scorer_for

    if sandbox_mode() == "none":
        log.warning("SANDBOX=none: running submission %s WITHOUT a sandbox (development only)", submission.pk)
    track = submission.task.track
    samples = public_samples(submission.test_set)
    limits = sandbox.SandboxLimits(per_sample_seconds=settings.SANDBOX_SAMPLE_SECONDS,
                                   total_seconds=settings.SANDBOX_TOTAL_SECONDS)
    try:
        result = sandbox.run_interpreter(submission.file.path, track.hosted_model.path, track.hosted_model.kind,
                                         samples, limits=limits, mode=sandbox_mode(),
                                         progress=LeaseKeeper(submission), protected=protected_paths(),
                                         models_root=settings.EXPBENCH_MODELS_DIR)
    except LeaseLost as exc:
        # Another attempt owns the submission now; whatever this one computed is discarded.
        log.warning("%s; sandbox run stopped", exc)
        return False
    except sandbox.UnsafeModelDir as exc:
        log.error("code submission %s refused: %s", submission.pk, exc)
        return lifecycle.fail_run(submission, ErrorCategory.SCORER_ERROR,
                                  "The sandbox refused to run: this track's hosted model directory would expose "
                                  "server data to submitted code. The maintainers must move the model.")
    except sandbox.SandboxUnavailable as exc:
        return lifecycle.fail_run(submission, ErrorCategory.SCORER_ERROR, f"The sandbox is unavailable: {exc}")
    if not result.ok:
        return lifecycle.fail_run(submission, ErrorCategory.CODE_FAILED, f"{result.failure}: {result.message}")
    scored = scorer_for(submission.task).score(submission.task, submission.test_set, result.scores)
    failures = {}
    for category in result.failures.values():
        failures[category] = failures.get(category, 0) + 1
    times = list(result.sample_seconds.values())
    scored.details.update({
        "progress": {"done": result.done, "total": result.total},
        "sandbox": {"mode": result.mode, "sample_failures": failures, "startup_seconds": result.startup_seconds,
                    "mean_sample_seconds": sum(times) / len(times) if times else None,
                    "first_failures": first_failures(result),
                    "total_seconds": result.total_seconds, "restarts": result.restarts},
    })
    from .services import confidence_intervals

    return lifecycle.store_scores(
        submission, scores=scored.scores, ci=confidence_intervals(submission.task, scored.item_rows),
        item_scores=scored.item_rows, total=scored.total, unanswered=scored.unanswered,
        scorer_version=f"sandbox-1/{scored_version()}", details=scored.details)


def scored_version():
    from .scorers import InterpretationScorer

    return InterpretationScorer.version
