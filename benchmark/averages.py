"""What a change of a task's visibility does to its benchmark's average board, said to the
maintainer before it happens (the admin's form, the API's PATCH answer).

The average board averages the benchmark's public tasks that have a current test set
(``leaderboards.boards.benchmark_average_rows``). Hiding one (or listing it only by address)
silently redefines the average: ExpMRC's human row moves from 88.125 over four subsets to
89.033 over three.
"""
from .models import Task, Visibility


def averaged_tasks(task: Task, visibility: str | None = None) -> list[Task]:
    """The tasks of ``task``'s benchmark its average board covers, with ``task`` at ``visibility``."""
    chosen = []
    for other in task.benchmark.tasks.order_by("order", "name"):
        shown = (visibility if other.pk == task.pk and visibility is not None else other.visibility)
        if shown == Visibility.PUBLIC and other.current_test_set() is not None:
            chosen.append(other)
    return chosen


def average_change(task: Task, visibility: str) -> str:
    """A warning when setting ``task`` to ``visibility`` changes which subsets its benchmark's
    average board covers ("" when it does not)."""
    before = averaged_tasks(task)
    after = averaged_tasks(task, visibility)
    if [t.pk for t in before] == [t.pk for t in after] or max(len(before), len(after)) < 2:
        return ""
    names = ", ".join(t.name for t in after) or "none"
    verb = "leaves" if len(after) < len(before) else "joins"
    text = (f"{task.name} {verb} the average board of {task.benchmark.name}: it will average {len(after)} "
            f"subset{'' if len(after) == 1 else 's'} ({names}) instead of {len(before)}, so every average on it, "
            "the human row's included, changes.")
    covered = task.kind_definition.average_source_subsets
    if covered:
        text += f" The published average on {task.kind_definition.average_source} covers {covered}."
    return text
