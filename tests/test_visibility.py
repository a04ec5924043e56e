"""Task visibility (public / unlisted / hidden) is enforced on every route: a crawl of every URL
pattern, as the hidden-gold test does, for anonymous, signed-in, owner and staff clients."""
import pytest
from django.test import Client
from django.urls import NoReverseMatch, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from benchmark.models import Visibility
from submissions import intake
from submissions.models import Status, Submission
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, token_for, upload_file

pytestmark = pytest.mark.django_db

HIDDEN, OTHER = "expmrc-race", "expmrc-squad"


def routes():
    def walk(patterns, namespace=None):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, pattern.namespace or namespace)
            elif namespace != "admin":
                yield pattern.name, pattern.pattern.regex

    return list(walk(get_resolver().url_patterns))


@pytest.fixture
def world():
    hidden, other = make_task(HIDDEN), make_task(OTHER)
    owner = make_user("owner")
    entries = {}
    for task in (hidden, other):
        submission = intake.submit_predictions(
            user=owner, task=task, uploaded_file=upload_file(perfect_predictions(fixture_gold(task.slug))),
            method_name=f"Entry on {task.slug}", public=True)
        assert score_submission(submission.pk) == Status.SCORED
        entries[task.slug] = submission.pk
    hidden.visibility = Visibility.HIDDEN
    hidden.save()
    staff = make_user("maintainer")
    staff.is_staff = True
    staff.save()
    return {"hidden": hidden, "owner": owner, "stranger": make_user("stranger"), "staff": staff, "entries": entries}


def hidden_task_urls(world):
    """Every route that names the hidden task or its entry (by slug or id)."""
    entry = world["entries"][HIDDEN]
    urls = []
    for name, regex in routes():
        params = set(regex.groupindex)
        if not params & {"slug", "pk"}:
            continue
        kwargs = {"slug": HIDDEN, "pk": str(entry), "skill": "s1", "format": "json"}
        for wanted in ([p for p in params if p != "format"], list(params)):
            try:
                urls.append(reverse(name, kwargs={p: kwargs[p] for p in wanted}))
            except NoReverseMatch:
                pass
    other = world["entries"][OTHER]
    urls += [f"/compare/?a={entry}&b={other}", f"/api/compare/?a={entry}&b={other}",
             f"/api/v1/compare/?a={entry}&b={other}"]
    return sorted(set(urls))


def as_client(user=None, token=False):
    if token:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
        return client
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_a_hidden_task_answers_404_on_every_route_to_all_but_staff(world):
    urls = hidden_task_urls(world)
    assert len(urls) >= 15, urls  # boards, CSV, inputs, skills, entry pages, API twins, compare
    viewers = {"anonymous": as_client(), "stranger": as_client(world["stranger"]),
               "stranger (token)": as_client(world["stranger"], token=True),
               "owner of an entry": as_client(world["owner"]), "owner (token)": as_client(world["owner"], token=True)}
    entry = str(world["entries"][HIDDEN])
    checked = 0
    for who, client in viewers.items():
        for url in urls:
            response = client.get(url)
            # A hidden task must look exactly like one that does not exist: the same answer as the
            # same route for a missing slug / id (404; a POST-only route answers 401/405, or sends to
            # the login page, either way;
            # compare answers 400 "no scored submission visible to you").
            missing = client.get(url.replace(HIDDEN, "no-such-task").replace(f"/{entry}/", "/999999/")
                                 .replace(f"/{entry}.", "/999999.").replace(f"a={entry}", "a=999999"))
            assert response.status_code == missing.status_code, (who, url, response.status_code)
            assert response.status_code in (302, 400, 401, 404, 405), (who, url, response.status_code)
            checked += 1
    staff = as_client(world["staff"])
    reachable = [url for url in urls if staff.get(url).status_code == 200]
    assert f"/tasks/{HIDDEN}/" in reachable and f"/api/v1/tasks/{HIDDEN}/leaderboard/" in reachable, reachable
    assert checked == len(urls) * len(viewers)


def test_uploads_to_a_hidden_task_are_refused_as_not_found(world):
    before = Submission.objects.count()
    for client in (as_client(world["owner"], token=True), as_client(world["stranger"], token=True)):
        response = client.post(f"/api/tasks/{HIDDEN}/submissions/",
                               {"file": upload_file({}), "method_name": "x"}, format="multipart")
        assert response.status_code == 404
    web = as_client(world["stranger"]).post(f"/tasks/{HIDDEN}/submit/", {"method_name": "x"})
    assert web.status_code == 404
    assert Submission.objects.count() == before


def test_lists_name_no_hidden_task_and_unlisted_ones_only_by_address(world):
    anonymous = as_client()
    listings = ["/", "/api/tasks/", "/api/benchmarks/", "/benchmarks/expmrc/", "/api/benchmarks/expmrc/",
                "/api/benchmarks/expmrc/leaderboard/", "/api/schema/"]
    for url in listings:
        response = anonymous.get(url)
        assert response.status_code == 200, url
        assert HIDDEN.encode() not in response.content, url
    owner_list = as_client(world["owner"], token=True).get("/api/submissions/").content
    assert HIDDEN.encode() not in owner_list
    assert as_client(world["staff"]).get("/api/tasks/").content.count(HIDDEN.encode()) >= 1

    task = world["hidden"]
    task.visibility = Visibility.UNLISTED
    task.save()
    assert HIDDEN.encode() not in anonymous.get("/api/tasks/").content
    assert HIDDEN.encode() not in anonymous.get("/").content
    assert anonymous.get(f"/tasks/{HIDDEN}/").status_code == 200
    assert anonymous.get(f"/api/tasks/{HIDDEN}/inputs/").status_code == 200


def test_only_staff_change_visibility_through_the_api(world):
    url = f"/api/tasks/{OTHER}/"
    stranger = as_client(world["stranger"], token=True)
    assert stranger.patch(url, {"visibility": "hidden"}, format="json").status_code == 404
    assert as_client().patch(url, {"visibility": "hidden"}).status_code in (401, 403, 404)
    staff = as_client(world["staff"], token=True)
    assert staff.patch(url, {"visibility": "sideways"}, format="json").status_code == 400
    assert staff.patch(url, {"slug": "renamed"}, format="json").status_code == 400
    response = staff.patch(url, {"visibility": "hidden"}, format="json")
    assert response.status_code == 200 and response.json()["visibility"] == "hidden"
    assert as_client().get(f"/tasks/{OTHER}/").status_code == 404
