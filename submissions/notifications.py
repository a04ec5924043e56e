""""Your run finished" emails, for researchers who asked for them in their account settings.

The email says what the owner's entry page says (scores with their intervals, or the error and
what to do about it) and links to it; nothing else about the test set, so no gold can reach a
mailbox. Sending is best effort: a mail server that is down is logged and never fails a run.
"""
import logging

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse

from accounts.models import profile_of
from core.templatetags.expbench import score

from .models import Status, Submission

logger = logging.getLogger(__name__)

# A cancelled run was stopped by its owner, who needs no email about it.
NOTIFIED_STATUSES = {Status.SCORED, Status.FAILED, Status.REJECTED}


def notify_run_finished(submission: Submission) -> bool:
    """Email the owner that ``submission`` finished, if they opted in and have an address.
    Returns whether an email was sent."""
    user = submission.user
    if submission.status not in NOTIFIED_STATUSES or not user.email or not profile_of(user).notify_on_finish:
        return False
    subject, body = run_finished_message(submission)
    try:
        send_mail(subject, body, None, [user.email])
    except Exception:  # any transport error (refused, timeout, auth): the run itself is fine
        logger.exception("could not send the run-finished email for submission #%s", submission.pk)
        return False
    return True


def run_finished_message(submission: Submission) -> tuple[str, str]:
    """(subject, body) in plain text."""
    task = submission.task
    where = f"{task.benchmark.name} · {task.name}"
    status = submission.get_status_display()
    subject = f"{where}: #{submission.pk} {submission.method_name} {status.lower()}"
    lines = [f"Hello {user_name(submission)},", "",
             f"your submission #{submission.pk} \"{submission.method_name}\" to {where} has finished: {status}.", ""]
    if submission.status == Status.SCORED:
        decimals = task.metric_decimals
        for key, label in task.metric_columns:
            value = submission.scores.get(key)
            interval = submission.ci.get(key)
            ci = f" (95% CI {score(interval[0], decimals)}–{score(interval[1], decimals)})" if interval else ""
            lines.append(f"  {label}: {score(value, decimals)}{ci}")
        lines += ["", f"{submission.total} {task.item_noun} scored.",
                  "It is shown on the public leaderboard." if submission.public
                  else "It is private: only you see it until you make it public on its page."]
    else:
        lines += [f"{submission.get_error_category_display() or 'Error'}: {submission.error_message}"]
        if submission.error_help:
            lines += ["", submission.error_help]
    lines += ["", f"The entry: {settings.SITE_URL}{submission.get_absolute_url()}", "",
              "You get this email because you asked for one when a run finishes; turn it off in your settings:",
              f"{settings.SITE_URL}{reverse('account-settings')}"]
    return subject, "\n".join(lines) + "\n"


def user_name(submission: Submission) -> str:
    return submission.user.get_full_name() or submission.user.get_username()
