"""Re-scoring: put scored entries back through the workers on their task's current test set and
current scorer (docs/operations.md#re-scoring).

A re-score is the ordinary lifecycle (scored -> queued -> running -> scored) with one difference:
the run scores on ``Submission.rescore_test_set`` and only a stored score moves the entry to
that version, so until then the entry keeps its previous score (and its place on the board).
A re-score that fails puts the entry back on its previous score with the failure in its
history (``lifecycle._abandon_rescore``). Quotas are not charged: no submission is created.

Idempotent and resumable: an entry already scored on the current test set by the current
scorer is left alone, an entry whose re-score is already queued or running is waited for, not
queued again. Running the command twice scores each entry once.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from benchmark.models import Task, TestSet

from . import lifecycle
from .models import ScoreRecord, Status, Submission
from .scorers import current_scorer_version

# Skill submissions are re-scored when their skill sets are rebuilt (``runs.rescore_stale_skill_entries``).
RESCORABLE_KINDS = (Submission.PREDICTIONS, Submission.CODE, Submission.MODEL)
IN_FLIGHT = (Status.QUEUED, Status.RUNNING)


@dataclass
class Target:
    """One entry a re-score concerns, with what it had before."""

    submission_id: int
    task_slug: str
    method: str
    before_version: str
    before_scorer: str
    before_scores: dict[str, Any]
    before_record_id: int | None
    primary_metric: str
    queued_now: bool = False


@dataclass
class Plan:
    targets: list[Target] = field(default_factory=list)
    up_to_date: int = 0

    @property
    def to_queue(self) -> list[Target]:
        return [t for t in self.targets if not t.queued_now]


def is_out_of_date(submission: Submission, test_set: TestSet) -> bool:
    """Scored on another test-set version, or by another scorer version, than a run now would be."""
    return (submission.test_set_id != test_set.pk
            or submission.scorer_version != current_scorer_version(submission.task, submission.kind))


def is_stale(submission: Submission) -> bool:
    """Scored by an older scorer version than the task's scorer now (shown on its pages)."""
    return (submission.status == Status.SCORED and submission.kind in RESCORABLE_KINDS
            and submission.scorer_version != current_scorer_version(submission.task, submission.kind))


def plan(tasks: Iterable[Task], submission_ids: Iterable[int] | None = None, *, force: bool = False) -> Plan:
    """What a re-score of ``tasks`` (or of the given submissions) concerns: scored entries that are
    out of date (all scored entries with ``force``) and entries whose re-score is in flight."""
    result = Plan()
    rows = (Submission.objects.filter(task__in=list(tasks), kind__in=RESCORABLE_KINDS)
            .filter(status__in=[Status.SCORED, *IN_FLIGHT])
            .select_related("task", "test_set").defer("item_scores", "test_set__gold", "test_set__public_inputs")
            .order_by("pk"))
    if submission_ids is not None:
        rows = rows.filter(pk__in=list(submission_ids))
    current: dict[int, TestSet | None] = {}
    for submission in rows:
        if submission.task_id not in current:
            current[submission.task_id] = submission.task.current_test_set()
        test_set = current[submission.task_id]
        if test_set is None:
            continue
        in_flight = submission.status in IN_FLIGHT
        if in_flight and submission.rescore_test_set_id is None:
            continue  # a first scoring, not a re-score
        if not in_flight and not force and not is_out_of_date(submission, test_set):
            result.up_to_date += 1
            continue
        result.targets.append(Target(
            submission_id=submission.pk, task_slug=submission.task.slug, method=submission.method_name,
            before_version=submission.test_set.version, before_scorer=submission.scorer_version,
            before_scores=dict(submission.scores), before_record_id=_latest_record_id(submission.pk),
            primary_metric=submission.task.primary_metric, queued_now=in_flight,
        ))
    return result


def _latest_record_id(submission_id: int) -> int | None:
    return ScoreRecord.objects.filter(submission_id=submission_id).order_by("-pk").values_list("pk", flat=True).first()


