"""Stored boards (docs/operations.md#stored-boards): the pages and the API read a board as one
``BoardSnapshot`` row; ranking, confidence intervals and significance tiers are computed when
something the board shows changes, by a worker (``leaderboards.tasks.rebuild_boards`` on the
``maintenance`` queue, sent by ``benchmark.models.boards_changed`` once the change is committed).

No request ever computes a board. One that finds the stored board out of date shows it, with
its own stamp (ETag and date), and makes sure a rebuild is queued (``request_rebuild``: the
messages coalesce, so a busy board queues one); one that finds no stored board yet (a fresh
start) says that the board is being computed. Only one process computes a given generation at
a time, and a rebuild of a board that is already current does nothing."""
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from benchmark import kinds
from benchmark.models import REBUILD_BOARDS_TASK, Benchmark, BoardGeneration, Task, TestSet, Track
from core.brief_memo import briefly_remembered
from core.db import state_cursor
from core.jobs import WAITING, send_after_commit
from submissions.rescoring import RESCORABLE_KINDS
from submissions.scorers import current_scorer_version

from .boards import benchmark_average_rows, board_summary, entries_awaiting_rescore, leaderboard_rows
from .models import BoardRow, BoardSnapshot
from .ordering import sort_keys
from .progress import stored_progress
from .rows import ROW_SHAPE
from .serializers import AverageRowSerializer, LeaderboardRowSerializer

#: How long a computation holds its lock if its process dies before releasing it.
BUILD_LOCK_SECONDS = 600


def release_stamp() -> str:
    """What changes when a deploy changes how a board is shown (templates, this app's code): part
    of every board's ETag, so that browsers do not keep a page of the previous release."""
    files = [*(settings.BASE_DIR / "templates").rglob("*.html"), *Path(__file__).parent.glob("*.py")]
    return str(max((path.stat().st_mtime_ns for path in files), default=0))


RELEASE = release_stamp()


@dataclass(frozen=True)
class Board:
    payload: Any  # the part read: see PARTS
    stamp: str
    computed_at: datetime
    snapshot_id: int


def task_key(task_id: int) -> str:
    return f"task:{task_id}"


def benchmark_key(benchmark_id: int) -> str:
    return f"benchmark:{benchmark_id}"


def generations(task_ids: list[int]) -> dict[int, tuple[int, datetime | None]]:
    """{task id: (generation, when it last changed)}; a task never changed is at 0."""
    found = {pk: (generation, changed_at) for pk, generation, changed_at in
             BoardGeneration.objects.filter(task_id__in=task_ids).values_list("task_id", "generation", "changed_at")}
    return {pk: found.get(pk, (0, None)) for pk in task_ids}


# Raised when a task board's payload gains or changes a field (2: "progress"), so boards stored
# before are rebuilt rather than read without it.
PAYLOAD_SHAPE = 2


@functools.cache
def of_kind(kind: str) -> Task:
    """An unsaved task of ``kind``, for what depends on the kind only (``task_stamp``, the
    board's orders): a model instance made per request costs a tenth of a stored page's time."""
    return Task(kind=kind)


def task_stamp(task: Task, generation: int) -> str:
    """A task board's stamp: its generation, and the scorer versions of the day (a deploy with a
    new scorer marks entries stale without writing anything)."""
    versions = []
    for kind in RESCORABLE_KINDS:
        try:
            versions.append(current_scorer_version(task, kind))
        except LookupError:  # a task without a scorer (published numbers only)
            versions.append("")
    # The row's shape: a release that adds or renames a column makes every stored board stale.
    return f"{generation}/{ROW_SHAPE}.{PAYLOAD_SHAPE}/" + ",".join(versions)


# -- computing ------------------------------------------------------------------------------
def task_payload(task: Task) -> dict[str, Any]:
    """A task board's stored fields: its rows (each with its place in every order it can be
    sorted in), what the page shows beside them and the home page's line."""
    rows = leaderboard_rows(task)
    test_set = task.current_test_set()
    # In the API's shape (plain JSON types): the page, the CSV and the API read the same rows.
    rows = [dict(row) for row in LeaderboardRowSerializer(rows, many=True).data]
    stored, sortable = board_rows(task, rows)
    version = test_set.version if test_set else None
    return {"payload": {"awaiting_rescore": entries_awaiting_rescore(task), "test_set_version": version,
                        # The page's phase table, stored with the board: a phase's change or
                        # closing changes the board's generation.
                        "phases": phase_rows(task),
                        "n_rows": len(rows), "n_pinned": sum(row.pinned for row in stored), "sortable": sortable,
                        "n_submissions": sum(row["kind"] == "submission" for row in rows),
                        "progress": stored_progress(task, rows)},
            "summary": board_summary(task, rows), "body": "", "n_rows": len(rows), "rows": stored}


