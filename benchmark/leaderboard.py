"""Leaderboard rows for a task: human rows pinned on top, then reported baselines and
server-scored public submissions ranked together by the primary metric."""
from .models import ReportedResult


def leaderboard_rows(task):
    from submissions.selectors import public_scored_submissions

    metric = task.primary_metric
    pinned = []
    ranked = []
    for reported in task.reported_results.all():
        row = {
            "rank": None,
            "method": reported.method,
            "team": reported.team,
            "date": reported.date.isoformat() if reported.date else None,
            "url": reported.url,
            "scores": reported.scores,
            "ci": None,
            "reported": True,
            "kind": reported.kind,
            "source": reported.source,
            "submission_id": None,
        }
        (pinned if reported.kind == ReportedResult.HUMAN else ranked).append(row)

    test_set = task.current_test_set()
    for sub in public_scored_submissions(task, test_set):
        ranked.append(
            {
                "rank": None,
                "method": sub.method_name,
                "team": sub.team,
                "date": sub.finished_at.date().isoformat() if sub.finished_at else None,
                "url": sub.url,
                "scores": sub.scores,
                "ci": sub.ci,
                "reported": False,
                "kind": "submission",
                "source": "",
                "submission_id": sub.pk,
            }
        )
    # Ties on the primary metric share a rank (1, 2, 2, 4); earlier rows stay first.
    ranked.sort(key=lambda row: -float(row["scores"].get(metric, 0.0)))
    previous = None
    for position, row in enumerate(ranked, start=1):
        value = row["scores"].get(metric)
        row["rank"] = ranked[position - 2]["rank"] if value == previous else position
        previous = value
    return pinned + ranked
