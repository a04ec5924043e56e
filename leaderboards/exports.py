"""CSV exports of the boards: a task's ranked board (scores, CIs, significance tiers) and a
benchmark's average board, both read from the stored boards (leaderboards.store) like the pages.

Both are meant to be opened in a spreadsheet: they start with a UTF-8 byte order mark (Excel
reads a CSV without one in the machine's legacy code page, and Chinese method names turn into
mojibake) and every free-text cell that a spreadsheet would run as a formula is escaped."""
import csv
from collections.abc import Iterable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from benchmark.models import Benchmark, Task

from .store import all_rows, benchmark_board, task_board

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


def csv_response(filename: str, header: list[str], rows: Iterable[list[object]]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response.write(BOM)
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows(rows)
    return response


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


def leaderboard_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """A task's board as on its page: one line per row, every metric with its 95% CI, the
    significance tier and its p-values (empty for reported rows, which have none)."""
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    keys = [key for key, _ in task.metric_columns]
    header = (["rank", "method", "team", "date", "reported", "kind"] + keys + [f"{k}_ci_low" for k in keys]
              + [f"{k}_ci_high" for k in keys] + TIER_COLUMNS + ["source", "url"] + DECLARATION_COLUMNS)
    board = task_board(task)
    if board is None:
        return computing_response()
    return csv_response(f"{task.slug}-leaderboard.csv", header, task_csv_rows(task, all_rows(board)))


def computing_response() -> HttpResponse:
    """A board whose first computation is queued: try again shortly."""
    response = HttpResponse("This board is being computed; try again in a few seconds.\n",
                            content_type="text/plain; charset=utf-8", status=503)
    response["Retry-After"] = "5"
    return response


def benchmark_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """A benchmark's average board: per system its rank, each task's primary metric (one column
    per task, named by its slug) and the average. The average is over public tasks only
    (leaderboards.boards.benchmark_average_rows); a task the visitor may not see never gets a
    column, even from a stored board computed before the task was hidden."""
    benchmark = get_object_or_404(Benchmark, slug=slug)
    board = benchmark_board(benchmark)
    if board is None:
        return computing_response()
    average = board.payload
    visible = set(Task.objects.visible_to(request.user).filter(benchmark=benchmark, slug__in=average["tasks"])
                  .values_list("slug", flat=True))
    slugs = [task_slug for task_slug in average["tasks"] if task_slug in visible]
    header = ["rank", "method", "team", "kind", "reported", *slugs, "average"]
    rows = ([row["rank"] or "", csv_text(row["method"]), csv_text(row["team"]), row["kind"], row["reported"]]
            + [csv_number(row["per_task"].get(task_slug)) for task_slug in slugs] + [csv_number(row["average"])]
            for row in average["rows"])
    return csv_response(f"{benchmark.slug}-average-leaderboard.csv", header, rows)
