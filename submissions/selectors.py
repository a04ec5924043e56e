"""Read-side queries other apps use."""
from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet

from benchmark.models import Task, TestSet

from .models import Status, Submission


def public_scored_submissions(task: Task, test_set: TestSet | None,
                              kinds: Iterable[str] = (Submission.PREDICTIONS, Submission.CODE, Submission.MODEL),
                              ) -> QuerySet[Submission]:
    """Public scored entries of a task's test set, oldest first, except flagged ones. Prediction
    files and code runs rank on the leaderboard; skill submissions have their own board. An entry
    being re-scored keeps its place with the score it has until the new one is stored."""
    if test_set is None:
        return Submission.objects.none()
    being_rescored = Q(status__in=[Status.QUEUED, Status.RUNNING], rescore_test_set__isnull=False)
    return (
        Submission.objects.filter(Q(status=Status.SCORED) | being_rescored, task=task, test_set=test_set, public=True,
                                  kind__in=kinds, flag_reason="")
        .exclude(scores={})
        # A phase whose board is not live keeps its entries off the boards until it is closed.
        .exclude(phase__live_board=False, phase__closed_at__isnull=True)
        .select_related("user__profile", "phase", "submitting_team")
        .defer("item_scores")
        .order_by("finished_at", "pk")
    )


def item_scores_of(submission_ids: Iterable[int]) -> dict[int, Any]:
    """{id: per-question rows} for leaderboard statistics. Internal: never serialised."""
    return dict(Submission.objects.filter(pk__in=submission_ids).values_list("pk", "item_scores"))


def public_skill_submissions(task: Task, test_set: TestSet | None) -> QuerySet[Submission]:
    """Public scored skill submissions of a task (their own board, not the main ranking)."""
    return public_scored_submissions(task, test_set, kinds=(Submission.SKILLS,))
