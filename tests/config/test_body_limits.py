"""Bodies over their address's limit are refused with 413 from Content-Length alone, before a
byte of them is read (config/body_limits.py): the API with a problem document, the web upload
form with a page."""
import io
import json

import pytest
from django.core.handlers.wsgi import WSGIHandler

from config.body_limits import UPLOAD_FORM_OVERHEAD_BYTES, body_limit
from tests.factories import make_task, make_user, token_for

pytestmark = pytest.mark.django_db

HUGE = 300 * 1024 * 1024


class UnreadableBody(io.RawIOBase):
    """A WSGI input that fails the test if anyone reads it."""

    def readable(self):
        return True

    def read(self, *args):
        raise AssertionError("the body was read")

    readinto = readline = read


def call(path, length, **headers):
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
               "SERVER_NAME": "testserver", "SERVER_PORT": "80", "HTTP_HOST": "testserver",
               "REMOTE_ADDR": "203.0.113.9", "wsgi.url_scheme": "http", "wsgi.input": UnreadableBody(),
               "wsgi.errors": io.StringIO(), "CONTENT_LENGTH": str(length),
               "CONTENT_TYPE": "multipart/form-data; boundary=xyz", **headers}
    answer = {}

    def start_response(status, response_headers, exc_info=None):
        answer["status"], answer["headers"] = status, dict(response_headers)

    answer["body"] = b"".join(WSGIHandler()(environ, start_response))
    return answer


def test_an_api_upload_over_the_limit_is_a_413_problem_without_reading_the_body(settings):
    make_task()
    token = token_for(make_user("alice"))
    answer = call("/api/v1/tasks/expmrc-squad/submissions/", HUGE, HTTP_AUTHORIZATION=f"Token {token}")
    assert answer["status"].startswith("413")
    assert answer["headers"]["Content-Type"] == "application/problem+json"
    body = json.loads(answer["body"])
    assert body["status"] == 413 and body["size"] == HUGE
    assert body["limit"] == settings.SUBMISSION_MAX_BYTES + UPLOAD_FORM_OVERHEAD_BYTES
    assert f"{HUGE:,} bytes" in body["detail"]


def test_the_web_upload_form_answers_a_413_page_without_reading_the_body():
    answer = call("/tasks/expmrc-squad/submit/", HUGE)
    assert answer["status"].startswith("413")
    assert answer["headers"]["Content-Type"].startswith("text/html")
    assert b"Too large" in answer["body"] and f"{HUGE:,}".encode() in answer["body"]


def test_other_addresses_take_much_less(settings):
    settings.REQUEST_BODY_MAX_BYTES = 1000
    answer = call("/api/v1/auth/token/", 1001)
    assert answer["status"].startswith("413")
    assert call("/accounts/login/", 5000)["status"].startswith("413")


def test_limits_follow_the_settings(settings):
    settings.SUBMISSION_MAX_BYTES, settings.CODE_MAX_BYTES, settings.REQUEST_BODY_MAX_BYTES = 2000, 3000, 10
    assert body_limit("/api/v1/tasks/x/submissions/") == 3000 + UPLOAD_FORM_OVERHEAD_BYTES
    assert body_limit("/api/tasks/x/submissions/") == 3000 + UPLOAD_FORM_OVERHEAD_BYTES
    assert body_limit("/tasks/x/submit/") == 3000 + UPLOAD_FORM_OVERHEAD_BYTES
    assert body_limit("/api/v1/submissions/4/") == 10


def test_a_body_within_the_limit_is_read_as_usual(client):
    make_user("alice")
    response = client.post("/api/v1/auth/token/", {"username": "alice", "password": "correct-horse-42"},
                           content_type="application/json")
    assert response.status_code == 200
