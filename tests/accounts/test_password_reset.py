"""Password reset by email (Django's flow, accounts/urls.py) and where email goes
(config/settings.py: console by default, SMTP from the environment)."""
import re

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from config.settings import email_from_env
from tests.factories import make_user

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "lantern-harbour-917"


@pytest.fixture
def alice():
    user = make_user("alice")
    user.email = "alice@example.org"
    user.save()
    return user


def reset_link(message) -> str:
    # The link names SITE_URL, whatever Host the request came with (tests/config/test_hosts.py).
    found = re.findall(re.escape(settings.SITE_URL) + r"(/accounts/password/reset/[^\s]+/)", message.body)
    assert len(found) == 1, message.body
    return found[0]


def test_the_reset_email_arrives_and_its_link_sets_a_new_password(alice):
    client = Client()
    assert "/accounts/password/reset/" in client.get("/accounts/login/").content.decode()
    assert client.get("/accounts/password/reset/").status_code == 200

    response = client.post("/accounts/password/reset/", {"email": "alice@example.org"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password/reset/sent/"
    assert client.get(response["Location"]).status_code == 200
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@example.org"] and message.subject == "Reset your ExpBench password"
    assert "alice" in message.body

    # The emailed link redirects to a token-free address (Django keeps the token in the session).
    form_page = client.get(reset_link(message), follow=True)
    assert form_page.status_code == 200 and "Choose a new password" in form_page.content.decode()
    set_url = form_page.redirect_chain[-1][0]
    mismatch = client.post(set_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD + "x"})
    assert mismatch.status_code == 400 and "field-error" in mismatch.content.decode()
    done = client.post(set_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert done.status_code == 302 and done["Location"] == "/accounts/password/reset/done/"
    assert client.get(done["Location"]).status_code == 200

    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD) and not alice.check_password("correct-horse-42")
    assert Client().login(username="alice", password=NEW_PASSWORD)
    # The link works once.
    again = Client().get(reset_link(message), follow=True)
    assert "This link no longer works" in again.content.decode()


def test_an_unknown_address_gets_the_same_answer_and_no_email(alice):
    response = Client().post("/accounts/password/reset/", {"email": "nobody@example.org"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password/reset/sent/"
    assert mail.outbox == []


def test_a_malformed_address_is_a_400_with_the_reason(alice):
    response = Client().post("/accounts/password/reset/", {"email": "not an address"})
    assert response.status_code == 400 and "valid email" in response.content.decode()
    assert mail.outbox == []


def test_reset_requests_spend_the_login_budget(alice, settings):
    settings.LOGIN_RATE = "2/min"
    client = Client()
    answers = [client.post("/accounts/password/reset/", {"email": "alice@example.org"}) for _ in range(3)]
    assert [a.status_code for a in answers] == [302, 302, 429]
    assert "Too many attempts" in answers[-1].content.decode() and int(answers[-1]["Retry-After"]) >= 1
    assert len(mail.outbox) == 2


def test_a_logged_in_user_changes_the_password_with_the_old_one(alice):
    client = Client()
    client.force_login(alice)
    wrong = client.post("/accounts/password/change/", {
        "old_password": "not-it", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert wrong.status_code == 400
    right = client.post("/accounts/password/change/", {
        "old_password": "correct-horse-42", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert right.status_code == 302
    assert User.objects.get(pk=alice.pk).check_password(NEW_PASSWORD)


def test_email_goes_to_the_console_unless_smtp_is_configured():
    assert email_from_env({})["EMAIL_BACKEND"].endswith("console.EmailBackend")
    from_url = email_from_env({"EMAIL_URL": "smtp+tls://bench%40lab.org:p%2Fss@mail.lab.org"})
    assert from_url == {"EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend", "EMAIL_HOST": "mail.lab.org",
                        "EMAIL_PORT": 587, "EMAIL_HOST_USER": "bench@lab.org", "EMAIL_HOST_PASSWORD": "p/ss",
                        "EMAIL_USE_TLS": True, "EMAIL_USE_SSL": False}
    assert email_from_env({"EMAIL_URL": "smtps://mail.lab.org"})["EMAIL_PORT"] == 465
    from_parts = email_from_env({"EMAIL_HOST": "mail.lab.org", "EMAIL_PORT": "2525", "EMAIL_HOST_USER": "bench",
                                 "EMAIL_HOST_PASSWORD": "secret", "EMAIL_USE_TLS": "true"})
    assert (from_parts["EMAIL_HOST"], from_parts["EMAIL_PORT"], from_parts["EMAIL_USE_TLS"]) == ("mail.lab.org", 2525, True)
    with pytest.raises(ImproperlyConfigured, match="EMAIL_URL"):
        email_from_env({"EMAIL_URL": "http://mail.lab.org"})
