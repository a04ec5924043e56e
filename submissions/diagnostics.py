"""Per-submission diagnostics (docs/diagnostics.md), run by a worker after the score is stored,
as the background job ``DIAGNOSTICS`` (core.jobs).

Only aggregates are stored and shown: per-question outcomes of a hidden split never leave
this module. Each part records whether it applies to the task and why not when it does not.
On a hidden split no group of fewer than HIDDEN_MIN_GROUP_SIZE questions is stored on its own
(question types, length bins, linguistic subsets): the questions are public, so the accuracy
of a one-question group is that question's outcome. Nor is a group whose mean pins down its
members' outcomes (all right, all wrong; scoring.disclosure): such groups are pooled, ICQ rows
withheld, when the diagnostics are computed; ``published`` applies the rule again when stored
diagnostics are read, for those computed before it existed.
"""
import copy
import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Q

from benchmark.models import Task
from core.jobs import ColumnState, Job, JobStatus
from scoring import disclosure
from scoring.analysis import icq, linguistic, permutation

from .models import Status, Submission
from .scorers import scorer_for

log = logging.getLogger(__name__)

# Smallest group of a hidden split whose outcome (accuracy, F1) is stored and shown; smaller
# groups are pooled into "other (small groups)", itself withheld when it is smaller too.
HIDDEN_MIN_GROUP_SIZE = disclosure.MIN_GROUP_SIZE
# Stored with the diagnostics of a hidden split computed under the disclosure rule; rows without
# it were computed before and are filtered when read (``published``).
DISCLOSURE_VERSION = 1


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
        min_group_size=min_group_size, type_aliases=aliases, protect_outcomes=hidden,
    )
    bias = linguistic.linguistic_bias(
        [{**item, "f1": f1} for item, f1 in zip(items, answer_f1, strict=True)], language=task.language,
        min_group_size=min_group_size, protect_outcomes=hidden,
    )
    return {"question_types": question_types, "linguistic_bias": bias}


def predicted_labels(submission: Submission, gold: dict[str, Any]) -> dict[str, Any]:
    """The predicted labels ICQ compares with its cues (multiple choice: the option index), from
    the stored file."""
    with submission.file.open("rb") as handle:
        predictions = scorer_for(submission.task, submission.kind).parse(
            handle.read(), submission.test_set, max_bytes=settings.SUBMISSION_MAX_BYTES, stored=True
        )
    return submission.task.kind_definition.predicted_labels(predictions, submission.test_set)


def icq_diagnostics(submission: Submission) -> dict[str, Any]:
    """ICQ accuracy and distribution tests against the cues found for this test-set version."""
    cues_info = (submission.test_set.diagnostics or {}).get("icq")
    if not cues_info or cues_info.get("status") not in ("done", "no_reference"):
        return {"applicable": False, "note": "Cue discovery has not finished for this test set yet."}
    task = submission.task
    instances = task.kind_definition.icq_instances(submission.test_set.gold)
    predictions = predicted_labels(submission, submission.test_set.gold)
    kind = task.kind_definition.icq_format
    hidden = submission.test_set.is_hidden
    result = {
        "applicable": True,
        "accuracy_test": icq.accuracy_test(instances, predictions, cues_info["cues"], kind=kind,
                                           language=task.language, protect_outcomes=hidden),
        "distribution_test": [],
        "note": cues_info.get("note", ""),
    }
    if cues_info["status"] == "done":
        result["distribution_test"] = icq.distribution_test(
            instances, predictions, cues_info["cues"], kind=kind, language=task.language, seed=0,
            protect_outcomes=hidden,
        )
    return result


def run(submission: Submission, n_permutations: int | None = None) -> dict[str, Any]:
    """Compute the diagnostics of a scored submission (``n_permutations`` overrides
    settings.DIAGNOSTICS_PERMUTATIONS for the question-type tests)."""
    task = submission.task
    parts = {}
    if task.kind_definition.span_diagnostics:
        parts.update(span_diagnostics(task, submission.test_set.gold, submission.item_scores,
                                      hidden=submission.test_set.is_hidden, n_permutations=n_permutations))
    if task.kind_definition.icq_format:
        parts["icq"] = icq_diagnostics(submission)
    if submission.test_set.is_hidden:
        parts["disclosure"] = {"version": DISCLOSURE_VERSION, "rule": disclosure.RULE,
                               "suppressed": suppressed_parts(parts)}
    return parts


