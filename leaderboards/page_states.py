"""What the pages read from the store need to decide, before anything else, between a 304, an
answer kept earlier and rendering: the benchmark page and its average CSV (``benchmark_state``),
an entry's page and the compare page (``entry_state``). Each is one or two small queries whose
values change exactly when what the page shows does, so they name the kept answer (its ETag)
and a change (a new, withdrawn or re-scored entry, a phase's end, a task hidden or shown) makes
the next visitor's answer a new one. Who may see what is decided on every request, never read
from a kept answer (``EntryState.public``)."""
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from benchmark.models import Benchmark, BoardGeneration, Task, Visibility
from core.brief_memo import briefly_remembered
from core.db import state_cursor
from submissions.models import Status, Submission

from . import store
from .models import BoardSnapshot
from .store import benchmark_stamp, of_kind, task_stamp


@dataclass(frozen=True)
class BenchmarkState:
    """A benchmark's row, its stored average board and its tasks' stored boards."""

    benchmark_id: int
    row: str  # every column of the benchmark's row: its page shows them (name, description, citation)
    average_stamp: str | None  # the stored average board's, None before it is first computed
    up_to_date: bool  # every board of the benchmark is of its tasks' latest generation
    tasks: tuple[tuple[int, str, str | None], ...]  # (id, visibility, stored board stamp) per task

    @property
    def parts(self) -> list[object]:
        """ETag parts of what the benchmark's pages show (with the visitor, whom every ETag names):
        the benchmark, its average board, and each task's board and visibility, whether the
        visitor sees that task or not (a task hidden, even from unlisted, changes what the others see)."""
        return [self.row, f"b{self.benchmark_id}.{self.average_stamp}",
                *(f"t{pk}.{visibility}.{stamp}" for pk, visibility, stamp in self.tasks)]


@briefly_remembered
def benchmark_state(slug: str, *, again: bool = True) -> BenchmarkState | None:
    """The state of the benchmark ``slug``'s boards (None if there is no such benchmark). A board
    out of date gets a rebuild queued; the pages show the stored ones meanwhile (read again when
    the rebuild was done at once: the test suite's stand-in for the worker). One query: on
    PostgreSQL each round trip costs as much as the rest of the answer. Read again after
    ``PAGE_STATE_SECONDS`` (core/brief_memo.py)."""
    benchmark, task = Benchmark._meta.db_table, Task._meta.db_table
    generation, snapshot = BoardGeneration._meta.db_table, BoardSnapshot._meta.db_table
    # The snapshots' keys as store.task_key and store.benchmark_key write them.
    with state_cursor() as cursor:
        cursor.execute(f"""
            SELECT t.id, t.kind, t.visibility, g.generation, s.stamp, a.stamp, b.id, b.* FROM {benchmark} b
            LEFT JOIN {task} t ON t.benchmark_id = b.id
            LEFT JOIN {generation} g ON g.task_id = t.id
            LEFT JOIN {snapshot} s ON s.key = 'task:' || t.id
            LEFT JOIN {snapshot} a ON a.key = 'benchmark:' || b.id
            WHERE b.slug = %s ORDER BY t.id""", [slug])
        found = cursor.fetchall()
    if not found:
        return None
    row, benchmark_id = found[0][7:], found[0][6]
    tasks = [line[:6] for line in found if line[0] is not None]
    gens: dict[int, tuple[int, datetime | None]] = {pk: (gen or 0, None) for pk, _, _, gen, _, _ in tasks}
    average_stamp = tasks[0][5] if tasks else ""
    up_to_date = (not tasks or average_stamp == benchmark_stamp(list(gens), gens)) and all(
        stamp == task_stamp(of_kind(kind), gen or 0) for _, kind, _, gen, stamp, _ in tasks)
    if not up_to_date and store.request_rebuild(list(gens)) and again:
        return benchmark_state(slug, again=False)
    return BenchmarkState(benchmark_id, repr(row), average_stamp, up_to_date,
                          tuple((pk, visibility, stamp) for pk, _, visibility, _, stamp, _ in tasks))


@dataclass(frozen=True)
class EntryState:
    """An entry as its page shows it, in one digest."""

    submission_id: int
    public: bool  # anyone may see it: public, scored, on a task that is not hidden
    digest: str


#: Every column of an entry but its per-item scores (large, and shown on no page): a change of
#: any (a re-score, a rename, its diagnostics, a flag) changes the digest.
_SHOWN_COLUMNS = [field.column for field in Submission._meta.concrete_fields
                  if field.name not in ("item_scores", "held_item_scores")]


def entry_state(submission_id: int) -> EntryState | None:
    """The state of entry ``submission_id`` (None if there is none): its row, its task's
    visibility and board generation (a phase's end, a new test set, a team renamed) and the
    scorer versions of the day (an entry scored by an earlier one is marked out of date)."""
    return entry_states([submission_id]).get(submission_id)


def entry_states(submission_ids: Sequence[int]) -> dict[int, EntryState]:
    """``entry_state`` of each of these entries that exists, in one query (read again after
    ``PAGE_STATE_SECONDS``: core/brief_memo.py; the answer is shared, not to be changed)."""
    return _entry_states(tuple(submission_ids))


@briefly_remembered
def _entry_states(submission_ids: tuple[int, ...]) -> dict[int, EntryState]:
    submission, task, generation = Submission._meta.db_table, Task._meta.db_table, BoardGeneration._meta.db_table
    columns = ", ".join(f"s.{column}" for column in _SHOWN_COLUMNS)
    marks = ", ".join(["%s"] * len(submission_ids))
    with state_cursor() as cursor:
        cursor.execute(f"""
            SELECT s.id, t.kind, t.visibility, g.generation, {columns} FROM {submission} s
            JOIN {task} t ON t.id = s.task_id LEFT JOIN {generation} g ON g.task_id = t.id
            WHERE s.id IN ({marks})""", submission_ids)
        rows = cursor.fetchall()
    states = {}
    for pk, kind, visibility, gen, *values in rows:
        shown = dict(zip(_SHOWN_COLUMNS, values, strict=True))
        public = bool(shown["public"]) and shown["status"] == Status.SCORED and visibility != Visibility.HIDDEN
        stamp = task_stamp(of_kind(kind), gen or 0)
        states[pk] = EntryState(pk, public, hashlib.sha256(repr((visibility, stamp, values)).encode()).hexdigest())
    return states
