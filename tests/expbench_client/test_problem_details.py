"""The client against the /api/v1/ conventions: lists read to their last page, problem details
(RFC 9457) turned into one line and an exit code, the older ``error`` member still read."""
from urllib.parse import parse_qs, urlsplit

import pytest

from expbench_client.client import Client
from expbench_client.errors import ExitCode, Subject, describe_body, error_for_status
from tests.expbench_client.local_server import JsonHandler, serve

ITEMS = [{"id": n} for n in range(1, 8)]


class PagedList(JsonHandler):
    """GET /base/api/v1/items/: ITEMS in pages of 3 whose ``next`` names the server as
    https://public.example (what a server behind a proxy may say); page 3 of /broken/ is a 500."""

    seen: list = []

    def do_GET(self):  # noqa: N802  # the name http.server calls
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        type(self).seen.append((self.path, self.headers.get("Authorization")))
        limit, offset = int(query.get("limit", 3)), int(query.get("offset", 0))
        if url.path.endswith("/broken/") and offset >= 6:
            return self.answer(500, {"type": "about:blank", "title": "Internal Server Error", "status": 500,
                                     "detail": "The server failed on this request."})
        following = offset + limit
        body = {"count": len(ITEMS), "previous": None, "results": ITEMS[offset:following],
                "next": f"https://public.example{url.path}?limit={limit}&offset={following}"
                if following < len(ITEMS) else None}
        self.answer(200, body)


@pytest.fixture
def server():
    PagedList.seen = []
    with serve(PagedList) as url:
        yield f"{url}/base"


def test_a_paged_list_is_read_to_its_last_page_on_the_same_server(server):
    response = Client(server, token="secret-token").call("GET", "/api/v1/items/")
    assert response.status == 200
    assert response.body == {"count": 7, "next": None, "previous": None, "results": ITEMS}
    # The links named another host: every page still went to this server, with the token.
    assert [path for path, _ in PagedList.seen] == [
        "/base/api/v1/items/", "/base/api/v1/items/?limit=3&offset=3", "/base/api/v1/items/?limit=3&offset=6"]
    assert {auth for _, auth in PagedList.seen} == {"Token secret-token"}


def test_asking_for_one_page_gets_one_page(server):
    response = Client(server).call("GET", "/api/v1/items/", query={"limit": 2})
    assert [item["id"] for item in response.body["results"]] == [1, 2] and response.body["next"]
    assert len(PagedList.seen) == 1


def test_an_error_on_a_later_page_is_the_answer(server):
    response = Client(server, retries=0).call("GET", "/api/v1/broken/")
    assert response.status == 500 and response.body["detail"] == "The server failed on this request."


PROBLEM_404 = {"type": "about:blank", "title": "Not Found", "status": 404,
               "detail": "Task expmrc-squad has no test set yet."}


@pytest.mark.parametrize("body, line", [
    (PROBLEM_404, "Task expmrc-squad has no test set yet."),
    ({**PROBLEM_404, "error": "Task expmrc-squad has no test set yet."}, "Task expmrc-squad has no test set yet."),
    ({"type": "/api/v1/problems/validation-error/", "title": "Invalid request", "status": 400,
      "detail": "method_name: This field is required.",
      "errors": [{"field": "method_name", "detail": "This field is required."}]},
     "method_name: This field is required."),
    ({"error": "Daily limit reached"}, "Daily limit reached"),  # a server from before problem details
])
def test_problem_details_become_one_line(body, line):
    assert describe_body(body) == line


def error(status, body):
    return error_for_status(status, body, {}, url="http://x", subject=Subject("task 'x'", "list them"),
                            token_source=None, prog="expbench")


def test_a_rejected_upload_is_a_failure_naming_the_submission():
    body = {"type": "/api/v1/problems/submission-rejected/", "title": "Submission rejected", "status": 400,
            "detail": "Line 1: not JSON.", "submission_id": 41, "category": "invalid_input"}
    refused = error(400, body)
    assert refused.code == ExitCode.FAILED
    assert str(refused) == "rejected: Line 1: not JSON. (submission #41, invalid_input)"
    assert error(400, {**body, "type": "/api/v1/problems/validation-error/"}).code == ExitCode.USAGE


def test_a_generic_404_names_what_was_asked_and_a_specific_one_is_kept():
    generic = {**PROBLEM_404, "detail": "No Task matches the given query."}
    assert str(error(404, generic)) == "error: task 'x' not found at http://x; list them"
    assert "has no test set yet" in str(error(404, PROBLEM_404))


def test_a_quota_problem_says_when_to_retry():
    body = {"type": "/api/v1/problems/quota-exceeded/", "title": "Daily submission quota reached", "status": 429,
            "detail": "Daily limit reached", "limit": 5, "used": 5, "remaining": 0,
            "resets_at": "2026-11-25T00:00:00Z"}
    refused = error_for_status(429, body, {"Retry-After": "60"}, url="http://x", subject=Subject(task="t"),
                               token_source=None, prog="expbench")
    assert refused.code == ExitCode.QUOTA and "5 of 5 used" in str(refused) and "retry after 1 min" in str(refused)
