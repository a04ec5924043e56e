"""A benchmark's own pages beside its boards: Overview (what it measures, its tasks, the best
score of each over time), Evaluation (how entries are scored and ranked) and Terms (the licence
of its inputs and each task's rules: what an upload must declare, what anyone may download).
Their text comes from the benchmark's file (``overview``, ``evaluation``, ``terms``); the rest is
what the site knows of its tasks, so a benchmark without that text still has useful pages."""
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from benchmark.models import Benchmark, Task

from . import wording
from .store import task_boards


def paragraphs(text: str) -> list[str]:
    """A page's text from the benchmark's file: blank lines part paragraphs, single line breaks
    are the file's wrapping, not the reader's."""
    return [" ".join(part.split()) for part in text.split("\n\n") if part.strip()]


def tabs(benchmark: Benchmark, current: str) -> list[dict[str, Any]]:
    """The benchmark's pages, each a link, the one shown marked."""
    pages = [("boards", _("Boards"), reverse("benchmark-detail", args=[benchmark.slug]))]
    pages += [(name, str(label), reverse(f"benchmark-{name}", args=[benchmark.slug])) for name, label in SECTIONS]
    return [{"name": name, "label": label, "href": href, "current": name == current} for name, label, href in pages]


def overview(benchmark: Benchmark, tasks: list[Task]) -> dict[str, Any]:
    boards = task_boards(tasks)  # the charts come with the stored boards (two queries for all)
    return {"text": paragraphs(benchmark.overview),
            "charts": [(task, boards[task.pk].payload.get("progress") if task.pk in boards else None)
                       for task in tasks]}


def task_evaluation(task: Task) -> dict[str, Any]:
    test_set = task.current_test_set()
    return {"task": task, "metric_label": dict(task.metric_columns)[task.primary_metric],
            "columns": [label for _key, label in task.metric_columns], "test_set": test_set}


def evaluation(benchmark: Benchmark, tasks: list[Task]) -> dict[str, Any]:
    return {"text": paragraphs(benchmark.evaluation), "kinds": wording.kinds_of(tasks),
            "rows": [task_evaluation(task) for task in tasks]}


def task_rules(task: Task) -> dict[str, Any]:
    return {"task": task, "daily_quota": task.daily_quota if task.daily_quota is not None
            else settings.SUBMISSIONS_PER_DAY, "phases": list(task.phases.all())}


def terms(benchmark: Benchmark, tasks: list[Task]) -> dict[str, Any]:
    return {"text": paragraphs(benchmark.terms), "rows": [task_rules(task) for task in tasks]}


SECTIONS = (("overview", gettext_lazy("Overview")), ("evaluation", gettext_lazy("Evaluation")),
            ("terms", gettext_lazy("Terms")))
CONTEXTS: dict[str, Callable[[Benchmark, list[Task]], dict[str, Any]]] = {
    "overview": overview, "evaluation": evaluation, "terms": terms}


def benchmark_section(request: HttpRequest, slug: str, section: str) -> HttpResponse:
    if section not in CONTEXTS:
        raise Http404(section)
    benchmark = get_object_or_404(Benchmark, slug=slug)
    tasks = list(benchmark.tasks.listed_for(request.user))
    return render(request, "leaderboards/benchmark_section.html", {
        "benchmark": benchmark, "section": section, "tabs": tabs(benchmark, section), "tasks": tasks,
        "title": dict(SECTIONS)[section], **CONTEXTS[section](benchmark, tasks)})
