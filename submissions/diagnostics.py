"""Per-submission diagnostics (SPEC §8), run by a worker after the score is stored.

Only aggregates are stored and shown: per-question outcomes of a hidden split never leave
this module. Each part records whether it applies to the task and why not when it does not.
On a hidden split no group of fewer than HIDDEN_MIN_GROUP_SIZE questions is stored on its own
(question types, length bins, linguistic subsets): the questions are public, so the accuracy
of a one-question group is that question's outcome.
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from scoring.metrics import expmrc

from . import lifecycle
from .models import DiagnosticsStatus, Status, Submission

log = logging.getLogger(__name__)

# Smallest group of a hidden split whose outcome (accuracy, F1) is stored and shown; smaller
# groups are pooled into "other (small groups)", itself withheld when it is smaller too.
HIDDEN_MIN_GROUP_SIZE = 5


def schedule(submission):
    """Mark diagnostics pending and send them to a worker after commit."""
    Submission.objects.filter(pk=submission.pk).update(
        diagnostics_status=DiagnosticsStatus.PENDING, diagnostics_updated_at=timezone.now(), diagnostics_attempts=0)
    submission.diagnostics_status = DiagnosticsStatus.PENDING
    send(submission.pk)


def send(submission_id):
    def enqueue():
        from .tasks import compute_diagnostics

        try:
            compute_diagnostics.apply_async(args=[submission_id])
        except Exception:  # broker down: the reaper sends it again
            log.exception("could not enqueue diagnostics of submission %s", submission_id)

    transaction.on_commit(enqueue)


def redo_for_test_set(test_set_id):
    """Send the diagnostics of a test set's scored entries again: the dataset-level results they
    compare with (the ICQ cue table) have just been (re)computed. Returns how many."""
    ids = list(Submission.objects.filter(
        test_set_id=test_set_id, status=Status.SCORED,
        diagnostics_status__in=(DiagnosticsStatus.DONE, DiagnosticsStatus.FAILED)).values_list("pk", flat=True))
    Submission.objects.filter(pk__in=ids).update(
        diagnostics_status=DiagnosticsStatus.PENDING, diagnostics_updated_at=timezone.now(), diagnostics_attempts=0)
    for pk in ids:
        send(pk)
    return len(ids)


def claim(submission_id):
    """Atomically take pending diagnostics; False when another run has them (or none are due)."""
    return bool(Submission.objects.filter(
        pk=submission_id, status=Status.SCORED, diagnostics_status=DiagnosticsStatus.PENDING
    ).update(diagnostics_status=DiagnosticsStatus.RUNNING, diagnostics_updated_at=timezone.now(),
             diagnostics_attempts=F("diagnostics_attempts") + 1))


def reap_stuck(now=None):
    """Re-send diagnostics whose worker died mid-run (status running past the background lease)
    or whose message was lost (pending past the queue lease); after SCORING_MAX_ATTEMPTS runs
    they fail with a readable note instead of a status page that refreshes forever."""
    now = now or timezone.now()
    counts = {"diagnostics_resent": 0, "diagnostics_failed": 0}
    dead = now - timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS)
    lost = now - timedelta(seconds=settings.QUEUE_LEASE_SECONDS)
    stale = Submission.objects.filter(
        Q(diagnostics_status=DiagnosticsStatus.RUNNING, diagnostics_updated_at__lt=dead)
        | Q(diagnostics_status=DiagnosticsStatus.PENDING, diagnostics_updated_at__lt=lost)
        | Q(diagnostics_status__in=(DiagnosticsStatus.PENDING, DiagnosticsStatus.RUNNING),
            diagnostics_updated_at__isnull=True)
    ).values_list("pk", "diagnostics_status", "diagnostics_attempts")
    for pk, status, attempts in stale:
        same = Submission.objects.filter(pk=pk, diagnostics_status=status, diagnostics_attempts=attempts)
        if status == DiagnosticsStatus.RUNNING and attempts >= settings.SCORING_MAX_ATTEMPTS:
            if same.update(diagnostics_status=DiagnosticsStatus.FAILED, diagnostics_updated_at=now, diagnostics={
                    "error": f"The diagnostics {lifecycle.stopped(attempts)}; the score is not affected."}):
                counts["diagnostics_failed"] += 1
        elif same.update(diagnostics_status=DiagnosticsStatus.PENDING, diagnostics_updated_at=now):
            send(pk)
            counts["diagnostics_resent"] += 1
    return counts


def span_items(gold):
    """(question, context, gold answers) per question, in the scorer's file order."""
    return [
        {"question": qa["question"], "context": paragraph["context"], "answers": [a["text"] for a in qa["answers"]]}
        for article in gold["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def span_diagnostics(task, gold, item_scores, *, hidden=True, n_permutations=None):
    from scoring.analysis import linguistic, permutation

    items = span_items(gold)
    answer_f1 = [row[0] for row in item_scores]
    # Seed 003 tests "correctness": a question counts as correct when its answer F1 is 1
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


def predicted_labels(submission, gold):
    """Predicted option index (multi-choice) per question key, from the stored file."""
    from .scorers import scorer_for

    with submission.file.open("rb") as handle:
        predictions = scorer_for(submission.task, submission.kind).parse(
            handle.read(), submission.test_set, max_bytes=settings.SUBMISSION_MAX_BYTES
        )
    if submission.task.kind == "classification":
        return predictions
    letters = expmrc.KeySpec.from_dict(submission.test_set.key_spec).option_letters
    return {key: letters.index(entry["answer"]) for key, entry in predictions.items()}


def icq_diagnostics(submission):
    """ICQ accuracy and distribution tests against the cues found for this test-set version."""
    from scoring.analysis import icq

    cues_info = (submission.test_set.diagnostics or {}).get("icq")
    if not cues_info or cues_info.get("status") not in ("done", "no_reference"):
        return {"applicable": False, "note": "Cue discovery has not finished for this test set yet."}
    task = submission.task
    instances = test_instances(task, submission.test_set.gold)
    predictions = predicted_labels(submission, submission.test_set.gold)
    kind = "classification" if task.kind == "classification" else "multichoice"
    result = {
        "applicable": True,
        "accuracy_test": icq.accuracy_test(instances, predictions, cues_info["cues"], kind=kind, language=task.language),
        "distribution_test": [],
        "note": cues_info.get("note", ""),
    }
    if cues_info["status"] == "done":
        result["distribution_test"] = icq.distribution_test(
            instances, predictions, cues_info["cues"], kind=kind, language=task.language, seed=0
        )
    return result


def test_instances(task, gold):
    from scoring.analysis import icq

    if task.kind == "classification":
        return icq.load_instances(gold["rows"], "classification")
    return icq.expmrc_multichoice_instances(gold)


def run(submission, n_permutations=None):
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