def queue(target: Target) -> bool:
    """scored -> queued, to be scored on the task's current test set. False when the entry moved
    on meanwhile (someone else queued it)."""
    with transaction.atomic():
        submission = Submission.objects.select_related("task").defer("item_scores").get(pk=target.submission_id)
        test_set = submission.task.current_test_set()
        if submission.status != Status.SCORED or test_set is None:
            return False
        return lifecycle.mark_queued(submission, rescore_test_set=test_set)


def queue_all(plan_: Plan) -> int:
    queued = 0
    for target in plan_.to_queue:
        if queue(target):
            target.queued_now = True
            queued += 1
    return queued


def wait(targets: list[Target], *, poll_seconds: float = 1.0, timeout: float | None = None,
         progress: Callable[[int, int, int], None] | None = None) -> bool:
    """Wait until no target is queued or running; ``progress(done, running, queued)`` after each
    poll. Returns False on timeout (the re-scores go on in the workers)."""
    ids = [t.submission_id for t in targets]
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        states = dict(Submission.objects.filter(pk__in=ids).values_list("pk", "status"))
        running = sum(1 for s in states.values() if s == Status.RUNNING)
        queued = sum(1 for s in states.values() if s == Status.QUEUED)
        if progress:
            progress(len(ids) - running - queued, running, queued)
        if not running and not queued:
            return True
        if deadline is not None and time.monotonic() > deadline:
            return False
        time.sleep(poll_seconds)


@dataclass
class Outcome:
    target: Target
    status: str  # "changed", "unchanged", "failed", "pending"
    after_scores: dict[str, Any]
    after_version: str
    message: str = ""

    @property
    def primary_change(self) -> float | None:
        before = self.target.before_scores.get(self.target.primary_metric)
        after = self.after_scores.get(self.target.primary_metric)
        if before is None or after is None:
            return None
        return float(after) - float(before)


def outcomes(targets: list[Target]) -> list[Outcome]:
    """Each target's result: the score records written since the re-score was planned."""
    result = []
    for target in targets:
        records = ScoreRecord.objects.filter(submission_id=target.submission_id)
        if target.before_record_id is not None:
            records = records.filter(pk__gt=target.before_record_id)
        record = records.order_by("-pk").first()
        status = Submission.objects.filter(pk=target.submission_id).values_list("status", flat=True).first()
        if record is None:
            result.append(Outcome(target, "pending" if status in IN_FLIGHT else "failed", {}, target.before_version,
                                  "" if status in IN_FLIGHT else f"ended {status} without a new score"))
        elif not record.scores:
            result.append(Outcome(target, "failed", {}, target.before_version, record.reason))
        else:
            same = record.scores == target.before_scores
            result.append(Outcome(target, "unchanged" if same else "changed", record.scores, record.test_set_version))
    return result


def ranks(task: Task, test_set_id: int, scores_of: dict[int, dict[str, Any]] | None = None) -> dict[int, int]:
    """Rank of each public scored entry of ``task`` on ``test_set_id`` by the primary metric (ties
    share a rank), as the board ranks them; ``scores_of`` overrides some entries' scores."""
    metric = task.primary_metric
    rows = dict(Submission.objects.filter(task=task, test_set_id=test_set_id, status=Status.SCORED, public=True,
                                          kind__in=RESCORABLE_KINDS, flag_reason="")
                .values_list("pk", "scores"))
    rows.update(scores_of or {})
    values = sorted(((pk, s.get(metric)) for pk, s in rows.items() if s.get(metric) is not None),
                    key=lambda item: -float(item[1]))
    result: dict[int, int] = {}
    previous, previous_rank = None, 0
    for position, (pk, value) in enumerate(values, start=1):
        rank = previous_rank if value == previous else position
        result[pk], previous, previous_rank = rank, value, rank
    return result


