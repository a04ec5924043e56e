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
from leaderboards import store
from leaderboards.models import BoardSnapshot, PairTest
from leaderboards.tasks import rebuild_boards
from scoring import stats
from submissions.intake import submit_predictions
from submissions.models import Status, Submission
from submissions.scorers import current_scorer_version
from submissions.selectors import item_scores_of
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
        rows += page["results"]
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


class Queued(list):
    """Task ids whose board rebuilds requests queued; ``run()`` is the worker taking them."""

    def __init__(self, monkeypatch, payloads):
        super().__init__()
        self.monkeypatch, self.payloads = monkeypatch, payloads

    def run(self, *task_ids):
        """The worker: takes the queued rebuilds and, as after a change, those of ``task_ids``."""
        with self.monkeypatch.context() as allowed:
            for name, real in self.payloads.items():
                allowed.setattr(store, name, real)
            rebuild_boards(sorted(set(self) | set(task_ids)))
        self.clear()


@pytest.fixture
def queued_rebuilds(monkeypatch):
    """The product's own path: a request queues a rebuild and computes nothing (the board
    computations raise if a request calls them)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a board was computed inside a request")

    queued = Queued(monkeypatch, {"task_payload": store.task_payload, "benchmark_payload": store.benchmark_payload})

    def queue(task_ids):
        queued.extend(task_ids)
        return False

    monkeypatch.setattr(store, "request_rebuild", queue)
    monkeypatch.setattr(store, "task_payload", refuse)
    monkeypatch.setattr(store, "benchmark_payload", refuse)
    return queued


def test_a_stale_board_is_served_with_its_stamp_while_the_rebuild_is_queued(queued_rebuilds):
    task = make_task(SLUG)
    seed(task, 3, make_user("alice"))
    queued_rebuilds.run(task.pk)  # the worker's run after the change
    client = Client()
    before = {name: client.get(path) for name, path in PAGES.items()}
    assert all(answer.status_code == 200 for answer in before.values())
    assert len(api_rows(client)) == 3
    queued_rebuilds.clear()

    seed(task, 5, make_user("bob"))  # the board's generation moves on; the worker has not run
    for name, path in PAGES.items():
        answer = client.get(path)
        assert answer.status_code == 200 and answer["ETag"] == before[name]["ETag"], name  # the stored board
        assert client.get(path, HTTP_IF_NONE_MATCH=before[name]["ETag"]).status_code == 304
    assert len(api_rows(client)) == 3
    assert client.get(PAGES["api"])["Last-Modified"] == before["api"]["Last-Modified"]
    assert set(queued_rebuilds) == {task.pk}  # every stale read asked the worker; the messages coalesce

    queued_rebuilds.run()
    assert len(api_rows(client)) == 5
    assert client.get(PAGES["board"])["ETag"] != before["board"]["ETag"]


def test_the_first_visit_on_an_empty_store_answers_200_and_queues_the_board(queued_rebuilds):
    task = make_task(SLUG)
    seed(task, 4, make_user("alice"))
    BoardSnapshot.objects.all().delete()  # a fresh start: nothing stored yet
    client = Client()
    page = client.get(PAGES["board"])
    assert page.status_code == 200
    text = page.content.decode()
    assert "being computed" in text and 'data-refresh="3"' in text
    home = client.get(PAGES["home"])
    assert home.status_code == 200 and "being computed" in home.content.decode()
    benchmark = client.get(f"/benchmarks/{task.benchmark.slug}/")
    assert benchmark.status_code == 200 and "being computed" in benchmark.content.decode()
    api = client.get(PAGES["api"])
    assert api.status_code == 503 and api["Retry-After"] == "5"
    assert client.get(f"/tasks/{SLUG}/leaderboard.csv").status_code == 503
    assert set(queued_rebuilds) == {task.pk}

    queued_rebuilds.run()
    page = client.get(PAGES["board"])
    assert page.status_code == 200 and "System 3" in page.content.decode()
    assert "being computed" not in page.content.decode()
    assert len(api_rows(client)) == 4


def test_a_duplicate_rebuild_of_a_current_board_computes_nothing(monkeypatch):
    task = make_task(SLUG)
    seed(task, 2, make_user("alice"))
    rebuild_boards([task.pk])

    def refuse(*args, **kwargs):
        raise AssertionError("recomputed a current board")

    monkeypatch.setattr(store, "task_payload", refuse)
    monkeypatch.setattr(store, "benchmark_payload", refuse)
    rebuild_boards([task.pk])


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


def test_a_new_entry_costs_the_paired_tests_that_involve_it_not_one_per_entry(monkeypatch, settings):
    """Each pair's test is kept by the two entries' score fingerprints: after one more entry the
    board runs the tests of that entry's pairs only, and its tiers are those of a fresh run."""
    settings.TIER_RESAMPLES = 200
    task = make_task(SLUG)
    user = make_user("alice")
    seed(task, 40, user)
    tested = []
    real = stats._pair_statistics

    def counted(first, second, n_resamples, seed_):
        tested.append(1)
        return real(first, second, n_resamples, seed_)

    monkeypatch.setattr(stats, "_pair_statistics", counted)
    rebuild_boards([task.pk])
    cold = len(tested)
    assert cold >= 39 and PairTest.objects.filter(task=task).count() > 0

    tested.clear()
    seed(task, 41, user)  # one more entry
    rebuild_boards([task.pk])
    rows = [row for row in api_rows() if row["submission_id"]]
    tiers = max(row["tier"] for row in rows)
    # Its neighbours' p_vs_above and the leaders of the tiers it is tested against: not 40 tests.
    assert len(tested) <= tiers + 2 < cold, (len(tested), tiers, cold)

    items = item_scores_of([row["submission_id"] for row in rows])
    fresh = stats.significance_tiers([[r[2] for r in items[row["submission_id"]]] for row in rows],
                                     n_resamples=200, seed=0)
    assert [(row["tier"], row["p_vs_above"], row["p_adjusted"]) for row in rows] == [
        (tier["tier"], tier["p_vs_above"], tier["p_adjusted"]) for tier in fresh]
