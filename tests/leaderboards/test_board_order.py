"""Sorting and paging a stored task board (leaderboards.ordering, leaderboards.store.page_rows):
every order the page offers, read a page at a time, equals sorting the whole board in Python,
and costs the same number of queries on page 1 as deep in a large board."""
import random
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchmark.models import ReportedResult, Task, boards_changed
from leaderboards.ordering import sort_keys
from submissions.models import Status, Submission
from submissions.scorers import current_scorer_version
from tests.factories import make_task, make_user
from tests.leaderboards.test_board_store import api_rows

pytestmark = pytest.mark.django_db

SLUG = "expmrc-squad"
API = f"/api/v1/tasks/{SLUG}/leaderboard/"


@pytest.fixture(autouse=True)
def _few_resamples_and_no_rate_limit(settings):
    settings.TIER_RESAMPLES = 20
    # Reading every order page by page takes hundreds of requests from one address.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"anon": "100000/min", "user": "100000/min"}}


def seed_varied(task, n, rng):
    """Entries with ties, and with scores missing a CI (so the CI order has rows without a value),
    plus a human row (pinned) and two reported baselines (no CI, no rank order of their own)."""
    user = make_user("alice")
    test_set = task.current_test_set()
    version = current_scorer_version(task, Submission.PREDICTIONS)
    entries = []
    for i in range(n):
        answer, evidence = rng.choice([40.0, 55.5, 70.0, rng.uniform(0, 100)]), rng.uniform(0, 100)
        overall = round(answer * evidence / 100, 1)
        ci = {"overall_f1": [overall - 2, overall + 2]} if i % 5 else {}
        entries.append(Submission(
            user=user, task=task, test_set=test_set, method_name=rng.choice(["alpha", "Beta", "gamma"]) + f" {i}",
            status=Status.SCORED, public=True, scores={"answer_f1": answer, "evidence_f1": evidence,
                                                       "overall_f1": overall},
            ci=ci, item_scores=[[answer / 100, evidence / 100, overall / 100]] * test_set.n_items,
            total=test_set.n_items, finished_at=timezone.now(), scorer_version=version))
    Submission.objects.bulk_create(entries)
    ReportedResult.objects.create(task=task, kind="human", method="Human", scores={
        "answer_f1": 91.0, "evidence_f1": 92.0, "overall_f1": 90.0})
    for name, value in (("Paper A", 60.0), ("Paper B", 30.0)):
        ReportedResult.objects.create(task=task, kind="baseline", method=name, scores={
            "answer_f1": value, "evidence_f1": value, "overall_f1": value})
    boards_changed([task.pk])


def expected_order(board, key, descending):
    """The order the rules in leaderboards.ordering describe, computed from the whole board:
    pinned rows first, then rows with a value sorted (ties in board order in the key's first
    direction), then rows without one in board order."""
    pinned = [row for row in board if row["kind"] == "human"]
    rest = [(position, row) for position, row in enumerate(board) if row["kind"] != "human"]
    valued = [(key.value_of(row), position, row) for position, row in rest if key.value_of(row) is not None]
    missing = [row for position, row in rest if key.value_of(row) is None]
    tie = -1 if key.descending_first else 1
    valued.sort(key=lambda item: (item[0], tie * item[1]))
    if descending:
        valued.reverse()
    return pinned + [row for _, _, row in valued] + missing


def read_all(client, sort, order, limit):
    rows, url = [], f"{API}?sort={sort}&order={order}&limit={limit}"
    while url:
        page = client.get(url).json()
        assert page["count"] == 3 + 41 and page["sort"] == sort and page["order"] == order
        rows += page["results"]
        url = page["next"]
    return rows


def test_every_order_read_page_by_page_equals_sorting_the_whole_board():
    task = make_task(SLUG)
    seed_varied(task, 41, random.Random(7))
    client = Client()
    board = api_rows(client)  # board order, page after page
    assert board[0]["kind"] == "human" and len(board) == 44
    keys = sort_keys(Task.objects.get(pk=task.pk))
    assert set(keys) == {"rank", "tier", "system", "answer_f1", "evidence_f1", "overall_f1", "ci"}
    for name, key in keys.items():
        for order in ("asc", "desc"):
            for limit in (1, 7, 44):
                got = read_all(client, name, order, limit)
                want = expected_order(board, key, order == "desc")
                assert [r["method"] for r in got] == [r["method"] for r in want], (name, order, limit)


