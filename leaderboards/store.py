"""Stored boards (docs/operations.md#stored-boards): the pages and the API read a board as one
``BoardSnapshot`` row; ranking, confidence intervals and significance tiers are computed when
something the board shows changes, by a worker (``leaderboards.tasks.rebuild_boards``, sent by
``benchmark.models.boards_changed`` once the change is committed).

A request that finds no stored board computes it once (the first request after a deploy). One
that finds it out of date gets the stored one while a worker recomputes it, unless the board
is small (``BOARD_INLINE_ROWS`` rows or fewer: computed at once, so a small board is never
behind) or the change is older than ``BOARD_WORKER_GRACE_SECONDS`` (no worker took it: the
request computes it, so a board is never left behind for good). Only one process computes a
given generation at a time."""
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.cache import get_conditional_response
from django.utils.http import http_date, quote_etag
from rest_framework.renderers import JSONRenderer

from benchmark.models import Benchmark, BoardGeneration, Task
from submissions.rescoring import RESCORABLE_KINDS
from submissions.scorers import current_scorer_version

from .boards import benchmark_average_rows, board_summary, entries_awaiting_rescore, leaderboard_rows
from .models import BoardSnapshot
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


def task_key(task_id: int) -> str:
    return f"task:{task_id}"


def benchmark_key(benchmark_id: int) -> str:
    return f"benchmark:{benchmark_id}"


def generations(task_ids: list[int]) -> dict[int, tuple[int, datetime | None]]:
    """{task id: (generation, when it last changed)}; a task never changed is at 0."""
    found = {pk: (generation, changed_at) for pk, generation, changed_at in
             BoardGeneration.objects.filter(task_id__in=task_ids).values_list("task_id", "generation", "changed_at")}
    return {pk: found.get(pk, (0, None)) for pk in task_ids}


def task_stamp(task: Task, generation: int) -> str:
    """A task board's stamp: its generation, and the scorer versions of the day (a deploy with a
    new scorer marks entries stale without writing anything)."""
    versions = []
    for kind in RESCORABLE_KINDS:
        try:
            versions.append(current_scorer_version(task, kind))
        except LookupError:  # a task without a scorer (published numbers only)
            versions.append("")
    return f"{generation}/" + ",".join(versions)


# -- computing ------------------------------------------------------------------------------
def task_payload(task: Task) -> dict[str, Any]:
    """A task board's stored fields: the rows for the page and the CSV, the home page's line,
    and the API's answer already encoded (a request sends it as it is)."""
    rows = leaderboard_rows(task)
    test_set = task.current_test_set()
    # In the API's shape (plain JSON types): the page, the CSV and the API read the same rows.
    rows = [dict(row) for row in LeaderboardRowSerializer(rows, many=True).data]
    version = test_set.version if test_set else None
    api = {"task": task.slug, "primary_metric": task.primary_metric, "test_set_version": version, "rows": rows}
    return {"payload": {"rows": rows, "awaiting_rescore": entries_awaiting_rescore(task), "test_set_version": version},
            "summary": board_summary(task, rows), "body": JSONRenderer().render(api).decode(), "n_rows": len(rows)}


def benchmark_payload(benchmark: Benchmark) -> dict[str, Any]:
    tasks, rows = benchmark_average_rows(benchmark)
    api = {"tasks": [task.slug for task in tasks],
           "rows": [dict(row) for row in AverageRowSerializer(rows, many=True).data]}
    return {"payload": api, "summary": {}, "body": JSONRenderer().render(api).decode(), "n_rows": len(rows)}


def benchmark_stamp(task_ids: list[int], gens: dict[int, tuple[int, datetime | None]]) -> str:
    return ",".join(f"{pk}={gens[pk][0]}" for pk in sorted(task_ids))


def _store(key: str, stamp: str, fields: dict[str, Any]) -> BoardSnapshot:
    snapshot, _ = BoardSnapshot.objects.update_or_create(
        key=key, defaults={"stamp": stamp, "computed_at": timezone.now(), **fields})
    return snapshot


def _build(key: str, stamp: str, compute: Any, held: BoardSnapshot | None) -> BoardSnapshot | None:
    """Compute and store the board ``key`` at ``stamp`` (read before computing, so a change
    made meanwhile leaves it out of date, never wrongly current), unless another process is
    computing that generation: then the board ``held`` (None if there is none yet)."""
    lock = f"board-build:{key}:{stamp}"
    if not cache.add(lock, 1, BUILD_LOCK_SECONDS):
        return held
    try:
        return _store(key, stamp, compute())
    finally:
        cache.delete(lock)


