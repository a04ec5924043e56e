"""Dataset-level ICQ cue discovery for a test-set version (docs/diagnostics.md#icq-cue-profiling),
stored on the TestSet as the background job ``CUE_DISCOVERY`` (docs/operations.md#background-jobs).

Only aggregates are stored (feature, value, cueness, counts, label distributions): they are
what the task page shows. The reference split R is the task's current reference TestSet;
without one, candidate cues are ranked by their label skew within the hidden set itself, so
the accuracy test can still run, and the distribution test (which needs R) is skipped.
"""
from typing import Any

from core.jobs import Job, JobStatus, JsonPartState
from scoring.analysis import icq

from .models import Task, TestSet
from .signals import cue_table_stored

# diagnostics["icq"]["status"]: queued -> running -> done | no_reference | failed
NO_REFERENCE = "no_reference"

CUE_DISCOVERY = Job(key="cue_discoveries", task_name="benchmark.tasks.discover_cues",
                    state=JsonPartState(TestSet, "icq"), what="Cue discovery",
                    advice="run `manage.py discover_cues` to see why")

NO_REFERENCE_NOTE = (
    "This task has no reference (training) split, so cues are ranked by their label skew within "
    "the hidden set itself (JSD = 0) and only the accuracy test (ΔAcc) is run: the distribution "
    "test needs cues discovered on a reference split."
)


def icq_kind(task: Task) -> str:
    return "classification" if task.kind == Task.CLASSIFICATION else "multichoice"


def instances_of(test_set: TestSet) -> list:
    if test_set.task.kind == Task.CLASSIFICATION:
        return icq.load_instances(test_set.gold["rows"], "classification")
    return icq.expmrc_multichoice_instances(test_set.gold)


def set_status(test_set: TestSet, *, replace: bool = False, **fields: Any) -> dict[str, Any] | None:
    """Write the cue-discovery part of the test set's diagnostics by hand (tests, upgrades)."""
    return CUE_DISCOVERY.state.write(test_set.pk, replace=replace, **fields)


def schedule(test_set: TestSet) -> None:
    """Mark the cue table of ``test_set`` queued and, after commit, ask a worker for it."""
    CUE_DISCOVERY.state.schedule(test_set.pk, cues=[], note="")
    CUE_DISCOVERY.send(test_set.pk)


def discover(test_set: TestSet, top_k: int = 20, attempt: int | None = None) -> dict | None:
    """Compute and store the cue table of ``test_set``; returns the stored ``icq`` part, or
    None when the run lost its claim meanwhile (the reaper gave it to another worker).

    A worker passes the ``attempt`` it claimed; by hand (``manage.py discover_cues``) the run
    claims the job whatever its state."""
    state = CUE_DISCOVERY.state
    if attempt is None:
        attempt = state.take(test_set.pk)
    task = test_set.task
    test = instances_of(test_set)
    reference_set = TestSet.objects.filter(task=task, split=TestSet.REFERENCE, is_current=True).first()
    status: str
    if reference_set is not None:
        reference = instances_of(reference_set)
        status = JobStatus.DONE
        note = (f"Reference split R: version {reference_set.version} ({len(reference):,} items, "
                f"{reference_set.source_name}).")
    else:
        reference, status, note = test, NO_REFERENCE, NO_REFERENCE_NOTE
    cues = icq.discover_cues(reference, test, kind=icq_kind(task), language=task.language, top_k=top_k)
    stored = state.finish(test_set.pk, attempt, status, replace=True, note=note, cues=cues, n_test=len(test),
                          n_reference=len(reference),
                          reference_version=reference_set.version if reference_set else None)
    if not stored:
        return None
    # After the table is stored, so that the entries' new runs read it.
    cue_table_stored.send(sender=TestSet, test_set_id=test_set.pk)
    return state.read(test_set.pk)


def fail(test_set: TestSet, attempt: int) -> None:
    CUE_DISCOVERY.state.finish(test_set.pk, attempt, JobStatus.FAILED, cues=[], note="Cue discovery failed.")
