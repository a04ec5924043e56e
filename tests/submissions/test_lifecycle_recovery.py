"""The recovery paths of the state machine (submissions.lifecycle): a re-score that fails or whose
workers keep dying goes back to its previous score; every conditional update is fenced by the
attempt that owns the run, so a late worker or a stale decision of the reaper changes nothing;
each message goes to the task, and so the queue, of its kind."""
import copy
import json
import logging
from datetime import timedelta
from types import SimpleNamespace

import pytest
from celery import current_app
from django.core import mail
from django.utils import timezone

from benchmark.importers import import_expmrc
from benchmark.models import BoardGeneration
from config.celery import app
from core.jobs import Stale
from submissions import lifecycle
from submissions.intake import submit_predictions
from submissions.models import ErrorCategory, IllegalTransition, ScoreRecord, Status, Submission
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db

EXPIRED = timedelta(seconds=1)


@pytest.fixture
def task():
    return make_task("expmrc-squad")


@pytest.fixture
def sent(monkeypatch):
    """The Celery messages sent once their transaction commits: (task name, args)."""
    messages = []
    monkeypatch.setattr(current_app, "send_task",
                        lambda name, args, countdown=None: messages.append((name, args)))
    return messages


def upload(task, user=None, name="m"):
    return submit_predictions(user=user or make_user(), task=task, method_name=name,
                              uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))


def expire_lease(pk):
    Submission.objects.filter(pk=pk).update(lease_expires_at=timezone.now() - EXPIRED)


def version_two(tmp_path):
    """Version 2 of the SQuAD fixture (one gold answer corrected), now the current test set."""
    gold = copy.deepcopy(fixture_gold("expmrc-squad"))
    gold["data"][0]["paragraphs"][0]["qas"][0]["answers"] = [{"text": "the basalt cliffs", "answer_start": 0}]
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(gold), encoding="utf-8")
    test_set, created = import_expmrc(path, task_slug="expmrc-squad", version="v2")
    assert created
    return test_set


@pytest.fixture
def rescoring(task, tmp_path):
    """An entry scored on v1, claimed for re-scoring on v2 (its second attempt)."""
    entry = upload(task)
    assert score_submission(entry.pk) == Status.SCORED
    entry = Submission.objects.get(pk=entry.pk)
    v2 = version_two(tmp_path)
    assert lifecycle.mark_queued(entry, rescore_test_set=v2)
    run = lifecycle.start_run(entry.pk)
    assert run.rescore_test_set_id == v2.pk and run.attempts == entry.attempts + 1
    return SimpleNamespace(entry=entry, v1=entry.test_set, v2=v2, run=run)


def went_back(rescoring):
    """The entry is scored again on v1 with the score it had; nothing of the re-score stays."""
    row = Submission.objects.get(pk=rescoring.entry.pk)
    assert row.status == Status.SCORED
    assert row.test_set_id == rescoring.v1.pk and row.rescore_test_set_id is None
    assert row.lease_expires_at is None
    assert row.scores == rescoring.entry.scores and row.finished_at == rescoring.entry.finished_at
    return row


def last_record(pk):
    return ScoreRecord.objects.filter(submission_id=pk).order_by("-scored_at", "-pk").first()


# -- messages and their queues ------------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "task_name", "queue"), [
    (Submission.PREDICTIONS, "submissions.tasks.score_submission", "scoring"),
    (Submission.CODE, "submissions.tasks.run_code_submission", "sandbox"),
    (Submission.MODEL, "submissions.tasks.run_model_submission", "sandbox"),
])
def test_a_retry_is_sent_to_the_task_and_queue_of_its_kind(task, kind, task_name, queue, sent,
                                                           django_capture_on_commit_callbacks):
    sub = upload(task)
    lifecycle.start_run(sub.pk)
    assert lifecycle.fail_run(Submission.objects.get(pk=sub.pk), ErrorCategory.WORKER_LOST, "lost")
    Submission.objects.filter(pk=sub.pk).update(kind=kind, queued_at=timezone.now() - timedelta(hours=2))
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.mark_queued(Submission.objects.get(pk=sub.pk))
    assert sent == [(task_name, [sub.pk])]
    assert app.amqp.router.route({}, task_name)["queue"].name == queue
    row = Submission.objects.get(pk=sub.pk)  # a retry starts clean, and its message clock restarts
    assert row.status == Status.QUEUED and row.error_category == "" and row.error_message == ""
    assert row.queued_at > timezone.now() - timedelta(minutes=1)


