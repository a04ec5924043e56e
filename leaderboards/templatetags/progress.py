"""``{% progress_chart task %}``: the best score of a task over time (leaderboards/progress.py),
for the pages that show a task's board or a benchmark's overview."""
from typing import Any

from django import template

from benchmark.models import Task

from ..progress import task_progress

register = template.Library()


@register.inclusion_tag("leaderboards/_progress.html")
def progress_chart(task: Task, heading: bool = True) -> dict[str, Any]:
    return {**task_progress(task), "heading": heading}
