"""The client speaks /api/v1/ only: a whole session (login, tasks, inputs, submit and wait,
status, list, quota, leaderboards, publish, cancel, diagnostics, compare) against a stand-in
server that answers the /api/v1/ paths and answers the deprecated unversioned ones as the real
server does (same body, a ``Deprecation`` header), recording every request."""
import json
import re
from urllib.parse import urlsplit

import pytest

from expbench_client.cli import main
from expbench_client.client import API_PREFIX, api_path
from tests.expbench_client.local_server import JsonHandler, page, serve

TASKS = [{"slug": "expmrc-squad", "kind": "span", "name": "SQuAD", "primary_metric": "overall_f1",
          "accepts_submissions": True, "test_set": {"n_items": 3}}]
SCORED = {"id": 7, "task": "expmrc-squad", "method_name": "Mine", "status": "scored", "public": False,
          "scores": {"overall_f1": 71.69}, "created_at": "2026-11-24T00:20:00Z"}
BOARD = {"task": "expmrc-squad", "primary_metric": "overall_f1", "test_set_version": "v1", "sort": "rank",
         "order": "desc", "rows": [{"rank": 1, "method": "Mine", "team": "Lab", "reported": False,
                                    "scores": {"overall_f1": 71.69}}]}
COMPARE = {"a": {"id": 7, "task": "expmrc-squad"}, "b": {"id": 8, "task": "expmrc-squad"}, "metrics": [],
           "paired": {}}

# (method, path under the API prefix) -> the answer's status and body
ROUTES = [
    ("POST", r"auth/token/", lambda q: (200, {"token": "t0k3n"})),
    ("GET", r"tasks/", lambda q: (200, page(TASKS, "/api/v1/tasks/", q))),
    ("GET", r"benchmarks/", lambda q: (200, page([{"slug": "expmrc", "name": "ExpMRC", "tasks": ["expmrc-squad"]}],
                                                 "/api/v1/benchmarks/", q))),
    ("GET", r"submissions/", lambda q: (200, page([SCORED], "/api/v1/submissions/", q))),
    ("GET", r"tasks/expmrc-squad/inputs/", lambda q: (200, {"items": []})),
    ("POST", r"tasks/expmrc-squad/submissions/", lambda q: (201, {**SCORED, "status": "queued"})),
    ("GET", r"tasks/expmrc-squad/quota/", lambda q: (200, {"limit": 5, "used": 1, "remaining": 4,
                                                          "resets_at": "2026-11-25T00:00:00Z"})),
    ("GET", r"submissions/7/", lambda q: (200, SCORED)),
    ("PATCH", r"submissions/7/", lambda q: (200, {**SCORED, "public": True})),
    ("POST", r"submissions/7/cancel/", lambda q: (200, {**SCORED, "status": "cancelled"})),
    ("GET", r"submissions/7/diagnostics/", lambda q: (200, {"id": 7, "status": "none", "diagnostics": {}})),
    ("GET", r"compare/", lambda q: (200, COMPARE)),
    ("GET", r"tasks/expmrc-squad/leaderboard/", lambda q: (200, page(BOARD["rows"], "/api/v1/tasks/expmrc-squad/"
                                                                    "leaderboard/", q, key="rows", **BOARD))),
    ("GET", r"benchmarks/expmrc/leaderboard/", lambda q: (200, {"tasks": ["expmrc-squad"], "rows": []})),
]


class ApiServer(JsonHandler):
    """Answers ROUTES under /api/v1/, and under /api/ as deprecated aliases that say so."""

    seen: list = []

    def route(self, method):
        path = urlsplit(self.path).path
        type(self).seen.append((method, self.path))
        if method in ("POST", "PATCH"):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        match = re.fullmatch(r"/api/(v1/)?(.*)", path)
        for verb, pattern, answer in ROUTES:
            if match and verb == method and re.fullmatch(pattern, match.group(2)):
                status, body = answer(self.query())
                legacy = {} if match.group(1) else {"Deprecation": "@1795478400",
                                                    "Link": f'</api/v1/{match.group(2)}>; rel="successor-version"'}
                return self.answer(status, body, legacy)
        return self.answer(404, {"type": "about:blank", "title": "Not Found", "status": 404, "detail": "Not found."})

    def do_GET(self):  # noqa: N802  # the name http.server calls
        self.route("GET")

    def do_POST(self):  # noqa: N802
        self.route("POST")

    def do_PATCH(self):  # noqa: N802
        self.route("PATCH")


@pytest.fixture
def server(tmp_path, monkeypatch):
    for name in ("EXPBENCH_URL", "EXPBENCH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("EXPBENCH_PASSWORD", "secret")
    ApiServer.seen = []
    with serve(ApiServer) as url:
        yield url


def test_api_path_quotes_each_segment_under_the_v1_prefix():
    assert API_PREFIX == "/api/v1/"
    assert api_path("tasks") == "/api/v1/tasks/"
    assert api_path("tasks", "a/b", "quota") == "/api/v1/tasks/a%2Fb/quota/"
    assert api_path("submissions", 12, "cancel") == "/api/v1/submissions/12/cancel/"


def test_a_whole_session_calls_only_v1_paths(server, tmp_path, capsys):
    predictions = tmp_path / "p.json"
    predictions.write_text("{}")
    session = [
        ["login", "alice"], ["tasks"], ["benchmarks"], ["inputs", "expmrc-squad", "-o", str(tmp_path / "in.json")],
        ["submit", "expmrc-squad", str(predictions), "--method", "Mine", "--wait"], ["status", "7"], ["list"],
        ["quota", "expmrc-squad"], ["leaderboard", "expmrc-squad"], ["leaderboard", "--benchmark", "expmrc"],
        ["publish", "7"], ["cancel", "7"], ["diagnostics", "7"], ["compare", "7", "8"],
    ]
    for command in session:
        assert main(["--url", server, *command]) == 0, (command, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert "logged in to" in out and "submitted #7 to expmrc-squad" in out and "Mine" in out
    assert json.loads((tmp_path / "config.json").read_text())["token"] == "t0k3n"
    methods = {method for method, _ in ApiServer.seen}
    assert methods == {"GET", "POST", "PATCH"} and len(ApiServer.seen) >= len(session)
    outside = [(method, path) for method, path in ApiServer.seen if not path.startswith("/api/v1/")]
    assert outside == []


def test_lists_are_asked_for_in_the_largest_pages(server, capsys):
    assert main(["--url", server, "--token", "t0k3n", "list"]) == 0, capsys.readouterr().err
    assert ("GET", "/api/v1/submissions/?limit=1000") in ApiServer.seen
    assert ("GET", "/api/v1/tasks/?limit=1000") in ApiServer.seen  # the SCORE column's primary metrics


def test_the_stand_in_answers_deprecated_paths_as_the_server_does(server):
    """The check above would pass vacuously if the stand-in failed the old paths: it does not."""
    from expbench_client.client import Client

    response = Client(server).call("GET", "/api/tasks/")
    assert response.ok and response.body["results"] == TASKS
    assert response.headers["Deprecation"] == "@1795478400"
