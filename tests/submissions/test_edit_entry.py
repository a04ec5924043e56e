"""The owner edits an entry on the web (/submissions/<id>/edit/) and through the API (PATCH):
names, system, description, link, team, visibility. Renames of scored public entries leave a
trail that maintainers see; the system name groups entries on the average board."""
import html

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Profile
from benchmark.models import Task
from submissions.intake import submit_predictions
from submissions.models import NameChange, Status, Submission
from submissions.tasks import score_submission
from tests.factories import (
    api_for,
    fixture_gold,
    logged_in,
    make_task,
    make_user,
    perfect_predictions,
    upload_file,
)

pytestmark = pytest.mark.django_db

SLUGS = ["expmrc-squad", "expmrc-cmrc2018", "expmrc-race", "expmrc-c3"]


@pytest.fixture
def alice():
    return make_user("alice", team="Lighthouse Lab")


@pytest.fixture
def bob():
    return make_user("bob", team="Bob Co")


def entry(user, slug="expmrc-squad", method="Lantern QA", public=True, score=True):
    task = Task.objects.filter(slug=slug).first() or make_task(slug)
    sub = submit_predictions(user=user, task=task, uploaded_file=upload_file(perfect_predictions(fixture_gold(slug))),
                             method_name=method, public=public)
    if score:
        assert score_submission(sub.pk) == Status.SCORED
    return Submission.objects.get(pk=sub.pk)


def text(response):
    return html.unescape(response.content.decode())


def fields_in_error(body):
    """The fields a 400 names: a problem document's ``errors`` list, or DRF's field-keyed object."""
    if isinstance(body.get("errors"), list):
        return {error.get("field") for error in body["errors"]}
    return set(body)


def edit_data(**changes):
    data = {"method_name": "Lantern QA v2", "system_name": "", "description": "two towers",
            "url": "https://example.org/paper", "team": "Lighthouse Lab", "public": "on"}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_the_owner_edits_every_field_and_a_public_rename_is_recorded(alice):
    sub = entry(alice)
    client = logged_in(alice)
    detail = text(client.get(f"/submissions/{sub.pk}/"))
    assert f"/submissions/{sub.pk}/edit/" in detail
    page = client.get(f"/submissions/{sub.pk}/edit/")
    assert page.status_code == 200 and 'value="Lantern QA"' in text(page)

    response = client.post(f"/submissions/{sub.pk}/edit/", edit_data(system_name="Lantern", team="Harbour NLP",
                                                                      public=None))
    assert response.status_code == 302 and response["Location"] == f"/submissions/{sub.pk}/"
    sub.refresh_from_db()
    assert (sub.method_name, sub.system_name, sub.description, sub.url, sub.public) == (
        "Lantern QA v2", "Lantern", "two towers", "https://example.org/paper", False)
    assert sub.status == Status.SCORED and sub.scores["overall_f1"] == 100.0  # the score is untouched
    assert Profile.objects.get(user=alice).team == "Harbour NLP"
    change = NameChange.objects.get()
    assert (change.submission_id, change.old_name, change.new_name, change.changed_by) == (
        sub.pk, "Lantern QA", "Lantern QA v2", alice)


def test_other_users_get_404_and_anonymous_users_the_login(alice, bob):
    sub = entry(alice)
    url = f"/submissions/{sub.pk}/edit/"
    assert logged_in(bob).get(url).status_code == 404
    assert logged_in(bob).post(url, edit_data(method_name="Stolen")).status_code == 404
    anonymous = Client().post(url, edit_data(method_name="Stolen"))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    assert api_for(bob).patch(f"/api/submissions/{sub.pk}/", {"method_name": "Stolen"}, format="json").status_code == 404
    assert APIClient().patch(f"/api/submissions/{sub.pk}/", {"method_name": "Stolen"},
                             format="json").status_code in (401, 403)
    sub.refresh_from_db()
    assert sub.method_name == "Lantern QA" and not NameChange.objects.exists()


