"""`expbench leaderboard TASK` reads a board that /api/v1/ answers a page at a time (at most 1,000
rows) and shows it whole, in order; a board that changes between its pages is read again, and
fails with one clear line if it changes again, rather than show a mix of two versions."""
import json
from urllib.parse import urlsplit

import pytest

from expbench_client.cli import main
from expbench_client.client import BoardChanged, Client
from tests.expbench_client.local_server import JsonHandler, page, serve

PATH = "/api/v1/tasks/expmrc-squad/leaderboard/"
SECOND = "Tue, 24 Nov 2026 00:20:{:02d} GMT"


class PagedBoard(JsonHandler):
    """The task board as the server pages it: ``ETag`` per page (it covers the offset and order),
    ``Last-Modified`` per version of the board, a 304 to an ``If-None-Match`` that names the
    current version of the page. ``changes`` maps a request's number (1, 2, ...) to a change of
    the board made just before that request is answered."""

    size = 2500
    version = 1
    modified = 0  # the second the current version was computed in
    changes: dict = {}
    fail: dict = {}  # request number -> (status, body, headers)
    seen: list = []
    items = "rows"  # where a page holds its rows: "results" on a server with the one envelope

    @classmethod
    def reset(cls, size, items="rows"):
        cls.size, cls.version, cls.modified, cls.changes, cls.fail, cls.seen = size, 1, 0, {}, {}, []
        cls.items = items

    @classmethod
    def change(cls, *, grow=0, same_second=False):
        cls.version += 1
        cls.size += grow
        cls.modified += 0 if same_second else 1

    def do_GET(self):  # noqa: N802  # the name http.server calls
        seen = type(self).seen
        seen.append((self.path, self.headers.get("If-None-Match")))
        board = type(self)
        if len(seen) in board.changes:
            board.changes[len(seen)](board)
        if len(seen) in board.fail:
            return self.answer(*board.fail[len(seen)])
        if urlsplit(self.path).path != PATH:
            return self.answer(404, {"type": "about:blank", "title": "Not Found", "status": 404,
                                     "detail": "No Task matches the given query."})
        query = self.query()
        if query.get("sort", "rank") not in ("rank", "system"):
            return self.answer(400, {"type": "/api/v1/problems/validation-error/", "title": "Invalid request",
                                     "status": 400, "detail": "sort: unknown key 'nonsense'",
                                     "errors": [{"field": "sort", "detail": "unknown key 'nonsense'"}]})
        sort, order = query.get("sort", "rank"), query.get("order", "desc")
        limit, offset = min(1000, int(query.get("limit", 100))), int(query.get("offset", 0))
        etag = f'"v{board.version}-{sort}-{order}-{limit}-{offset}"'
        validators = {"ETag": etag, "Last-Modified": SECOND.format(board.modified)}
        if self.headers.get("If-None-Match") == etag:
            return self.answer(304, None, validators)
        rows = [{"rank": n, "method": f"System {n} (version {board.version})", "team": "Lab", "reported": False,
                 "scores": {"overall_f1": round(100 - n / 100, 2)}} for n in range(1, board.size + 1)]
        if sort == "system":
            rows.sort(key=lambda row: row["method"], reverse=order == "desc")
        body = page(rows, PATH, query, key=board.items, task="expmrc-squad", primary_metric="overall_f1",
                    test_set_version="v1", sort=sort, order=order)
        self.answer(200, body, validators)


