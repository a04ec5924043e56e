"""Running model submissions (docs/model_submissions.md), the worker side: a worker on the
``sandbox`` queue runs the bundle's ``predict`` in the sandbox, first on the task's public
sample (the smoke run), then on the test inputs, and scores what it returned exactly like an
uploaded prediction file. (Upload checks are in ``intake``.)

What the submitter sees. The smoke run only ever held public inputs: its whole log is theirs
to read, and a bundle that fails there is rejected (no quota) without reaching the test
inputs. The test run held the inputs, hidden or not: anything the bundle printed, raised or
returned can quote them, so a failure there shows the category's fixed sentence only, and no
progress count (the position of a failure would tell which input triggered it)."""
import logging
from typing import Any

from django.conf import settings

from benchmark.models import Task, TestSet
from core.jobs import Heartbeat
from scoring import sandbox
from scoring.sandbox.model_contract import ModelBudget, ModelFailure, ModelRunResult
from scoring.sandbox.model_runner import run_model_bundle
from scoring.strict_json import InvalidPredictions

from . import lifecycle
from .code_runs import LeaseKeeper, LeaseLost, claim_and_run_sandboxed
from .models import ErrorCategory, Submission
from .runs import confidence_intervals
from .scorers import current_scorer_version

log = logging.getLogger(__name__)

# The most of a smoke run's log kept for its owner.
RUN_LOG_CHARS = 20_000


def claim_and_run(submission_id: int) -> str:
    """What the sandbox worker does with a model submission's message: claim it (giving way to
    another user's first run, like code runs), run it, score and store. Returns the status it
    ends in, "skipped" or "gave way"."""
    return claim_and_run_sandboxed(submission_id, run, "model submission", "The model runner failed")


def model_budget(task: Task) -> dict[str, int]:
    """What one run of ``task`` may use: its ``model_budget``, the site defaults elsewhere."""
    defaults = {"cpu_seconds": settings.MODEL_CPU_SECONDS, "memory_mb": settings.MODEL_MEMORY_MB,
                "wall_seconds": settings.MODEL_WALL_SECONDS}
    budget = {**defaults, **{key: int(value) for key, value in (task.model_budget or {}).items() if key in defaults}}
    budget["wall_seconds"] = min(budget["wall_seconds"], settings.MODEL_MAX_WALL_SECONDS)
    return budget


def smoke_sample(task: Task) -> TestSet | None:
    """The public sample a bundle is tried on first: the task's current dev split, if it has
    one (the dev split is public; ExpMRC ships one per subset)."""
    return TestSet.objects.filter(task=task, split=TestSet.DEV, is_current=True).defer("gold").first()


def run_bundle(submission: Submission, test_set: TestSet, keeper: LeaseKeeper | None) -> ModelRunResult:
    """Run the bundle on ``test_set``'s inputs and read its predictions with the task's own
    strict parser (``result.predictions``); a refusal fails the run as ``bad_prediction``."""
    task = submission.task
    definition = task.kind_definition
    budget = model_budget(task)
    inputs = type(test_set).objects.only("public_inputs").get(pk=test_set.pk).public_inputs
    result = run_model_bundle(
        submission.file.path, definition.model_examples(inputs),
        budget=ModelBudget(cpu_seconds=budget["cpu_seconds"], memory_bytes=budget["memory_mb"] * 2**20,
                           wall_seconds=budget["wall_seconds"]),
        mode=settings.SANDBOX, gpu=settings.SANDBOX_GPU, max_bytes=task.model_max_bytes or settings.MODEL_MAX_BYTES,
        progress=keeper, interrupt=keeper.interrupt if keeper else None,
        require_cgroups=settings.SANDBOX_REQUIRE_CGROUPS, keep_warm=settings.MODEL_SANDBOX_START_AHEAD)
    if result.ok and result.predictions_json is not None:
        try:
            result.predictions = definition.parse_predictions(result.predictions_json, test_set,
                                                              max_bytes=len(result.predictions_json))
        except InvalidPredictions as exc:
            result.fail(ModelFailure("bad_prediction", f"the predictions do not have the task's prediction format: "
                                                       f"{exc}"))
    return result


def smoke_log(result: ModelRunResult, sample: TestSet) -> str:
    """The owner's log of a smoke run: what happened, the run's figures and the bundle's output."""
    head = (f"Smoke run on the public sample ({sample.split} split, version {sample.version}, "
            f"{result.total} examples): {'passed' if result.ok else 'failed: ' + str(result.failure)}"
            f" in {result.total_seconds:.1f} s on {result.device}.")
    parts = [head, result.message, result.stderr and f"Output of the bundle:\n{result.stderr}"]
    return str(sandbox.storable("\n\n".join(part for part in parts if part)))[:RUN_LOG_CHARS]


def run(submission: Submission, lease: Heartbeat | None = None) -> bool:
    """Smoke run (new submissions only; a re-score has passed it), then the run on the test
    inputs, then the score. Returns whether this attempt stored the outcome."""
    test_set = submission.scoring_test_set
    keeper = LeaseKeeper(submission, lease)
    try:
        sample = None if lifecycle.is_rescore(submission) else smoke_sample(submission.task)
        if sample is not None:
            smoke = run_bundle(submission, sample, LeaseKeeper(submission, lease))
            lifecycle.heartbeat(submission, run_log=smoke_log(smoke, sample))
            if not smoke.ok:
                return lifecycle.reject_run(submission, f"{smoke.failure}: {smoke.hidden_message}. The smoke run's "
                                            "log says what went wrong.", category=ErrorCategory.SMOKE_FAILED)
        result = run_bundle(submission, test_set, keeper)
    except LeaseLost as exc:
        log.warning("%s; model run stopped", exc)
        return False
    except sandbox.SandboxUnavailable as exc:
        return lifecycle.fail_run(submission, ErrorCategory.SCORER_ERROR, f"The sandbox is unavailable: {exc}")
    record = {"run": result.record(), "smoke": sample is not None}
    if not result.ok:
        # The category's fixed sentence only; the progress count goes too (see the module's docstring).
        lifecycle.heartbeat(submission, details={"model_run": record})
        return lifecycle.fail_run(submission, ErrorCategory.MODEL_FAILED,
                                  f"{result.failure}: {result.hidden_message}.")
    return store(submission, test_set, result, record)


def store(submission: Submission, test_set: TestSet, result: ModelRunResult, record: dict[str, Any]) -> bool:
    task = submission.task
    scored = task.kind_definition.score(test_set, result.predictions)
    scored.details.update({"model_run": record, "progress": {"done": result.total, "total": result.total}})
    return lifecycle.store_scores(
        submission, scores=scored.scores, ci=confidence_intervals(task, scored.item_rows),
        item_scores=scored.item_rows, total=scored.total, unanswered=scored.unanswered,
        scorer_version=current_scorer_version(task, submission.kind), details=scored.details)