def test_the_page_sorts_by_a_column_link_and_says_so():
    task = make_task(SLUG)
    seed_varied(task, 12, random.Random(3))
    page = Client().get(f"/tasks/{SLUG}/?sort=evidence_f1&order=asc").content.decode()
    assert 'aria-sort="ascending"' in page and "sorted by Evidence F1, ascending" in page.replace("Sorted", "sorted")
    # The header of the sorted column links to the other direction, the others to their own first one.
    assert f"/tasks/{SLUG}/?sort=evidence_f1&amp;order=desc" in page
    assert f"/tasks/{SLUG}/?sort=answer_f1&amp;order=desc" in page and f"/tasks/{SLUG}/?sort=system&amp;order=asc" in page
    shown = [row["method"] for row in expected_order(api_rows(), sort_keys(task)["evidence_f1"], False)]
    positions = [re.search(rf"\b{re.escape(name)}\b", page).start() for name in shown]
    assert positions == sorted(positions)


def test_a_large_board_comes_in_pages_with_the_same_queries_on_every_page(settings):
    task = make_task(SLUG)
    seed_varied(task, 250, random.Random(1))
    client = Client()
    client.get(f"/tasks/{SLUG}/?page=2")  # brings the stored board up to date
    rendered, served = [], []
    for url in (f"/tasks/{SLUG}/", f"/tasks/{SLUG}/?page=3", f"/tasks/{SLUG}/?sort=ci&order=desc&page=2"):
        for counts in (rendered, served):  # the first visit renders the page, the next one is served as it was
            with CaptureQueriesContext(connection) as captured:
                response = client.get(url)
            assert response.status_code == 200, url
            counts.append(len(captured.captured_queries))
    assert len(set(rendered)) == 1 and rendered[0] <= 6, rendered
    assert served == [1, 1, 1]  # the page's state, read in one query
    third = client.get(f"/tasks/{SLUG}/?page=3").content.decode()
    assert "Page 3 of 3" in third and "Rows 201–253 of 253" in third
    assert client.get(f"/tasks/{SLUG}/?page=4").status_code == 404


@pytest.mark.parametrize("query, field", [("sort=nonsense", "sort"), ("order=sideways", "order"),
                                          ("limit=0", "limit"), ("offset=-1", "offset")])
def test_the_api_names_a_bad_parameter(query, field):
    make_task(SLUG)
    response = Client().get(f"{API}?{query}")
    assert response.status_code == 400
    body = response.json()
    assert body["status"] == 400 and field in {error.get("field", error.get("pointer", "")).strip("#/")
                                               for error in body["errors"]}, body


@pytest.mark.parametrize("query", ["sort=nonsense", "order=sideways", "page=0", "page=two"])
def test_the_page_answers_a_bad_parameter_with_400(query):
    make_task(SLUG)
    response = Client().get(f"/tasks/{SLUG}/?{query}")
    assert response.status_code == 400


def test_the_deprecated_path_still_answers_the_whole_board():
    task = make_task(SLUG)
    seed_varied(task, 120, random.Random(2))
    assert len(Client().get(f"/api/tasks/{SLUG}/leaderboard/").json()["rows"]) == 123
    assert len(Client().get(API).json()["results"]) == 100


def test_hidden_boards_stay_hidden_on_every_order():
    task = make_task(SLUG)
    seed_varied(task, 5, random.Random(4))
    Task.objects.filter(pk=task.pk).update(visibility="hidden")
    for url in (f"/tasks/{SLUG}/?sort=system", f"{API}?sort=ci&order=asc", f"{API}?sort=nonsense"):
        assert Client().get(url).status_code == 404, url


@pytest.mark.parametrize("path", [f"/tasks/{SLUG}/", API, "/"])
def test_a_stored_answer_is_the_same_gzipped_or_plain_and_either_etag_gets_a_304(path):
    import gzip

    task = make_task(SLUG)
    seed_varied(task, 30, random.Random(5))
    client = Client()
    plain = [client.get(path) for _ in range(2)]  # rendered, then served as stored
    packed = [client.get(path, HTTP_ACCEPT_ENCODING="gzip, deflate") for _ in range(2)]
    assert plain[0].content == plain[1].content and "Content-Encoding" not in plain[1]
    for response in packed:
        assert response["Content-Encoding"] == "gzip" and "Accept-Encoding" in response["Vary"]
        assert gzip.decompress(response.content) == plain[0].content
    assert packed[1]["ETag"] == "W/" + plain[1]["ETag"]
    for etag in (plain[1]["ETag"], packed[1]["ETag"]):
        assert client.get(path, HTTP_IF_NONE_MATCH=etag).status_code == 304
