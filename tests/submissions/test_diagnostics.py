"""Per-submission diagnostics: computed after the score, stored as aggregates, shown on the
entry page and at /api/submissions/{id}/diagnostics/, never exposing per-question outcomes."""
import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from submissions.models import DiagnosticsStatus, Submission
from submissions.services import submit_predictions
from submissions.tasks import compute_diagnostics, score_submission
from tests.factories import make_task_from_gold, make_user, perfect_predictions, synthetic_span_gold, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored_span(tmp_path, settings, django_capture_on_commit_callbacks):
    settings.DIAGNOSTICS_PERMUTATIONS = 2000
    gold = synthetic_span_gold(70)
    task = make_task_from_gold(tmp_path, gold)
    predictions = perfect_predictions(gold)
    for i, key in enumerate(list(predictions)):
        if i % 7 == 4:  # every "Why" question wrong: question type matters
            predictions[key] = {"answer": "wrong", "evidence": "wrong"}
    user = make_user()
    sub = submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions), method_name="m")
    with django_capture_on_commit_callbacks(execute=False) as sent:
        score_submission(sub.pk)
    assert len(sent) == 1  # diagnostics are queued after the score is committed
    assert Submission.objects.get(pk=sub.pk).diagnostics_status == DiagnosticsStatus.PENDING
    return sub, gold, user


def test_span_diagnostics_find_the_hard_question_type(scored_span):
    sub, gold, user = scored_span
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.DONE
    assert compute_diagnostics(sub.pk) == "skipped"  # idempotent
    body = APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").json()
    assert body["status"] == "done"
    qt = body["diagnostics"]["question_types"]
    by_variable = {t["variable"]: t for t in qt["categorical"]["tests"]}
    assert by_variable["question_type"]["significant"] is True
    why = next(t for t in qt["one_vs_rest"]["tests"] if t["group"] == "why")
    assert why["accuracy"] == 0.0 and why["significant"] is True
    properties = {p["name"]: p for p in body["diagnostics"]["linguistic_bias"]["properties"]}
    assert properties["question_words"]["bias"] > 0


def test_diagnostics_are_aggregates_only(scored_span):
    sub, gold, user = scored_span
    compute_diagnostics(sub.pk)
    text = json.dumps(APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").json())
    for qa in gold["data"][0]["paragraphs"]:
        item = qa["qas"][0]
        assert item["id"] not in text
        assert item["answers"][0]["text"] not in text and item["evidences"][0] not in text


def test_entry_page_shows_diagnostics_and_charts(scored_span):
    sub, gold, user = scored_span
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert "Diagnostics are being computed" in page and 'http-equiv="refresh"' in page
    compute_diagnostics(sub.pk)
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert 'id="categorical-tests"' in page and 'id="one-vs-rest"' in page
    assert "Linguistic bias" in page and page.count('<svg class="chart"') >= 5
    assert 'http-equiv="refresh"' not in page


def test_a_crash_in_diagnostics_keeps_the_score(scored_span, monkeypatch):
    from submissions import diagnostics

    sub, gold, user = scored_span

    def explode(*args, **kwargs):
        raise ValueError(gold["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"])

    monkeypatch.setattr(diagnostics, "span_diagnostics", explode)
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.FAILED
    stored = Submission.objects.get(pk=sub.pk)
    assert stored.status == "scored" and stored.scores["overall_f1"] > 0
    assert "token0" not in json.dumps(stored.diagnostics)


def test_private_diagnostics_are_not_public(scored_span):
    sub, gold, user = scored_span
    Submission.objects.filter(pk=sub.pk).update(public=False)
    assert APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").status_code == 404


def test_diagnostics_whose_worker_died_are_sent_again_then_given_up(scored_span, settings,
                                                                    django_capture_on_commit_callbacks):
    """A worker killed mid-diagnostics must not leave a status page refreshing forever."""
    from datetime import timedelta

    from django.utils import timezone

    from submissions import diagnostics

    sub, gold, user = scored_span
    settings.SCORING_MAX_ATTEMPTS = 2
    assert diagnostics.claim(sub.pk)  # a worker took them ... and died
    assert not diagnostics.claim(sub.pk)  # a duplicate message finds nothing to do
    assert diagnostics.reap_stuck()["diagnostics_resent"] == 0  # the lease is still live
    later = timezone.now() + timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS + 1)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert diagnostics.reap_stuck(now=later)["diagnostics_resent"] == 1
    assert len(sent) == 1
    assert Submission.objects.get(pk=sub.pk).diagnostics_status == DiagnosticsStatus.PENDING

    assert diagnostics.claim(sub.pk)  # second run dies too
    much_later = later + timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS + 1)
    assert diagnostics.reap_stuck(now=much_later) == {"diagnostics_resent": 0, "diagnostics_failed": 1}
    failed = Submission.objects.get(pk=sub.pk)
    assert failed.diagnostics_status == DiagnosticsStatus.FAILED and failed.diagnostics_attempts == 2
    assert "stopped 2 times" in failed.diagnostics["error"]
    assert failed.status == "scored"  # the score is untouched
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert "stopped 2 times" in page and 'http-equiv="refresh"' not in page


def test_lost_diagnostics_messages_are_resent_and_run_once(scored_span, settings,
                                                           django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from submissions import diagnostics

    sub, gold, user = scored_span
    later = timezone.now() + timedelta(seconds=settings.QUEUE_LEASE_SECONDS + 1)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert diagnostics.reap_stuck(now=later)["diagnostics_resent"] == 1
    assert len(sent) == 1
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.DONE
    assert compute_diagnostics(sub.pk) == "skipped"
    assert diagnostics.reap_stuck(now=later + timedelta(days=1))["diagnostics_resent"] == 0


def test_entries_scored_before_the_cue_table_get_their_icq_tests_when_it_arrives(django_capture_on_commit_callbacks):
    from benchmark.tasks import discover_cues
    from tests.factories import fixture_gold, make_task

    task = make_task("expmrc-race")
    sub = submit_predictions(user=make_user(), task=task, method_name="early",
                             uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-race"))))
    score_submission(sub.pk)
    compute_diagnostics(sub.pk)  # the cue table is still queued
    early = Submission.objects.get(pk=sub.pk)
    assert early.diagnostics_status == DiagnosticsStatus.DONE
    assert early.diagnostics["icq"]["applicable"] is False and "not finished" in early.diagnostics["icq"]["note"]

    with django_capture_on_commit_callbacks(execute=False) as sent:
        discover_cues(task.current_test_set().pk)
    assert len(sent) == 1  # the entry's diagnostics are sent again ...
    assert Submission.objects.get(pk=sub.pk).diagnostics_status == DiagnosticsStatus.PENDING
    compute_diagnostics(sub.pk)
    icq = Submission.objects.get(pk=sub.pk).diagnostics["icq"]
    assert icq["applicable"] is True and "no reference" in icq["note"]  # ... and now read the cue table
