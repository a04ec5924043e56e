"""Per-submission diagnostics (docs/diagnostics.md), run by a worker after the score is stored,
as the background job ``DIAGNOSTICS`` (core.jobs).

Only aggregates are stored and shown: per-question outcomes of a hidden split never leave
this module. Each part records whether it applies to the task and why not when it does not.
On a hidden split no group of fewer than HIDDEN_MIN_GROUP_SIZE questions is stored on its own
(question types, length bins, linguistic subsets): the questions are public, so the accuracy
of a one-question group is that question's outcome.
"""
import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Q

from benchmark.models import Task
from core.jobs import ColumnState, Job, JobStatus
from scoring.analysis import icq, linguistic, permutation
from scoring.metrics import expmrc

from .models import Status, Submission
from .scorers import scorer_for

log = logging.getLogger(__name__)

# Smallest group of a hidden split whose outcome (accuracy, F1) is stored and shown; smaller
# groups are pooled into "other (small groups)", itself withheld when it is smaller too.
HIDDEN_MIN_GROUP_SIZE = 5


DIAGNOSTICS = Job(
    key="diagnostics", task_name="submissions.tasks.compute_diagnostics", what="The diagnostics",
    advice="the score is not affected",
    state=ColumnState(Submission, status="diagnostics_status", beat="diagnostics_updated_at",
                      attempts="diagnostics_attempts", scope=Q(status=Status.SCORED),
                      on_give_up=lambda note: {"diagnostics": {"error": note}}))


def schedule(submission: Submission) -> None:
    """Mark diagnostics queued and send them to a worker after commit."""
    DIAGNOSTICS.state.schedule(submission.pk)
    submission.diagnostics_status = JobStatus.QUEUED
    DIAGNOSTICS.send(submission.pk)


def redo_for_test_set(test_set_id: int) -> int:
    """Send the diagnostics of a test set's scored entries again: the dataset-level results they
    compare with (the ICQ cue table) have just been (re)computed. Returns how many."""
    ids = list(Submission.objects.filter(
        test_set_id=test_set_id, status=Status.SCORED,
        diagnostics_status__in=(JobStatus.DONE, JobStatus.FAILED)).values_list("pk", flat=True))
    for pk in ids:
        DIAGNOSTICS.state.schedule(pk)
        DIAGNOSTICS.send(pk)
    return len(ids)


def redo_after_cue_table(sender: type, test_set_id: int, **kwargs: Any) -> None:
    """Receiver of ``benchmark.signals.cue_table_stored``."""
    redo_for_test_set(test_set_id)


def claim(submission_id: int) -> int | None:
    """Take queued diagnostics; the attempt now owning them, or None when another run has them
    (or none are due)."""
    return DIAGNOSTICS.state.claim(submission_id)


def claim_and_run(submission_id: int, n_permutations: int | None = None) -> str:
    """What the maintenance worker does with a message: claim the diagnostics of a scored
    submission, compute and store them. Returns "done", "failed" or "skipped"."""
    attempt = claim(submission_id)
    if attempt is None:
        return "skipped"
    submission = Submission.objects.select_related("task", "test_set").get(pk=submission_id)
    try:
        result = run(submission, n_permutations=n_permutations)
    except Exception as exc:
        # The type only: a message could quote hidden gold.
        log.error("diagnostics of submission %s failed: %s", submission_id, type(exc).__name__)
        fail(submission_id, attempt)
        return JobStatus.FAILED
    store(submission_id, attempt, result)
    return JobStatus.DONE


def store(submission_id: int, attempt: int, result: dict) -> bool:
    return DIAGNOSTICS.state.finish(submission_id, attempt, JobStatus.DONE, diagnostics=result)


def fail(submission_id: int, attempt: int) -> bool:
    return DIAGNOSTICS.state.finish(submission_id, attempt, JobStatus.FAILED, diagnostics={
        "error": "The diagnostics failed on this submission; the maintainers have been told."})


def reap_stuck(now: datetime | None = None) -> dict[str, int]:
    """Re-send diagnostics whose worker died mid-run or whose message was lost; after
    SCORING_MAX_ATTEMPTS runs they fail with a readable note instead of a status page that
    refreshes forever."""
    return DIAGNOSTICS.reap(now)


