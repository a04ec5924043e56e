"""Public pages of the boards: home, task board (with its CSV), benchmark average board,
skills board and the compare page."""
import csv
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.contrib.messages import get_messages
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from benchmark.cues import public_cue_table
from benchmark.models import Benchmark, Task, TestSet
from benchmark.skill_listing import skill_listing
from core.jobs import WAITING
from scoring.analysis.features import EXTRACTOR_METHODS
from scoring.stats import TIER_PROCEDURE
from submissions.selectors import public_skill_submissions

from . import wording
from .compare import CompareError, compare, visible_submission
from .store import RELEASE, benchmark_board, etag_for, not_modified, task_board, task_boards, validators


def viewer(request: HttpRequest) -> str:
    """What of the visitor a page shows (the navigation names the user): part of its ETag."""
    return f"user{request.user.pk}" if request.user.is_authenticated else "anonymous"


#: How long a page rendered for anonymous visitors stays in the shared cache (its key is its
#: ETag, so a board that changes gets a new one at once; this only bounds the cache's size).
PAGE_CACHE_SECONDS = 600


def conditional_page(request: HttpRequest, parts: Sequence[object], render_page: Any) -> HttpResponse:
    """A page with an ETag from ``parts``, or a 304 when the visitor has it. Anonymous visitors
    all get the same page (no name, no CSRF token), rendered once per ETag and kept in the shared
    cache. A page carrying a one-time message is always rendered, without an ETag."""
    if len(get_messages(request)):
        return render_page()
    etag = etag_for(RELEASE, viewer(request), *parts)
    unchanged = not_modified(request, etag)
    if unchanged is not None:
        return unchanged
    if request.user.is_authenticated:
        return validators(render_page(), etag, private=True)
    key = f"page:{etag}"
    body = cache.get(key)
    if body is None:
        response = render_page()
        if response.status_code == 200:
            cache.set(key, response.content, PAGE_CACHE_SECONDS)
        return validators(response, etag, private=True)
    return validators(HttpResponse(body, content_type="text/html; charset=utf-8"), etag, private=True)


def home(request: HttpRequest) -> HttpResponse:
    benchmarks = list(Benchmark.objects.prefetch_related("tasks"))
    listed = {benchmark.pk: list(benchmark.tasks.listed_for(request.user)) for benchmark in benchmarks}
    boards = task_boards([task for tasks in listed.values() for task in tasks], "summary")

    def page() -> HttpResponse:
        cards = []
        for benchmark in benchmarks:
            tasks = [home_row(task, boards[task.pk].payload) for task in listed[benchmark.pk]]
            # One metric for the whole card names the score column; otherwise each cell names its own.
            labels = {t["metric_label"] for t in tasks}
            cards.append({"benchmark": benchmark, "tasks": tasks,
                          "metric_label": labels.pop() if len(labels) == 1 else ""})
        return render(request, "leaderboards/home.html", {"cards": cards})

    return conditional_page(request, [f"{b.pk}:{b.slug}:{b.name}" for b in benchmarks]
                            + [board.stamp for board in boards.values()], page)


def home_row(task: Task, summary: dict[str, Any]) -> dict[str, Any]:
    """A task's line on the home page, from its stored board's summary (boards.board_summary):
    its best ranked entry and the human row, on the task's own primary metric."""
    metric = task.primary_metric
    best, human = summary["best"], summary["human"]
    return {"task": task, "best": best, "human": human, "published": not task.accepts_submissions,
            "metric_label": dict(task.metric_columns)[metric],
            "best_score": best["scores"].get(metric) if best else None,
            "human_score": human["scores"].get(metric) if human else None,
            "decimals": task.metric_decimals,
            "entries": summary["entries"]}


