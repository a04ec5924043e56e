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
    return task.kind_definition.icq_format


def instances_of(test_set: TestSet) -> list:
    return test_set.task.kind_definition.icq_instances(test_set.gold)


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


# What of a stored cue row depends only on public data: the feature, its counts (features are
# read from the public inputs), and the reference split's labels (training or public dev data).
PUBLIC_CUE_FIELDS = ("feature", "value", "n_reference", "n_test", "reference_dist", "prior", "mse", "cue_label")

HIDDEN_NO_REFERENCE_NOTE = (
    "This task has no public reference split, so its cues could only be found from the hidden "
    "split's own answers: the table is not shown, since a feature's right/wrong rates there would "
    "tell which options are correct. Each entry's ICQ tests (pooled over cues) are on its page."
)
HIDDEN_COLUMNS_NOTE = (
    "Columns computed from the hidden split's answers (S_f's labels, JSD and the cueness that "
    "divides by it) are not shown, since per feature they would tell which options are correct; "
    "rows are ordered by the reference split's skew (MSE) alone."
)


def public_cue_table(part: dict[str, Any], *, hidden: bool) -> dict[str, Any]:
    """The stored ``icq`` part of a test set, reduced to what may be shown to anyone.

    On a hidden split no per-feature statistic of the hidden answers is shown
    (docs/diagnostics.md#hidden-splits-what-is-never-shown): rows keep the reference split's side only, and a
    table found from the hidden split itself (no reference split) is not shown at all. A public
    split (CheckList items, a public dev set) shows everything."""
    if not hidden:
        return {**part, "hidden": False}
    public = {key: part[key] for key in ("status", "attempts", "n_test", "n_reference", "reference_version")
              if key in part}
    if part.get("status") == NO_REFERENCE:
        return {**public, "hidden": True, "cues": [], "note": HIDDEN_NO_REFERENCE_NOTE}
    rows = [{key: cue[key] for key in PUBLIC_CUE_FIELDS if key in cue} for cue in part.get("cues", [])]
    rows.sort(key=lambda cue: (-cue.get("mse", 0.0), -cue.get("n_reference", 0), cue["feature"], cue["value"]))
    return {**public, "hidden": True, "cues": rows, "note": f"{part.get('note', '')} {HIDDEN_COLUMNS_NOTE}".strip()}


def fail(test_set: TestSet, attempt: int) -> None:
    CUE_DISCOVERY.state.finish(test_set.pk, attempt, JobStatus.FAILED, cues=[], note="Cue discovery failed.")
