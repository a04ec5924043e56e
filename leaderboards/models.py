"""Stored boards (docs/operations.md#stored-boards): each task's ranked board, each benchmark's
average board, computed by a worker when something they show changes and read by the pages
and the API as one row.

A board is current when its ``stamp`` equals the generations (``benchmark.BoardGeneration``)
of the tasks it was computed from. Most changes bump them where they are written
(``submissions.lifecycle.transition``); saves of the models a board shows bump them here."""
from typing import Any

from django.db import models
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from accounts.models import Profile
from benchmark.models import Benchmark, ReportedResult, Task, TestSet, boards_changed
from submissions.models import Status, Submission


class BoardSnapshot(models.Model):
    key = models.CharField(max_length=100, unique=True, help_text="task:<id> or benchmark:<id>")
    stamp = models.TextField(help_text="the task generations it was computed from")
    payload = models.JSONField(help_text="the rows the page and the CSV show")
    summary = models.JSONField(default=dict, help_text="the task's line on the home and benchmark pages")
    body = models.TextField(help_text="the API's answer, encoded")
    n_rows = models.PositiveIntegerField(default=0)
    computed_at = models.DateTimeField()

    def __str__(self):
        return f"{self.key} @ {self.stamp}"


def on_board(submission: Submission) -> bool:
    """Whether a submission is (or was, before this save) a candidate for a board: scored, or
    being re-scored. Uploads, queued first runs and failures never show."""
    return submission.status == Status.SCORED or submission.rescore_test_set_id is not None


@receiver([post_save, post_delete], sender=Submission)
def submission_changed(sender: Any, instance: Submission, **kwargs: Any) -> None:
    # A scored entry renamed, hidden, published, flagged or verified through a form or the admin.
    if on_board(instance):
        boards_changed([instance.task_id])


@receiver([post_save, post_delete], sender=ReportedResult)
@receiver([post_save, post_delete], sender=TestSet)
def task_part_changed(sender: Any, instance: ReportedResult | TestSet, **kwargs: Any) -> None:
    boards_changed([instance.task_id])


@receiver(post_save, sender=Task)
def task_changed(sender: Any, instance: Task, **kwargs: Any) -> None:
    # Visibility, ranking rule, name: all shown on or decide a board.
    boards_changed([instance.pk])


@receiver(post_save, sender=Benchmark)
def benchmark_changed(sender: Any, instance: Benchmark, **kwargs: Any) -> None:
    boards_changed(list(instance.tasks.values_list("pk", flat=True)))


@receiver(post_save, sender=Profile)
def team_changed(sender: Any, instance: Profile, **kwargs: Any) -> None:
    # The team column of every board the user's entries are on.
    boards_changed(list(Submission.objects.filter(user_id=instance.user_id, status=Status.SCORED)
                        .values_list("task_id", flat=True).distinct()))
