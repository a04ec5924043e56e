"""The maintainers' admin pages for submissions and test sets: they render, their actions work,
and their lists do not load the stored answers."""
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.importers import import_expmrc
from benchmark.models import TestSet as StoredTestSet
from submissions.intake import submit_predictions
from submissions.models import Submission
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored_entry():
    task = make_task("expmrc-squad")
    sub = submit_predictions(user=make_user(), task=task, method_name="m",
                             uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    score_submission(sub.pk)
    return Submission.objects.get(pk=sub.pk)


def test_the_change_page_of_a_submission_with_a_stored_file_renders(admin_client, scored_entry):
    assert scored_entry.file.name
    page = admin_client.get(f"/admin/submissions/submission/{scored_entry.pk}/change/")
    assert page.status_code == 200
    assert scored_entry.file.name in page.content.decode()  # named, not linked


def test_hide_and_show_actions(admin_client, scored_entry):
    url = "/admin/submissions/submission/"
    admin_client.post(url, {"action": "hide", "_selected_action": [scored_entry.pk]})
    assert Submission.objects.get(pk=scored_entry.pk).public is False
    rows = admin_client.get("/api/tasks/expmrc-squad/leaderboard/").json()["rows"]
    assert scored_entry.pk not in [row["submission_id"] for row in rows]
    admin_client.post(url, {"action": "show", "_selected_action": [scored_entry.pk]})
    assert Submission.objects.get(pk=scored_entry.pk).public is True


def test_lists_do_not_load_the_stored_answers(admin_client, scored_entry):
    for url in ("/admin/submissions/submission/", "/admin/benchmark/testset/"):
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(url).status_code == 200
        selects = " ".join(q["sql"] for q in queries.captured_queries)
        assert '"gold"' not in selects and '"item_scores"' not in selects and '"public_inputs"' not in selects, url


def test_ticking_current_on_a_test_set_unticks_the_other_versions(admin_client, tmp_path):
    task = make_task("expmrc-squad")
    first = task.current_test_set()
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(fixture_gold("expmrc-squad"), indent=1))  # same set, other bytes
    second, _ = import_expmrc(path, task_slug="expmrc-squad", version="2")
    assert not StoredTestSet.objects.get(pk=first.pk).is_current
    page = admin_client.get(f"/admin/benchmark/testset/{first.pk}/change/")
    assert page.status_code == 200
    admin_client.post(f"/admin/benchmark/testset/{first.pk}/change/", {"is_current": "on"})
    current = StoredTestSet.objects.filter(task=task, split=StoredTestSet.TEST, is_current=True)
    assert [t.pk for t in current] == [first.pk]
    assert StoredTestSet.objects.get(pk=first.pk).gold == fixture_gold("expmrc-squad")  # the gold is untouched


def test_reported_rows_are_edited_one_number_per_score_column(admin_client):
    from benchmark.models import ReportedResult

    task = make_task("expmrc-squad")
    url = f"/admin/benchmark/task/{task.pk}/change/"
    page = admin_client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    for label in ("Answer F1", "Evidence F1", "Overall F1"):
        assert label in html
    prefix = "reported_results"
    form = {key: value for key, value in (
        ("slug", task.slug), ("name", task.name), ("benchmark", task.benchmark_id), ("kind", task.kind),
        ("language", task.language), ("order", task.order), ("accepts_submissions", "on"),
        ("visibility", task.visibility), ("ranking_rule", task.ranking_rule), ("inputs", task.inputs),
        ("model_budget", "{}"),
    )}
    rows = list(task.reported_results.all())
    form.update({f"{prefix}-TOTAL_FORMS": len(rows) + 1, f"{prefix}-INITIAL_FORMS": len(rows),
                 f"{prefix}-MIN_NUM_FORMS": 0, f"{prefix}-MAX_NUM_FORMS": 1000})
    # The task's phases are an inline too (none here).
    form.update({"phases-TOTAL_FORMS": 0, "phases-INITIAL_FORMS": 0, "phases-MIN_NUM_FORMS": 0,
                 "phases-MAX_NUM_FORMS": 1000})
    for i, row in enumerate(rows):
        form.update({f"{prefix}-{i}-id": row.pk, f"{prefix}-{i}-task": task.pk, f"{prefix}-{i}-kind": row.kind,
                     f"{prefix}-{i}-method": row.method, f"{prefix}-{i}-team": row.team,
                     f"{prefix}-{i}-source": row.source, f"{prefix}-{i}-order": row.order})
        form.update({f"{prefix}-{i}-score_{k}": v for k, v in row.scores.items()})
    new = len(rows)
    form.update({f"{prefix}-{new}-task": task.pk, f"{prefix}-{new}-kind": "baseline",
                 f"{prefix}-{new}-method": "Typed in the admin", f"{prefix}-{new}-source": "A paper (2026)",
                 f"{prefix}-{new}-order": 9, f"{prefix}-{new}-score_answer_f1": "80.5",
                 f"{prefix}-{new}-score_overall_f1": "70.25"})
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:3000]
    added = ReportedResult.objects.get(task=task, method="Typed in the admin")
    assert added.scores == {"answer_f1": 80.5, "overall_f1": 70.25}  # the empty column is absent
    assert [r.scores for r in task.reported_results.exclude(pk=added.pk)] == [r.scores for r in rows]
