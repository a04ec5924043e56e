"""The lists of /api/v1/ (tasks, benchmarks, your submissions) come in pages: `expbench list`,
`tasks` and `benchmarks` read every page, 1,000 items at a time, and show them all in order. A
list that changes between its pages (its offsets shift) is read again, and fails with one clear
line if it changes again, rather than show an item twice or miss one."""
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from expbench_client.cli import main
from expbench_client.client import Client, ListChanged
from tests.expbench_client.local_server import JsonHandler, page, serve


def submission(n):
    return {"id": n, "task": "expmrc-squad" if n % 3 else "expmrc-race", "method_name": f"run {n}",
            "status": "scored" if n % 2 else "failed", "public": False,
            "scores": {"answer_f1": 99.0, "overall_f1": n / 100}, "created_at": "2026-11-24T00:20:00Z"}


SUBMISSIONS = [submission(n) for n in range(2345, 0, -1)]  # newest first
# The two tasks of the submissions come last, on the second page of 1,000.
TASKS = [{"slug": slug, "kind": "span", "name": slug, "primary_metric": "overall_f1", "accepts_submissions": True,
          "test_set": {"n_items": 10}} for slug in [f"task-{n:04d}" for n in range(1, 1199)] + ["expmrc-squad",
                                                                                            "expmrc-race"]]
BENCHMARKS = [{"slug": f"bench-{n}", "name": f"Bench {n}", "tasks": []} for n in range(1, 151)]
LISTS = {"/api/v1/submissions/": SUBMISSIONS, "/api/v1/tasks/": TASKS, "/api/v1/benchmarks/": BENCHMARKS}


class PagedLists(JsonHandler):
    """LISTS in pages of at most 1,000 (100 unless asked); the submissions need a token, and the
    request number in ``throttle_at`` is refused with the API's rate-limit answer. ``lists`` is
    this test's copy of LISTS; ``changes`` maps a request's number (1, 2, ...) to a change of it
    made just before that request is answered."""

    seen: list = []
    throttle_at = None
    lists: dict = {}
    changes: dict = {}

    def do_GET(self):  # noqa: N802  # the name http.server calls
        type(self).seen.append(self.path)
        if len(self.seen) in self.changes:
            self.changes[len(self.seen)](self.lists)
        path = urlsplit(self.path).path
        if len(self.seen) == self.throttle_at:
            return self.answer(429, {"type": "about:blank", "title": "Too Many Requests", "status": 429,
                                     "detail": "Request was throttled."}, {"Retry-After": "12"})
        if path not in self.lists:
            return self.answer(404, {"type": "about:blank", "title": "Not Found", "status": 404, "detail": "x"})
        if path == "/api/v1/submissions/" and self.headers.get("Authorization") != "Token t0k3n":
            return self.answer(401, {"type": "about:blank", "title": "Unauthorized", "status": 401,
                                     "detail": "Authentication credentials were not provided."})
        self.answer(200, page(self.lists[path], path, self.query()))


