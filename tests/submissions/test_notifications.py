""""Your run finished" emails (submissions/notifications.py): one email to an owner who opted
in and has an address, with the scores or the error and the entry's link; never any gold."""
import pytest
from django.core import mail

from benchmark.models import Task
from submissions.intake import submit_predictions
from submissions.models import ErrorCategory, Status, Submission
from submissions.notifications import notify_run_finished
from submissions.tasks import score_submission
from tests.factories import (
    fixture_gold,
    gold_answers_and_evidence,
    make_task,
    make_user,
    perfect_predictions,
    upload_file,
)

pytestmark = pytest.mark.django_db


def owner(notify=True, email="alice@example.org"):
    user = make_user("alice")
    user.email = email
    user.save()
    user.profile.notify_on_finish = notify
    user.profile.save()
    return user


def run(user, slug="expmrc-squad", predictions=None):
    task = Task.objects.filter(slug=slug).first() or make_task(slug)
    sub = submit_predictions(user=user, task=task, method_name="Lantern QA", public=False, uploaded_file=upload_file(
        predictions if predictions is not None else perfect_predictions(fixture_gold(slug))))
    score_submission(sub.pk)
    return Submission.objects.select_related("task__benchmark", "user__profile").get(pk=sub.pk)


@pytest.mark.parametrize("slug", ["expmrc-squad", "expmrc-race"])
def test_an_opted_in_owner_gets_one_email_with_the_scores_and_no_gold(slug, settings):
    settings.SITE_URL = "https://bench.example.org"
    sub = run(owner(), slug)
    assert sub.status == Status.SCORED and mail.outbox == []  # nothing sends it but the caller

    assert notify_run_finished(sub) is True
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@example.org"]
    assert sub.task.name in message.subject and "scored" in message.subject
    assert f"https://bench.example.org/submissions/{sub.pk}/" in message.body
    low, high = sub.ci["overall_f1"]
    assert f"Overall F1: 100.000 (95% CI {low:.3f}–{high:.3f})" in message.body
    assert "It is private" in message.body
    # The file quoted the gold exactly: no answer or evidence text may come back by email.
    leaked = [text for text in gold_answers_and_evidence(fixture_gold(slug))
              if len(text) > 3 and (text in message.body or text in message.subject)]
    assert leaked == []


def test_a_failed_run_sends_its_error_and_what_to_do(settings):
    sub = run(owner())
    Submission.objects.filter(pk=sub.pk).update(status=Status.FAILED, error_category=ErrorCategory.SCORER_ERROR,
                                                error_message="scorer crashed on item 17", scores={})
    sub.refresh_from_db()
    assert notify_run_finished(sub) is True
    body = mail.outbox[0].body
    assert "Internal scoring error: scorer crashed on item 17" in body and "our fault" in body
    assert "failed" in mail.outbox[0].subject and "Overall F1" not in body


@pytest.mark.parametrize("notify, email", [(False, "alice@example.org"), (True, "")])
def test_no_email_without_the_opt_in_or_an_address(notify, email):
    sub = run(owner(notify=notify, email=email))
    assert notify_run_finished(sub) is False
    assert mail.outbox == []


def test_unfinished_and_cancelled_runs_send_nothing():
    user = owner()
    task = make_task("expmrc-squad")
    sub = submit_predictions(user=user, task=task, method_name="Queued",
                             uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    assert sub.status == Status.QUEUED and notify_run_finished(sub) is False
    sub.status = Status.CANCELLED
    assert notify_run_finished(sub) is False
    assert mail.outbox == []


def test_a_mail_server_that_is_down_never_fails_the_caller(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens
    assert notify_run_finished(run(owner())) is False


def test_the_worker_sends_it_once_the_result_is_committed_and_a_rescore_sends_none(django_capture_on_commit_callbacks):
    from submissions import rescoring

    with django_capture_on_commit_callbacks(execute=True):
        sub = run(owner())
    assert sub.status == Status.SCORED and len(mail.outbox) == 1
    with django_capture_on_commit_callbacks(execute=True):
        rescoring.queue_all(rescoring.plan([sub.task], [sub.pk], force=True))
        score_submission(sub.pk)
    assert Submission.objects.get(pk=sub.pk).score_history.count() == 2
    assert len(mail.outbox) == 1  # the maintainers' re-score emails nobody
