"""Public pages of the boards: home, task board (with its CSV), benchmark average board,
skills board and the compare page."""
import csv
from collections.abc import Iterable, Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from benchmark.cues import public_cue_table
from benchmark.models import Benchmark, Task, TestSet
from benchmark.skill_listing import skill_listing
from core.jobs import WAITING
from scoring.analysis.features import EXTRACTOR_METHODS
from scoring.stats import TIER_PROCEDURE
from submissions.selectors import public_skill_submissions

from .boards import benchmark_average_rows, leaderboard_rows
from .compare import CompareError, compare, visible_submission


def home(request: HttpRequest) -> HttpResponse:
    benchmarks = Benchmark.objects.prefetch_related("tasks")
    cards = []
    for benchmark in benchmarks:
        tasks = []
        for task in benchmark.tasks.listed_for(request.user):
            rows = leaderboard_rows(task)
            best = next((r for r in rows if r["kind"] == "submission"), None)
            human = next((r for r in rows if r["kind"] == "human"), None)
            tasks.append({"task": task, "best": best, "human": human,
                          "entries": sum(1 for r in rows if r["kind"] == "submission")})
        cards.append({"benchmark": benchmark, "tasks": tasks})
    return render(request, "leaderboards/home.html", {"cards": cards})


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
    rows = list(table_rows(task, leaderboard_rows(task)))
    track = getattr(task, "track", None) if task.kind == Task.INTERPRETATION else None
    cues = cue_table(test_set)
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
        "tier_procedure": TIER_PROCEDURE,
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
    for row in leaderboard_rows(task):
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
    tasks, rows = benchmark_average_rows(benchmark)
    for row in rows:
        row["cells"] = [row["per_task"][task.slug] for task in tasks]
    return render(request, "leaderboards/benchmark.html", {"benchmark": benchmark, "tasks": tasks, "rows": rows})


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
    return render(request, "leaderboards/skills.html", {
        "task": task, "listing": listing, "entries": entries,
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