def span_items(gold: dict[str, Any]) -> list[dict[str, Any]]:
    """(question, context, gold answers) per question, in the scorer's file order."""
    return [
        {"question": qa["question"], "context": paragraph["context"], "answers": [a["text"] for a in qa["answers"]]}
        for article in gold["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def span_diagnostics(task: Task, gold: dict[str, Any], item_scores: list[list[float]], *, hidden: bool = True,
                     n_permutations: int | None = None) -> dict[str, Any]:
    items = span_items(gold)
    answer_f1 = [row[0] for row in item_scores]
    # Luo (2022) tests "correctness": a question counts as correct when its answer F1 is 1
    # (the normalised answer equals one of the references).
    correct = [f1 == 1.0 for f1 in answer_f1]
    min_group_size = HIDDEN_MIN_GROUP_SIZE if hidden else None
    # On a hidden set the question types are grouped exactly as the linguistic question words
    # (whom and whose count as who), so both analyses pool the same small groups: "who" with
    # and without "whose", or a pool with and without it, would differ by "whose" alone.
    aliases = linguistic.FOLDED_WH_WORDS if hidden and task.language == "en" else None
    question_types = permutation.question_type_report(
        [i["question"] for i in items], [i["context"] for i in items], correct,
        language=task.language, n_permutations=n_permutations or settings.DIAGNOSTICS_PERMUTATIONS, seed=0,
        min_group_size=min_group_size, type_aliases=aliases,
    )
    bias = linguistic.linguistic_bias(
        [{**item, "f1": f1} for item, f1 in zip(items, answer_f1)], language=task.language,
        min_group_size=min_group_size,
    )
    return {"question_types": question_types, "linguistic_bias": bias}


def predicted_labels(submission: Submission, gold: dict[str, Any]) -> dict[str, Any]:
    """Predicted option index (multi-choice) per question key, from the stored file."""
    with submission.file.open("rb") as handle:
        predictions = scorer_for(submission.task, submission.kind).parse(
            handle.read(), submission.test_set, max_bytes=settings.SUBMISSION_MAX_BYTES
        )
    if submission.task.kind == "classification":
        return predictions
    letters = expmrc.KeySpec.from_dict(submission.test_set.key_spec).option_letters
    return {key: letters.index(entry["answer"]) for key, entry in predictions.items()}


def icq_diagnostics(submission: Submission) -> dict[str, Any]:
    """ICQ accuracy and distribution tests against the cues found for this test-set version."""
    cues_info = (submission.test_set.diagnostics or {}).get("icq")
    if not cues_info or cues_info.get("status") not in ("done", "no_reference"):
        return {"applicable": False, "note": "Cue discovery has not finished for this test set yet."}
    task = submission.task
    instances = test_instances(task, submission.test_set.gold)
    predictions = predicted_labels(submission, submission.test_set.gold)
    kind = "classification" if task.kind == "classification" else "multichoice"
    result = {
        "applicable": True,
        "accuracy_test": icq.accuracy_test(instances, predictions, cues_info["cues"], kind=kind,
                                           language=task.language),
        "distribution_test": [],
        "note": cues_info.get("note", ""),
    }
    if cues_info["status"] == "done":
        result["distribution_test"] = icq.distribution_test(
            instances, predictions, cues_info["cues"], kind=kind, language=task.language, seed=0
        )
    return result


def test_instances(task: Task, gold: dict[str, Any]) -> list[icq.Instance]:
    if task.kind == "classification":
        return icq.load_instances(gold["rows"], "classification")
    return icq.expmrc_multichoice_instances(gold)


def run(submission: Submission, n_permutations: int | None = None) -> dict[str, Any]:
    """Compute the diagnostics of a scored submission (``n_permutations`` overrides
    settings.DIAGNOSTICS_PERMUTATIONS for the question-type tests)."""
    task = submission.task
    parts = {}
    if task.kind == "span":
        parts.update(span_diagnostics(task, submission.test_set.gold, submission.item_scores,
                                      hidden=submission.test_set.is_hidden, n_permutations=n_permutations))
    if task.kind in ("multichoice", "classification"):
        parts["icq"] = icq_diagnostics(submission)
    return parts