def phase_rows(task: Task) -> list[dict[str, Any]]:
    """What the board page says of each phase (UTC; the page adds the reader's own time)."""
    return [{"name": phase.name, "starts_at": phase.starts_at.isoformat(), "ends_at": phase.ends_at.isoformat(),
             "starts_text": f"{phase.starts_at:%Y-%m-%d %H:%M}", "ends_text": f"{phase.ends_at:%Y-%m-%d %H:%M}",
             "daily_quota": phase.daily_quota, "total_quota": phase.total_quota, "live_board": phase.live_board,
             "private_percent": round(100 * phase.private_share), "closed": phase.closed_at is not None}
            for phase in task.phases.all()]


def board_rows(task: Task, rows: list[dict[str, Any]]) -> tuple[list[BoardRow], dict[str, int]]:
    """The rows to store, and for each sort key how many rows have a value. A row's ordinal on
    a key is its place sorted ascending, rows without a value after the others in board order;
    ties are broken so that the key's first direction keeps board order."""
    stored = [BoardRow(position=position, pinned=row["kind"] == "human",
                       data=json.dumps(row, ensure_ascii=False, separators=(",", ":")))
              for position, row in enumerate(rows)]
    candidates = [(position, row) for position, row in enumerate(rows) if not stored[position].pinned]
    with_values: dict[str, int] = {}
    for key in sort_keys(task).values():
        if key.field in with_values:  # tier reads rank's ordinals
            continue
        valued = [(key.value_of(row), position) for position, row in candidates if key.value_of(row) is not None]
        valued.sort(key=lambda pair: (pair[0], -pair[1] if key.descending_first else pair[1]))
        missing = [position for position, row in candidates if key.value_of(row) is None]
        for ordinal, position in enumerate([position for _, position in valued] + missing):
            setattr(stored[position], key.field, ordinal)
        with_values[key.field] = len(valued)
    return stored, with_values


def page_rows(board: Board, task: Task, sort: str, descending: bool, offset: int, limit: int, *,
              encoded: bool = False) -> list[Any]:
    """Rows ``offset`` to ``offset + limit`` of a stored task board read in the order ``sort``
    (``ordering.sort_keys``): pinned rows first, then the others; rows without a value on the key
    come last in both directions. One indexed range query, whatever the board's size."""
    field = sort_keys(task)[sort].field
    n_pinned, with_value = board.payload["n_pinned"], board.payload["sortable"][field]
    wanted = Q(pinned=True, position__gte=offset, position__lt=offset + limit)
    first, end = max(offset - n_pinned, 0), offset + limit - n_pinned  # places among the others

    def place(ordinal: int) -> int:  # where the row with this ascending ordinal comes, descending
        return with_value - 1 - ordinal if ordinal < with_value else ordinal

    if end > first:
        if not descending:
            wanted |= Q(**{f"{field}__gte": first, f"{field}__lt": end})
        else:  # descending places [first, end) are two ranges of ascending ordinals
            if first < with_value:
                wanted |= Q(**{f"{field}__gt": with_value - 1 - min(end, with_value), f"{field}__lte": place(first)})
            if end > with_value:
                wanted |= Q(**{f"{field}__gte": max(first, with_value), f"{field}__lt": end})
    found = list(BoardRow.objects.filter(wanted, snapshot_id=board.snapshot_id).values_list(
        "pinned", "position", field, "data"))
    found.sort(key=lambda r: (not r[0], r[1] if r[0] else place(r[2]) if descending else r[2]))
    return [data if encoded else json.loads(data) for *_, data in found]


def all_rows(board: Board) -> list[dict[str, Any]]:
    """Every row of a stored task board in its own order (the CSV)."""
    return [json.loads(data) for data in BoardRow.objects.filter(snapshot_id=board.snapshot_id)
            .order_by("position").values_list("data", flat=True)]


