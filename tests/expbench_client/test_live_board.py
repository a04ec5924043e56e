"""The client's board reading against the real server (Django's WSGI application in a thread): pages
cut small so that a board of 23 rows takes 4, the ETag check of the first page, and a board that
gains an entry while it is read. tests/integration/test_cli_client.py runs every command against
the whole stack (gunicorn and workers)."""
import json
import random
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from django.core.wsgi import get_wsgi_application
from django.test import Client as DjangoClient

from expbench_client.cli import main
from expbench_client.client import Client
from tests.factories import make_task, make_user
from tests.leaderboards.test_board_order import seed_varied
from tests.leaderboards.test_board_store import seed

from .local_server import running

SLUG = "expmrc-squad"


@pytest.fixture
def board(settings, transactional_db, tmp_path, monkeypatch):
    settings.TIER_RESAMPLES = 20
    settings.ALLOWED_HOSTS = ["127.0.0.1", "testserver"]  # the thread's server; Django's test client
    settings.API_MAX_PAGE_SIZE = 7  # the client asks for 1,000 a page: the server cuts it to 7
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    for name in ("EXPBENCH_URL", "EXPBENCH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    task = make_task(SLUG)
    seed_varied(task, 20, random.Random(11))  # 20 entries, a human row and two reported baselines
    return task


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server_url(board):
    """The server's base URL while Django answers on localhost. (pytest-django's live_server
    fails every request here: its static-files wrapper does not take this project's settings.)"""
    with running(make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=QuietHandler)) as url:
        yield url


class Recording(Client):
    """Notes the status of every answer; ``after_first_page`` runs once, after the first one."""

    def __init__(self, *args, after_first_page=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.statuses, self.after_first_page = [], after_first_page

    def read_all(self, answer):
        response = super().read_all(answer)
        self.statuses.append(response.status)
        if self.after_first_page:
            self.after_first_page, hook = None, self.after_first_page
            hook()
        return response


def whole_board():
    """The board as the deprecated unversioned path answers it: every row in one answer."""
    return DjangoClient().get(f"/api/tasks/{SLUG}/leaderboard/").json()


def test_the_pages_make_the_board_the_deprecated_path_answered(board, server_url):
    client = Recording(server_url)
    response = client.board(SLUG)
    assert response.status == 200 and len(response.body["rows"]) == 23
    assert response.body == whole_board()
    assert client.statuses == [200, 200, 200, 200, 304]  # 4 pages of 7, then the first one's ETag still holds


def test_an_entry_scored_while_the_board_is_read_is_not_mixed_in(board, server_url):
    client = Recording(server_url, after_first_page=lambda: seed(board, 21, make_user("bob")))
    response = client.board(SLUG)
    assert len(response.body["rows"]) == 24 == response.body["count"]
    assert response.body == whole_board()
    # Page 2 showed another version of the board: read again, 4 pages, then the check of page 1.
    assert client.statuses == [200, 200, 200, 200, 200, 200, 304]


def test_the_command_sorts_through_the_server(board, server_url, capsys):
    assert main(["--url", server_url, "leaderboard", SLUG, "--sort", "system", "--order", "asc", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = DjangoClient().get(f"/api/tasks/{SLUG}/leaderboard/?sort=system&order=asc").json()
    assert shown == expected and len(shown["rows"]) == 23
    assert main(["--url", server_url, "leaderboard", SLUG, "--sort", "nonsense"]) == 2
    assert capsys.readouterr().err.startswith("error: sort: ")


def test_the_average_board_prints_as_the_deprecated_path_answers_it(board, server_url, capsys):
    """The server answers the average board in the envelope of lists (rows under ``results``);
    ``leaderboard --benchmark --json`` prints it as before, under ``rows``."""
    assert "results" in DjangoClient().get("/api/v1/benchmarks/expmrc/leaderboard/").json()
    assert main(["--url", server_url, "leaderboard", "--benchmark", "expmrc", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == DjangoClient().get("/api/benchmarks/expmrc/leaderboard/").json() and shown["rows"]