def rebuild_tasks(task_ids: list[int]) -> None:
    """Recompute the boards of these tasks and the average boards of their benchmarks (the
    worker's job)."""
    tasks = list(Task.objects.filter(pk__in=task_ids).select_related("benchmark"))
    for task in tasks:
        stamp = task_stamp(task, generations([task.pk])[task.pk][0])
        _build(task_key(task.pk), stamp, lambda task=task: task_payload(task), None)
    for benchmark in {task.benchmark for task in tasks}:
        ids = list(benchmark.tasks.values_list("pk", flat=True))
        _build(benchmark_key(benchmark.pk), benchmark_stamp(ids, generations(ids)),
               lambda benchmark=benchmark: benchmark_payload(benchmark), None)


def rebuild_all() -> None:
    rebuild_tasks(list(Task.objects.values_list("pk", flat=True)))


# -- reading --------------------------------------------------------------------------------
def compute_now(snapshot: BoardSnapshot | None, changed_at: datetime | None) -> bool:
    """Whether a request computes an out-of-date board itself (see the module docstring)."""
    if snapshot is None:
        return True
    if snapshot.n_rows <= settings.BOARD_INLINE_ROWS:
        return True
    grace = timedelta(seconds=settings.BOARD_WORKER_GRACE_SECONDS)
    return changed_at is None or timezone.now() - changed_at > grace


#: What a reader takes of a stored board: ``payload`` (rows for the page and the CSV), ``summary``
#: (the home page's line) or ``body`` (the API's encoded answer); it reads no other.
PARTS = ("payload", "summary", "body")


def snapshots(keys: list[str], part: str) -> dict[str, BoardSnapshot]:
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}")
    return {s.key: s for s in BoardSnapshot.objects.filter(key__in=keys).only("key", "stamp", "computed_at", "n_rows",
                                                                             part)}


def task_boards(tasks: list[Task], part: str = "payload") -> dict[int, Board]:
    """The stored boards of ``tasks`` (their ``part``): two queries for any number of tasks and
    entries, when they are current."""
    gens = generations([task.pk for task in tasks])
    stored = snapshots([task_key(task.pk) for task in tasks], part)
    boards = {}
    for task in tasks:
        generation, changed_at = gens[task.pk]
        stamp, snapshot = task_stamp(task, generation), stored.get(task_key(task.pk))
        if (snapshot is None or snapshot.stamp != stamp) and compute_now(snapshot, changed_at):
            snapshot = _build(task_key(task.pk), stamp, lambda task=task: task_payload(task), snapshot)
            if snapshot is None:  # another process is computing the first one: so does this request
                snapshot = _store(task_key(task.pk), stamp, task_payload(task))
        assert snapshot is not None  # compute_now is True without a stored board
        boards[task.pk] = Board(getattr(snapshot, part), f"t{task.pk}.{snapshot.stamp}", snapshot.computed_at)
    return boards


def task_board(task: Task, part: str = "payload") -> Board:
    return task_boards([task], part)[task.pk]


def benchmark_board(benchmark: Benchmark, part: str = "payload") -> Board:
    ids = list(benchmark.tasks.values_list("pk", flat=True))
    gens = generations(ids)
    stamp = benchmark_stamp(ids, gens)
    key = benchmark_key(benchmark.pk)
    snapshot = snapshots([key], part).get(key)
    latest = max((changed for _, changed in gens.values() if changed is not None), default=None)
    if (snapshot is None or snapshot.stamp != stamp) and compute_now(snapshot, latest):
        snapshot = _build(key, stamp, lambda: benchmark_payload(benchmark), snapshot)
        if snapshot is None:
            snapshot = _store(key, stamp, benchmark_payload(benchmark))
    assert snapshot is not None  # compute_now is True without a stored board
    return Board(getattr(snapshot, part), f"b{benchmark.pk}.{snapshot.stamp}", snapshot.computed_at)


# -- conditional GET ------------------------------------------------------------------------
def etag_for(*parts: object) -> str:
    """A strong ETag from the boards' stamps and whatever else the response shows."""
    return quote_etag(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:32])


def not_modified(request: HttpRequest, etag: str, last_modified: datetime | None = None) -> HttpResponse | None:
    """A 304 when the client's copy is current (If-None-Match, else If-Modified-Since), else None."""
    return get_conditional_response(request, etag=etag,
                                    last_modified=int(last_modified.timestamp()) if last_modified else None)


def validators(response: HttpResponse, etag: str, last_modified: datetime | None = None, *,
               private: bool = False) -> HttpResponse:
    """ETag (and Last-Modified), and ask caches to check back each time: the board may change
    any minute, and the check costs a 304."""
    response["ETag"] = etag
    if last_modified is not None:
        response["Last-Modified"] = http_date(last_modified.timestamp())
    response["Cache-Control"] = "private, no-cache" if private else "no-cache"
    return response
