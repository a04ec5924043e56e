"""Running interpreter code submissions of QUACKIE tracks (docs/sandbox.md), the worker side:
a worker on the ``sandbox`` queue runs the code inside the sandbox (scoring.sandbox) and scores
its sentence scores like a score file. (Upload validation is in ``intake``.)

The sandbox receives only (question, context, number of sentences) per sample: never the
ground truth, which stays in this process."""
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from benchmark.models import TestSet
from core.jobs import Heartbeat
from scoring import sandbox

from . import lifecycle
from .models import ErrorCategory, Submission
from .runs import confidence_intervals
from .scorers import current_scorer_version, scorer_for

log = logging.getLogger(__name__)


def claim_and_run(submission_id: int) -> str:
    """What the sandbox worker does with a message: claim the code submission, run it in the
    sandbox, score and store. Returns the status it ends in, "skipped", or "gave way" when
    another user's run goes first (``lifecycle.gives_way``: its message comes again shortly)."""
    return claim_and_run_sandboxed(submission_id, run, "code submission", "The sandbox runner failed")


def claim_and_run_sandboxed(submission_id: int, run: Callable[[Submission, Heartbeat | None], bool], what: str,
                            failure: str) -> str:
    """The sandbox queue's protocol for any run (code, model): give way to another user's first
    run, claim, ``run`` under a lease renewed by time, and fail the run as the platform's fault
    (``failure``, refunded) if ``run`` raises. Only the exception's type is logged: a message could
    quote what the sandbox saw."""
    if lifecycle.gives_way(submission_id) and lifecycle.give_way(submission_id):
        return "gave way"
    submission = lifecycle.start_run(submission_id)
    if submission is None:
        return "skipped"
    try:
        with lifecycle.lease_renewal(submission) as lease:
            run(submission, lease)
    except Exception as exc:
        log.error("%s %s: runner raised %s", what, submission_id, type(exc).__name__)
        lifecycle.fail_run(submission, ErrorCategory.SCORER_ERROR, f"{failure}; the maintainers have been told.")
    return submission.status


def public_samples(test_set: TestSet) -> list[dict[str, Any]]:
    """What the sandbox may see of each sample: exactly the public inputs (id, question,
    context and the frozen sentence list the scores must follow), never the ground truth."""
    inputs = type(test_set).objects.only("public_inputs").get(pk=test_set.pk).public_inputs
    return [{"id": s["sample_id"], "question": s["question"], "context": s["context"],
             "n_sentences": len(s["sentences"]), "sentences": s["sentences"]} for s in inputs["data"]]


def first_failures(result: sandbox.RunResult, max_chars: int = 2000) -> dict[str, dict[str, str]]:
    """One example per failure category (sample id + what went wrong), so a researcher can
    debug: the sandbox only ever held public inputs, so its messages hold no gold."""
    examples = {}
    for sample_id, category in result.failures.items():
        if category not in examples:
            detail = result.failure_details.get(sample_id, "")
            examples[category] = {"sample_id": sample_id, "detail": detail[:max_chars]}
    return examples


def failure_message(result: sandbox.RunResult, max_chars: int = 4000) -> str:
    """What the owner reads of a failed run: the category and its message, then the first
    failing sample with what went wrong in it (the traceback of an exception), so that a run in
    which every sample failed can be debugged without a second try. The sandbox only ever held
    public inputs, so the detail holds no gold."""
    message = f"{result.failure}: {result.message}"
    for sample_id, category in result.failures.items():
        detail = result.failure_details.get(sample_id, "") or category
        return f"{message}\n\nThe first failing sample, {sample_id} ({category}):\n{detail[:max_chars]}"
    return message


class LeaseLost(Exception):
    """The reaper gave this run's submission away (its lease expired): stop working on it."""