def benchmark_payload(benchmark: Benchmark) -> dict[str, Any]:
    tasks, rows = benchmark_average_rows(benchmark)
    api = {"tasks": [task.slug for task in tasks],
           "rows": [dict(row) for row in AverageRowSerializer(rows, many=True).data]}
    return {"payload": api, "summary": {}, "body": JSONRenderer().render(api).decode(), "n_rows": len(rows)}


def benchmark_stamp(task_ids: list[int], gens: dict[int, tuple[int, datetime | None]]) -> str:
    return ",".join(f"{pk}={gens[pk][0]}" for pk in sorted(task_ids))


def _store(key: str, stamp: str, fields: dict[str, Any]) -> BoardSnapshot:
    rows = fields.pop("rows", None)
    with transaction.atomic():
        snapshot, _ = BoardSnapshot.objects.update_or_create(
            key=key, defaults={"stamp": stamp, "computed_at": timezone.now(), **fields})
        if rows is not None:  # a task board: its rows replace the previous generation's
            BoardRow.objects.filter(snapshot=snapshot).delete()
            for row in rows:
                row.snapshot = snapshot
            BoardRow.objects.bulk_create(rows, batch_size=500)
    return snapshot


def _build(key: str, stamp: str, compute: Any) -> None:
    """Compute and store the board ``key`` at ``stamp`` (read before computing, so a change
    made meanwhile leaves it out of date, never wrongly current), unless it is stored at that
    stamp already or another process is computing that generation."""
    if BoardSnapshot.objects.filter(key=key, stamp=stamp).exists():
        return
    lock = f"board-build:{key}:{stamp}"
    if not cache.add(lock, 1, BUILD_LOCK_SECONDS):
        return
    try:
        _store(key, stamp, compute())
    finally:
        cache.delete(lock)


def rebuild_tasks(task_ids: list[int]) -> None:
    """Bring the boards of these tasks and the average boards of their benchmarks up to date
    (the worker's job); a board already current is left alone."""
    tasks = list(Task.objects.filter(pk__in=task_ids).select_related("benchmark"))
    for task in tasks:
        stamp = task_stamp(task, generations([task.pk])[task.pk][0])
        _build(task_key(task.pk), stamp, lambda task=task: task_payload(task))
    for benchmark in {task.benchmark for task in tasks}:
        ids = list(benchmark.tasks.values_list("pk", flat=True))
        _build(benchmark_key(benchmark.pk), benchmark_stamp(ids, generations(ids)),
               lambda benchmark=benchmark: benchmark_payload(benchmark))


def rebuild_all() -> None:
    rebuild_tasks(list(Task.objects.values_list("pk", flat=True)))


def request_rebuild(task_ids: list[int]) -> bool:
    """Have a worker bring these tasks' boards (and their benchmarks' averages) up to date: one
    message per task on the ``maintenance`` queue, which coalesces with one already waiting, so
    every request that finds a board out of date may call this. Returns whether the boards were
    rebuilt before it returned: never here (a request does not compute a board); the test
    suite's stand-in for the worker, which rebuilds at once, says yes."""
    for pk in sorted(set(task_ids)):
        send_after_commit(REBUILD_BOARDS_TASK, [pk])
    return False


# -- reading --------------------------------------------------------------------------------
#: What a reader takes of a stored board: ``payload`` (rows for the page and the CSV), ``summary``
#: (the home page's line) or ``body`` (the API's encoded answer); it reads no other.
PARTS = ("payload", "summary", "body")


def snapshots(keys: list[str], part: str) -> dict[str, BoardSnapshot]:
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}")
    return {s.key: s for s in BoardSnapshot.objects.filter(key__in=keys).only("key", "stamp", "computed_at", "n_rows",
                                                                             part)}


def task_boards(tasks: list[Task], part: str = "payload") -> dict[int, Board]:
    """The stored boards of ``tasks`` (their ``part``), current or not: two queries for any
    number of tasks and entries. A board out of date, or never stored, gets a rebuild queued;
    a task whose board was never stored has no entry in the answer (it is being computed)."""
    gens = generations([task.pk for task in tasks])
    keys = [task_key(task.pk) for task in tasks]
    stored = snapshots(keys, part)
    behind = [task.pk for task in tasks
              if getattr(stored.get(task_key(task.pk)), "stamp", None) != task_stamp(task, gens[task.pk][0])]
    if behind and request_rebuild(behind):
        stored = snapshots(keys, part)
    return {task.pk: Board(getattr(snapshot, part), f"t{task.pk}.{snapshot.stamp}", snapshot.computed_at, snapshot.pk)
            for task in tasks if (snapshot := stored.get(task_key(task.pk))) is not None}


