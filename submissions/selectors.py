"""Read-side queries other apps use."""
from .models import Status, Submission


def public_scored_submissions(task, test_set, kinds=(Submission.PREDICTIONS, Submission.CODE)):
    """Public scored entries of a task's test set, oldest first. Prediction files and code
    runs rank on the leaderboard; skill submissions have their own board."""
    if test_set is None:
        return Submission.objects.none()
    return (
        Submission.objects.filter(task=task, test_set=test_set, status=Status.SCORED, public=True, kind__in=kinds)
        .select_related("user__profile")
        .defer("item_scores")
        .order_by("finished_at", "pk")
    )


def item_scores_of(submission_ids):
    """{id: per-question rows} for leaderboard statistics. Internal: never serialised."""
    return dict(Submission.objects.filter(pk__in=submission_ids).values_list("pk", "item_scores"))


def public_skill_submissions(task, test_set):
    """Public scored skill submissions of a task (their own board, not the main ranking)."""
    return public_scored_submissions(task, test_set, kinds=(Submission.SKILLS,))
