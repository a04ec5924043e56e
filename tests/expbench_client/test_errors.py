"""Every error answer becomes one line with its exit code."""
from datetime import datetime, timezone

import pytest

from expbench_client.errors import (
    CliError,
    ExitCode,
    Subject,
    describe_body,
    error_for_status,
    format_duration,
    quota_message,
    retry_hint,
    unreachable_message,
)

NOW = datetime(2026, 11, 24, 16, 48, tzinfo=timezone.utc)
URL = "http://127.0.0.1:8000"


@pytest.mark.parametrize("body, line", [
    ({"error": "Task x has no test set yet."}, "Task x has no test set yet."),
    ({"detail": "Invalid token."}, "Invalid token."),
    ({"method_name": ["This field is required."], "url": ["Enter a valid URL."]},
     "method_name: This field is required.; url: Enter a valid URL."),
    ({"non_field_errors": ["Unable to log in with provided credentials."]}, "Unable to log in with provided credentials."),
    ({"error": "two\nlines"}, "two lines"),
    (["first", "second"], "first; second"),
    ("<html><body><h1>Bad Gateway</h1></body></html>", "Bad Gateway"),
    (None, ""),
])
def test_describe_body_reduces_every_shape_to_one_line(body, line):
    assert describe_body(body) == line


@pytest.mark.parametrize("seconds, text", [
    (0, "0 s"), (42, "42 s"), (59.2, "1 min"), (60, "1 min"), (61, "2 min"), (3600, "1 h"),
    (7 * 3600 + 12 * 60, "7 h 12 min"), (7 * 3600 + 11 * 60 + 1, "7 h 12 min"), (2 * 3600 - 1, "2 h"),
])
def test_durations_round_up(seconds, text):
    assert format_duration(seconds) == text


def test_quota_message_says_when_to_retry():
    body = {"error": "Daily limit reached", "limit": 5, "used": 5, "remaining": 0, "resets_at": "2026-11-25T00:00:00Z"}
    assert quota_message(body, "expmrc-squad", "25920", NOW) == (
        "daily quota reached for expmrc-squad (5 of 5 used); retry after 7 h 12 min (at 2026-11-25 00:00 UTC)")
    # Without the header the wait is worked out from resets_at.
    assert quota_message(body, "expmrc-squad", None, NOW).endswith("retry after 7 h 12 min (at 2026-11-25 00:00 UTC)")


def test_retry_hint_from_header_alone_and_from_nothing():
    assert retry_hint("12", None, NOW) == "retry after 12 s"
    assert retry_hint(None, None, NOW) == ""


def error(status, body=None, headers=None, subject=None, token_source="EXPBENCH_TOKEN"):
    return error_for_status(status, body, headers or {}, url=URL, subject=subject or Subject(), prog="expbench",
                            token_source=token_source, now=NOW)


def test_status_codes_map_to_documented_exit_codes():
    assert error(401, {"detail": "Invalid token."}).code == ExitCode.AUTH
    assert error(403, {"detail": "no"}).code == ExitCode.AUTH
    assert error(404, {"detail": "No Task matches the given query."}).code == ExitCode.NOT_FOUND
    assert error(429, {"detail": "throttled"}, {"Retry-After": "3"}).code == ExitCode.QUOTA
    assert error(409, {"error": "Only queued submissions can be cancelled"}).code == ExitCode.FAILED
    assert error(400, {"url": ["Enter a valid URL."]}).code == ExitCode.USAGE
    assert error(500, "<h1>Server Error (500)</h1>").code == ExitCode.SERVER
    assert error(502, None).code == ExitCode.SERVER


def test_401_names_the_token_source_and_how_to_log_in():
    message = str(error(401, {"detail": "Invalid token."}))
    assert message.startswith("error: not authenticated: the server refused the token from EXPBENCH_TOKEN")
    assert "expbench login USERNAME" in message
    assert "needs an API token" in str(error(401, {"detail": "x"}, token_source=None))


def test_404_names_what_was_not_found_unless_the_server_says_more():
    subject = Subject("task 'nope'", "list the tasks with: expbench tasks", task="nope")
    assert str(error(404, {"detail": "No Task matches the given query."}, subject=subject)) == (
        f"error: task 'nope' not found at {URL}; list the tasks with: expbench tasks")
    assert "has no test set yet" in str(error(404, {"error": "Task t has no test set yet."}, subject=subject))


def test_throttle_says_when_to_retry():
    throttled = error(429, {"detail": "Request was throttled. Expected available in 12 seconds."}, {"Retry-After": "12"})
    assert str(throttled) == "error: too many requests (the server's rate limit); retry after 12 s"


def test_5xx_names_the_status():
    assert str(error(503, {"error": "Code submissions are disabled"})) == (
        f"error: the server at {URL} answered HTTP 503: Code submissions are disabled")


def test_cli_error_is_always_one_line():
    assert str(CliError(ExitCode.SERVER, "a\nb\n")) == "error: a b"
    assert str(CliError(ExitCode.FAILED, "bad file", prefix="rejected")) == "rejected: bad file"
    assert "\n" not in unreachable_message(URL, "connection refused")
