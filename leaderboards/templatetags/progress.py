"""``{% progress_chart task progress %}``: the best score of a task over time
(leaderboards/progress.py), for the pages that show a task's board or a benchmark's overview;
``progress`` is the stored board's ``payload["progress"]``."""
from typing import Any

from django import template

from benchmark.models import Task

from ..progress import task_progress

register = template.Library()


@register.inclusion_tag("leaderboards/_progress.html")
def progress_chart(task: Task, progress: dict[str, Any] | None, heading: bool = True) -> dict[str, Any]:
    return {**task_progress(task, progress), "heading": heading}