def test_renames_nobody_saw_are_not_recorded(alice):
    private = entry(alice, public=False)
    queued = entry(alice, method="Queued", score=False)
    client = logged_in(alice)
    assert client.post(f"/submissions/{private.pk}/edit/", edit_data(public=None)).status_code == 302
    assert client.post(f"/submissions/{queued.pk}/edit/", edit_data()).status_code == 302
    assert Submission.objects.get(pk=queued.pk).status == Status.QUEUED
    assert not NameChange.objects.exists()
    # Publishing a private scored entry under a new name is recorded: the new name becomes public.
    assert client.post(f"/submissions/{private.pk}/edit/", edit_data(method_name="Lantern QA v3")).status_code == 302
    assert NameChange.objects.get().new_name == "Lantern QA v3"


def test_invalid_edits_are_400s_with_the_reason_and_change_nothing(alice):
    sub = entry(alice)
    client = logged_in(alice)
    for changes, reason in (({"method_name": "  "}, "This field is required."),
                            ({"method_name": "x" * 121}, "at most 120 characters"),
                            ({"url": "not a url"}, "Enter a valid URL."),
                            ({"team": "t" * 121}, "at most 120 characters")):
        response = client.post(f"/submissions/{sub.pk}/edit/", edit_data(**changes))
        assert response.status_code == 400 and reason in text(response), changes
    sub.refresh_from_db()
    assert sub.method_name == "Lantern QA" and not NameChange.objects.exists()


def test_the_api_patch_edits_with_the_same_rules(alice):
    sub = entry(alice)
    api = api_for(alice)
    response = api.patch(f"/api/submissions/{sub.pk}/", {"method_name": "Lantern QA v2", "system_name": "Lantern",
                                                         "team": "Harbour NLP"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["method_name"], body["system_name"], body["team"], body["public"]) == (
        "Lantern QA v2", "Lantern", "Harbour NLP", True)
    assert NameChange.objects.get().changed_by == alice

    for payload, field in (({"method_name": ""}, "method_name"), ({"url": "nope"}, "url"),
                           ({"status": "scored"}, "status"), ({"scores": {"overall_f1": 100}}, "scores")):
        refused = api.patch(f"/api/submissions/{sub.pk}/", payload, format="json")
        assert refused.status_code == 400 and field in fields_in_error(refused.json()), (payload, refused.content)
    sub.refresh_from_db()
    assert sub.method_name == "Lantern QA v2" and NameChange.objects.count() == 1


def test_staff_see_the_rename_history_and_others_do_not(alice, bob):
    sub = entry(alice)
    logged_in(alice).post(f"/submissions/{sub.pk}/edit/", edit_data(method_name="Renamed Once"))
    staff = User.objects.create_user("maintainer", password="pw", is_staff=True)
    page = text(logged_in(staff).get(f"/submissions/{sub.pk}/"))
    assert 'id="name-changes"' in page and "Lantern QA" in page and "Renamed Once" in page
    for client in (Client(), logged_in(bob), logged_in(alice)):
        page = text(client.get(f"/submissions/{sub.pk}/"))
        assert 'id="name-changes"' not in page and "Lantern QA<" not in page


def test_a_system_name_groups_entries_named_per_subset_on_the_average_board(alice):
    subs = [entry(alice, slug, method=f"Lantern ({slug})") for slug in SLUGS]
    board = APIClient().get("/api/benchmarks/expmrc/leaderboard/").json()
    assert [r for r in board["rows"] if r.get("kind") == "submission"] == []  # four one-task "systems"

    client = logged_in(alice)
    page = text(client.get(f"/submissions/{subs[0].pk}/edit/"))
    assert '<datalist id="system-names">' in page and '<option value="Lantern (expmrc-c3)">' in page
    client.post(f"/submissions/{subs[0].pk}/edit/", edit_data(method_name=subs[0].method_name, system_name="Lantern"))
    for sub in subs[1:]:
        response = api_for(alice).patch(f"/api/submissions/{sub.pk}/", {"system_name": "Lantern"}, format="json")
        assert response.status_code == 200
    assert '<option value="Lantern">' in text(client.get(f"/submissions/{subs[0].pk}/edit/"))

    rows = [r for r in APIClient().get("/api/benchmarks/expmrc/leaderboard/").json()["rows"]
            if r.get("kind") == "submission"]
    assert [(r["rank"], r["method"], r["average"]) for r in rows] == [(1, "Lantern", 100.0)]
    assert not NameChange.objects.exists()  # the method names stayed