@pytest.fixture
def board_url(tmp_path, monkeypatch):
    for name in ("EXPBENCH_URL", "EXPBENCH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    PagedBoard.reset(2500)
    with serve(PagedBoard) as url:
        yield url


def leaderboard_json(url, capsys, *flags):
    code = main(["--url", url, "leaderboard", "expmrc-squad", "--json", *flags])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def asked(seen):
    """(offset, If-None-Match) of each request, in order."""
    return [(int(dict(part.split("=") for part in urlsplit(path).query.split("&"))["offset"])
             if "offset=" in path else 0, condition) for path, condition in seen]


def test_a_board_of_several_pages_comes_out_whole_and_in_order(board_url, capsys):
    board = leaderboard_json(board_url, capsys)
    assert [row["rank"] for row in board["rows"]] == list(range(1, 2501))
    assert {row["method"].split("(")[1] for row in board["rows"]} == {"version 1)"}
    assert (board["count"], board["next"], board["previous"], board["task"]) == (2500, None, None, "expmrc-squad")
    # Three pages of 1,000 from this server (the links named https://public.example), then the
    # first page asked again with its ETag: a 304 says the board did not change meanwhile.
    assert asked(PagedBoard.seen) == [(0, None), (1000, None), (2000, None), (0, '"v1-rank-desc-1000-0"')]
    assert all("limit=1000" in path for path, _ in PagedBoard.seen)


def test_the_table_shows_every_row(board_url, capsys):
    assert main(["--url", board_url, "leaderboard", "expmrc-squad"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("expmrc-squad") and lines[1].split()[:3] == ["RANK", "METHOD", "TEAM"]
    assert [line.split()[0] for line in lines[2:]] == [str(n) for n in range(1, 2501)]


def test_a_board_of_one_page_takes_one_request(board_url, capsys):
    PagedBoard.reset(40)
    assert len(leaderboard_json(board_url, capsys)["rows"]) == 40
    assert len(PagedBoard.seen) == 1


def test_sort_and_order_are_passed_to_every_page(board_url, capsys):
    board = leaderboard_json(board_url, capsys, "--sort", "system", "--order", "asc")
    methods = [row["method"] for row in board["rows"]]
    assert methods == sorted(methods) and len(methods) == 2500
    assert (board["sort"], board["order"]) == ("system", "asc")
    assert all("sort=system" in path and "order=asc" in path for path, _ in PagedBoard.seen)


@pytest.mark.parametrize("change, noticed_at", [
    (lambda board: board.change(), 2),                    # a new Last-Modified on page 2
    (lambda board: board.change(grow=1, same_second=True), 2),  # a new count on page 2
    (lambda board: board.change(same_second=True), 4),    # same count, same second: only the ETag tells
], ids=["recomputed", "grown", "same-second"])
def test_a_board_that_changes_between_pages_is_read_again_from_the_start(board_url, capsys, change, noticed_at):
    PagedBoard.changes = {noticed_at: change}
    board = leaderboard_json(board_url, capsys)
    assert len(board["rows"]) == PagedBoard.size == board["count"]
    assert [row["rank"] for row in board["rows"]] == list(range(1, PagedBoard.size + 1))
    assert {row["method"].split("(")[1] for row in board["rows"]} == {"version 2)"}  # no row of the old one
    restart = asked(PagedBoard.seen).index((0, None), 1)
    assert restart == noticed_at  # the reading stopped at the (1-based) request that showed the change
    assert asked(PagedBoard.seen)[restart:] == [(0, None), (1000, None), (2000, None), (0, '"v2-rank-desc-1000-0"')]


def test_a_board_that_keeps_changing_fails_with_one_line_and_shows_nothing(board_url, capsys):
    PagedBoard.changes = {n: lambda board: board.change() for n in range(2, 20)}
    assert main(["--url", board_url, "leaderboard", "expmrc-squad"]) == 7
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("error: the board of expmrc-squad changed while it was read, twice (new scores are "
                            "arriving); nothing is shown rather than a mix of two versions; try again in a moment\n")
    assert [offset for offset, _ in asked(PagedBoard.seen)] == [0, 1000, 0, 1000]  # two readings, then it stops


def test_the_client_raises_board_changed_for_scripts(board_url):
    PagedBoard.changes = {n: lambda board: board.change() for n in range(2, 20)}
    with pytest.raises(BoardChanged) as caught:
        Client(board_url).board("expmrc-squad")
    assert caught.value.task == "expmrc-squad" and caught.value.reads == 2


def test_a_rate_limit_on_a_later_page_says_when_to_retry(board_url, capsys):
    PagedBoard.fail = {2: (429, {"type": "about:blank", "title": "Too Many Requests", "status": 429,
                                 "detail": "Request was throttled."}, {"Retry-After": "30"})}
    assert main(["--url", board_url, "leaderboard", "expmrc-squad"]) == 6
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "error: too many requests (the server's rate limit); retry after 30 s\n"


def test_a_server_error_on_a_later_page_is_retried(board_url, capsys):
    server_error = (503, {"type": "about:blank", "title": "Service Unavailable", "status": 503, "detail": "busy"})
    PagedBoard.fail = {2: server_error}
    code = main(["--url", board_url, "leaderboard", "expmrc-squad", "--json"])
    assert code == 0 and len(json.loads(capsys.readouterr().out)["rows"]) == 2500
    assert [offset for offset, _ in asked(PagedBoard.seen)][:3] == [0, 1000, 1000]


def test_an_unknown_task_and_a_bad_sort_are_named(board_url, capsys):
    assert main(["--url", board_url, "leaderboard", "no-such-task"]) == 5
    assert "task 'no-such-task' not found" in capsys.readouterr().err
    assert main(["--url", board_url, "leaderboard", "expmrc-squad", "--sort", "nonsense"]) == 2
    assert capsys.readouterr().err == "error: sort: unknown key 'nonsense'\n"


def test_sort_belongs_to_task_boards(capsys):
    assert main(["leaderboard", "--benchmark", "expmrc", "--sort", "rank"]) == 2
    assert "--sort and --order apply to a task's board" in capsys.readouterr().err


def test_a_board_in_the_envelope_of_lists_comes_out_as_before(board_url, capsys):
    """A server whose board pages hold their rows under ``results`` (the envelope of every list):
    each page is asked for once, as its link says (never read on to the end by the list reader),
    and the board comes out under ``rows``, as ``--json`` always printed it."""
    PagedBoard.reset(2500, items="results")
    board = leaderboard_json(board_url, capsys)
    assert [row["rank"] for row in board["rows"]] == list(range(1, 2501)) and "results" not in board
    assert [offset for offset, _ in asked(PagedBoard.seen)] == [0, 1000, 2000, 0]
