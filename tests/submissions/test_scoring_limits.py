"""Scoring holds its run while it works and is bounded: lease renewal from a side thread, the soft
time limit charged to the sender, a cap on prediction strings, an honest status for a run whose
worker stopped. (The worker-kill and time-limit paths through real processes are in
tests/integration/test_worker.py.)"""
import json
import time
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.test import Client
from django.utils import timezone

from benchmark.kinds.expmrc import ExpmrcKind
from scoring.metrics import expmrc
from submissions import intake, lifecycle, runs
from submissions.models import ErrorCategory, Status, Submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file


def queued_submission(predictions=None):
    task = make_task("expmrc-squad")
    user = make_user()
    predictions = predictions or perfect_predictions(fixture_gold("expmrc-squad"))
    return intake.submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions), method_name="m")


@pytest.mark.django_db(transaction=True)  # the renewal thread has its own connection
def test_a_long_run_keeps_its_lease_and_the_reaper_leaves_it_alone(settings):
    settings.SCORING_LEASE_SECONDS = 1
    submission = queued_submission()
    claimed = lifecycle.start_run(submission.pk)
    first_lease = claimed.lease_expires_at
    with lifecycle.lease_renewal(claimed, interval=0.2):
        time.sleep(2.5)  # far past the 1 s lease
        assert lifecycle.reap_stuck().get("requeued", 0) == 0
        row = Submission.objects.get(pk=submission.pk)
        assert row.status == Status.RUNNING and row.lease_expires_at > first_lease and not row.is_stalled
    time.sleep(1.3)  # no renewal after the run: its lease runs out and the status says so
    assert Submission.objects.get(pk=submission.pk).is_stalled


@pytest.mark.django_db
def test_the_soft_time_limit_fails_the_run_charged_to_its_sender(monkeypatch):
    submission = queued_submission()

    def too_slow(self, split, predictions):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(ExpmrcKind, "score", too_slow)
    assert runs.claim_and_score(submission.pk) == Status.FAILED
    failed = Submission.objects.get(pk=submission.pk)
    assert failed.error_category == ErrorCategory.SCORING_TIME
    assert "took longer than" in failed.error_message
    assert intake.quota_status(failed.user, failed.task)["used"] == 1  # not refunded


@pytest.mark.django_db
def test_a_stalled_run_says_so_on_its_page():
    submission = queued_submission()
    lifecycle.start_run(submission.pk)
    Submission.objects.filter(pk=submission.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=5))
    client = Client()
    client.force_login(submission.user)
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    assert "stopped responding" in page
    assert client.get(f"/api/submissions/{submission.pk}/").json()["stalled"] is True


def test_prediction_strings_longer_than_any_passage_are_refused_at_parse():
    spec = expmrc.KeySpec.from_dict({"kind": "span", "keys": ["q1", "q2"], "option_letters": ""})
    ok = json.dumps({"q1": {"answer": "a" * 100, "evidence": "e" * expmrc.MAX_PREDICTION_CHARS}}).encode()
    assert expmrc.parse_predictions(ok, spec)["q1"]["answer"] == "a" * 100
    long = json.dumps({"q2": {"answer": "a", "evidence": "e" * (expmrc.MAX_PREDICTION_CHARS + 1)}}).encode()
    with pytest.raises(expmrc.InvalidPredictions, match="10,001 characters"):
        expmrc.parse_predictions(long, spec)


def test_a_file_with_more_entries_than_questions_is_refused_from_its_keys_alone():
    """A million unknown keys must cost their parsing, not a validation of every entry: the
    surplus is named before any entry is looked at (here every entry is also malformed)."""
    spec = expmrc.KeySpec.from_dict({"kind": "span", "keys": ["q1", "q2"], "option_letters": ""})
    surplus = json.dumps({f"junk-{i}": {"answer": 1} for i in range(5000)}).encode()
    with pytest.raises(expmrc.InvalidPredictions, match="keys not in the test set") as refused:
        expmrc.parse_predictions(surplus, spec)
    assert "and 4995 more" in str(refused.value) and "invalid entries" not in str(refused.value)
    repeated = b'{"q1": {"answer": "a", "evidence": "b"}, "q2": {"answer": 1}, "q1": {"answer": 2}}'
    with pytest.raises(expmrc.InvalidPredictions, match="duplicated keys"):
        expmrc.parse_predictions(repeated, spec)