def report(plan_: Plan, results: list[Outcome], before_ranks: dict[int, int | None], *, top: int = 5) -> str:
    """The text the command ends with: counts, the largest score changes, the rank changes."""
    counts = {key: sum(1 for o in results if o.status == key) for key in ("changed", "unchanged", "failed", "pending")}
    lines = [
        f"re-scored: {counts['changed'] + counts['unchanged']} "
        f"(score changed: {counts['changed']}, unchanged: {counts['unchanged']}); "
        f"failed: {counts['failed']}; still running: {counts['pending']}; already up to date: {plan_.up_to_date}",
    ]
    lines += _score_changes(results, top)
    lines += _rank_changes(results, before_ranks, top)
    for o in results:
        if o.status == "failed":
            lines.append(f"  failed #{o.target.submission_id} {o.target.method} [{o.target.task_slug}]: {o.message}")
    return "\n".join(lines)


def _score_changes(results: list[Outcome], top: int) -> list[str]:
    """The report's lines on the ``top`` largest changes of the primary metric (none: no line)."""
    moved = sorted((o for o in results if o.primary_change), key=lambda o: -abs(o.primary_change or 0.0))
    if not moved:
        return []
    lines = ["largest score changes (primary metric):"]
    for o in moved[:top]:
        t = o.target
        lines.append(f"  #{t.submission_id} {t.method} [{t.task_slug}] {t.primary_metric} "
                     f"{t.before_scores.get(t.primary_metric):.3f} -> {o.after_scores.get(t.primary_metric):.3f} "
                     f"({o.primary_change:+.3f}; test set {t.before_version} -> {o.after_version})")
    return lines


def _rank_changes(results: list[Outcome], before_ranks: dict[int, int | None], top: int) -> list[str]:
    """The report's lines on the public entries whose rank moved, read on each re-scored task's
    board as it is now (one board per task)."""
    rescored = [o for o in results if o.status in ("changed", "unchanged")]
    after_ranks: dict[int, int | None] = {}
    for task in Task.objects.filter(slug__in={o.target.task_slug for o in rescored}):
        test_set = task.current_test_set()
        after_ranks.update(ranks(task, test_set.pk) if test_set else {})
    rank_changes = [(o, before_ranks.get(o.target.submission_id), after_ranks.get(o.target.submission_id))
                    for o in rescored]
    rank_changes = [item for item in rank_changes if item[1] != item[2]]
    if not rank_changes:
        return ["rank changes: none"]
    lines = ["rank changes (public entries):"]
    for o, before, after in sorted(rank_changes, key=lambda item: item[2] or 10**9)[:top * 4]:
        lines.append(f"  #{o.target.submission_id} {o.target.method} [{o.target.task_slug}] "
                     f"{before or '-'} -> {after or '-'}")
    return lines


def ranks_before(plan_: Plan) -> dict[int, int | None]:
    """Each target's rank on the board it is on now (its current test set)."""
    result: dict[int, int | None] = {}
    by_board: dict[tuple[int, int], list[int]] = {}
    boards = Submission.objects.filter(pk__in=[t.submission_id for t in plan_.targets])
    for pk, task_id, test_set_id in boards.values_list("pk", "task_id", "test_set_id"):
        by_board.setdefault((task_id, test_set_id), []).append(pk)
    for (task_id, test_set_id), ids in by_board.items():
        board = ranks(Task.objects.get(pk=task_id), test_set_id)
        result.update({pk: board.get(pk) for pk in ids})
    return result


def withdrawn_lines(results: list[Outcome]) -> list[str]:
    """The report's lines on predictions ignored because their questions were withdrawn from the
    new test-set version (the policy of docs/operations.md#re-scoring)."""
    rescored = {o.target.submission_id: o for o in results if o.status in ("changed", "unchanged")}
    counts = {pk: (details or {}).get("withdrawn_predictions") for pk, details in
              Submission.objects.filter(pk__in=list(rescored)).values_list("pk", "details")}
    lines = [f"  #{pk} {rescored[pk].target.method} [{rescored[pk].target.task_slug}]: {count} prediction"
             f"{'' if count == 1 else 's'} for withdrawn questions ignored"
             for pk, count in sorted(counts.items()) if count]
    return ["predictions ignored (questions withdrawn from the test set; missing questions score 0):", *lines] \
        if lines else []
