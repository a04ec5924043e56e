"""The lists of /api/v1/ (tasks, benchmarks, your submissions) come in pages: `expbench list`,
`tasks` and `benchmarks` read every page, 1,000 items at a time, and show them all in order."""
import json
from urllib.parse import urlsplit

import pytest

from expbench_client.cli import main
from tests.expbench_client.local_server import JsonHandler, page, serve

SUBMISSIONS = [{"id": n, "task": "expmrc-squad" if n % 3 else "expmrc-race", "method_name": f"run {n}",
                "status": "scored" if n % 2 else "failed", "public": False,
                "scores": {"answer_f1": 99.0, "overall_f1": n / 100},
                "created_at": "2026-11-24T00:20:00Z"} for n in range(2345, 0, -1)]  # newest first
# The two tasks of the submissions come last, on the second page of 1,000.
TASKS = [{"slug": slug, "kind": "span", "name": slug, "primary_metric": "overall_f1", "accepts_submissions": True,
          "test_set": {"n_items": 10}} for slug in [f"task-{n:04d}" for n in range(1, 1199)] + ["expmrc-squad",
                                                                                            "expmrc-race"]]
BENCHMARKS = [{"slug": f"bench-{n}", "name": f"Bench {n}", "tasks": []} for n in range(1, 151)]
LISTS = {"/api/v1/submissions/": SUBMISSIONS, "/api/v1/tasks/": TASKS, "/api/v1/benchmarks/": BENCHMARKS}


class PagedLists(JsonHandler):
    """LISTS in pages of at most 1,000 (100 unless asked); the submissions need a token, and the
    request number in ``throttle_at`` is refused with the API's rate-limit answer."""

    seen: list = []
    throttle_at = None

    def do_GET(self):  # noqa: N802  # the name http.server calls
        type(self).seen.append(self.path)
        path = urlsplit(self.path).path
        if len(self.seen) == self.throttle_at:
            return self.answer(429, {"type": "about:blank", "title": "Too Many Requests", "status": 429,
                                     "detail": "Request was throttled."}, {"Retry-After": "12"})
        if path not in LISTS:
            return self.answer(404, {"type": "about:blank", "title": "Not Found", "status": 404, "detail": "x"})
        if path == "/api/v1/submissions/" and self.headers.get("Authorization") != "Token t0k3n":
            return self.answer(401, {"type": "about:blank", "title": "Unauthorized", "status": 401,
                                     "detail": "Authentication credentials were not provided."})
        self.answer(200, page(LISTS[path], path, self.query()))


@pytest.fixture
def url(tmp_path, monkeypatch):
    for name in ("EXPBENCH_URL", "EXPBENCH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    PagedLists.seen, PagedLists.throttle_at = [], None
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