def task_board(task: Task, part: str = "payload") -> Board | None:
    """The stored board of ``task`` (None while its first one is being computed)."""
    return task_boards([task], part).get(task.pk)


def benchmark_board(benchmark: Benchmark, part: str = "payload") -> Board | None:
    """The stored average board of ``benchmark``, current or not (a rebuild is queued when it is
    out of date); None while its first one is being computed."""
    ids = list(benchmark.tasks.values_list("pk", flat=True))
    if not ids:  # nothing to average: no worker is ever asked
        empty: dict[str, list[Any]] = {"tasks": [], "rows": []}
        return Board(JSONRenderer().render(empty).decode() if part == "body" else empty, f"b{benchmark.pk}.",
                     timezone.now(), 0)
    key = benchmark_key(benchmark.pk)
    snapshot = snapshots([key], part).get(key)
    if (snapshot is None or snapshot.stamp != benchmark_stamp(ids, generations(ids))) and request_rebuild(ids):
        snapshot = snapshots([key], part).get(key)
    if snapshot is None:
        return None
    return Board(getattr(snapshot, part), f"b{benchmark.pk}.{snapshot.stamp}", snapshot.computed_at, snapshot.pk)


# -- the hot path ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BoardState:
    """What a task board's page and API need before deciding to answer 304, to serve a page
    rendered earlier, or to render: read in one query (``board_state``)."""

    task_id: int
    kind: str
    visibility: str
    stamp: str | None  # the stored board's, None before it is first computed
    up_to_date: bool  # the stored board is of the task's latest generation
    computed_at: datetime | None
    test_set_id: int | None
    cues_updated_at: str | None  # the test set's cue table changes on its own
    track: tuple[str, int, str] | None  # a QUACKIE track's progress, shown on its board
    baselines: tuple[object, ...] | None = None  # its built-in baseline job's progress (baselines_mark)

    @property
    def stored_is_current(self) -> bool:
        """A stored board exists and is of the task's latest generation: requests show it as is."""
        return self.up_to_date and self.stamp is not None and self.computed_at is not None


@functools.cache
def _state_sql(vendor: str, n_public_split_kinds: int) -> str:
    # The ORM would spend ten times the query's own cost compiling it on every request.
    # The kinds scored on their public split (CheckList) are parameters: their names, not the SQL, change.
    dev_kinds = ", ".join(["%s"] * n_public_split_kinds) or "NULL"
    tables = {"task": Task._meta.db_table, "generation": BoardGeneration._meta.db_table,
              "snapshot": BoardSnapshot._meta.db_table, "test_set": TestSet._meta.db_table,
              "track": Track._meta.db_table}
    postgresql = vendor == "postgresql"
    cues = ("ts.diagnostics -> 'icq' ->> 'updated_at'" if postgresql
            else "json_extract(ts.diagnostics, '$.icq.updated_at')")
    # The baseline job's part whole (under 2 kB: a handful of fields and 15 row ids): one
    # extraction from the large diagnostics value rather than one per field.
    baselines = "ts.diagnostics -> 'baselines'" if postgresql else "json_extract(ts.diagnostics, '$.baselines')"
    return f"""
        SELECT t.id, t.kind, t.visibility, g.generation, s.stamp, s.computed_at, ts.id, {cues},
               tr.status, tr.done, tr.updated_at, {baselines}
        FROM {tables["task"]} t
        LEFT JOIN {tables["generation"]} g ON g.task_id = t.id
        LEFT JOIN {tables["snapshot"]} s ON s.key = 'task:' || t.id
        LEFT JOIN {tables["test_set"]} ts ON ts.task_id = t.id AND ts.is_current
             AND ts.split = CASE WHEN t.kind IN ({dev_kinds}) THEN %s ELSE %s END
        LEFT JOIN {tables["track"]} tr ON tr.task_id = t.id
        WHERE t.slug = %s"""