def suppressed_parts(diagnostics: dict[str, Any]) -> list[str]:
    """Readable names of the groupings where the disclosure rule pooled groups or withheld rows
    (for the page's note), e.g. "question type", "ICQ accuracy test (2 cues)"."""
    def suppressed(part: dict[str, Any]) -> bool:
        return bool(part.get("pooled_for_outcomes") or part.get("withheld"))

    tests = (diagnostics.get("question_types") or {}).get("categorical", {}).get("tests", [])
    properties = (diagnostics.get("linguistic_bias") or {}).get("properties", [])
    found = [test["variable"].replace("_", " ") for test in tests if suppressed(test)]
    found += [f"linguistic: {prop['name'].replace('_', ' ')}" for prop in properties if suppressed(prop)]
    icq_part = diagnostics.get("icq") or {}
    for key, name in (("accuracy_test", "ICQ accuracy test"), ("distribution_test", "ICQ distribution test")):
        withheld = sum(1 for row in icq_part.get(key) or [] if row.get("withheld"))
        if withheld:
            found.append(f"{name} ({withheld} cue{'s' if withheld != 1 else ''})")
    return found


def published(diagnostics: dict[str, Any] | None, *, hidden: bool) -> dict[str, Any]:
    """The stored diagnostics as they may be shown (page, API, compare). Public splits and
    hidden ones computed under the disclosure rule are shown as stored. Hidden ones computed
    before it are filtered with what is stored, conservatively: a grouping with a group (or a
    remainder given by the totals) that reveals its members' outcomes is withheld whole, as is
    an ICQ row, and the distribution test (whose check needs the predictions); recomputing them
    (``redo_for_test_set``) brings back what the rule allows."""
    stored = diagnostics or {}
    current = (stored.get("disclosure") or {}).get("version") == DISCLOSURE_VERSION
    if not stored or not hidden or "error" in stored or current:
        return stored
    shown = copy.deepcopy(stored)
    for withhold_revealing in (_filter_question_types, _filter_linguistic, _filter_icq):
        withhold_revealing(shown)
    shown["disclosure"] = {"version": None, "rule": disclosure.RULE, "suppressed": suppressed_parts(shown),
                           "recompute": True}
    return shown


# The filters ``published`` applies, one per diagnostic, to a hidden split's diagnostics computed
# before the disclosure rule (in place, on a copy).

def _filter_question_types(shown: dict[str, Any]) -> None:
    """A categorical test with a group, or the remainder the totals give, that reveals its
    members' outcomes is withheld; the question-type one takes its one-vs-rest tests with it."""
    qt = shown.get("question_types")
    if not qt:
        return
    for test in qt.get("categorical", {}).get("tests", []):
        groups = test.get("groups", {})
        blocks = [(g["correct"], g["n"]) for g in groups.values()]
        rest_n = qt["n_items"] - sum(n for _, n in blocks)
        blocks.append((qt["n_correct"] - sum(c for c, _ in blocks), rest_n))
        if any(n and disclosure.reveals_members(c, 0, n) for c, n in blocks):
            _withhold(test, groups={}, order=[], statistic=None, p_value=None, p_value_se=None,
                      p_value_chi_square=None, significant=None)
            if test["variable"] == "question_type":
                qt["one_vs_rest"] = {**qt.get("one_vs_rest", {}), "tests": [], "threshold": None}


def _filter_linguistic(shown: dict[str, Any]) -> None:
    for prop in (shown.get("linguistic_bias") or {}).get("properties", []):
        # The remainder's F1 follows from the score, which is not stored here: withheld with it.
        if prop.get("hidden_items") or any(disclosure.reveals_members(b["f1"] * b["n"], 0, b["n"])
                                           for b in prop.get("bins", [])):
            _withhold(prop, bins=[], bias=None, between_bin_variance=None, null_expectation=None,
                      bias_corrected=None, p_value=None)


def _filter_icq(shown: dict[str, Any]) -> None:
    """An accuracy-test row whose counts are not disclosable is withheld (the Holm adjustment is
    redone over the rows left); the distribution test is withheld whole: its check needs the
    predictions, which are not stored."""
    icq_part = shown.get("icq") or {}
    rows = icq_part.get("accuracy_test") or []
    for row in rows:
        if row.get("acc_with") is not None and not (
                disclosure.disclosable(round(row["acc_with"] * row["n_with"]), row["n_with"])
                and disclosure.disclosable(round(row["acc_without"] * row["n_without"]), row["n_without"])):
            _withhold(row, acc_with=None, acc_without=None, delta=None, p_value=None)
    adjusted_p = disclosure.withheld_holm([row.get("p_value") for row in rows], icq.holm)
    for row, adjusted in zip(rows, adjusted_p, strict=True):
        row["p_holm"] = adjusted
    if icq_part.get("distribution_test"):
        icq_part["distribution_test"] = [
            {"feature": row["feature"], "value": row["value"], "cue_label": row.get("cue_label"),
             "reference_dist": row.get("reference_dist", {}), "n_flat": None, "p_value": None, "p_holm": None,
             "follows_cue": None, "follows_cue_published": None, "withheld": True}
            for row in icq_part["distribution_test"]]


def _withhold(part: dict[str, Any], **emptied: Any) -> None:
    part.update(emptied)
    part["withheld"] = True
