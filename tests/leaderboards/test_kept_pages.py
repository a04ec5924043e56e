"""Pages kept for anonymous visitors (leaderboards.page_states): the average board, an entry's
page, the compare page and both CSV exports are written once per state of what they show and
answered from the shared cache after that; every change they show gives the next visitor a new
answer; who may see them is decided on each request; the private part of a phase's test set
shows in none of them before the reveal; the compare page runs no permutation test for a pair
the board already tested, and any other pair's test only once."""
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from benchmark.models import Task, Visibility
from leaderboards.models import PairTest
from scoring import stats
from submissions import phases
from submissions.models import Status, Submission
from submissions.runs import claim_and_score
from tests.factories import make_task, make_task_from_gold, make_user, synthetic_span_gold
from tests.leaderboards.test_board_store import seed
from tests.submissions.test_phases import N_QUESTIONS, add_phase, answers, close, upload

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _few_resamples(settings):
    settings.TIER_RESAMPLES = 50  # what is checked is where a p-value comes from, not its precision


def kept_answer(client, path):
    """The answer to ``path`` twice: the second must come from the shared cache (the state query
    and nothing else: no rendering reads the entries again) with the same bytes."""
    first = client.get(path)
    assert first.status_code == 200, (path, first.status_code)
    with CaptureQueriesContext(connection) as captured:
        again = client.get(path)
    assert again.status_code == 200 and again.content == first.content, path
    assert len(captured.captured_queries) <= 2, (path, [q["sql"][:80] for q in captured.captured_queries])
    assert again["ETag"] == first["ETag"] and client.get(path, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    return first.content.decode("utf-8-sig")


def test_kept_pages_follow_a_new_a_rescored_and_a_withdrawn_entry():
    squad, cmrc = make_task("expmrc-squad"), make_task("expmrc-cmrc2018")
    alice = make_user("alice")
    for task in (squad, cmrc):
        seed(task, 2, alice)
    a, b = Submission.objects.filter(task=squad).order_by("pk")
    pages = {"entry": f"/submissions/{a.pk}/", "compare": f"/compare/?a={a.pk}&b={b.pk}",
             "csv": "/tasks/expmrc-squad/leaderboard.csv", "average": "/benchmarks/expmrc/",
             "average_csv": "/benchmarks/expmrc/leaderboard.csv"}
    client = Client()
    before = {name: kept_answer(client, path) for name, path in pages.items()}
    assert all("System 1" in before[name] for name in ("compare", "csv", "average", "average_csv"))
    assert not any("System 2" in text for text in before.values())

    # A new entry on both tasks: on the board's CSV and on the average board at once.
    for task in (squad, cmrc):
        seed(task, 3, alice)
    after = {name: kept_answer(client, path) for name, path in pages.items()}
    assert all("System 2" in after[name] for name in ("csv", "average", "average_csv"))
    # The CSV of the board before is gone from the disk: one copy per page, plain and gzipped.
    kept = sorted(path.suffix for path in (Path(settings.MEDIA_ROOT) / "exports").glob(f"task{squad.pk}-*"))
    assert kept == [".gz", ".plain"]

    # Re-scored (as a re-score saves it): the entry's page and the comparison show the new score.
    a.scores = {**a.scores, "overall_f1": 12.3456}
    a.save()
    rescored = {name: kept_answer(client, path) for name, path in pages.items()}
    assert all("12.346" in rescored[name] for name in ("entry", "compare", "csv"))
    assert "12.346" not in after["entry"]

    # Withdrawn from the board: its page and comparison are gone for anonymous visitors, kept
    # answers notwithstanding, and the CSV no longer lists it.
    a.public = False
    a.save()
    assert client.get(pages["entry"]).status_code == 404
    assert client.get(pages["compare"]).status_code == 400
    assert "System 0" not in kept_answer(client, pages["csv"])


def test_a_hidden_task_leaves_every_kept_page_at_once():
    squad, cmrc = make_task("expmrc-squad"), make_task("expmrc-cmrc2018")
    alice = make_user("alice")
    for task in (squad, cmrc):
        seed(task, 2, alice)
    a, b = Submission.objects.filter(task=cmrc).order_by("pk")
    client = Client()
    for path in (f"/submissions/{a.pk}/", f"/compare/?a={a.pk}&b={b.pk}", "/benchmarks/expmrc/"):
        kept_answer(client, path)
    # A bulk update sends no signal: the stored average still has the task, as it does between
    # hiding a task and the worker computing the average again.
    Task.objects.filter(pk=cmrc.pk).update(visibility=Visibility.HIDDEN)
    assert client.get(f"/submissions/{a.pk}/").status_code == 404
    assert client.get(f"/compare/?a={a.pk}&b={b.pk}").status_code == 400
    page = client.get("/benchmarks/expmrc/").content.decode()
    assert "expmrc-cmrc2018" not in page and "CMRC" not in page.split("<table")[-1]


@pytest.fixture
def phase_task(tmp_path):
    return make_task_from_gold(tmp_path, synthetic_span_gold(N_QUESTIONS))


def test_the_private_part_shows_in_no_kept_page_before_the_reveal(phase_task):
    task = phase_task
    phase = add_phase(task, private_share=0.5, split_seed=3)
    mask = phases.private_mask(phase, task.current_test_set(), N_QUESTIONS)
    public = {i for i in range(N_QUESTIONS) if not mask[i]}
    # Right on every public question and wrong on every private one: 100 before the reveal, 50 after.
    mine = upload(make_user(), task, answers(public)).json()["id"]
    other = upload(make_user("bob"), task, answers(set(range(N_QUESTIONS))), name="Perfect").json()["id"]
    assert claim_and_score(mine) == Status.SCORED and claim_and_score(other) == Status.SCORED
    pages = [f"/submissions/{mine}/", f"/compare/?a={mine}&b={other}", f"/tasks/{task.slug}/leaderboard.csv"]
    client = Client()
    for path in pages:
        text = kept_answer(client, path)
        assert "50.000" not in text, path  # the whole test set's score
        assert "100.000" in text, path

    assert close(phase) == {"closed": 1, "revealed": 2}
    assert all("50.000" in kept_answer(client, path) for path in pages)


def counted_permutation_tests(monkeypatch):
    """Every sign-flip permutation test run from now on, counted (the test itself still runs)."""
    runs = []
    real = stats._sign_flip_p

    def counted(*args, **kwargs):
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(stats, "_sign_flip_p", counted)
    return runs


def test_the_compare_page_reads_the_boards_paired_test(monkeypatch):
    squad = make_task("expmrc-squad")
    seed(squad, 3, make_user("alice"))
    Client().get("/tasks/expmrc-squad/")  # the board, its tiers and their paired tests stored
    best, second = [row["submission_id"] for row in
                    Client().get("/api/v1/tasks/expmrc-squad/leaderboard/").json()["results"][:2]]
    stored = PairTest.objects.filter(task=squad).count()
    assert stored
    runs = counted_permutation_tests(monkeypatch)
    page = Client().get(f"/compare/?a={best}&b={second}")
    api = Client().get(f"/api/v1/compare/?a={best}&b={second}").json()
    assert page.status_code == 200 and api["paired"]["applicable"]
    assert runs == []  # read, not run
    expected = stats.paired_test(*[[row[2] for row in Submission.objects.get(pk=pk).item_scores]
                                   for pk in (best, second)], n_resamples=50, seed=0)
    assert api["paired"]["p_value"] == expected


def test_a_pair_the_board_did_not_test_is_tested_once(monkeypatch):
    squad = make_task("expmrc-squad")
    seed(squad, 3, make_user("alice"))
    Client().get("/tasks/expmrc-squad/")
    PairTest.objects.all().delete()  # as for two entries the tiers never put side by side
    a, b = Submission.objects.filter(task=squad).order_by("pk")[:2]
    runs = counted_permutation_tests(monkeypatch)
    first = Client().get(f"/api/v1/compare/?a={a.pk}&b={b.pk}").json()["paired"]["p_value"]
    assert len(runs) == 1 and PairTest.objects.count() == 1
    again = Client().get(f"/api/v1/compare/?a={b.pk}&b={a.pk}").json()["paired"]["p_value"]
    assert len(runs) == 1 and again == first
