"""The benchmark-wide average board (docs/metrics.md#expmrc): systems scored on every subset."""
import pytest
from rest_framework.test import APIClient

from benchmark.models import Benchmark, ReportedResult
from submissions.intake import submit_predictions
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db

SLUGS = ["expmrc-squad", "expmrc-cmrc2018", "expmrc-race", "expmrc-c3"]


def scored(user, slug, predictions, method):
    from benchmark.models import Task

    sub = submit_predictions(user=user, task=Task.objects.get(slug=slug), uploaded_file=upload_file(predictions),
                             method_name=method)
    score_submission(sub.pk)
    return sub


def test_only_systems_on_every_subset_are_averaged():
    for slug in SLUGS:
        task = make_task(slug)
        ReportedResult.objects.create(task=task, kind="human", method="Human Performance",
                                      scores={"overall_f1": 90.0}, source="paper")
    alice, bob = make_user("alice"), make_user("bob")
    for slug in SLUGS:
        # Perfect everywhere except an empty file on C3: average (100 * 3 + 0) / 4 = 75.
        scored(alice, slug, perfect_predictions(fixture_gold(slug)) if slug != "expmrc-c3" else {}, "Full")
    scored(bob, "expmrc-squad", perfect_predictions(fixture_gold("expmrc-squad")), "Partial")

    body = APIClient().get("/api/benchmarks/expmrc/leaderboard/").json()
    assert sorted(body["tasks"]) == sorted(SLUGS)
    assert [(r["rank"], r["method"], r["average"]) for r in body["rows"]] == [
        (None, "Human Performance", 90.0),
        (1, "Full", 75.0),
    ]
    page = APIClient().get(f"/benchmarks/{Benchmark.objects.get().slug}/")
    assert page.status_code == 200 and b"75.000" in page.content and b"Partial" not in page.content
