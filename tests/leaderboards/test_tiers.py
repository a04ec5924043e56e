"""Significance tiers and p-values on the leaderboard (docs/diagnostics.md#significance-tiers)."""
import pytest
from rest_framework.test import APIClient

from benchmark.models import ReportedResult
from submissions.intake import submit_predictions
from submissions.tasks import score_submission
from tests.factories import make_task_from_gold, make_user, perfect_predictions, synthetic_span_gold, upload_file

pytestmark = pytest.mark.django_db


def scored(task, user, predictions, method):
    sub = submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions), method_name=method)
    score_submission(sub.pk)
    return sub


def test_equal_systems_share_a_tier_and_a_clearly_worse_one_does_not(tmp_path, settings):
    settings.SUBMISSIONS_PER_DAY = 10
    gold = synthetic_span_gold(60)
    task = make_task_from_gold(tmp_path, gold)
    ReportedResult.objects.create(task=task, kind="baseline", method="Paper baseline",
                                  scores={"answer_f1": 50, "evidence_f1": 50, "overall_f1": 50}, source="paper")
    user = make_user()
    perfect = perfect_predictions(gold)
    half = {key: value for i, (key, value) in enumerate(perfect.items()) if i % 2 == 0}
    almost = {key: value for i, (key, value) in enumerate(perfect.items()) if i != 7}
    scored(task, user, perfect, "Perfect")
    scored(task, user, almost, "Almost perfect")  # one question fewer: not significantly worse
    scored(task, user, half, "Half")  # 30 questions fewer: clearly worse

    rows = APIClient().get(f"/api/tasks/{task.slug}/leaderboard/").json()["rows"]
    by_method = {row["method"]: row for row in rows}
    assert by_method["Perfect"]["tier"] == 1 and by_method["Perfect"]["p_vs_above"] is None
    assert by_method["Almost perfect"]["tier"] == 1 and by_method["Almost perfect"]["p_vs_above"] > 0.05
    assert by_method["Half"]["tier"] == 2 and by_method["Half"]["p_vs_above"] < 0.001
    assert by_method["Paper baseline"]["tier"] is None and by_method["Paper baseline"]["ci"] is None

    page = APIClient().get(f"/tasks/{task.slug}/").content.decode()
    assert 'class="tier"' in page and "p=" in page
