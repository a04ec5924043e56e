"""Exit codes, and the one-line messages the client prints for every way a command can fail.

Each failure becomes a :class:`CliError`; ``cli.main`` prints it as a single line on stderr and
exits with its code, so a user (or a script) never sees a traceback and can branch on the code.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # the submission was rejected, failed or cancelled; the server refused the action (409, inputs hidden)
    USAGE = 2  # bad usage, a local file or config problem, a value the server found invalid (400), too large (413)
    UNREACHABLE = 3  # connection refused, DNS failure, timeout
    AUTH = 4  # 401/403
    NOT_FOUND = 5  # 404
    QUOTA = 6  # 429: daily quota or rate limit
    SERVER = 7  # 5xx, an answer that is not JSON, an unexpected status, a board or list that kept changing
    TIMEOUT = 8  # --wait gave up; the submission keeps running
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)


EXIT_CODES_HELP = """\
exit codes:
  0    ok
  1    the submission was rejected, failed or cancelled, or the server refused
       the action in its current state (409, e.g. cancel of a finished one),
       or for the task: its test inputs are hidden (inputs, or a prediction file)
  2    bad usage, a local file or config problem, no token, a value the
       server found invalid (400), or a file too large for it (413)
  3    the server cannot be reached (connection refused, DNS failure) or
       did not answer within --timeout
  4    not authenticated or not allowed (401/403): log in again
  5    not found (404): unknown task, submission or benchmark
  6    daily quota or rate limit reached (429): the message says when to retry
  7    server error (5xx, or an answer that is not JSON), or a board or list
       that kept changing while it was read: try again
  8    --wait gave up after --wait-timeout (the submission keeps running)
  130  interrupted (Ctrl-C)"""


class CliError(Exception):
    """A failure reported as one line: ``{prefix}: {message}``, then exit with ``code``."""

    def __init__(self, code: ExitCode, message: str, *, prefix: str = "error") -> None:
        super().__init__(message)
        self.code = code
        self.message = one_line(message)
        self.prefix = prefix

    def __str__(self) -> str:
        return f"{self.prefix}: {self.message}"


def one_line(text: str) -> str:
    """Collapse runs of whitespace (newlines included) so a server message stays on one line."""
    return re.sub(r"\s+", " ", str(text)).strip()


def describe_body(body: Any) -> str:
    """Reduce any error body the server sends to one readable line: a problem document
    (RFC 9457: ``detail``, then ``title``), the older ``{"error": ...}``, DRF field errors
    ``{"field": ["msg", ...]}``, a list, or plain text."""
    if body is None or body == "":
        return ""
    if isinstance(body, str):
        text = re.sub(r"<[^>]+>", " ", body)  # an HTML error page: keep its words, not its markup
        return one_line(text)[:200]
    if isinstance(body, list):
        return "; ".join(filter(None, (describe_body(item) for item in body)))
    if isinstance(body, Mapping):
        if is_problem(body):
            return one_line(body.get("detail") or body.get("title") or "")
        for key in ("detail", "error", "message"):
            if isinstance(body.get(key), str):
                return one_line(body[key])
        parts = []
        for field, value in body.items():
            text = describe_body(value) if isinstance(value, (list, Mapping)) else one_line(str(value))
            parts.append(text if field == "non_field_errors" else f"{field}: {text}")
        return "; ".join(parts)
    return one_line(str(body))


def is_problem(body: Any) -> bool:
    """An RFC 9457 problem document (every error of the /api/v1/ paths)."""
    return isinstance(body, Mapping) and isinstance(body.get("type"), str) and isinstance(body.get("status"), int)


def problem_type(body: Any) -> str:
    """The problem type's name: ``quota-exceeded`` for ``/api/v1/problems/quota-exceeded/``; ''
    for about:blank or a body that is not a problem."""
    if not is_problem(body) or body["type"] == "about:blank":
        return ""
    return body["type"].rstrip("/").rsplit("/", 1)[-1]


# What Django and DRF say for any missing object: naming what was asked says more.
GENERIC_NOT_FOUND = re.compile(r"(No \w+ matches the given query\.|Not found\.)")


def format_duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``7 h 12 min``: rounded up, so "retry after" is never too early."""
    seconds = max(0, math.ceil(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{math.ceil(seconds / 60)} min"
    hours, rest = divmod(seconds, 3600)
    minutes = math.ceil(rest / 60)
    if minutes == 60:
        hours, minutes = hours + 1, 0
    return f"{hours} h" if minutes == 0 else f"{hours} h {minutes} min"


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time from the server (``...Z`` or with an offset), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def retry_hint(retry_after: str | None, resets_at: Any, now: datetime | None = None) -> str:
    """``retry after 7 h 12 min (at 2026-11-25 00:00 UTC)`` from the ``Retry-After`` header
    (seconds) and/or a ``resets_at`` time; empty when neither is known."""
    now = now or datetime.now(timezone.utc)
    reset = parse_time(resets_at)
    seconds: float | None = None
    if retry_after and retry_after.strip().isdigit():
        seconds = int(retry_after.strip())
    elif reset is not None:
        seconds = (reset - now).total_seconds()
    if seconds is None:
        return ""
    hint = f"retry after {format_duration(seconds)}"
    if reset is not None:
        hint += f" (at {reset.astimezone(timezone.utc):%Y-%m-%d %H:%M} UTC)"
    return hint


@dataclass
class Subject:
    """What a request was about, so a 404 or 429 can name it."""

    not_found: str = "the resource"  # "task 'x'", "submission #12"
    hint: str = ""  # how to find valid names, e.g. "list the tasks with: expbench tasks"
    task: str = ""  # the task slug, for a quota message


def quota_message(body: Mapping[str, Any], task: str, retry_after: str | None, now: datetime | None = None) -> str:
    where = f" for {task}" if task else ""
    message = f"daily quota reached{where} ({body.get('used', '?')} of {body.get('limit', '?')} used)"
    hint = retry_hint(retry_after, body.get("resets_at"), now)
    return f"{message}; {hint}" if hint else message


def error_for_status(status: int, body: Any, headers: Mapping[str, str], *, url: str, subject: Subject,
                     token_source: str | None, prog: str, now: datetime | None = None) -> CliError:
    """The CliError for an HTTP answer that is not a success."""
    said = describe_body(body)
    if status == 401:
        if token_source:
            what = f"the server refused the token from {token_source}"
        else:
            what = "this needs an API token"
        return CliError(ExitCode.AUTH, f"not authenticated: {what} ({said or 'HTTP 401'}); "
                                       f"log in with: {prog} login USERNAME")
    if problem_type(body) == "inputs-hidden":
        # Not a matter of the token (logging in again changes nothing): the task never releases
        # its test inputs, so neither they nor prediction files made from them are taken.
        message = said or "the test inputs of this task are hidden"
        if subject.task:
            message += f"; with this client: {prog} submit-model {subject.task} BUNDLE.zip --method NAME"
        return CliError(ExitCode.FAILED, message)
    if status == 403:
        return CliError(ExitCode.AUTH, f"not allowed: {said or 'HTTP 403'}")
    if status == 404:
        # The server's generic "No Task matches the given query." says less than naming what was asked.
        specific = said if isinstance(body, Mapping) and not GENERIC_NOT_FOUND.fullmatch(said) else ""
        message = specific or f"{subject.not_found} not found at {url}"
        return CliError(ExitCode.NOT_FOUND, f"{message}; {subject.hint}" if subject.hint else message)
    if status == 429:
        retry_after = headers.get("Retry-After")
        if isinstance(body, Mapping) and "limit" in body:
            return CliError(ExitCode.QUOTA, quota_message(body, subject.task, retry_after, now))
        hint = retry_hint(retry_after, None, now) or "retry later"
        return CliError(ExitCode.QUOTA, f"too many requests (the server's rate limit); {hint}")
    if status == 409:
        return CliError(ExitCode.FAILED, said or "the server refused the action (HTTP 409)")
    if status == 400 and problem_type(body) == "submission-rejected":
        # The file was stored and checked: the submission exists, and failed its checks.
        return CliError(ExitCode.FAILED, f"{said} (submission #{body.get('submission_id')}, "
                                         f"{body.get('category') or 'invalid'})", prefix="rejected")
    if status == 400:
        return CliError(ExitCode.USAGE, said or "the server refused the request (HTTP 400)")
    if status == 413:
        limit = body.get("limit") if isinstance(body, Mapping) else None
        most = f"; the server takes at most {limit:,} bytes" if isinstance(limit, int) and not said else ""
        what = said.rstrip(".") or "the request body"
        return CliError(ExitCode.USAGE, f"too large for the server (HTTP 413): {what}{most}; nothing was stored")
    detail = f": {said}" if said else ""
    return CliError(ExitCode.SERVER, f"the server at {url} answered HTTP {status}{detail}")


def not_json(status: int, url: str) -> CliError:
    return CliError(ExitCode.SERVER, f"the server at {url} answered HTTP {status} with something that is not JSON; "
                                     "is --url pointing at an ExpBench server?")


def list_changed_message(path: str) -> str:
    return (f"the list {path} changed while it was read, twice (items were added or removed); nothing is shown "
            "rather than a list with items twice or missing; try again in a moment")


def timed_out_message(url: str, timeout: float) -> str:
    return (f"the ExpBench server at {url} did not answer within {timeout:g} s; it may be busy or stuck. "
            "Try again later, or allow longer with --timeout SECONDS.")


def unreachable_message(url: str, reason: str) -> str:
    return f"cannot reach the ExpBench server at {url} ({reason}); is it running? Set --url or EXPBENCH_URL."