def test_the_job_sends_the_scoring_task_by_default(sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.SCORING.send(7)
    assert sent == [("submissions.tasks.score_submission", [7])]


def test_queueing_a_submission_that_moved_on_sends_nothing(task, sent, django_capture_on_commit_callbacks):
    sub = upload(task)
    stale = Submission.objects.get(pk=sub.pk)
    lifecycle.start_run(sub.pk)
    assert lifecycle.fail_run(Submission.objects.get(pk=sub.pk), ErrorCategory.WORKER_LOST, "lost")
    stale.status = Status.FAILED  # seen failed, but retried by someone else meanwhile
    assert lifecycle.mark_queued(Submission.objects.get(pk=sub.pk))
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.mark_queued(stale) is False
    assert sent == []


# -- the transition function --------------------------------------------------------------------------------

def test_an_illegal_move_names_the_statuses(task):
    sub = upload(task)
    with pytest.raises(IllegalTransition, match=r"^queued -> scored$"):
        lifecycle.transition(sub, Status.SCORED)
    with pytest.raises(IllegalTransition, match=r"^cancelled/rejected -> running$"):
        lifecycle.transition(sub.pk, Status.RUNNING, expect={Status.REJECTED, Status.CANCELLED})
    fresh = Submission(user=make_user("bob"), task=task, test_set=task.current_test_set(), method_name="m")
    with pytest.raises(IllegalTransition, match=r"^a new submission starts as uploaded, not failed/scored$"):
        lifecycle.transition(fresh, Status.QUEUED, expect={Status.SCORED, Status.FAILED})


def test_a_new_submission_is_saved_with_its_fields(task):
    fresh = Submission(user=make_user("bob"), task=task, test_set=task.current_test_set(), method_name="m")
    assert lifecycle.transition(fresh, Status.REJECTED, error_category=ErrorCategory.INVALID_INPUT,
                                error_message="bad file")
    row = Submission.objects.get(pk=fresh.pk)
    assert (row.status, row.error_category, row.error_message) == (Status.REJECTED, "invalid_input", "bad file")


def test_a_claim_records_when_the_run_started(task):
    sub = upload(task)
    before = timezone.now()
    run = lifecycle.start_run(sub.pk)
    assert before <= run.started_at <= timezone.now()
    assert run.lease_expires_at > timezone.now()


# -- re-scores that fail ------------------------------------------------------------------------------------

@pytest.mark.parametrize("end", ["fail", "reject"])
def test_a_failed_rescore_goes_back_to_its_previous_score_and_clears_its_target(rescoring, end):
    if end == "fail":
        assert lifecycle.fail_run(rescoring.run, ErrorCategory.SCORER_ERROR, "scorer broke") is True
    else:
        assert lifecycle.reject_run(rescoring.run, "scorer broke") is True
    row = went_back(rescoring)
    assert row.error_category == "" and row.error_message == ""
    record = last_record(row.pk)
    assert record.test_set_id == rescoring.v2.pk and record.test_set_version == "v2"
    assert record.scorer_version == "" and record.scores == {}
    assert record.reason == "re-scoring on test set v2 failed: scorer broke"


def test_a_run_that_lost_its_lease_says_so_in_the_log(task, caplog):
    first = lifecycle.start_run(upload(task).pk)
    expire_lease(first.pk)
    assert lifecycle.start_run(first.pk).attempts == 2
    with caplog.at_level(logging.WARNING, logger="submissions.lifecycle"):
        assert lifecycle.fail_run(first, ErrorCategory.SCORER_ERROR, "late") is False
    assert [r.getMessage() for r in caplog.records] == [f"submission {first.pk} attempt 1 lost its lease; result discarded"]


def test_a_rescore_attempt_that_lost_its_lease_changes_nothing(rescoring, caplog):
    expire_lease(rescoring.entry.pk)
    second = lifecycle.start_run(rescoring.entry.pk)
    assert second.attempts == rescoring.run.attempts + 1
    records = ScoreRecord.objects.filter(submission_id=rescoring.entry.pk).count()
    with caplog.at_level(logging.WARNING, logger="submissions.lifecycle"):
        assert lifecycle.fail_run(rescoring.run, ErrorCategory.SCORER_ERROR, "late") is False
    assert [r.getMessage() for r in caplog.records] == [
        f"submission {rescoring.entry.pk} attempt {rescoring.run.attempts} lost its lease; result discarded"]
    row = Submission.objects.get(pk=rescoring.entry.pk)
    assert row.status == Status.RUNNING and row.attempts == second.attempts
    assert row.rescore_test_set_id == rescoring.v2.pk
    assert ScoreRecord.objects.filter(submission_id=rescoring.entry.pk).count() == records
    assert lifecycle.fail_run(second, ErrorCategory.SCORER_ERROR, "now") is True  # the owner still can
    went_back(rescoring)


def test_the_reaper_gives_up_on_a_rescore_by_going_back_to_the_previous_score(rescoring, settings):
    settings.SCORING_MAX_ATTEMPTS = 1
    other_task = make_task("expmrc-race")
    upload(other_task, make_user("bob"))  # the newest row, on another board, no re-score
    generations = dict(BoardGeneration.objects.values_list("task_id", "generation"))
    expire_lease(rescoring.entry.pk)
    counts = lifecycle.reap_stuck()
    assert counts == {"scoring_resent": 0, "scoring_failed": 1}
    went_back(rescoring)
    record = last_record(rescoring.entry.pk)
    assert record.test_set_id == rescoring.v2.pk and record.scores == {}
    assert record.reason == ("re-scoring on test set v2 failed: "
                             "Scoring stopped 2 times without finishing (worker lost or timed out).")
    after = dict(BoardGeneration.objects.values_list("task_id", "generation"))
    assert after[rescoring.entry.task_id] == generations.get(rescoring.entry.task_id, 0) + 1  # back on the board
    assert after.get(other_task.pk) == generations.get(other_task.pk)


def test_a_give_up_decided_for_an_earlier_attempt_leaves_the_rescore_running(rescoring):
    seen = Stale(rescoring.entry.pk, Status.RUNNING, rescoring.run.attempts, lifecycle.DEFAULT_TASK)
    expire_lease(rescoring.entry.pk)
    assert lifecycle.start_run(rescoring.entry.pk).attempts == rescoring.run.attempts + 1
    assert lifecycle.SCORING.state.give_up(seen, timezone.now(), "too late") is False
    row = Submission.objects.get(pk=rescoring.entry.pk)
    assert row.status == Status.RUNNING and row.rescore_test_set_id == rescoring.v2.pk


def test_a_failed_rescore_is_not_the_score_the_next_one_is_compared_with(rescoring):
    assert lifecycle.fail_run(rescoring.run, ErrorCategory.SCORER_ERROR, "broke")
    entry = Submission.objects.get(pk=rescoring.entry.pk)
    assert lifecycle.mark_queued(entry, rescore_test_set=rescoring.v2)
    assert score_submission(entry.pk) == Status.SCORED
    assert last_record(entry.pk).reason == "re-scored: test set v1 → v2"


# -- the reaper and its fences ------------------------------------------------------------------------------

def test_the_reaper_gives_up_on_a_plain_run_and_tells_its_owner(task, settings,
                                                                django_capture_on_commit_callbacks):
    settings.SCORING_MAX_ATTEMPTS = 1
    owner = make_user("alice")
    owner.email = "alice@example.org"
    owner.save()
    owner.profile.notify_on_finish = True
    owner.profile.save()
    sub = upload(task, owner)
    lifecycle.start_run(sub.pk)
    expire_lease(sub.pk)
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.reap_stuck(now) == {"scoring_resent": 0, "scoring_failed": 1}
    row = Submission.objects.get(pk=sub.pk)
    assert row.status == Status.FAILED and row.error_category == ErrorCategory.WORKER_LOST
    assert row.error_message == "Scoring stopped 1 time without finishing (worker lost or timed out)."
    assert row.finished_at == now and row.lease_expires_at is None
    assert [message.to for message in mail.outbox] == [["alice@example.org"]]


def test_a_give_up_decided_for_an_earlier_attempt_leaves_the_run_alone(task):
    sub = upload(task)
    lifecycle.start_run(sub.pk)
    seen = Stale(sub.pk, Status.RUNNING, 1, lifecycle.DEFAULT_TASK)
    expire_lease(sub.pk)
    assert lifecycle.start_run(sub.pk).attempts == 2
    assert lifecycle.SCORING.state.give_up(seen, timezone.now(), "too late") is False
    assert Submission.objects.get(pk=sub.pk).status == Status.RUNNING


def test_the_reaper_leaves_a_live_run_on_its_last_attempt_alone(task, settings):
    settings.SCORING_MAX_ATTEMPTS = 1
    sub = upload(task)
    Submission.objects.filter(pk=sub.pk).update(queued_at=timezone.now() - timedelta(hours=2))
    lifecycle.start_run(sub.pk)  # its lease is live
    assert lifecycle.SCORING.state.stale(timezone.now()) == []
    assert lifecycle.reap_stuck() == {"scoring_resent": 0, "scoring_failed": 0}
    assert Submission.objects.get(pk=sub.pk).status == Status.RUNNING


def test_only_expired_runs_and_lost_messages_are_stale(task, settings):
    settings.QUEUE_LEASE_SECONDS = 300
    fresh, lost, dead, live = (upload(task, make_user(name)) for name in ("a", "b", "c", "d"))
    now = timezone.now()
    Submission.objects.filter(pk=fresh.pk).update(queued_at=now - timedelta(seconds=200))
    Submission.objects.filter(pk=lost.pk).update(queued_at=now - timedelta(seconds=400))
    for run in (dead, live):
        lifecycle.start_run(run.pk)
    expire_lease(dead.pk)
    assert sorted(lifecycle.SCORING.state.stale(now), key=lambda job: job.pk) == [
        Stale(lost.pk, Status.QUEUED, 0, lifecycle.DEFAULT_TASK), Stale(dead.pk, Status.RUNNING, 1, lifecycle.DEFAULT_TASK)]


def test_a_queued_message_is_not_sent_again_once_the_row_changed(task, settings):
    """The reaper's list is a snapshot: each re-send checks the row again."""
    settings.QUEUE_LEASE_SECONDS = 300
    now = timezone.now()
    resent, claimed, bystander = (upload(task, make_user(name)) for name in ("a", "b", "c"))
    Submission.objects.filter(pk__in=[resent.pk, claimed.pk, bystander.pk]).update(queued_at=now - timedelta(hours=1))
    seen = {sub.pk: Stale(sub.pk, Status.QUEUED, 0, lifecycle.DEFAULT_TASK) for sub in (resent, claimed)}
    Submission.objects.filter(pk=resent.pk).update(queued_at=now - timedelta(seconds=10))  # sent again meanwhile
    lifecycle.start_run(claimed.pk)  # claimed meanwhile
    assert lifecycle.SCORING.state.requeue(seen[resent.pk], now) is False
    assert lifecycle.SCORING.state.requeue(seen[claimed.pk], now) is False
    assert Submission.objects.get(pk=bystander.pk).queued_at == now - timedelta(hours=1)
    assert lifecycle.SCORING.state.requeue(Stale(bystander.pk, Status.QUEUED, 0, lifecycle.DEFAULT_TASK), now)
    assert Submission.objects.get(pk=bystander.pk).queued_at == now


def test_a_dead_run_is_queued_again_only_as_it_was_seen(task):
    sub = upload(task)
    lifecycle.start_run(sub.pk)
    expire_lease(sub.pk)
    now = timezone.now()
    seen = Stale(sub.pk, Status.RUNNING, 1, lifecycle.DEFAULT_TASK)
    Submission.objects.filter(pk=sub.pk).update(lease_expires_at=now + timedelta(minutes=1))  # it beat meanwhile
    assert lifecycle.SCORING.state.requeue(seen, now) is False
    Submission.objects.filter(pk=sub.pk).update(attempts=2, lease_expires_at=now - EXPIRED)  # another attempt's
    assert lifecycle.SCORING.state.requeue(seen, now) is False
    assert Submission.objects.get(pk=sub.pk).status == Status.RUNNING
    Submission.objects.filter(pk=sub.pk).update(attempts=1)
    assert lifecycle.SCORING.state.requeue(seen, now) is True
    row = Submission.objects.get(pk=sub.pk)
    assert row.status == Status.QUEUED and row.queued_at == now and row.lease_expires_at is None


def test_a_heartbeat_renews_only_the_lease_of_the_attempt_that_owns_the_run(task, settings):
    settings.SCORING_LEASE_SECONDS = 120
    mine, other = upload(task, make_user("a")), upload(task, make_user("b"))
    first = lifecycle.start_run(mine.pk)
    theirs = lifecycle.start_run(other.pk)  # running too, with the same attempt number
    Submission.objects.filter(pk=mine.pk).update(lease_expires_at=timezone.now() + timedelta(seconds=5))
    assert lifecycle.heartbeat(first) is True
    assert Submission.objects.get(pk=mine.pk).lease_expires_at > timezone.now() + timedelta(seconds=60)
    expire_lease(mine.pk)
    assert lifecycle.start_run(mine.pk).attempts == 2
    assert lifecycle.heartbeat(first) is False  # taken over: the old attempt renews nothing
    assert lifecycle.store_scores(theirs, scores={"overall_f1": 1.0}, ci={}, item_scores=[], total=1, unanswered=0, scorer_version="t")
    finished = Submission.objects.get(pk=other.pk)
    assert lifecycle.heartbeat(finished) is False  # not running any more


def test_the_lease_renewal_beats_at_the_interval_asked_for_and_is_named_after_the_run(task, settings):
    settings.SCORING_LEASE_SECONDS = 90
    run = lifecycle.start_run(upload(task).pk)
    assert lifecycle.lease_renewal(run, 0.25).interval == 0.25
    renewal = lifecycle.lease_renewal(run)
    assert renewal.interval == 30
    assert renewal.thread.name == f"lease-{run.pk}"  # the name its warnings carry


# -- what a stored score and a rejection write --------------------------------------------------------------

def test_a_stored_score_writes_every_column_and_its_history(task):
    sub = upload(task)
    run = lifecycle.start_run(sub.pk)
    Submission.objects.filter(pk=sub.pk).update(error_category="scorer_error", error_message="old")
    before = timezone.now()
    assert lifecycle.store_scores(run, scores={"overall_f1": 0.5}, ci={"overall_f1": [0.4, 0.6]},
                                  item_scores=[[0.5]], total=3, unanswered=1, scorer_version="t",
                                  details={"note": "n"})
    row = Submission.objects.get(pk=sub.pk)
    assert (row.status, row.total, row.unanswered, row.details) == (Status.SCORED, 3, 1, {"note": "n"})
    assert row.error_category == "" and row.error_message == ""
    assert before <= row.finished_at <= timezone.now()
    record = row.score_history.get()
    assert (record.scores, record.ci, record.total, record.unanswered) == (
        {"overall_f1": 0.5}, {"overall_f1": [0.4, 0.6]}, 3, 1)
    assert record.reason == "first score"


def test_a_rescore_keeps_the_date_of_the_entry(rescoring):
    assert lifecycle.store_scores(rescoring.run, scores={"overall_f1": 0.5}, ci={}, item_scores=[], total=3,
                                  unanswered=0, scorer_version="t")
    row = Submission.objects.get(pk=rescoring.entry.pk)
    assert row.finished_at == rescoring.entry.finished_at and row.test_set_id == rescoring.v2.pk


def test_a_rejected_run_says_why(task):
    run = lifecycle.start_run(upload(task).pk)
    assert lifecycle.reject_run(run, "not a prediction file") is True
    row = Submission.objects.get(pk=run.pk)
    assert (row.status, row.error_category, row.error_message) == (
        Status.REJECTED, ErrorCategory.INVALID_INPUT, "not a prediction file")


def test_the_email_of_a_finished_run_goes_to_its_own_owner(task, django_capture_on_commit_callbacks):
    owners = []
    for name in ("alice", "bob"):
        user = make_user(name)
        user.email = f"{name}@example.org"
        user.save()
        user.profile.notify_on_finish = True
        user.profile.save()
        owners.append(user)
    alices = upload(task, owners[0])
    upload(task, owners[1])  # the newest row
    with django_capture_on_commit_callbacks(execute=True):
        assert score_submission(alices.pk) == Status.SCORED
    assert [message.to for message in mail.outbox] == [["alice@example.org"]]


@pytest.mark.parametrize(("previous", "test_set", "scorer", "reason"), [
    (("v1", 1, "s1"), ("v2", 2, ""), "s1", "re-scored: test set v1 → v2"),
    (("v1", 1, "s1"), ("v2", 2, "gold fixed"), "s2", "re-scored: test set v1 → v2: gold fixed; scorer s1 → s2"),
    (("v1", 1, "s1"), ("v1", 1, "note"), "s2", "re-scored: scorer s1 → s2"),
    (("v1", 1, "s1"), ("v1", 1, ""), "s1", "re-scored (same test set and scorer)"),
])
def test_the_history_says_what_a_new_score_was_computed_for(previous, test_set, scorer, reason):
    record = SimpleNamespace(test_set_version=previous[0], test_set_id=previous[1], scorer_version=previous[2])
    target = SimpleNamespace(version=test_set[0], pk=test_set[1], change_note=test_set[2])
    assert lifecycle.score_change_reason(record, target, scorer) == reason
    assert lifecycle.score_change_reason(None, target, scorer) == "first score"


def test_a_note_joins_the_history_reason_whole_within_its_300_characters(task):
    run = lifecycle.start_run(upload(task).pk)
    assert lifecycle.store_scores(run, scores={"overall_f1": 0.5}, ci={}, item_scores=[], total=3, unanswered=0,
                                  scorer_version="t", note="2 predictions ignored")
    assert last_record(run.pk).reason == "first score; 2 predictions ignored"
    other = lifecycle.start_run(upload(task, make_user("bob")).pk)
    long_note = "n" * 295
    assert lifecycle.store_scores(other, scores={"overall_f1": 0.5}, ci={}, item_scores=[], total=3, unanswered=0,
                                  scorer_version="t", note=long_note)
    reason = last_record(other.pk).reason
    assert reason == "fi…; " + long_note and len(reason) == 300
