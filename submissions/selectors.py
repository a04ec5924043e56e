"""Read-side queries other apps use."""
from .models import Status, Submission


def public_scored_submissions(task, test_set):
    if test_set is None:
        return Submission.objects.none()
    return (
        Submission.objects.filter(task=task, test_set=test_set, status=Status.SCORED, public=True,
                                  kind=Submission.PREDICTIONS)
        .select_related("user__profile")
        .defer("item_scores")
        .order_by("finished_at", "pk")
    )


def item_scores_of(submission_ids):
    """{id: per-question rows} for leaderboard statistics. Internal: never serialised."""
    return dict(Submission.objects.filter(pk__in=submission_ids).values_list("pk", "item_scores"))


def public_skill_submissions(task, test_set):
    """Public scored skill submissions of a task (their own board, not the main ranking)."""
    if test_set is None:
        return Submission.objects.none()
    return (
        Submission.objects.filter(task=task, test_set=test_set, status=Status.SCORED, public=True,
                                  kind=Submission.SKILLS)
        .select_related("user__profile")
        .defer("item_scores")
        .order_by("finished_at", "pk")
    )
