"""Teams (docs/phases.md#teams) through the API: create, invite, accept, leave; a team's
members share the quota and its entries carry the team; the team picks the entry that counts in
a phase's final ranking, its latest counting without a pick."""
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import Membership
from benchmark.models import Phase
from submissions import phases
from submissions.models import Status, Submission
from submissions.runs import claim_and_score
from tests.factories import api_for, logged_in, make_task_from_gold, make_user, synthetic_span_gold, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def task(tmp_path):
    return make_task_from_gold(tmp_path, synthetic_span_gold(20))


def team_of_two():
    alice, bob = make_user("alice"), make_user("bob")
    created = api_for(alice).post("/api/v1/teams/", {"name": "Lighthouse Lab"}, format="json")
    assert created.status_code == 201 and created.json()["members"] == ["alice"]
    slug = created.json()["slug"]
    assert api_for(alice).post(f"/api/v1/teams/{slug}/invite/", {"username": "bob"}, format="json").status_code == 201
    assert api_for(alice).get(f"/api/v1/teams/{slug}/").json()["invited"] == ["bob"]
    assert "invited" not in api_for(make_user("eve")).get(f"/api/v1/teams/{slug}/").json()
    assert api_for(bob).post(f"/api/v1/teams/{slug}/accept/").json()["members"] == ["alice", "bob"]
    return alice, bob, slug


def upload(user, task, right, name):
    predictions = {f"syn-{i:04d}": ({"answer": f"token{i}", "evidence": f"Fact {i} holds because token{i} was seen."}
                                    if i < right else {"answer": "no", "evidence": "no"}) for i in range(20)}
    response = api_for(user).post(f"/api/v1/tasks/{task.slug}/submissions/",
                                  {"file": upload_file(predictions), "method_name": name, "public": "true"},
                                  format="multipart")
    assert response.status_code == 201, response.content
    assert claim_and_score(response.json()["id"]) == Status.SCORED
    return response.json()["id"]


def test_invite_accept_and_leave_with_clear_refusals():
    alice, bob, slug = team_of_two()
    assert api_for(bob).post("/api/v1/teams/", {"name": "Another"}, format="json").status_code == 409
    assert api_for(make_user("mallory")).post(f"/api/v1/teams/{slug}/invite/", {"username": "alice"},
                                          format="json").status_code == 403
    missing = api_for(alice).post(f"/api/v1/teams/{slug}/invite/", {"username": "nobody"}, format="json")
    assert missing.status_code == 404 and "nobody" in missing.json()["detail"]
    assert api_for(bob).post(f"/api/v1/teams/{slug}/leave/").json()["members"] == ["alice"]
    assert api_for(alice).get(f"/api/v1/teams/{slug}/").json()["members"] == ["alice"]
    assert api_for(bob).post(f"/api/v1/teams/{slug}/accept/").status_code == 404  # the invitation is gone


def test_members_share_the_quota_and_their_entries_carry_the_team(task):
    task.daily_quota = 2
    task.save()
    alice, bob, _ = team_of_two()
    upload(alice, task, 5, "A1")
    upload(bob, task, 6, "B1")
    third = api_for(alice).post(f"/api/v1/tasks/{task.slug}/submissions/",
                                {"file": upload_file({}), "method_name": "A2"}, format="multipart")
    assert third.status_code == 429  # two uploads of the team used the day's quota
    rows = Client().get(f"/api/v1/tasks/{task.slug}/leaderboard/").json()["results"]
    assert {row["team"] for row in rows if row["method"] in ("A1", "B1")} == {"Lighthouse Lab"}
    assert api_for(bob).get(f"/api/v1/tasks/{task.slug}/quota/").json()["used"] == 2
    assert Submission.objects.filter(submitting_team__name="Lighthouse Lab").count() == 2


def test_the_team_picks_the_entry_that_counts_once_the_phase_is_closed(task):
    now = timezone.now()
    phase = Phase.objects.create(task=task, name="Final", starts_at=now - timedelta(days=1),
                                 ends_at=now + timedelta(days=1))
    alice, bob, _ = team_of_two()
    best = upload(alice, task, 18, "Best")
    upload(bob, task, 10, "Latest")
    solo = make_user("dora")
    upload(solo, task, 4, "Solo early")
    upload(solo, task, 3, "Solo latest")
    refused = api_for(solo).post(f"/api/v1/phases/{phase.pk}/selection/", {"submission": best}, format="json")
    assert refused.status_code == 403  # not her team's entry
    assert api_for(bob).post(f"/api/v1/phases/{phase.pk}/selection/", {"submission": best},
                             format="json").status_code == 200  # any member picks for the team
    before = [row["method"] for row in Client().get(f"/api/v1/tasks/{task.slug}/leaderboard/").json()["results"]]
    assert {"Best", "Latest", "Solo early", "Solo latest"} <= set(before)  # live: every entry shows
    Phase.objects.filter(pk=phase.pk).update(ends_at=timezone.now() - timedelta(seconds=1))
    phases.close_ended_phases()
    after = [row["method"] for row in Client().get(f"/api/v1/tasks/{task.slug}/leaderboard/").json()["results"]
             if row["kind"] == "submission"]
    assert after == ["Best", "Solo latest"]  # the team's pick; the researcher alone: her latest
    late = api_for(alice).post(f"/api/v1/phases/{phase.pk}/selection/", {"submission": best}, format="json")
    assert late.status_code == 409 and "closed" in late.json()["detail"]
    assert Membership.objects.filter(status=Membership.MEMBER).count() == 2


def test_the_team_page_creates_invites_accepts_and_leaves():
    alice, bob = make_user("alice"), make_user("bob")
    page = logged_in(alice)
    assert page.post("/accounts/team/", {"action": "create", "name": "Quill Group"}).status_code == 302
    assert page.post("/accounts/team/", {"action": "invite", "team": "quill-group", "username": "bob"}).status_code == 302
    refused = page.post("/accounts/team/", {"action": "invite", "team": "quill-group", "username": "bob"})
    assert refused.status_code == 400 and "invited already" in refused.content.decode()
    invited = logged_in(bob).get("/accounts/team/").content.decode()
    assert 'id="invitations"' in invited and "Quill Group" in invited
    assert logged_in(bob).post("/accounts/team/", {"action": "accept", "team": "quill-group"}).status_code == 302
    assert "alice, bob" in page.get("/accounts/team/").content.decode()
    assert logged_in(bob).post("/accounts/team/", {"action": "leave", "team": "quill-group"}).status_code == 302
    assert Membership.objects.filter(user=bob).count() == 0


def test_an_entry_is_chosen_for_its_phase_on_its_page(task):
    now = timezone.now()
    phase = Phase.objects.create(task=task, name="Final", starts_at=now - timedelta(days=1),
                                 ends_at=now + timedelta(days=1))
    alice, bob, _ = team_of_two()
    entry = upload(alice, task, 12, "Mine")
    page = logged_in(bob).get(f"/submissions/{entry}/").content.decode()  # a teammate sees the choice too
    assert 'id="phase-choice"' in page and "Count this entry" in page
    assert logged_in(bob).post(f"/submissions/{entry}/phase-choice/").status_code == 302
    assert "counts in the phase" in logged_in(alice).get(f"/submissions/{entry}/").content.decode()
    assert 'id="phase-choice"' not in logged_in(make_user("mallory")).get(f"/submissions/{entry}/").content.decode()
    board = Client().get(f"/tasks/{task.slug}/").content.decode()
    assert 'id="phases"' in board and f'datetime="{phase.ends_at.isoformat()}"' in board.replace("&#x2B;", "+")
