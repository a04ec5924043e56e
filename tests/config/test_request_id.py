"""Request ids (config/request_id.py): on every answer and on every log line of its request,
including the line Django writes after the middleware returned; LOG_FORMAT=json."""
import json
import logging
import runpy

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from config.request_id import HEADER, NO_REQUEST, JsonFormatter, RequestIdFilter, current_request_id

pytestmark = pytest.mark.django_db


def test_a_new_id_on_every_answer():
    first, second = Client().get("/api/v1/tasks/"), Client().get("/api/v1/tasks/")
    assert len(first[HEADER]) == 32 and first[HEADER] != second[HEADER]


@pytest.mark.parametrize("given, kept", [("req-42.a:b_c", True), ("x" * 128, True), ("x" * 129, False),
                                         ("two\nlines", False), ("a b", False), ("", False)])
def test_a_given_id_is_kept_only_when_it_is_a_plain_token(given, kept):
    answer = Client(HTTP_X_REQUEST_ID=given).get("/api/v1/tasks/")
    assert (answer[HEADER] == given) is kept
    assert "\n" not in answer[HEADER]


def test_every_log_line_of_a_request_carries_its_id(console):
    answer = Client(HTTP_X_REQUEST_ID="trace-7f3a").get("/api/v1/no-such-endpoint/")
    assert answer.status_code == 404
    # django.request logs the 404 after the middleware chain has returned.
    lines = [line for line in console.getvalue().splitlines() if "Not Found" in line]
    assert lines and all("[trace-7f3a]" in line for line in lines)
    logging.getLogger("after").warning("between requests")
    assert f"[{NO_REQUEST}]: between requests" in console.getvalue()
    assert current_request_id.get() == NO_REQUEST


def test_the_json_format_is_one_object_per_line_with_the_id():
    record = logging.LogRecord("submissions.runs", logging.ERROR, __file__, 1, "submission %s failed", (12,), None)
    RequestIdFilter().filter(record)
    token = current_request_id.set("abc")
    try:
        RequestIdFilter().filter(record)
    finally:
        current_request_id.reset(token)
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "submission 12 failed" and entry["request_id"] == "abc"
    assert entry["level"] == "ERROR" and entry["logger"] == "submissions.runs" and entry["time"].endswith("+00:00")


def test_log_format_json_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.setenv("LOG_FORMAT", "json")
    configured = runpy.run_path(str(django_settings.BASE_DIR / "config" / "settings.py"))["LOGGING"]
    handler = configured["handlers"]["console"]
    assert handler["formatter"] == "json" and handler["filters"] == ["request_id"]
    assert configured["formatters"]["json"]["()"] == "config.request_id.JsonFormatter"
    monkeypatch.setenv("LOG_FORMAT", "xml")
    with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT"):
        runpy.run_path(str(django_settings.BASE_DIR / "config" / "settings.py"))
