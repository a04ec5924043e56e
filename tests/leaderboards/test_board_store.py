"""Stored boards (docs/operations.md#stored-boards): pages and API read a stored board with a
fixed number of queries, the board follows every change, conditional GET and gzip."""
import gzip
import json

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchmark.models import ReportedResult, boards_changed
from leaderboards.tasks import rebuild_boards
from submissions.intake import submit_predictions
from submissions.models import Status, Submission
from submissions.scorers import current_scorer_version
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db

SLUG = "expmrc-squad"
PAGES = {"board": f"/tasks/{SLUG}/", "api": f"/api/v1/tasks/{SLUG}/leaderboard/", "home": "/"}


@pytest.fixture(autouse=True)
def _few_resamples(settings):
    settings.TIER_RESAMPLES = 20  # tiers are not what these tests check; 200 entries stay fast


def seed(task, upto, user):
    """Scored public entries on ``task`` up to ``upto``, written in bulk (no signals), then the
    board told, as a write through the product would."""
    test_set = task.current_test_set()
    have = Submission.objects.filter(task=task).count()
    now = timezone.now()
    entries = []
    for i in range(have, upto):
        value = (i * 37 % 100) / 100
        rows = [[value, value, value] if q % 2 else [1 - value, value, value * value] for q in range(test_set.n_items)]
        mean = 100 * sum(row[2] for row in rows) / len(rows)
        entries.append(Submission(
            user=user, task=task, test_set=test_set, method_name=f"System {i}", status=Status.SCORED, public=True,
            scores={"answer_f1": mean, "evidence_f1": mean, "overall_f1": mean}, ci={"overall_f1": [mean - 1, mean + 1]},
            item_scores=rows, total=len(rows), finished_at=now,
            scorer_version=current_scorer_version(task, Submission.PREDICTIONS)))
    Submission.objects.bulk_create(entries)
    boards_changed([task.pk])


def queries(client, path):
    client.get(path)  # brings the stored board up to date
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, path
    return len(captured.captured_queries)


def api_rows(client=None):
    """Every row of the board, page after page as a client reads them."""
    client, url, rows = client or Client(), PAGES["api"], []
    while url:
        page = client.get(url).json()
        rows += page["rows"]
        url = page["next"]
    return rows


def test_queries_per_request_do_not_grow_with_the_board():
    task = make_task(SLUG)
    user = make_user("alice")
    client = Client()
    seed(task, 10, user)
    at_10 = {name: queries(client, path) for name, path in PAGES.items()}
    assert len(api_rows(client)) == 10
    seed(task, 200, user)
    at_200 = {name: queries(client, path) for name, path in PAGES.items()}
    assert len(api_rows(client)) == 200
    assert at_200 == at_10
    assert at_10["api"] <= 6 and at_10["board"] <= 10 and at_10["home"] <= 10, at_10


def test_the_board_follows_scores_hiding_flags_and_reported_rows():
    task = make_task(SLUG)
    alice = make_user("alice")
    reported = ReportedResult.objects.create(task=task, kind="baseline", method="Paper baseline",
                                             scores={"overall_f1": 10.0}, source="paper")
    assert [r["method"] for r in api_rows()] == ["Paper baseline"]

    def scored(method):
        sub = submit_predictions(user=alice, task=task, uploaded_file=upload_file(perfect_predictions(
            fixture_gold(SLUG))), method_name=method, public=True)
        score_submission(sub.pk)
        return Submission.objects.get(pk=sub.pk)

    first = scored("First")
    assert [r["method"] for r in api_rows()] == ["First", "Paper baseline"]
    second = scored("Second")
    assert {r["method"] for r in api_rows()} == {"First", "Second", "Paper baseline"}

    first.public = False
    first.save(update_fields=["public"])  # as the entry page's "hide" does
    assert "First" not in {r["method"] for r in api_rows()}

    second.flag_reason, second.flagged_at = "copied predictions", timezone.now()
    second.save()
    assert [r["method"] for r in api_rows()] == ["Paper baseline"]

    reported.scores = {"overall_f1": 12.5}
    reported.save()
    assert api_rows()[0]["scores"]["overall_f1"] == 12.5
    page = Client().get(PAGES["board"]).content.decode()
    assert "Paper baseline" in page and "First" not in page and "Second" not in page


def test_a_large_board_waits_for_the_worker(settings):
    """Above BOARD_INLINE_ROWS a request shows the stored board while the worker recomputes it."""
    settings.BOARD_INLINE_ROWS = 0
    task = make_task(SLUG)
    user = make_user("alice")
    seed(task, 3, user)
    assert len(api_rows()) == 3  # no stored board yet: computed by this request
    seed(task, 5, user)
    assert len(api_rows()) == 3  # out of date, the worker has not run: the stored one
    rebuild_boards([task.pk])
    assert len(api_rows()) == 5


def test_a_board_the_worker_never_recomputed_is_computed_by_a_request(settings):
    settings.BOARD_INLINE_ROWS, settings.BOARD_WORKER_GRACE_SECONDS = 0, 0
    task = make_task(SLUG)
    user = make_user("alice")
    seed(task, 3, user)
    assert len(api_rows()) == 3
    seed(task, 4, user)
    assert len(api_rows()) == 4


@pytest.mark.parametrize("page", sorted(PAGES))
def test_conditional_get_answers_304_until_the_board_changes(page):
    task = make_task(SLUG)
    user = make_user("alice")
    seed(task, 2, user)
    client = Client()
    first = client.get(PAGES[page])
    etag = first["ETag"]
    assert first.status_code == 200 and etag
    again = client.get(PAGES[page], HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b""
    seed(task, 3, user)
    changed = client.get(PAGES[page], HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag


def test_the_board_page_etag_differs_per_visitor():
    make_task(SLUG)
    anonymous = Client().get(PAGES["board"])["ETag"]
    client = Client()
    client.force_login(make_user("alice"))
    signed_in = client.get(PAGES["board"], HTTP_IF_NONE_MATCH=anonymous)
    assert signed_in.status_code == 200 and signed_in["ETag"] != anonymous


def test_responses_are_gzipped_when_the_client_accepts_it():
    task = make_task(SLUG)
    seed(task, 30, make_user("alice"))
    plain = Client().get(PAGES["api"])
    zipped = Client().get(PAGES["api"], HTTP_ACCEPT_ENCODING="gzip")
    assert "Content-Encoding" not in plain and zipped["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(zipped.content)) == plain.json()
    assert len(zipped.content) < len(plain.content) / 3
    assert Client().get(PAGES["api"], HTTP_ACCEPT_ENCODING="gzip",
                        HTTP_IF_NONE_MATCH=zipped["ETag"]).status_code == 304  # gzip's weak ETag still matches
    page = Client().get(PAGES["board"], HTTP_ACCEPT_ENCODING="gzip")
    assert page["Content-Encoding"] == "gzip" and b"System 29" in gzip.decompress(page.content)
