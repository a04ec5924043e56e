"""Anonymous reads of the board's API answered from the store ahead of DRF
(config/store_reads.py): the same status, bytes and headers as the DRF view, the same rate limit,
and everything the store cannot answer left to the view."""
import random

import pytest
from django.test import Client

from benchmark.models import Visibility
from tests.factories import api_for, make_task, make_user
from tests.leaderboards.test_board_order import seed_varied

pytestmark = pytest.mark.django_db

API = "/api/v1/tasks/expmrc-squad/leaderboard/"


@pytest.fixture
def board(settings):
    settings.TIER_RESAMPLES = 20
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"anon": "100000/min", "user": "100000/min"}}
    task = make_task()
    seed_varied(task, 12, random.Random(3))
    return task


def through_drf_only(monkeypatch):
    monkeypatch.setattr("config.store_reads.plain_anonymous_read", lambda request: False)


def comparable(response):
    """Status, headers and bytes; Vary as a set (the order of its names means nothing, and a page
    rendered now lists Accept-Encoding last, where a stored one lists it first)."""
    headers = {key: value for key, value in response.headers.items() if key not in ("Date", "X-Request-ID")}
    headers["Vary"] = sorted(name.strip() for name in headers.get("Vary", "").split(","))
    return response.status_code, headers, response.content


REQUESTS = [
    (API, {}),
    (API, {"HTTP_ACCEPT_ENCODING": "gzip, br"}),
    (API + "?sort=system&order=desc&limit=5&offset=3", {}),
    (API + "?sort=evidence_f1&limit=4", {"HTTP_ACCEPT_ENCODING": "gzip", "HTTP_ACCEPT": "application/json"}),
    ("/api/tasks/expmrc-squad/leaderboard/", {}),  # the deprecated path: the whole board
]


@pytest.mark.parametrize(("path", "headers"), REQUESTS)
def test_a_stored_page_comes_out_as_the_drf_view_gives_it(board, monkeypatch, drf_dispatches, path, headers):
    client = Client()
    first = client.get(path, **headers)  # renders and stores it, through DRF
    assert first.status_code == 200 and len(drf_dispatches) == 1
    fast = client.get(path, **headers)
    assert len(drf_dispatches) == 1, "the stored page went through DRF"
    revalidated = client.get(path, HTTP_IF_NONE_MATCH=fast["ETag"], **headers)
    assert revalidated.status_code == 304 and len(drf_dispatches) == 1

    through_drf_only(monkeypatch)
    assert comparable(client.get(path, **headers)) == comparable(fast) == comparable(first)
    assert comparable(client.get(path, HTTP_IF_NONE_MATCH=fast["ETag"], **headers)) == comparable(revalidated)
    assert len(drf_dispatches) == 3


@pytest.mark.parametrize("headers", [
    {"HTTP_AUTHORIZATION": "Token nonsense"},  # DRF says 401
    {"HTTP_ACCEPT": "text/csv"},  # DRF says 406
    {"HTTP_COOKIE": "sessionid=whatever"},
])
def test_credentials_a_session_or_another_format_go_to_drf(board, drf_dispatches, headers):
    client = Client()
    client.get(API)
    client.get(API, **headers)
    assert len(drf_dispatches) == 2


@pytest.mark.parametrize("query", ["?sort=nonsense", "?limit=0", "?offset=-1", "?order=up", "?format=xml"])
def test_a_bad_parameter_gets_drfs_problem_answer(board, drf_dispatches, query):
    client = Client()
    client.get(API)
    answer = client.get(API + query)
    assert answer.status_code in (400, 404) and len(drf_dispatches) == 2
    if answer.status_code == 400:
        assert answer["Content-Type"] == "application/problem+json"


def test_a_hidden_board_is_never_served_from_the_store(board, drf_dispatches):
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    staff_api = api_for(staff)
    assert staff_api.get(API).status_code == 200
    board.visibility = Visibility.HIDDEN
    board.save()
    assert staff_api.get(API).status_code == 200  # stored for the hidden generation
    assert Client().get(API).status_code == 404
    assert len(drf_dispatches) == 3


def test_stored_reads_count_against_the_anonymous_limit(board, settings, drf_dispatches):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"anon": "4/min", "user": "9/min"}}
    client = Client()
    answers = [client.get(API) for _ in range(6)]
    assert [a.status_code for a in answers] == [200] * 4 + [429] * 2
    assert len(drf_dispatches) == 3  # the first (renders) and the two refused
    assert answers[-1]["Content-Type"] == "application/problem+json" and int(answers[-1]["Retry-After"]) >= 1
