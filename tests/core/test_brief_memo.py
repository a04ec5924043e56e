"""Page states used again for ``PAGE_STATE_SECONDS`` (core/brief_memo.py): a board read twice
within the window costs one state query; after it, a change (here: the task hidden) shows."""
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from benchmark.models import Visibility
from core.brief_memo import MAX_KEPT, briefly_remembered
from leaderboards.store import board_state
from tests.factories import make_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch, settings):
    settings.PAGE_STATE_SECONDS = 1
    now = [1000.0]
    monkeypatch.setattr("core.brief_memo.time.monotonic", lambda: now[0])
    board_state.forget()
    yield now
    board_state.forget()


def test_a_state_is_read_once_per_window_and_again_after_it(clock):
    task = make_task()
    first = board_state(task.slug)
    with CaptureQueriesContext(connection) as queries:
        assert board_state(task.slug) is first
    assert len(queries) == 0
    task.visibility = Visibility.HIDDEN
    task.save()
    clock[0] += 0.9
    assert board_state(task.slug).visibility == Visibility.PUBLIC  # within the window: as read
    clock[0] += 0.2
    assert board_state(task.slug).visibility == Visibility.HIDDEN


def test_a_hidden_task_leaves_the_pages_within_the_window(clock):
    task = make_task()
    client = Client()
    assert client.get(f"/tasks/{task.slug}/").status_code == 200
    task.visibility = Visibility.HIDDEN
    task.save()
    clock[0] += 1
    assert client.get(f"/tasks/{task.slug}/").status_code == 404
    assert client.get(f"/api/v1/tasks/{task.slug}/leaderboard/").status_code == 404


def test_zero_reads_every_time(settings):
    settings.PAGE_STATE_SECONDS = 0
    task = make_task()
    board_state(task.slug)
    with CaptureQueriesContext(connection) as queries:
        board_state(task.slug)
    assert len(queries) == 1


def test_what_is_kept_is_bounded_and_the_oldest_goes_first(clock, monkeypatch):
    calls = []

    @briefly_remembered
    def square(x):
        calls.append(x)
        return x * x

    for x in range(MAX_KEPT + 10):
        assert square(x) == x * x
    assert square(MAX_KEPT + 9) == (MAX_KEPT + 9) ** 2 and len(calls) == MAX_KEPT + 10  # kept
    assert square(0) == 0 and len(calls) == MAX_KEPT + 11  # dropped: read again
