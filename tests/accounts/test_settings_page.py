"""The account settings page (accounts/views.py): email, team, the default visibility of new
entries (private unless changed), run notifications; and that uploads follow the default."""
import html

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Profile
from submissions.models import Submission
from tests.factories import fixture_gold, logged_in, make_task, make_user, perfect_predictions, token_for, upload_file

pytestmark = pytest.mark.django_db

SETTINGS_URL = "/accounts/settings/"


@pytest.fixture
def alice():
    return make_user("alice", team="Lighthouse Lab", default_public=False)  # as a new account


def text(response):
    return html.unescape(response.content.decode())


def public_checkbox(page_html: str) -> str:
    start = page_html.index('name="public"')
    return page_html[page_html.rindex("<input", 0, start):page_html.index(">", start)]


def test_settings_need_a_login_and_are_linked_from_every_page(alice):
    response = Client().get(SETTINGS_URL)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert f'href="{SETTINGS_URL}"' in logged_in(alice).get("/").content.decode()


def test_a_new_account_is_private_and_silent_by_default():
    response = Client().post("/accounts/signup/", {"username": "carol", "email": "carol@example.org", "team": "",
                                                   "password1": "kettle-drum-4471", "password2": "kettle-drum-4471"})
    assert response.status_code == 302
    profile = Profile.objects.get(user__username="carol")
    assert (profile.default_public, profile.notify_on_finish) == (False, False)


def test_saving_the_settings_changes_email_team_and_preferences(alice):
    client = logged_in(alice)
    page = client.get(SETTINGS_URL)
    assert page.status_code == 200 and 'value="Lighthouse Lab"' in text(page)
    response = client.post(SETTINGS_URL, {"email": "alice@lab.org", "team": "  Harbour NLP ",
                                          "default_public": "on", "notify_on_finish": "on"})
    assert response.status_code == 302 and response["Location"] == SETTINGS_URL
    alice.refresh_from_db()
    profile = Profile.objects.get(user=alice)
    assert alice.email == "alice@lab.org"
    assert (profile.team, profile.default_public, profile.notify_on_finish) == ("Harbour NLP", True, True)
    assert "Settings saved." in text(client.get(SETTINGS_URL))
    # Unticking is saved too (an unticked checkbox is not sent at all).
    client.post(SETTINGS_URL, {"email": "alice@lab.org", "team": "Harbour NLP"})
    profile.refresh_from_db()
    assert (profile.default_public, profile.notify_on_finish) == (False, False)


def test_notifications_without_an_address_and_bad_addresses_are_400s(alice):
    client = logged_in(alice)
    response = client.post(SETTINGS_URL, {"email": "", "team": "X", "notify_on_finish": "on"})
    assert response.status_code == 400 and "Add an email address to receive run notifications." in text(response)
    response = client.post(SETTINGS_URL, {"email": "alice at lab", "team": "X"})
    assert response.status_code == 400 and "valid email" in text(response)
    profile = Profile.objects.get(user=alice)
    assert (profile.team, profile.notify_on_finish) == ("Lighthouse Lab", False)  # nothing saved


def test_an_account_without_a_profile_gets_one_on_save():
    admin = User.objects.create_superuser("root", "root@example.org", "pw")  # createsuperuser makes no profile
    client = logged_in(admin)
    assert client.get(SETTINGS_URL).status_code == 200
    assert client.post(SETTINGS_URL, {"email": "root@example.org", "team": "Maintainers"}).status_code == 302
    assert Profile.objects.get(user=admin).team == "Maintainers"


def test_the_upload_checkbox_starts_from_the_preference(alice):
    make_task("expmrc-squad")
    client = logged_in(alice)
    assert "checked" not in public_checkbox(client.get("/tasks/expmrc-squad/submit/").content.decode())
    Profile.objects.filter(user=alice).update(default_public=True)
    assert "checked" in public_checkbox(client.get("/tasks/expmrc-squad/submit/").content.decode())


def test_the_api_default_follows_the_preference_and_an_explicit_value_wins(alice):
    make_task("expmrc-squad")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(alice)}")
    predictions = perfect_predictions(fixture_gold("expmrc-squad"))

    def upload(**fields):
        response = api.post("/api/tasks/expmrc-squad/submissions/",
                            {"file": upload_file(predictions), "method_name": "M", **fields}, format="multipart")
        assert response.status_code == 201, response.content
        return Submission.objects.get(pk=response.json()["id"]).public

    assert upload() is False
    assert upload(public="true") is True
    Profile.objects.filter(user=alice).update(default_public=True)
    assert upload() is True
    assert upload(public="false") is False