@briefly_remembered
def board_state(slug: str) -> BoardState | None:
    """The state of the task ``slug``'s board (None if there is no such task), whoever may see it
    (read again after ``PAGE_STATE_SECONDS``: core/brief_memo.py)."""
    with state_cursor() as cursor:
        public_split_kinds = kinds.names(lambda kind: kind.scored_split == TestSet.DEV)
        cursor.execute(_state_sql(connection.vendor, len(public_split_kinds)),
                       [*public_split_kinds, TestSet.DEV, TestSet.TEST, slug])
        found = cursor.fetchone()
    if found is None:
        return None
    task_id, kind, visibility, generation, stamp, computed_at, test_set_id, cues, *track, baselines = found
    if isinstance(computed_at, str):  # SQLite hands raw SQL its text
        computed_at = datetime.fromisoformat(computed_at)
    if computed_at is not None and timezone.is_naive(computed_at):
        computed_at = timezone.make_aware(computed_at, UTC)
    expected = task_stamp(of_kind(kind), generation or 0)
    return BoardState(task_id, kind, visibility, stamp, stamp == expected, computed_at, test_set_id,
                      cues, (track[0], track[1], str(track[2])) if track[0] is not None else None,
                      baselines_mark(baselines))


def baselines_mark(part: Any) -> tuple[object, ...] | None:
    """What the board shows of a track's built-in baseline job (its test set's
    ``diagnostics["baselines"]``, submissions.baseline_runs), as an ETag part; None when it was
    never queued. Its progress fields change at each checkpoint (every 30 s) and when a family
    starts, not at every heartbeat (the heartbeat time is left out while the job waits or runs);
    once it stopped, the time it did (a second failure at the same point may have another reason)."""
    if isinstance(part, (str, bytes)):  # SQLite's json_extract, and psycopg as Django sets it up, give text
        part = json.loads(part)
    if not isinstance(part, dict) or not part.get("status"):
        return None
    status = part["status"]
    return (status, part.get("family") or "", part.get("samples_done"), part.get("samples_total"), part.get("done"),
            part.get("total"), "" if status in WAITING else str(part.get("updated_at") or ""),
            part.get("device") or "")


def listed_stamps(visibilities: Sequence[str]) -> tuple[tuple[str, ...], bool]:
    """What the home page shows, as ETag parts (each benchmark, each listed task's stored board
    stamp), and whether every one of those boards is of its task's latest generation: two
    queries for any number of benchmarks, tasks and entries (read again after
    ``PAGE_STATE_SECONDS``: core/brief_memo.py)."""
    return _listed_stamps(tuple(visibilities))


@briefly_remembered
def _listed_stamps(visibilities: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    benchmark, task = Benchmark._meta.db_table, Task._meta.db_table
    generation, snapshot = BoardGeneration._meta.db_table, BoardSnapshot._meta.db_table
    marks = ", ".join(["%s"] * len(visibilities))
    with state_cursor() as cursor:
        cursor.execute(f"SELECT id, slug, name FROM {benchmark} ORDER BY id")
        parts = [f"{pk}:{slug}:{name}" for pk, slug, name in cursor.fetchall()]
        cursor.execute(f"""
            SELECT t.id, t.kind, g.generation, s.stamp FROM {task} t
            LEFT JOIN {generation} g ON g.task_id = t.id
            LEFT JOIN {snapshot} s ON s.key = 'task:' || t.id
            WHERE t.visibility IN ({marks}) ORDER BY t.id""", visibilities)
        tasks = cursor.fetchall()
    up_to_date = all(stamp == task_stamp(of_kind(kind), gen or 0) for _, kind, gen, stamp in tasks)
    return (*parts, *(f"t{pk}.{stamp}" for pk, _, _, stamp in tasks)), up_to_date


def current_stamp(state: BoardState) -> tuple[str, datetime] | None:
    """The stamp and date of the board a request shows: the stored one, current or not (when it
    is out of date a rebuild is queued); None when no board was stored yet (one is queued)."""
    if not state.stored_is_current:
        stamp, computed_at = state.stamp, state.computed_at
        if request_rebuild([state.task_id]):
            stamp, computed_at = BoardSnapshot.objects.filter(key=task_key(state.task_id)).values_list(
                "stamp", "computed_at").first() or (None, None)
        if stamp is None or computed_at is None:
            return None
        return f"t{state.task_id}.{stamp}", computed_at
    assert state.computed_at is not None  # for the type checker: stored_is_current says so
    return f"t{state.task_id}.{state.stamp}", state.computed_at
