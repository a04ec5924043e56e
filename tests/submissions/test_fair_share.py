"""Fair shares on the sandbox queue (lifecycle.gives_way): a user's second run gives way to
another user's first, whether the first is still running or has just finished; the least recently
served user never gives way, so runs cannot keep deferring each other. The run that gives way
stays queued and its message comes again shortly. (Through a real worker:
tests/integration/test_sandbox_queue.py.)"""
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from core.jobs import Heartbeat
from submissions import code_runs, intake, lifecycle
from submissions.models import Status, Submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def task():
    return make_task("expmrc-squad")


def queued_code_run(task, user):
    """A queued run of the sandbox's kind (a prediction file relabelled: the fairness rule reads
    only the kind, the user and the run's times)."""
    sub = intake.submit_predictions(user=user, task=task, method_name="m",
                                    uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    Submission.objects.filter(pk=sub.pk).update(kind=Submission.CODE)
    return sub.pk


def started(pk, minutes_ago=0):
    """Claimed, as a worker's start_run would, ``minutes_ago`` minutes ago."""
    assert lifecycle.start_run(pk) is not None
    Submission.objects.filter(pk=pk).update(started_at=timezone.now() - timedelta(minutes=minutes_ago))


def test_a_users_second_run_gives_way_to_another_users_first_while_the_first_runs(task):
    alice, bob = make_user("alice"), make_user("bob")
    first = queued_code_run(task, alice)
    started(first)
    second = queued_code_run(task, alice)
    assert not lifecycle.gives_way(second)  # nobody else waits: a free slot takes it
    bobs = queued_code_run(task, bob)
    assert lifecycle.gives_way(second)
    assert not lifecycle.gives_way(bobs)  # never served: never gives way


def test_it_gives_way_after_the_first_finished_too(task):
    """One slot: Alice's first run is over when her second comes up; Bob, queued behind it, was
    served less recently (never), so he goes first."""
    alice, bob = make_user("alice"), make_user("bob")
    first = queued_code_run(task, alice)
    started(first)
    lifecycle.fail_run(lifecycle.start_run(first) or Submission.objects.get(pk=first), "code_failed", "x")
    second, bobs = queued_code_run(task, alice), queued_code_run(task, bob)
    assert lifecycle.gives_way(second) and not lifecycle.gives_way(bobs)


def test_the_least_recently_served_user_goes_first_and_nobody_loops(task):
    alice, bob = make_user("alice"), make_user("bob")
    started(queued_code_run(task, alice), minutes_ago=5)
    started(queued_code_run(task, bob), minutes_ago=1)
    alices, bobs = queued_code_run(task, alice), queued_code_run(task, bob)
    assert not lifecycle.gives_way(alices) and lifecycle.gives_way(bobs)


def test_prediction_files_never_give_way(task):
    alice, bob = make_user("alice"), make_user("bob")
    first = intake.submit_predictions(user=alice, task=task, method_name="m",
                                      uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    assert lifecycle.start_run(first.pk) is not None
    second = intake.submit_predictions(user=alice, task=task, method_name="m",
                                       uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    queued_code_run(task, bob)
    assert not lifecycle.gives_way(second.pk)


def test_a_run_that_gives_way_stays_queued_and_comes_again(task, monkeypatch, django_capture_on_commit_callbacks):
    alice, bob = make_user("alice"), make_user("bob")
    started(queued_code_run(task, alice))
    second = queued_code_run(task, alice)
    queued_code_run(task, bob)
    Submission.objects.filter(pk=second).update(queued_at=timezone.now() - timedelta(minutes=10))
    sent = []
    monkeypatch.setattr(current_app, "send_task", lambda name, args, countdown=None: sent.append((name, args, countdown)))
    with django_capture_on_commit_callbacks(execute=True):
        assert code_runs.claim_and_run(second) == "gave way"
    assert sent == [("submissions.tasks.run_code_submission", [second], lifecycle.FAIR_SHARE_RETRY_SECONDS)]
    row = Submission.objects.get(pk=second)
    assert row.status == Status.QUEUED and row.attempts == 0
    assert row.queued_at > timezone.now() - timedelta(minutes=1)  # the reaper does not take it for lost
    assert lifecycle.reap_stuck()["scoring_resent"] == 0


def test_a_heartbeat_beats_by_time_and_says_when_the_run_is_lost():
    beats = []

    def beat():
        beats.append(1)
        return len(beats) < 3

    with Heartbeat(beat, 0.05) as heartbeat:
        assert heartbeat.lost.wait(10)
    assert len(beats) == 3


def prediction_file(task, user):
    return intake.submit_predictions(user=user, task=task, method_name="m",
                                     uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad")))).pk


def test_only_queued_runs_of_the_sandbox_kinds_ever_give_way(task):
    alice, bob = make_user("alice"), make_user("bob")
    started(prediction_file(task, alice))
    files = prediction_file(task, alice)
    prediction_file(task, bob)  # waiting, never served
    assert not lifecycle.gives_way(files)  # files are scored in turn, whoever sent them
    running = queued_code_run(task, alice)
    started(running)
    queued_code_run(task, bob)
    assert not lifecycle.gives_way(running)  # already running: nothing to give


def test_only_other_users_waiting_for_the_same_kind_count(task):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    first = queued_code_run(task, bob)
    started(first, minutes_ago=10)
    lifecycle.fail_run(Submission.objects.get(pk=first), "code_failed", "x")  # Bob was served, and waits no more
    started(queued_code_run(task, alice), minutes_ago=1)
    second = queued_code_run(task, alice)
    prediction_file(task, carol)  # Carol waits for a file, not for the sandbox
    assert not lifecycle.gives_way(second)


def test_being_served_counts_per_kind(task):
    alice, bob = make_user("alice"), make_user("bob")
    started(queued_code_run(task, alice), minutes_ago=10)
    started(prediction_file(task, bob), minutes_ago=1)  # Bob's file ran lately; his code never did
    second, bobs = queued_code_run(task, alice), queued_code_run(task, bob)
    assert lifecycle.gives_way(second) and not lifecycle.gives_way(bobs)


def test_users_served_at_the_same_moment_do_not_give_way_to_each_other(task):
    alice, bob = make_user("alice"), make_user("bob")
    firsts = [queued_code_run(task, alice), queued_code_run(task, bob)]
    for pk in firsts:
        started(pk)
    moment = timezone.now() - timedelta(minutes=3)
    Submission.objects.filter(pk__in=firsts).update(started_at=moment)
    alices, bobs = queued_code_run(task, alice), queued_code_run(task, bob)
    assert not lifecycle.gives_way(alices) and not lifecycle.gives_way(bobs)


def test_giving_way_touches_only_its_own_run(task, monkeypatch, django_capture_on_commit_callbacks):
    alice, bob = make_user("alice"), make_user("bob")
    code = queued_code_run(task, alice)
    files = prediction_file(task, bob)  # the newest queued row, of another kind
    long_ago = timezone.now() - timedelta(minutes=10)
    Submission.objects.filter(pk__in=[code, files]).update(queued_at=long_ago)
    sent = []
    monkeypatch.setattr(current_app, "send_task", lambda name, args, countdown=None: sent.append((name, args)))
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.give_way(code)
    assert sent == [("submissions.tasks.run_code_submission", [code])]
    assert Submission.objects.get(pk=files).queued_at == long_ago
    started(code)
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.give_way(code) is False  # no longer queued: nothing is sent
    assert len(sent) == 1
