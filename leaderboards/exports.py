"""CSV exports of the boards: a task's ranked board (scores, CIs, significance tiers) and a
benchmark's average board, both read from the stored boards (leaderboards.store) like the pages.

Both are meant to be opened in a spreadsheet: they start with a UTF-8 byte order mark (Excel
reads a CSV without one in the machine's legacy code page, and Chinese method names turn into
mojibake) and every free-text cell that a spreadsheet would run as a formula is escaped."""
import csv
import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

from benchmark.models import Benchmark, Task, Visibility
from core.conditional import stored_file_answer, strong_etag, unchanged, weaken_for_gzip, with_validators

from .page_states import benchmark_state
from .store import RELEASE, all_rows, benchmark_board, board_state, current_stamp, task_board

#: Excel decides a CSV's encoding from its first bytes: with this mark it reads UTF-8.
BOM = "\ufeff"

# A spreadsheet runs a cell that starts with one of these as a formula: a method name such as
# =HYPERLINK(...) must reach it as text (OWASP's CSV injection advice: prefix a quote).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: object) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_number(value: float | None) -> str:
    """A score for the CSV: three decimals, or empty when undefined (e.g. SNR with no signal)."""
    return "" if value is None else f"{value:.3f}"


def csv_p(value: float | None) -> str:
    """A p-value as stored (shortest exact form): three decimals would turn p = 0.0004 into 0."""
    return "" if value is None else repr(float(value))


def csv_response(header: list[str], rows: Iterable[list[object]]) -> HttpResponse:
    """The CSV's bytes, written in one piece (the writer's many small writes to a response cost
    more than the rows' encoding)."""
    buffer = io.StringIO()
    buffer.write(BOM)
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return HttpResponse(buffer.getvalue().encode(), content_type=CSV_TYPE)


TIER_COLUMNS = ["tier", "p_vs_above", "p_vs_leader", "p_adjusted"]
DECLARATION_COLUMNS = ["dev_set_use", "external_data", "code_url", "paper_url"]


def task_csv_rows(task: Task, rows: Iterable[dict[str, Any]]) -> Iterable[list[object]]:
    keys = [key for key, _ in task.metric_columns]
    for row in rows:
        ci = row["ci"] or {}
        yield ([row["rank"] or "", csv_text(row["method"]), csv_text(row["team"]), row["date"] or "", row["reported"],
                row["kind"]]
               + [csv_number(row["scores"].get(k)) for k in keys]
               + [csv_number((ci.get(k) or (None, None))[0]) for k in keys]
               + [csv_number((ci.get(k) or (None, None))[1]) for k in keys]
               + ["" if row.get("tier") is None else row["tier"]]
               + [csv_p(row.get(column)) for column in TIER_COLUMNS[1:]]
               + [csv_text(row["source"]), csv_text(row["url"])]
               + [csv_text(row.get(name) or "") for name in DECLARATION_COLUMNS])


def leaderboard_csv(request: HttpRequest, slug: str) -> HttpResponseBase:
    """A task's board as on its page: one line per row, every metric with its 95% CI, the
    significance tier and its p-values (empty for reported rows, which have none)."""
    # The hot path: one query decides between a 304, a CSV kept earlier and writing it.
    state = board_state(slug)
    if state is None or state.visibility not in Visibility.reachable_by(request.user):
        raise Http404("No Task matches the given query.")
    shown = current_stamp(state)
    if shown is None:
        return computing_response()
    return kept_csv(request, f"task{state.task_id}", [shown[0]], f"{slug}-leaderboard.csv",
                    lambda: task_csv(state.task_id))


def task_csv(task_id: int) -> HttpResponse:
    task = Task.objects.get(pk=task_id)
    keys = [key for key, _ in task.metric_columns]
    header = (["rank", "method", "team", "date", "reported", "kind"] + keys + [f"{k}_ci_low" for k in keys]
              + [f"{k}_ci_high" for k in keys] + TIER_COLUMNS + ["source", "url"] + DECLARATION_COLUMNS)
    board = task_board(task)
    if board is None:
        return computing_response()
    return csv_response(header, task_csv_rows(task, all_rows(board)))


