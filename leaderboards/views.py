"""Public pages of the boards: home, task board, benchmark average board, skills board and the
compare page (their CSV exports: leaderboards/exports.py)."""
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from django.contrib.messages import get_messages
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _

from benchmark.cues import public_cue_table
from benchmark.models import Benchmark, Task, TestSet, Visibility
from benchmark.quackie_tracks import BASELINES
from benchmark.skill_listing import skill_listing
from core.conditional import stored_response, strong_etag, unchanged, weaken_for_gzip, with_validators
from core.jobs import WAITING, JobStatus
from scoring.analysis.features import EXTRACTOR_METHODS
from scoring.analysis.skills import READING_LARGE
from submissions import views as submission_views
from submissions.selectors import public_skill_submissions

from . import wording
from .compare import CompareError, compare, visible_submission
from .ordering import Order, OrderError, read_order, sort_keys
from .page_states import benchmark_state, entry_state, entry_states
from .store import (
    RELEASE,
    benchmark_board,
    board_state,
    current_stamp,
    listed_stamps,
    of_kind,
    page_rows,
    task_board,
    task_boards,
)


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
    # The page's language is part of its bytes: each language has its own ETag and stored copy.
    etag = strong_etag(RELEASE, viewer(request), get_language(), *parts)
    answer = unchanged(request, etag, private=True)
    if answer is not None:
        return answer
    if request.user.is_authenticated:
        return with_validators(render_page(), etag, private=True)
    response = stored_response(request, f"page:{etag}", render_page, seconds=PAGE_CACHE_SECONDS,
                               content_type="text/html; charset=utf-8")
    return weaken_for_gzip(with_validators(response, etag, private=True))


def home(request: HttpRequest) -> HttpResponse:
    # The hot path: two queries decide between a 304, a page rendered earlier and rendering.
    visibilities = Visibility.listed_for(request.user)
    parts, up_to_date = listed_stamps(visibilities)
    if not up_to_date:  # a worker brings the boards behind up to date; the page shows the stored ones
        task_boards(list(Task.objects.filter(visibility__in=visibilities)), "summary")
        parts, _ = listed_stamps(visibilities)
    return conditional_page(request, parts, lambda: home_page(request))


def home_page(request: HttpRequest) -> HttpResponse:
    benchmarks = list(Benchmark.objects.prefetch_related("tasks"))
    listed = {benchmark.pk: list(benchmark.tasks.listed_for(request.user)) for benchmark in benchmarks}
    boards = task_boards([task for tasks in listed.values() for task in tasks], "summary")
    cards: list[dict[str, Any]] = []
    for benchmark in benchmarks:
        tasks = [home_row(task, boards[task.pk].payload if task.pk in boards else None)
                 for task in listed[benchmark.pk]]
        # One metric for the whole card names the score column; otherwise each cell names its own.
        labels = {t["metric_label"] for t in tasks}
        cards.append({"benchmark": benchmark, "tasks": tasks,
                      "metric_label": labels.pop() if len(labels) == 1 else ""})
    return render(request, "leaderboards/home.html", {
        "cards": cards, "computing": any(row["computing"] for card in cards for row in card["tasks"])})


def home_row(task: Task, summary: dict[str, Any] | None) -> dict[str, Any]:
    """A task's line on the home page, from its stored board's summary (boards.board_summary):
    its best ranked entry and the human row, on the task's own primary metric. None: the
    board's first computation is queued."""
    metric = task.primary_metric
    computing = summary is None
    summary = summary or {"best": None, "human": None, "entries": None}
    best, human = summary["best"], summary["human"]
    return {"task": task, "best": best, "human": human, "published": not task.accepts_submissions,
            "metric_label": dict(task.metric_columns)[metric],
            "best_score": best["scores"].get(metric) if best else None,
            "human_score": human["scores"].get(metric) if human else None,
            "decimals": task.metric_decimals,
            "entries": summary["entries"], "computing": computing}


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
                "key": key,
            })
        yield {**row, "cells": cells, "primary_cell": cells[task.primary_index]}


