"""A request id on every answer and every log line of its request (docs/operations.md#logs).

The id is the client's (or the proxy's) ``X-Request-ID`` when it is a plain token (letters,
digits, ``-``, ``_``, ``.``, ``:``, at most 128 characters), else a new random one: a value
that could forge log lines or bloat them is never copied. It is kept in a context variable, so
log records of the request made in any module carry it, and it is sent back as ``X-Request-ID``.
"""
import json
import logging
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from datetime import datetime, timezone

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
NO_REQUEST = "-"
ACCEPTED = re.compile(r"[A-Za-z0-9._:-]{1,128}")

current_request_id: ContextVar[str] = ContextVar("request_id", default=NO_REQUEST)


def request_id_for(request: HttpRequest) -> str:
    given = request.headers.get(HEADER, "")
    return given if ACCEPTED.fullmatch(given) else uuid.uuid4().hex


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_for(request)
        request.request_id = request_id  # type: ignore[attr-defined]  # for views that want to show it
        # Not reset on the way out: Django logs a 4xx/5xx answer after the middleware returned.
        # request_finished (below) clears it once the answer has been sent.
        current_request_id.set(request_id)
        response = self.get_response(request)
        response[HEADER] = request_id
        return response


def forget_request_id(**kwargs: object) -> None:
    current_request_id.set(NO_REQUEST)


request_finished.connect(forget_request_id, dispatch_uid="config.request_id.forget")


class RequestIdFilter(logging.Filter):
    """Gives every record a ``request_id`` attribute (``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, request_id,
    and the traceback as ``exception`` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", current_request_id.get()),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