CSV_TYPE = "text/csv; charset=utf-8"
#: Where the CSVs written for anonymous visitors are kept (in MEDIA_ROOT; left out of backups).
KEPT_FOLDER = "exports"


class NotWritten(Exception):
    """The CSV could not be written (its board is being computed): ``response`` says so."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__(response.status_code)
        self.response = response


def kept_csv(request: HttpRequest, page: str, parts: list[object], filename: str,
             write: Callable[[], HttpResponse]) -> HttpResponseBase:
    """A CSV with an ETag from ``parts``, or a 304 when the visitor has it. For anonymous
    visitors it is written once per ETag and kept on disk, plain and gzipped, and later answers
    read the file the client accepts (a 10,000-row board is megabytes of CSV: unpickled from
    the shared cache it cost more than the page it came from); writing it removes the copies of
    earlier ETags of the same ``page``. What a signed-in visitor downloads may show hidden tasks
    (maintainers): written for them, kept nowhere."""
    private = request.user.is_authenticated
    etag = strong_etag(RELEASE, "csv", request.user.pk if private else "anonymous", *parts)
    answer = unchanged(request, etag, private=private)
    if answer is not None:
        return answer
    if private:
        response: HttpResponseBase = write()
        if response.status_code != 200:
            return response
    else:
        stem = Path(settings.MEDIA_ROOT) / KEPT_FOLDER / f"{page}-{etag.strip(chr(34))}"
        try:
            response = stored_file_answer(request, stem, lambda: written(write, stem), content_type=CSV_TYPE)
        except NotWritten as refused:
            return refused.response
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return weaken_for_gzip(with_validators(response, etag, private=private))


def written(write: Callable[[], HttpResponse], stem: Path) -> bytes:
    """The CSV's bytes, once the copies of the page's earlier ETags are removed."""
    response = write()
    if response.status_code != 200:
        raise NotWritten(response)
    page = stem.name.rsplit("-", 1)[0]
    for earlier in stem.parent.glob(f"{page}-*"):
        if not earlier.name.startswith(stem.name):
            earlier.unlink(missing_ok=True)
    return response.content


def computing_response() -> HttpResponse:
    """A board whose first computation is queued: try again shortly."""
    response = HttpResponse("This board is being computed; try again in a few seconds.\n",
                            content_type="text/plain; charset=utf-8", status=503)
    response["Retry-After"] = "5"
    return response


def benchmark_csv(request: HttpRequest, slug: str) -> HttpResponseBase:
    """A benchmark's average board: per system its rank, each task's primary metric (one column
    per task, named by its slug) and the average. The average is over public tasks only
    (leaderboards.boards.benchmark_average_rows); an average computed before one of its tasks
    was hidden is not given to a visitor who may not see that task until the worker has
    computed it again."""
    state = benchmark_state(slug)
    if state is None:
        raise Http404("No Benchmark matches the given query.")
    # Anonymous visitors share one kept copy; a signed-in one's is written for them (kept_csv).
    return kept_csv(request, f"benchmark{state.benchmark_id}", state.parts, f"{slug}-average-leaderboard.csv",
                    lambda: average_csv(request, state.benchmark_id))


def average_csv(request: HttpRequest, benchmark_id: int) -> HttpResponse:
    benchmark = Benchmark.objects.get(pk=benchmark_id)
    board = benchmark_board(benchmark)
    if board is None:
        return computing_response()
    average = board.payload
    visible = set(Task.objects.visible_to(request.user).filter(benchmark=benchmark, slug__in=average["tasks"])
                  .values_list("slug", flat=True))
    if len(visible) < len(average["tasks"]):
        # A task of the average was hidden since: with the other columns the average would give
        # its score away. Until the worker has computed it again without that task, none is given.
        return computing_response()
    slugs = list(average["tasks"])
    header = ["rank", "method", "team", "kind", "reported", *slugs, "average"]
    rows = ([row["rank"] or "", csv_text(row["method"]), csv_text(row["team"]), row["kind"], row["reported"]]
            + [csv_number(row["per_task"].get(task_slug)) for task_slug in slugs] + [csv_number(row["average"])]
            for row in average["rows"])
    return csv_response(header, rows)