#: Rows per page of a task board (the API's ``limit`` defaults to the same).
BOARD_PAGE_ROWS = 100


def task_leaderboard(request: HttpRequest, slug: str) -> HttpResponse:
    # The hot path: one query decides between a 304, a page rendered earlier and rendering.
    state = board_state(slug)
    if state is None or state.visibility not in Visibility.reachable_by(request.user):
        raise Http404("No Task matches the given query.")
    try:
        order = read_order(of_kind(state.kind), request.GET.get("sort"), request.GET.get("order"))
    except OrderError as exc:
        raise BadRequest(str(exc)) from None
    page_number = request.GET.get("page", "1")
    if not page_number.isdigit() or int(page_number) < 1:
        raise BadRequest("page: a page number (1, 2, ...)")
    shown = current_stamp(state)
    stamp = shown[0] if shown is not None else f"t{state.task_id}.computing"
    # Besides the board: the test set's cue table, the track's progress and its built-in baseline
    # job's, which change on their own.
    parts = [stamp, state.test_set_id, state.cues_updated_at, state.track, state.baselines, order, int(page_number)]
    return conditional_page(request, parts, lambda: board_page(request, state.task_id, order, int(page_number)))


def board_page(request: HttpRequest, task_id: int, order: Order, page_number: int) -> HttpResponse:
    task = Task.objects.select_related("benchmark").get(pk=task_id)
    test_set = task.current_test_set()
    track = getattr(task, "track", None) if task.kind_definition.has_tracks else None
    board = task_board(task)
    # None: the board's first computation is queued (a fresh start): the page says so and updates itself.
    payload = board.payload if board is not None else {"n_rows": 0, "n_submissions": 0, "awaiting_rescore": 0}
    n_rows = payload["n_rows"]
    n_pages = max(1, -(-n_rows // BOARD_PAGE_ROWS))
    if page_number > n_pages:
        raise Http404(f"This board has {n_pages} page{'s' if n_pages != 1 else ''}.")
    cues = cue_table(test_set)
    baselines = baseline_progress(test_set) if track is not None else None
    rows = [] if board is None else list(table_rows(task, page_rows(
        board, task, order.sort, order.descending, (page_number - 1) * BOARD_PAGE_ROWS, BOARD_PAGE_ROWS)))
    quick = (board is None or (track is not None and track.status in WAITING)
             or (cues is not None and cues["status"] in WAITING))
    slow = baselines is not None and baselines["status"] in WAITING
    return render(request, "leaderboards/leaderboard.html", {
        "track": track,
        "refresh": quick or slow,
        # The baseline job reports progress every CHECKPOINT_SECONDS (30 s): checking more often
        # than every 10 s would only fetch 304s.
        "refresh_seconds": 3 if quick else 10,
        "baselines": baselines,
        "cues": cues,
        "task": task,
        "test_set": test_set,
        "rows": rows,
        "computing": board is None,
        "phases": payload.get("phases", []),
        "progress": payload.get("progress"),
        "dev_set_marked": any(row.get("dev_set_use") in ("part", "whole") for row in rows),
        "headers": sort_headers(task, order, request.path),
        "pages": page_links(request.path, order, page_number, n_pages),
        "first_row": (page_number - 1) * BOARD_PAGE_ROWS + 1, "n_rows": n_rows,
        "last_row": (page_number - 1) * BOARD_PAGE_ROWS + len(rows),
        "sorted_by": "" if order.is_default else order.label(task),
        "sorted_column": order.sort,
        "primary_label": dict(task.metric_columns)[task.primary_metric],
        "has_submissions": payload["n_submissions"] > 0,
        "awaiting_rescore": payload["awaiting_rescore"],
        "tier_procedure": wording.tier_procedure(),
        "wording": wording.wording_for(task),
    })


def sort_headers(task: Task, order: Order, path: str) -> list[dict[str, Any]]:
    """The board's column headers, each a link that sorts by it: first in its natural direction
    (scores best first, names A to Z), then, once sorted by it, the other way."""
    keys = sort_keys(task)

    def header(key: str, label: str, css: str, title: str = "") -> dict[str, Any]:
        current = order.sort == key or (key == "rank" and order.sort == "tier")
        flipped = Order(key, not order.descending) if current else Order(key, keys[key].descending_first)
        return {"label": label, "css": css + (" sorted" if current else ""), "title": title,
                "href": f"{path}?{flipped.query}",
                "aria_sort": ("descending" if order.descending else "ascending") if current else None}

    primary = dict(task.metric_columns)[task.primary_metric]
    headers = [header("rank", _("Rank"), "num rank"), header("system", _("System"), "")]
    headers += [header(key, label, "num " + ("primary" if key == task.primary_metric else "secondary"))
                for key, label in task.metric_columns]
    if task.kind_definition.counts_failed_samples:
        headers.append(header("fails", _("Fails / no SNR"), "num secondary",
                              _("samples whose scores failed (wrong length, NaN or missing): excluded from the "
                                "means; samples without an SNR (no signal or no noise sentence)")))
    headers.append(header("ci", _("95%% CI (%(metric)s)") % {"metric": primary}, "secondary",
                          _("sorts by the lower end of the interval")))
    headers.append(header("tier", _("Tier"), "num",
                          _("An entry's tier: it is not significantly worse than the first entry of its tier "
                            "(paired test, α = 0.05, corrected for comparing against the best)")))
    return headers


def page_links(path: str, order: Order, page_number: int, n_pages: int) -> dict[str, Any] | None:
    if n_pages == 1:
        return None
    query = "" if order.is_default else order.query + "&"

    def link(number: int) -> str:
        return f"{path}?{query}page={number}"

    return {"number": page_number, "count": n_pages,
            "previous": link(page_number - 1) if page_number > 1 else None,
            "next": link(page_number + 1) if page_number < n_pages else None,
            "first": link(1), "last": link(n_pages)}


# A background job's state as a page says it (translated when the page renders).
JOB_STATE_WORDS = {JobStatus.DONE: gettext_lazy("finished"), JobStatus.QUEUED: gettext_lazy("queued"),
                   JobStatus.RUNNING: gettext_lazy("running"), JobStatus.FAILED: gettext_lazy("failed")}


def baseline_progress(test_set: TestSet | None) -> dict[str, Any] | None:
    """The built-in baseline job of a track's test set (``diagnostics["baselines"]``,
    submissions.baseline_runs) as its board shows it, or None when it was never queued. Why a
    run failed is told in general terms only: the stored note may quote an exception (the
    maintainers read it in the admin and the worker's log)."""
    part = ((test_set.diagnostics or {}) if test_set else {}).get("baselines") or {}
    status = part.get("status")
    if status not in JobStatus.values:
        return None
    samples_done, samples_total = int(part.get("samples_done") or 0), int(part.get("samples_total") or 0)
    done, total = int(part.get("done") or 0), int(part.get("total") or 0)
    n_families = total // samples_total if samples_total else 0
    reason = ""
    if status == JobStatus.FAILED:
        # the reaper's give-up note (core.jobs.Job.give_up_note) is the one told apart
        reason = (_("after losing its worker too many times") if str(part.get("note", "")).startswith(BASELINES.what)
                  else _("on an error"))
    return {
        "status": status, "label": JOB_STATE_WORDS.get(status, status),
        "family": part.get("family") or "", "samples_done": samples_done, "samples_total": samples_total,
        "done": done, "total": total, "percent": min(100, 100 * done // total) if total else 0,
        # done = samples x families finished before the current one + samples_done of it
        "family_number": min((done - samples_done) // samples_total + 1, n_families) if samples_total else 0,
        "n_families": n_families,
        "rows_stored": len(part.get("rows") or {}), "n_rows": len(part.get("methods") or []),
        "limited": part.get("limit") is not None, "reason": reason,
        # where the model ran (cpu, or "cuda:0, <GPU name>"), stored by the run when it loads the model
        "device": str(part.get("device") or ""),
    }


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


def benchmark_detail(request: HttpRequest, slug: str) -> HttpResponse:
    # The hot path: two queries decide between a 304, a page rendered earlier and rendering.
    state = benchmark_state(slug)
    if state is None:
        raise Http404("No Benchmark matches the given query.")
    return conditional_page(request, state.parts, lambda: benchmark_page(request, state.benchmark_id))


def benchmark_page(request: HttpRequest, benchmark_id: int) -> HttpResponse:
    benchmark = Benchmark.objects.get(pk=benchmark_id)
    board = benchmark_board(benchmark)
    average = board.payload if board is not None else {"tasks": [], "rows": []}
    averaged = {task.slug: task for task in benchmark.tasks.visible_to(request.user).filter(slug__in=average["tasks"])}
    # An average computed before one of its tasks was hidden is not shown to those who may not
    # see that task (with the other columns it gives that task's score away) until the worker
    # has computed it again without it.
    stale = any(task_slug not in averaged for task_slug in average["tasks"])
    if stale:
        board, average = None, {"tasks": [], "rows": []}
    tasks = [averaged[task_slug] for task_slug in average["tasks"]]
    rows = average["rows"]
    for row in rows:
        row["cells"] = [row["per_task"][task.slug] for task in tasks]
    listed = list(benchmark.tasks.listed_for(request.user))
    stored = task_boards(listed, "summary")
    boards = [home_row(task, stored[task.pk].payload if task.pk in stored else None) for task in listed]
    return render(request, "leaderboards/benchmark.html", {
        "benchmark": benchmark, "tasks": tasks, "rows": rows, "boards": boards,
        # An average over one subset is that subset's board again: shown from two subsets on.
        "show_average": len(tasks) > 1, "average_note": wording.average_note(tasks),
        "average_title": wording.average_title(tasks), "average_scope": wording.average_scope(tasks),
        "kinds": wording.kinds_of([b["task"] for b in boards]), "bibtex": wording.bibtex_for(benchmark),
        # None: its first computation is queued: the page says so and updates itself.
        "computing": board is None or any(b["computing"] for b in boards),
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
        "refresh": build.get("status") in WAITING, "usual_reading": READING_LARGE,
    })


def entry_page(request: HttpRequest, pk: int) -> HttpResponse:
    """An entry's page (submissions.views.detail): for anonymous visitors of a public entry,
    rendered once per state of the entry (``page_states.entry_state``) and kept like a board's
    page. Its owner and maintainers see more (the phase choice, the rename trail): theirs is
    rendered on each visit."""
    if request.user.is_authenticated:
        return submission_views.detail(request, pk)
    state = entry_state(pk)
    if state is None or not state.public:
        return submission_views.detail(request, pk)  # its 404
    return conditional_page(request, ["entry", ENTRY_RELEASE, state.digest],
                            lambda: submission_views.detail(request, pk))


#: What changes when a deploy changes how an entry's page is built (its view lives in submissions).
ENTRY_RELEASE = Path(submission_views.__file__).stat().st_mtime_ns


def compare_page(request: HttpRequest) -> HttpResponse:
    a_id, b_id = request.GET.get("a", ""), request.GET.get("b", "")
    if not request.user.is_authenticated and a_id.isdigit() and b_id.isdigit():
        # Two public entries compared for anonymous visitors: rendered once per state of the two.
        states = entry_states([int(a_id), int(b_id)])
        shown = [states.get(int(a_id)), states.get(int(b_id))]
        if all(state is not None and state.public for state in shown):
            parts = ["compare", a_id, b_id, *(state.digest for state in shown if state is not None)]
            return conditional_page(request, parts, lambda: comparison(request, a_id, b_id))
    return comparison(request, a_id, b_id)


def comparison(request: HttpRequest, a_id: str, b_id: str) -> HttpResponse:
    context: dict[str, Any] = {"a_id": a_id, "b_id": b_id}
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
