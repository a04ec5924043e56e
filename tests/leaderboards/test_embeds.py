"""Boards shown elsewhere (leaderboards/embeds.py): a framable board, shields.io badge data and
Atom feeds of new results, each showing what anyone may see and nothing more."""
import xml.etree.ElementTree as ET

import pytest
from django.test import Client

from benchmark.models import Visibility
from config.security_headers import framable_policy
from submissions.tasks import score_submission
from tests.factories import api_for, fixture_gold, logged_in, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"


def submit(user, slug, name, public=True, half=False):
    predictions = perfect_predictions(fixture_gold(slug))
    if half:
        predictions = dict(list(predictions.items())[: len(predictions) // 2])
    response = api_for(user).post(f"/api/v1/tasks/{slug}/submissions/",
                                  {"file": upload_file(predictions), "method_name": name,
                                   "public": "true" if public else "false"}, format="multipart")
    assert response.status_code == 201, response.content
    score_submission(response.json()["id"])
    return response.json()["id"]


@pytest.fixture
def site(settings):
    settings.BOOTSTRAP_RESAMPLES = 20
    settings.SITE_URL = "https://expbench.example.org"
    squad, c3, race = make_task("expmrc-squad"), make_task("expmrc-c3"), make_task("expmrc-race")
    alice, bob = make_user("alice", team="Lighthouse Lab"), make_user("bob")
    ids = {
        "leader": submit(alice, "expmrc-squad", "Perfect reader"),
        "second": submit(bob, "expmrc-squad", "Half reader", half=True),
        "private": submit(bob, "expmrc-squad", "Secret reader", public=False),
        "c3": submit(alice, "expmrc-c3", "C3 reader"),
        "race": submit(alice, "expmrc-race", "Race reader"),
    }
    return {"squad": squad, "c3": c3, "race": race, "alice": alice, "ids": ids}


def hide(task, visibility):
    task.visibility = visibility
    task.save()


# -------------------------------------------------------------------------------- the embed


def test_the_embed_may_be_framed_by_any_site_and_other_pages_may_not(site):
    response = Client().get("/tasks/expmrc-squad/embed/")
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "frame-ancestors *" in policy and "'none'" not in policy.split("frame-ancestors")[1]
    assert "script-src 'self'" in policy  # the rest of the site's policy stays
    assert not response.has_header("X-Frame-Options")
    page = response.content.decode()
    assert "Perfect reader" in page and "Half reader" in page and "Secret reader" not in page
    assert "<form" not in page and "csrfmiddlewaretoken" not in page
    assert 'href="https://expbench.example.org/tasks/expmrc-squad/" target="_blank" rel="noopener"' in page

    board = Client().get("/tasks/expmrc-squad/")
    assert "frame-ancestors 'none'" in board["Content-Security-Policy"]
    assert board["X-Frame-Options"] == "DENY"


def test_the_embed_is_the_same_for_everyone_and_hidden_tasks_are_not_embedded(site):
    anonymous = Client().get("/tasks/expmrc-squad/embed/").content
    assert logged_in(site["alice"]).get("/tasks/expmrc-squad/embed/").content == anonymous
    assert b"alice" not in anonymous
    staff = make_user("root")
    staff.is_staff = True
    staff.save()
    hide(site["squad"], Visibility.HIDDEN)
    assert logged_in(staff).get("/tasks/expmrc-squad/embed/").status_code == 404
    hide(site["squad"], Visibility.UNLISTED)  # reachable by its address: embeddable
    assert Client().get("/tasks/expmrc-squad/embed/").status_code == 200


def test_the_embed_shows_the_first_rows_asked_for(site):
    page = Client().get("/tasks/expmrc-squad/embed/?rows=1").content.decode()
    assert "Perfect reader" in page and "Half reader" not in page and "The whole board" in page
    assert Client().get("/tasks/expmrc-squad/embed/?rows=0").status_code == 400
    assert Client().get("/tasks/expmrc-squad/embed/?rows=51").status_code == 400


def test_the_framable_policy_replaces_only_frame_ancestors():
    assert framable_policy("default-src 'self'; frame-ancestors 'none'; form-action 'self'") == \
        "default-src 'self'; form-action 'self'; frame-ancestors *"
    assert framable_policy("default-src 'self'") == "default-src 'self'; frame-ancestors *"


# -------------------------------------------------------------------------------- the badge


def test_badge_data_names_the_leader_and_its_score(site):
    response = Client().get("/api/v1/tasks/expmrc-squad/badge/", HTTP_ORIGIN="https://github.com")
    assert response.status_code == 200 and response["Access-Control-Allow-Origin"] == "*"
    assert response.json() == {"schemaVersion": 1, "label": "SQuAD Overall F1", "message": "Perfect reader 100.000",
                               "color": "blue", "cacheSeconds": 300}
    again = Client().get("/api/v1/tasks/expmrc-squad/badge/", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


def test_badge_of_a_task_without_entries_and_of_a_hidden_task(site):
    make_task("expmrc-cmrc2018")
    badge = Client().get("/api/v1/tasks/expmrc-cmrc2018/badge/").json()
    assert badge["message"] == "no entries yet" and badge["color"] == "lightgrey"
    hide(site["squad"], Visibility.HIDDEN)
    assert Client().get("/api/v1/tasks/expmrc-squad/badge/").status_code == 404


# -------------------------------------------------------------------------------- the feeds


def entries(response):
    assert response.status_code == 200 and response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(response.content)
    return feed, [(e.find(f"{ATOM}title").text, e.find(f"{ATOM}link").get("href")) for e in feed.findall(f"{ATOM}entry")]


def test_the_site_feed_lists_public_results_of_listed_tasks_newest_first(site):
    hide(site["race"], Visibility.UNLISTED)
    feed, found = entries(Client().get("/results.atom"))
    assert feed.find(f"{ATOM}title").text == "ExpBench: new results"
    titles = [title for title, _ in found]
    ids = site["ids"]
    assert titles == ["C3 reader on C3: Overall F1 100.000", f"Half reader on SQuAD: Overall F1 {titles[1].split()[-1]}",
                      "Perfect reader on SQuAD: Overall F1 100.000"]
    assert [link for _, link in found] == [f"https://expbench.example.org/submissions/{ids[k]}/"
                                           for k in ("c3", "second", "leader")]


def test_a_task_feed_and_its_visibility(site):
    hide(site["race"], Visibility.UNLISTED)
    feed, found = entries(Client().get("/tasks/expmrc-race/results.atom"))
    assert feed.find(f"{ATOM}title").text == "ExpBench: new results on RACE+"
    assert [title for title, _ in found] == ["Race reader on RACE+: Overall F1 100.000"]
    hide(site["race"], Visibility.HIDDEN)
    assert Client().get("/tasks/expmrc-race/results.atom").status_code == 404
    _, squad = entries(Client().get("/tasks/expmrc-squad/results.atom"))
    assert len(squad) == 2 and not any("Secret" in title for title, _ in squad)