def table_rows(task: Task, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Rows with one cell per metric column (value, CI and its half-width) for the template."""
    for row in rows:
        cells = []
        for key, _label in task.metric_columns:
            ci = (row["ci"] or {}).get(key)
            value = row["scores"].get(key)
            cells.append({
                "value": value,
                "low": ci[0] if ci else None,
                "high": ci[1] if ci else None,
                "half": (ci[1] - ci[0]) / 2 if ci else None,
                "primary": key == task.primary_metric,
            })
        yield {**row, "cells": cells, "primary_cell": cells[task.primary_index]}


def task_leaderboard(request: HttpRequest, slug: str) -> HttpResponse:
    task = get_object_or_404(Task.objects.visible_to(request.user).select_related("benchmark"), slug=slug)
    test_set = task.current_test_set()
    stamp = task_board(task, "summary").stamp  # the rows are read only if the page is rendered
    track = getattr(task, "track", None) if task.kind == Task.INTERPRETATION else None
    # Besides the board: the test set's cue table and the track's progress, which change on their own.
    parts = [stamp, test_set.pk if test_set else None,
             ((test_set.diagnostics or {}).get("icq") or {}).get("updated_at") if test_set else None,
             (track.status, track.done, track.updated_at) if track is not None else None]
    return conditional_page(request, parts, lambda: board_page(request, task, test_set, track))


def board_page(request: HttpRequest, task: Task, test_set: TestSet | None, track: Any) -> HttpResponse:
    board = task_board(task)
    cues = cue_table(test_set)
    rows = list(table_rows(task, board.payload["rows"]))
    return render(request, "leaderboards/leaderboard.html", {
        "track": track,
        "refresh": (track is not None and track.status in WAITING)
                   or (cues is not None and cues["status"] in WAITING),
        "cues": cues,
        "task": task,
        "test_set": test_set,
        "rows": rows,
        "columns": task.metric_columns,
        "primary_label": dict(task.metric_columns)[task.primary_metric],
        "has_submissions": any(r["kind"] == "submission" for r in rows),
        "awaiting_rescore": board.payload["awaiting_rescore"],
        "tier_procedure": TIER_PROCEDURE,
        "wording": wording.wording_for(task.kind),
    })


def cue_table(test_set: TestSet | None) -> dict[str, Any] | None:
    """The stored ICQ cue discovery of a test set, ready for display (or None)."""
    part = ((test_set.diagnostics or {}) if test_set else {}).get("icq")
    if not part or test_set is None:
        return None
    part = {**public_cue_table(part, hidden=test_set.is_hidden),
            "extractor": EXTRACTOR_METHODS.get(test_set.task.language, "")}

    def dist(d: dict[str, float]) -> str:
        return " · ".join(f"{label} {p:.2f}" for label, p in d.items())

    rows = [{**cue, "reference_text": dist(cue["reference_dist"]), "test_text": dist(cue.get("test_dist") or {})}
            for cue in part.get("cues", [])]
    return {**part, "rows": rows, "prior_text": dist(rows[0].get("prior") or {}) if rows else ""}


# A spreadsheet runs a cell that starts with one of these as a formula: a method name such as
# =HYPERLINK(...) must reach it as text (OWASP's CSV injection advice: prefix a quote).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: object) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_number(value: float | None) -> str:
    """A score for the CSV: three decimals, or empty when undefined (e.g. SNR with no signal)."""
    return "" if value is None else f"{value:.3f}"


def leaderboard_csv(request: HttpRequest, slug: str) -> HttpResponse:
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{task.slug}-leaderboard.csv"'
    writer = csv.writer(response)
    keys = [key for key, _ in task.metric_columns]
    writer.writerow(["rank", "method", "team", "date", "reported", "kind"] + keys
                    + [f"{k}_ci_low" for k in keys] + [f"{k}_ci_high" for k in keys] + ["source", "url"])
    for row in task_board(task).payload["rows"]:
        ci = row["ci"] or {}
        writer.writerow(
            [row["rank"] or "", csv_text(row["method"]), csv_text(row["team"]), row["date"] or "", row["reported"],
             row["kind"]]
            + [csv_number(row["scores"].get(k)) for k in keys]
            + [csv_number((ci.get(k) or (None, None))[0]) for k in keys]
            + [csv_number((ci.get(k) or (None, None))[1]) for k in keys]
            + [csv_text(row["source"]), csv_text(row["url"])]
        )
    return response


def benchmark_detail(request: HttpRequest, slug: str) -> HttpResponse:
    benchmark = get_object_or_404(Benchmark, slug=slug)
    average = benchmark_board(benchmark).payload
    averaged = {task.slug: task for task in benchmark.tasks.filter(slug__in=average["tasks"])}
    tasks = [averaged[slug] for slug in average["tasks"]]
    rows = average["rows"]
    for row in rows:
        row["cells"] = [row["per_task"][task.slug] for task in tasks]
    listed = list(benchmark.tasks.listed_for(request.user))
    stored = task_boards(listed, "summary")
    boards = [home_row(task, stored[task.pk].payload) for task in listed]
    return render(request, "leaderboards/benchmark.html", {
        "benchmark": benchmark, "tasks": tasks, "rows": rows, "boards": boards,
        # An average over one subset is that subset's board again: shown from two subsets on.
        "show_average": len(tasks) > 1, "average_note": wording.average_note(tasks),
        "average_title": wording.average_title(tasks),
        "kinds": wording.kinds_of([b["task"] for b in boards]), "bibtex": wording.bibtex_for(benchmark),
    })


GROUP_LABELS = {"reading": "Reading", "reasoning": "Reasoning", "reasoning_with_query": "Reasoning with the query"}


def task_skills(request: HttpRequest, slug: str) -> HttpResponse:
    """Reconstructed test sets of a span task, their downloads, and the skill board: public
    skill submissions with the F1 gap per skill (the InDepth-Eva-MRC chart, one per skill group)."""
    task = get_object_or_404(Task.objects.visible_to(request.user).select_related("benchmark"), slug=slug)
    listing = skill_listing(task, request)
    entries = []
    for sub in public_skill_submissions(task, task.current_test_set()):
        gaps = (sub.details or {}).get("skills", {})
        groups = []
        for group, label in GROUP_LABELS.items():
            rows = [{"label": f"{g['skill']} {g['name']}", **g} for g in gaps.values()
                    if g["group"] == group and g.get("gap") is not None]
            if rows:
                groups.append({"label": label, "rows": rows})
        entries.append({"submission": sub, "groups": groups, "not_submitted": sub.details.get("not_submitted", [])})
    build = listing.get("build") or {}
    # One scale for every chart of the page, so a gap of 1.3 never draws as long as one of 72.9.
    gaps = [abs(row["gap"]) for entry in entries for group in entry["groups"] for row in group["rows"]]
    return render(request, "leaderboards/skills.html", {
        "task": task, "listing": listing, "entries": entries, "gap_scale": max(gaps, default=0.0) or 1.0,
        "refresh": build.get("status") in WAITING,
    })


def compare_page(request: HttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"a_id": request.GET.get("a", ""), "b_id": request.GET.get("b", "")}
    if context["a_id"] or context["b_id"]:
        try:
            a = visible_submission(request.user, context["a_id"])
            b = visible_submission(request.user, context["b_id"])
            if a.task.kind != b.task.kind:
                raise CompareError("the two entries belong to tasks of different kinds")
            context["result"] = compare(a, b)
        except CompareError as exc:
            context["error"] = str(exc)
            return render(request, "leaderboards/compare.html", context, status=400)
    return render(request, "leaderboards/compare.html", context)
