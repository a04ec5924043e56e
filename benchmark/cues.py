"""Dataset-level ICQ cue discovery for a test-set version (SPEC §8), stored on the TestSet.

Only aggregates are stored (feature, value, cueness, counts, label distributions): they are
what the task page shows. The reference split R is the task's current reference TestSet;
without one, candidate cues are ranked by their label skew within the hidden set itself, so
the accuracy test can still run, and the distribution test (which needs R) is skipped.
"""
from .models import TestSet

NO_REFERENCE_NOTE = (
    "This task has no reference (training) split, so cues are ranked by their label skew within "
    "the hidden set itself (JSD = 0) and only the accuracy test (ΔAcc) is run: the distribution "
    "test compares predictions with the reference split's label distribution."
)


def icq_kind(task):
    return "classification" if task.kind == "classification" else "multichoice"


def instances_of(test_set):
    from scoring import icq

    if test_set.task.kind == "classification":
        return icq.load_instances(test_set.gold["rows"], "classification")
    return icq.expmrc_multichoice_instances(test_set.gold)


def discover(test_set, top_k=20):
    """Compute and store the cue table of ``test_set``; returns the stored ``icq`` part."""
    from scoring import icq

    task = test_set.task
    test = instances_of(test_set)
    reference_set = (
        TestSet.objects.filter(task=task, split=TestSet.REFERENCE, is_current=True).first()
    )
    if reference_set is not None:
        reference = instances_of(reference_set)
        status = "done"
        note = f"Reference split R: version {reference_set.version} ({len(reference):,} items, {reference_set.source_name})."
    else:
        reference, status, note = test, "no_reference", NO_REFERENCE_NOTE
    cues = icq.discover_cues(reference, test, kind=icq_kind(task), language=task.language, top_k=top_k)
    part = {"status": status, "note": note, "cues": cues, "n_test": len(test), "n_reference": len(reference),
            "reference_version": reference_set.version if reference_set else None}
    TestSet.objects.filter(pk=test_set.pk).update(diagnostics={**(test_set.diagnostics or {}), "icq": part})
    return part
