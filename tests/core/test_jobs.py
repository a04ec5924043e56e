"""The one background-job protocol (core.jobs), on both kinds of stored state: columns of a row
(a submission's diagnostics columns) and a part of a JSON column (a test set's cue discovery)."""
from datetime import timedelta

import pytest
from celery import current_app
from celery.signals import task_prerun
from django.db.models import Q
from django.utils import timezone

from benchmark.models import TestSet as StoredTestSet
from core.jobs import COALESCED_TASKS, ColumnState, Job, JobStatus, JsonPartState, _Named, send_after_commit, stopped
from submissions.intake import submit_predictions
from submissions.models import Status, Submission
from submissions.runs import claim_and_score
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db

DIAGNOSTICS_STATE = ColumnState(Submission, status="diagnostics_status", beat="diagnostics_updated_at",
                                attempts="diagnostics_attempts", scope=Q(status=Status.SCORED),
                                on_give_up=lambda note: {"diagnostics": {"error": note}})


@pytest.fixture
def scored():
    task = make_task("expmrc-squad")
    sub = submit_predictions(user=make_user(), task=task, method_name="m",
                             uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    assert claim_and_score(sub.pk) == Status.SCORED
    return Submission.objects.get(pk=sub.pk)


@pytest.fixture
def test_set():
    return StoredTestSet.objects.get(pk=make_task("expmrc-race").current_test_set().pk)


def later(seconds):
    return timezone.now() + timedelta(seconds=seconds)


@pytest.mark.parametrize("kind", ["columns", "json part"])
def test_a_job_is_claimed_once_and_only_its_owner_may_beat_and_finish(kind, scored, test_set):
    state, pk = (DIAGNOSTICS_STATE, scored.pk) if kind == "columns" else (JsonPartState(StoredTestSet, "icq"), test_set.pk)
    state.schedule(pk)
    first = state.claim(pk)
    assert first == 1 and state.claim(pk) is None  # a duplicate message finds nothing to claim
    assert state.heartbeat(pk, first)
    assert not state.heartbeat(pk, first + 1) and not state.finish(pk, first + 1, JobStatus.DONE)
    assert state.finish(pk, first, JobStatus.DONE)
    assert not state.finish(pk, first, JobStatus.FAILED)  # finished once, stays finished


@pytest.mark.parametrize("kind", ["columns", "json part"])
def test_the_reaper_resends_a_dead_run_then_gives_up_after_the_attempt_limit(kind, scored, test_set, settings,
                                                                              django_capture_on_commit_callbacks):
    settings.SCORING_MAX_ATTEMPTS = 2
    state, pk = (DIAGNOSTICS_STATE, scored.pk) if kind == "columns" else (JsonPartState(StoredTestSet, "icq"), test_set.pk)
    job = Job(key="k", task_name="benchmark.tasks.discover_cues", state=state, what="The job", advice="say why")
    state.schedule(pk)
    assert job.reap() == {"k_resent": 0, "k_failed": 0}  # fresh: left alone
    state.claim(pk)  # a worker takes it ... and dies
    assert job.reap() == {"k_resent": 0, "k_failed": 0}  # its heartbeat is still live
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert job.reap(later(settings.BACKGROUND_LEASE_SECONDS + 1)) == {"k_resent": 1, "k_failed": 0}
    assert len(sent) == 1
    assert state.claim(pk) == 2  # the second attempt ... dies too
    assert job.reap(later(settings.BACKGROUND_LEASE_SECONDS + 1)) == {"k_resent": 0, "k_failed": 1}
    note = "The job stopped 2 times without finishing (worker lost or timed out); say why."
    if kind == "columns":
        row = Submission.objects.get(pk=pk)
        assert row.diagnostics_status == JobStatus.FAILED and row.diagnostics == {"error": note}
        assert row.status == Status.SCORED  # the score itself is never touched
    else:
        part = StoredTestSet.objects.get(pk=pk).diagnostics["icq"]
        assert part["status"] == JobStatus.FAILED and part["note"] == note


def test_a_queued_job_whose_message_was_lost_is_sent_again(scored, settings, django_capture_on_commit_callbacks):
    job = Job(key="d", task_name="submissions.tasks.compute_diagnostics", state=DIAGNOSTICS_STATE, what="x")
    DIAGNOSTICS_STATE.schedule(scored.pk)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert job.reap(later(settings.QUEUE_LEASE_SECONDS + 1))["d_resent"] == 1
    assert len(sent) == 1 and Submission.objects.get(pk=scored.pk).diagnostics_status == JobStatus.QUEUED


def test_writes_to_two_parts_of_one_row_never_drop_each_other(test_set):
    cues, skills = JsonPartState(StoredTestSet, "icq"), JsonPartState(StoredTestSet, "skills_build")
    cues.schedule(test_set.pk, cues=[])
    skills.schedule(test_set.pk, done=0)
    skills.write(test_set.pk, done=3)
    stored = StoredTestSet.objects.get(pk=test_set.pk).diagnostics
    assert stored["icq"]["status"] == JobStatus.QUEUED and stored["skills_build"]["done"] == 3


def test_a_task_is_sent_only_when_the_transaction_commits(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as sent:
        send_after_commit("benchmark.tasks.discover_cues", 1)
    assert len(sent) == 1


def test_stopped_counts_in_words():
    assert stopped(1) == "stopped 1 time without finishing (worker lost or timed out)"
    assert stopped(3).startswith("stopped 3 times")


def test_repeated_board_rebuilds_coalesce_until_the_waiting_one_starts(monkeypatch, django_capture_on_commit_callbacks):
    """A rebuild still waiting reads the boards' latest generation when it runs: sending it again
    with the same tasks sends nothing, until it starts (Celery's task_prerun)."""
    task = "leaderboards.tasks.rebuild_boards"
    assert task in COALESCED_TASKS
    sent = []
    monkeypatch.setattr(current_app, "send_task", lambda name, args, countdown=None: sent.append((name, args)))
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            send_after_commit(task, [1, 2])
        send_after_commit(task, [3])  # other boards: their own message
        send_after_commit("benchmark.tasks.discover_cues", 7)
        send_after_commit("benchmark.tasks.discover_cues", 7)  # not coalesced: each is sent
    assert sent == [(task, [[1, 2]]), (task, [[3]]), ("benchmark.tasks.discover_cues", [7]),
                    ("benchmark.tasks.discover_cues", [7])]
    rebuild = _Named(task)  # the registered task as task_prerun passes it: only its name is read
    task_prerun.send(sender=rebuild, task_id="x", task=rebuild, args=([1, 2],))
    with django_capture_on_commit_callbacks(execute=True):
        send_after_commit(task, [1, 2])  # a change after the rebuild started: sent again
        send_after_commit(task, [1, 2])
    assert sent[4:] == [(task, [[1, 2]])]
