"""The status machine, idempotent scoring and the reaper."""
import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from submissions import lifecycle
from submissions.intake import submit_predictions
from submissions.models import ErrorCategory, IllegalTransition, Status, Submission
from submissions.tasks import reap_stuck_submissions, score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued():
    task = make_task("expmrc-squad")
    user = make_user()
    predictions = perfect_predictions(fixture_gold("expmrc-squad"))
    return submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions), method_name="m")


def test_illegal_transitions_raise(queued):
    with pytest.raises(IllegalTransition):
        lifecycle.transition(queued, Status.SCORED)
    lifecycle.transition(queued, Status.CANCELLED)
    with pytest.raises(IllegalTransition):
        lifecycle.transition(queued, Status.QUEUED)


def test_transition_does_not_overwrite_a_concurrent_change(queued):
    stale = Submission.objects.get(pk=queued.pk)
    assert lifecycle.transition(queued, Status.CANCELLED)
    assert not lifecycle.transition(stale, Status.RUNNING)  # the row moved on meanwhile
    assert Submission.objects.get(pk=queued.pk).status == Status.CANCELLED


def test_a_new_submission_is_created_through_the_table_only_from_uploaded():
    task = make_task("expmrc-squad")
    fresh = Submission(user=make_user(), task=task, test_set=task.current_test_set(), method_name="m")
    with pytest.raises(IllegalTransition):
        lifecycle.transition(fresh, Status.SCORED)  # uploaded -> scored skips scoring
    assert lifecycle.transition(fresh, Status.REJECTED, error_message="bad file")
    assert Submission.objects.get(pk=fresh.pk).status == Status.REJECTED


def test_a_worker_reclaims_a_run_whose_lease_expired_through_the_table(queued):
    assert lifecycle.start_run(queued.pk).attempts == 1
    assert lifecycle.start_run(queued.pk) is None  # the lease is live: nobody else may take it
    Submission.objects.filter(pk=queued.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    again = lifecycle.start_run(queued.pk)  # running -> running, a legal move of the table
    assert again.status == Status.RUNNING and again.attempts == 2


def test_scoring_twice_stores_once(queued):
    assert score_submission(queued.pk) == Status.SCORED
    first = Submission.objects.get(pk=queued.pk)
    assert score_submission(queued.pk) == "skipped"  # a duplicate message is a no-op
    again = Submission.objects.get(pk=queued.pk)
    assert again.attempts == 1 and again.finished_at == first.finished_at and again.scores == first.scores


def test_a_run_that_lost_its_lease_cannot_store(queued):
    first = lifecycle.start_run(queued.pk)
    assert lifecycle.start_run(queued.pk) is None  # live lease: nobody else may take it
    Submission.objects.filter(pk=queued.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    second = lifecycle.start_run(queued.pk)  # expired lease: taken over
    assert second.attempts == 2
    assert not lifecycle.fail_run(first, ErrorCategory.SCORER_ERROR, "late")  # the old run is ignored
    assert lifecycle.store_scores(second, scores={"overall_f1": 1.0}, ci={}, item_scores=[], total=3,
                                  unanswered=0, scorer_version="t")
    assert Submission.objects.get(pk=queued.pk).status == Status.SCORED


def test_reaper_requeues_a_dead_run_and_it_is_scored_once(queued, django_capture_on_commit_callbacks):
    lifecycle.start_run(queued.pk)  # a worker claimed it ... and died
    Submission.objects.filter(pk=queued.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=False) as sent:
        counts = reap_stuck_submissions()
    assert counts["scoring_resent"] == 1 and len(sent) == 1
    assert Submission.objects.get(pk=queued.pk).status == Status.QUEUED
    assert score_submission(queued.pk) == Status.SCORED
    assert Submission.objects.get(pk=queued.pk).attempts == 2


def test_reaper_fails_after_max_attempts_with_a_refunded_category(queued, settings):
    settings.SCORING_MAX_ATTEMPTS = 2
    for _ in range(2):
        lifecycle.start_run(queued.pk)
        Submission.objects.filter(pk=queued.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        lifecycle.reap_stuck()
    failed = Submission.objects.get(pk=queued.pk)
    assert failed.status == Status.FAILED and failed.error_category == ErrorCategory.WORKER_LOST
    assert "2 times" in failed.error_message


def test_reaper_resends_a_queued_submission_whose_message_was_lost(queued, settings):
    Submission.objects.filter(pk=queued.pk).update(queued_at=timezone.now() - timedelta(hours=1))
    assert lifecycle.reap_stuck()["scoring_resent"] == 1
    assert lifecycle.reap_stuck()["scoring_resent"] == 0  # queued_at was refreshed


def test_scorer_crash_is_a_platform_failure_without_gold_in_the_message(queued, monkeypatch):
    from scoring.metrics import expmrc

    def explode(gold, predictions):
        raise KeyError(gold["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"])

    monkeypatch.setattr(expmrc, "score_predictions", explode)
    assert score_submission(queued.pk) == Status.FAILED
    failed = Submission.objects.get(pk=queued.pk)
    assert failed.error_category == ErrorCategory.SCORER_ERROR
    assert "1874" not in failed.error_message


def test_a_crash_after_the_scorer_fails_the_run_at_once_logging_only_the_type(queued, settings, caplog):
    # A real fault past scorer.score: the bootstrap refuses 0 resamples, so computing the
    # confidence intervals raises. The run must fail now as a scorer error, not stay running
    # until the reaper calls it a lost worker.
    settings.BOOTSTRAP_RESAMPLES = 0
    with caplog.at_level(logging.ERROR, logger="submissions.runs"):
        assert score_submission(queued.pk) == Status.FAILED
    failed = Submission.objects.get(pk=queued.pk)
    assert failed.error_category == ErrorCategory.SCORER_ERROR
    assert failed.finished_at is not None and failed.lease_expires_at is None
    assert failed.scores == {} and failed.item_scores == []
    logged = [record.getMessage() for record in caplog.records if record.name == "submissions.runs"]
    assert logged == [f"submission {queued.pk}: scorer raised ValueError"]  # the type, never the message


def test_missing_stored_file_fails_cleanly(queued):
    queued.file.delete(save=False)
    assert score_submission(queued.pk) == Status.FAILED


def test_retry_requeues_a_failed_submission(queued):
    from submissions import intake

    lifecycle.start_run(queued.pk)
    lifecycle.fail_run(Submission.objects.get(pk=queued.pk), ErrorCategory.WORKER_LOST, "x")
    assert intake.retry(Submission.objects.get(pk=queued.pk))
    assert score_submission(queued.pk) == Status.SCORED


def test_confidence_intervals_store_null_instead_of_nan_or_inf():
    from types import SimpleNamespace

    from submissions.runs import confidence_intervals

    task = SimpleNamespace(metric_columns=[("fine", "Fine"), ("huge", "Huge"), ("undefined", "Undefined")])
    rows = [(0.5, 1e307, None), (0.7, 1e307, None), (0.6, 1e300, None)]  # x100 overflows to inf
    cis = confidence_intervals(task, rows)
    assert cis["huge"] is None and cis["undefined"] is None
    assert 50.0 <= cis["fine"][0] <= cis["fine"][1] <= 70.0