@pytest.fixture
def url(tmp_path, monkeypatch):
    for name in ("EXPBENCH_URL", "EXPBENCH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    PagedLists.seen, PagedLists.throttle_at, PagedLists.changes = [], None, {}
    PagedLists.lists = {path: list(items) for path, items in LISTS.items()}
    with serve(PagedLists) as base:
        yield base


def run_json(url, capsys, *command):
    code = main(["--url", url, "--token", "t0k3n", *command, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_every_submission_of_three_pages_is_listed_in_order(url, capsys):
    mine = run_json(url, capsys, "list")
    assert [s["id"] for s in mine] == list(range(2345, 0, -1))
    assert PagedLists.seen == ["/api/v1/submissions/?limit=1000", "/api/v1/submissions/?limit=1000&offset=1000",
                               "/api/v1/submissions/?limit=1000&offset=2000"]


def test_filters_apply_to_every_page(url, capsys):
    chosen = run_json(url, capsys, "list", "--task", "expmrc-race", "--status", "scored")
    assert [s["id"] for s in chosen] == [n for n in range(2345, 0, -1) if n % 3 == 0 and n % 2]


def test_the_table_has_a_line_per_submission_with_its_score(url, capsys):
    assert main(["--url", url, "--token", "t0k3n", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 2345 and lines[1].split()[0] == "2345" and lines[-1].split()[0] == "1"
    # The SCORE column is the primary metric, which the task list's second page gives.
    assert lines[-1].split()[-2:] == ["0.010", "2026-11-24"] and lines[1].split()[-2] == "23.450"


def test_tasks_and_benchmarks_are_listed_whole(url, capsys):
    # --json prints the items, as it did when the unversioned paths answered whole lists.
    assert run_json(url, capsys, "tasks") == TASKS
    assert run_json(url, capsys, "benchmarks") == BENCHMARKS
    assert main(["--url", url, "tasks"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 1200


def test_a_rate_limit_on_a_later_page_is_the_answer(url, capsys):
    PagedLists.throttle_at = 2
    assert main(["--url", url, "--token", "t0k3n", "list"]) == 6
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "error: too many requests (the server's rate limit); retry after 12 s\n"


def test_without_a_token_the_list_asks_for_one(url, capsys):
    assert main(["--url", url, "list"]) == 2
    assert "no API token" in capsys.readouterr().err
    assert PagedLists.seen == []


MINE = "/api/v1/submissions/"


def a_submission_arrives(lists):
    """A new submission, first in the newest-first list: every later offset shifts by one."""
    lists[MINE].insert(0, submission(lists[MINE][0]["id"] + 1))


def one_arrives_and_the_oldest_goes(lists):
    """The count stays the same; only the item repeated across pages shows the change."""
    a_submission_arrives(lists)
    lists[MINE].pop()


def the_newest_goes(lists):
    """Every later offset shifts the other way: an item would be skipped."""
    lists[MINE].pop(0)


def offsets(seen):
    """The offset each request asked for, in order."""
    return [int(parse_qs(urlsplit(path).query).get("offset", ["0"])[-1]) for path in seen]


@pytest.mark.parametrize("change", [a_submission_arrives, one_arrives_and_the_oldest_goes, the_newest_goes])
def test_a_list_that_changes_between_pages_is_read_again_whole(url, capsys, change):
    PagedLists.changes = {2: change}  # after the first page was read
    mine = run_json(url, capsys, "list")
    expected = [s["id"] for s in PagedLists.lists[MINE]]
    assert [s["id"] for s in mine] == expected and len(set(expected)) == len(expected)
    assert expected != [s["id"] for s in SUBMISSIONS]  # the list did change
    # The second page showed the change; the reading started again from the first page.
    assert offsets(PagedLists.seen) == [0, 1000, 0, 1000, 2000]


def test_a_list_that_changes_on_both_readings_fails_with_one_line_and_shows_nothing(url, capsys):
    PagedLists.changes = {n: a_submission_arrives for n in range(2, 20)}
    assert main(["--url", url, "--token", "t0k3n", "list"]) == 7
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("error: the list /api/v1/submissions/ changed while it was read, twice (items were "
                            "added or removed); nothing is shown rather than a list with items twice or missing; "
                            "try again in a moment\n")
    assert offsets(PagedLists.seen) == [0, 1000, 0, 1000]  # two readings, then it stops


def test_the_client_raises_list_changed_for_scripts(url):
    PagedLists.changes = {n: a_submission_arrives for n in range(2, 20)}
    with pytest.raises(ListChanged) as caught:
        Client(url, token="t0k3n").read_list(MINE)
    assert caught.value.path == MINE and caught.value.reads == 2


def test_a_get_of_a_whole_list_is_checked_too(url):
    # call() reads every page of a GET that asks for no page: here 24 of the default 100.
    PagedLists.changes = {5: a_submission_arrives}
    response = Client(url, token="t0k3n").call("GET", MINE, query={"status": "scored"})
    assert [s["id"] for s in response.body["results"]] == list(range(2346, 0, -1))
    assert response.body["count"] == 2346 and response.body["next"] is None
    assert offsets(PagedLists.seen) == [0, 100, 200, 300, 400] + list(range(0, 2346, 100))
    assert all("status=scored" in path for path in PagedLists.seen)


def test_an_unchanged_list_takes_one_request_per_page(url):
    response = Client(url, token="t0k3n").call("GET", MINE)
    assert [s["id"] for s in response.body["results"]] == list(range(2345, 0, -1))
    assert offsets(PagedLists.seen) == list(range(0, 2345, 100))
    assert len(PagedLists.seen) == 24


def test_a_task_list_that_keeps_changing_leaves_the_score_column_empty(url, capsys):
    def a_task_is_added(lists):
        tasks = lists["/api/v1/tasks/"]
        tasks.append({**tasks[0], "slug": f"new-task-{len(tasks)}"})

    # Requests 1-3 read the submissions; from the 5th on, every read of the task list sees a new task.
    PagedLists.changes = {n: a_task_is_added for n in range(5, 20)}
    assert main(["--url", url, "--token", "t0k3n", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 2345 and lines[1].split()[-2] == "-"  # the submissions, without their scores
    assert [urlsplit(path).path for path in PagedLists.seen[3:]] == ["/api/v1/tasks/"] * 4  # two readings
