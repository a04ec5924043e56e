"""Dataset-level ICQ cue discovery for a test-set version (SPEC §8), stored on the TestSet.

Only aggregates are stored (feature, value, cueness, counts, label distributions): they are
what the task page shows. The reference split R is the task's current reference TestSet;
without one, candidate cues are ranked by their label skew within the hidden set itself, so
the accuracy test can still run, and the distribution test (which needs R) is skipped.
"""
from django.db import transaction

from .models import TestSet

# diagnostics["icq"]["status"]: queued -> running -> done | no_reference | failed
PENDING = ("queued", "running")

NO_REFERENCE_NOTE = (
    "This task has no reference (training) split, so cues are ranked by their label skew within "
    "the hidden set itself (JSD = 0) and only the accuracy test (ΔAcc) is run: the distribution "
    "test compares predictions with the reference split's label distribution."
)


def icq_kind(task):
    return "classification" if task.kind == "classification" else "multichoice"


def instances_of(test_set):
    from scoring.analysis import icq

    if test_set.task.kind == "classification":
        return icq.load_instances(test_set.gold["rows"], "classification")
    return icq.expmrc_multichoice_instances(test_set.gold)


def set_status(test_set, *, replace=False, **fields):
    """Write the cue-discovery part of the test set's diagnostics (its ``updated_at`` is the
    heartbeat the reaper reads)."""
    return TestSet.update_diagnostics_part(test_set.pk, "icq", replace=replace, **fields)


def schedule(test_set):
    """Mark the cue table of ``test_set`` queued and, after commit, ask a worker for it."""
    set_status(test_set, replace=True, status="queued", cues=[], note="", attempts=0)
    send(test_set)


def send(test_set):
    def enqueue():
        from .tasks import discover_cues

        try:
            discover_cues.apply_async(args=[test_set.pk])
        except Exception:  # broker down: the reaper sends it again; `manage.py discover_cues` runs it now
            import logging

            logging.getLogger(__name__).exception("could not enqueue cue discovery for test set %s", test_set.pk)

    transaction.on_commit(enqueue)


def discover(test_set, top_k=20):
    """Compute and store the cue table of ``test_set``; returns the stored ``icq`` part."""
    from scoring.analysis import icq

    task = test_set.task
    stored = (TestSet.objects.filter(pk=test_set.pk).values_list("diagnostics", flat=True).first() or {}).get("icq") or {}
    attempts = stored.get("attempts", 0) + 1
    set_status(test_set, status="running", attempts=attempts)
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
    part = set_status(test_set, replace=True, status=status, note=note, cues=cues, n_test=len(test),
                      n_reference=len(reference), attempts=attempts,
                      reference_version=reference_set.version if reference_set else None)
    # Entries scored before this table existed (or against an older one) get their ICQ tests
    # again; after the table is stored, so that their run reads it.
    from submissions.diagnostics import redo_for_test_set

    redo_for_test_set(test_set.pk)
    return part