class LeaseKeeper:
    """A code run's hold on its submission, beside the lease renewed by time
    (``lifecycle.lease_renewal``, whatever the sandbox is doing: starting, importing, loading the
    model, one slow sample). As the sandbox's progress callback it records progress after every
    1% of the samples and whenever ``interval`` seconds passed since the last record; as its
    ``interrupt`` it stops the sandbox once the renewal found the run no longer owns the
    submission. Both raise LeaseLost then, which stops the sandbox and stores nothing."""

    def __init__(self, submission: Submission, lease: Heartbeat | None = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.submission = submission
        self.lease = lease
        self.interval = interval if interval is not None else min(60.0, settings.SCORING_LEASE_SECONDS / 4)
        self.clock = clock
        self.last_done = -1
        self.last_time = clock()

    def lost(self) -> LeaseLost:
        return LeaseLost(f"submission {self.submission.pk} attempt {self.submission.attempts} lost its lease")

    def interrupt(self) -> None:
        if self.lease is not None and self.lease.lost.is_set():
            raise self.lost()

    def __call__(self, done: int, total: int) -> None:
        self.interrupt()
        due = (done == total or done - self.last_done >= max(1, total // 100)
               or self.clock() - self.last_time >= self.interval)
        if not due:
            return
        self.last_done, self.last_time = done, self.clock()
        if not lifecycle.heartbeat(self.submission, details={"progress": {"done": done, "total": total}}):
            raise self.lost()


def protected_paths() -> list[Path]:
    """What the hosted model directory must never expose to the sandbox: the server's data
    directory (secret key, broker), uploaded files (other submissions) and the database."""
    paths = [settings.VAR_DIR, settings.MEDIA_ROOT]
    database = settings.DATABASES["default"]
    name = str(database.get("NAME") or "")
    if database["ENGINE"].endswith("sqlite3") and name and name != ":memory:" and not name.startswith("file:"):
        paths.append(Path(name).resolve().parent)
    return paths


def run(submission: Submission, lease: Heartbeat | None = None) -> bool:
    """Run a claimed code submission in the sandbox and store its QUACKIE scores. ``lease``: the
    renewal of the run's lease, whose loss stops the sandbox."""
    if settings.SANDBOX == "none":
        log.warning("SANDBOX=none: running submission %s WITHOUT a sandbox (development only)", submission.pk)
    track = submission.task.track
    samples = public_samples(submission.scoring_test_set)
    limits = sandbox.SandboxLimits(per_sample_seconds=settings.SANDBOX_SAMPLE_SECONDS,
                                   total_seconds=settings.SANDBOX_TOTAL_SECONDS,
                                   cpu_budget_seconds=settings.SANDBOX_CPU_BUDGET_SECONDS)
    keeper = LeaseKeeper(submission, lease)
    try:
        result = sandbox.run_interpreter(submission.file.path, track.hosted_model.path, track.hosted_model.kind,
                                         samples, limits=limits, mode=settings.SANDBOX,
                                         progress=keeper, interrupt=keeper.interrupt,
                                         protected=protected_paths(),
                                         models_root=settings.EXPBENCH_MODELS_DIR,
                                         # the upload's own limit: the run applies the upload's check
                                         code_max_bytes=settings.CODE_MAX_BYTES,
                                         require_cgroups=settings.SANDBOX_REQUIRE_CGROUPS)
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
        # Every submission-level failure (all samples failed, too many timeouts, code that no
        # longer passes the upload check, ...) is the code's own: charged to the sender's quota.
        # Its text comes from the child: made storable, or the database would refuse it and
        # the run would end as the platform's fault (refunded). The first failing sample's
        # traceback is for the owner, who alone sees a failed run; a failed re-score goes into
        # the entry's public history, so it keeps the summary only.
        message = (f"{result.failure}: {result.message}" if lifecycle.is_rescore(submission)
                   else failure_message(result))
        return lifecycle.fail_run(submission, ErrorCategory.CODE_FAILED, str(sandbox.storable(message)))
    scored = scorer_for(submission.task).score(submission.task, submission.scoring_test_set, result.scores)
    failures: dict[str, int] = {}
    for category in result.failures.values():
        failures[category] = failures.get(category, 0) + 1
    times = list(result.sample_seconds.values())
    scored.details.update({
        "progress": {"done": result.done, "total": result.total},
        "sandbox": {"mode": result.mode, "sample_failures": failures, "startup_seconds": result.startup_seconds,
                    "mean_sample_seconds": sum(times) / len(times) if times else None,
                    "first_failures": sandbox.storable(first_failures(result)),
                    "total_seconds": result.total_seconds, "restarts": result.restarts,
                    "cpu_seconds": result.cpu_seconds},
    })
    return lifecycle.store_scores(
        submission, scores=scored.scores, ci=confidence_intervals(submission.task, scored.item_rows),
        item_scores=scored.item_rows, total=scored.total, unanswered=scored.unanswered,
        scorer_version=current_scorer_version(submission.task, submission.kind), details=scored.details)
