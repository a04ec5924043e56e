"""Background jobs of the boards (queue ``maintenance``, config/celery.py)."""
from celery import shared_task

from . import store


@shared_task(name="leaderboards.tasks.rebuild_boards")
def rebuild_boards(task_ids: list[int]) -> None:
    """Recompute the stored boards of these tasks and their benchmarks' average boards."""
    store.rebuild_tasks(task_ids)
