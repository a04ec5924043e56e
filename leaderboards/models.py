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
from benchmark.models import Benchmark, Phase, ReportedResult, Task, TestSet, boards_changed
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


#: The orders a task board can be read in (``?sort=``), besides each metric column (``by_metric_<i>``
#: for the i-th of ``Task.metric_columns``): the board's own (rank; tier sorts the same), the
#: system's name, QUACKIE's failed samples and the lower end of the primary metric's CI.
SORT_FIELDS = {"rank": "by_rank", "tier": "by_rank", "system": "by_system", "fails": "by_fails", "ci": "by_ci_low"}
MAX_METRIC_COLUMNS = 5


class BoardRow(models.Model):
    """One row of a stored task board. A page of any order is an index range: each ``by_*``
    column holds the row's place when the board is sorted ascending on that key, rows without a
    value last (None for pinned rows, which head every order). Reading a page therefore costs the
    same at 10 entries as at 10,000 (leaderboards.store.board_page_rows)."""

    snapshot = models.ForeignKey(BoardSnapshot, on_delete=models.CASCADE, related_name="rows")
    position = models.PositiveIntegerField(help_text="place in the board's own order (pinned rows first)")
    pinned = models.BooleanField(default=False)
    data = models.TextField(help_text="the row as the API shows it, encoded")
    by_rank = models.PositiveIntegerField(null=True)
    by_system = models.PositiveIntegerField(null=True)
    by_fails = models.PositiveIntegerField(null=True)
    by_ci_low = models.PositiveIntegerField(null=True)
    by_metric_0 = models.PositiveIntegerField(null=True)
    by_metric_1 = models.PositiveIntegerField(null=True)
    by_metric_2 = models.PositiveIntegerField(null=True)
    by_metric_3 = models.PositiveIntegerField(null=True)
    by_metric_4 = models.PositiveIntegerField(null=True)

    class Meta:
        indexes = [models.Index(fields=["snapshot", name], name=f"boardrow_{name}")
                   for name in ("position", "by_rank", "by_system", "by_fails", "by_ci_low",
                                *(f"by_metric_{i}" for i in range(MAX_METRIC_COLUMNS)))]

    def __str__(self):
        return f"{self.snapshot.key} #{self.position}"


class PairTest(models.Model):
    """A paired test between two entries of a task, kept so that a board rebuilt after one new
    entry runs only the tests that involve it (leaderboards.boards.add_tiers). Keyed by the two
    entries' score fingerprints (a digest of their per-item primary scores): a re-scored entry
    with other item scores gets new pairs, and recycled ids never read another entry's tests.
    ``first`` sorts before ``second``; ``z`` is of first minus second."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    first = models.CharField(max_length=64)
    second = models.CharField(max_length=64)
    resamples = models.PositiveIntegerField()
    p_value = models.FloatField()
    z = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "first", "second", "resamples"],
                                               name="pairtest_unique")]

    def __str__(self):
        return f"{self.first[:8]} vs {self.second[:8]}: p={self.p_value:.4g}"


def on_board(submission: Submission) -> bool:
    """Whether a submission is (or was, before this save) a candidate for a board: scored, or
    being re-scored. Uploads, queued first runs and failures never show."""
    return submission.status == Status.SCORED or submission.rescore_test_set_id is not None


@receiver([post_save, post_delete], sender=Submission)
def submission_changed(sender: Any, instance: Submission, **kwargs: Any) -> None:
    # A scored entry renamed, hidden, published, flagged or verified through a form or the admin.
    # Rows loaded from a backup (raw saves) come with their stored boards and generations.
    if on_board(instance) and not kwargs.get("raw"):
        boards_changed([instance.task_id])


@receiver([post_save, post_delete], sender=ReportedResult)
@receiver([post_save, post_delete], sender=TestSet)
@receiver([post_save, post_delete], sender=Phase)
def task_part_changed(sender: Any, instance: ReportedResult | TestSet | Phase, **kwargs: Any) -> None:
    if kwargs.get("raw"):
        return
    boards_changed([instance.task_id])


@receiver(post_save, sender=Task)
def task_changed(sender: Any, instance: Task, **kwargs: Any) -> None:
    # Visibility, ranking rule, name: all shown on or decide a board.
    if kwargs.get("raw"):
        return
    boards_changed([instance.pk])


@receiver(post_save, sender=Benchmark)
def benchmark_changed(sender: Any, instance: Benchmark, **kwargs: Any) -> None:
    if kwargs.get("raw"):
        return
    boards_changed(list(instance.tasks.values_list("pk", flat=True)))


@receiver(post_save, sender=Profile)
def team_changed(sender: Any, instance: Profile, **kwargs: Any) -> None:
    # The team column of every board the user's entries are on.
    if kwargs.get("raw"):
        return
    boards_changed(list(Submission.objects.filter(user_id=instance.user_id, status=Status.SCORED)
                        .values_list("task_id", flat=True).distinct()))
