"""Bodies over their address's limit are refused with 413 from Content-Length alone, before a
byte of them is read (config/body_limits.py): the API with a problem document, the web upload
form with a page; a task that takes models takes bundles up to its own limit."""
import io
import json

import pytest
from django.core.handlers.wsgi import WSGIHandler

from benchmark.models import Task
from config.body_limits import UPLOAD_FORM_OVERHEAD_BYTES, body_limit, limits
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
    task = make_task()
    Task.objects.filter(pk=task.pk).update(kind="checklist")  # takes no models: the file limit applies
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


# --- model bundles ---------------------------------------------------------------------------
def test_a_task_that_takes_models_takes_its_bundle_limit_and_refuses_more_unread(settings):
    task = make_task()  # ExpMRC span: takes models
    Task.objects.filter(pk=task.pk).update(model_max_bytes=HUGE)
    token = token_for(make_user("alice"))
    over = HUGE + UPLOAD_FORM_OVERHEAD_BYTES + 1
    for path in ("/api/v1/tasks/expmrc-squad/submissions/", "/tasks/expmrc-squad/submit/"):
        assert limits(path, over) == (HUGE + UPLOAD_FORM_OVERHEAD_BYTES, HUGE)
    answer = call("/api/v1/tasks/expmrc-squad/submissions/", over, HTTP_AUTHORIZATION=f"Token {token}")
    assert answer["status"].startswith("413")  # and UnreadableBody saw no read
    body = json.loads(answer["body"])
    assert body["limit"] == HUGE + UPLOAD_FORM_OVERHEAD_BYTES and body["size"] == over
    assert f"a model bundle at most {HUGE:,}" in body["detail"]


def test_the_site_default_applies_when_the_task_names_no_bundle_limit(settings):
    make_task()
    settings.MODEL_MAX_BYTES = 2 * 2**30
    assert limits("/api/v1/tasks/expmrc-squad/submissions/", 2 * 2**30) == (
        2 * 2**30 + UPLOAD_FORM_OVERHEAD_BYTES, 2 * 2**30)
    answer = call("/api/v1/tasks/expmrc-squad/submissions/", 3 * 2**30)
    assert answer["status"].startswith("413") and json.loads(answer["body"])["limit"] == 2 * 2**30 + 2**20


def test_a_file_limit_larger_than_the_bundle_limit_still_holds(settings):
    task = make_task()
    Task.objects.filter(pk=task.pk).update(model_max_bytes=1000)
    file_limit = body_limit("/api/v1/tasks/expmrc-squad/submissions/")
    assert limits("/api/v1/tasks/expmrc-squad/submissions/", file_limit + 1) == (file_limit, 1000)


def test_unknown_tasks_kinds_without_models_and_other_addresses_keep_the_normal_limit(settings):
    task = make_task()
    file_limit = settings.SUBMISSION_MAX_BYTES + UPLOAD_FORM_OVERHEAD_BYTES
    assert limits("/api/v1/tasks/no-such-task/submissions/", HUGE) == (file_limit, None)
    assert limits("/api/v1/tasks/expmrc-squad/leaderboard/", HUGE) == (settings.REQUEST_BODY_MAX_BYTES, None)
    Task.objects.filter(pk=task.pk).update(kind="checklist")
    assert limits("/api/v1/tasks/expmrc-squad/submissions/", HUGE) == (file_limit, None)
    assert call("/api/v1/tasks/no-such-task/submissions/", HUGE)["status"].startswith("413")


def test_an_upload_within_the_file_limit_costs_no_query(django_assert_num_queries):
    make_task()
    with django_assert_num_queries(0):
        assert limits("/api/v1/tasks/expmrc-squad/submissions/", 1000)[1] is None
    with django_assert_num_queries(1):
        assert limits("/api/v1/tasks/expmrc-squad/submissions/", HUGE)[1] is not None
