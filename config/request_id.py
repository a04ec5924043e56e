"""A request id on every answer and every log line of its request (docs/operations.md#logs).

The id is the client's (or the proxy's) ``X-Request-ID`` when it is a plain token (letters,
digits, ``-``, ``_``, ``.``, ``:``, at most 128 characters), else a new random one: a value
that could forge log lines or bloat them is never copied. It is kept in a context variable, so
log records of the request made in any module carry it, and it is sent back as ``X-Request-ID``.

Work a request hands to Celery keeps the id: a task sent while the id is set carries it in the
message header ``request_id`` (``before_task_publish``), and the worker sets it for the task's
run (``task_prerun``, undone at ``task_postrun``), so the log lines of the task, and of any task
it sends in turn, carry the id of the request that caused them.
"""
import json
import logging
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar, Token
from datetime import datetime, timezone
from typing import Any

from celery.signals import before_task_publish, task_postrun, task_prerun
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


#: The Celery message header that carries the id from the request to the worker.
CELERY_HEADER = "request_id"

#: Where a running task keeps the id it replaced (on its own request context, Celery's
#: ``task.request``, so two runs of one message in one process never mix them up).
_REPLACED = "_replaced_request_id"


def add_request_id_header(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    """``before_task_publish``: a task sent while serving a request (or while running a task
    that has an id) carries the id. One already in the headers (sent on purpose) is kept."""
    request_id = current_request_id.get()
    if headers is not None and request_id != NO_REQUEST:
        headers.setdefault(CELERY_HEADER, request_id)


def take_request_id(task: Any = None, **kwargs: Any) -> None:
    """``task_prerun``: the task runs under the id its message carries. A message without one
    (sent by beat, the reaper, or before this header existed) leaves the id as it is: ``-`` in
    a worker, the request's own when a test runs the task eagerly inside the request."""
    context = getattr(task, "request", None)
    given = getattr(context, CELERY_HEADER, None)
    # Checked again: a message is not a trusted source of log text.
    if context is not None and isinstance(given, str) and ACCEPTED.fullmatch(given):
        setattr(context, _REPLACED, current_request_id.set(given))


def drop_request_id(task: Any = None, **kwargs: Any) -> None:
    """``task_postrun``: back to the id before the task, so the next task of this worker process
    does not inherit it."""
    token: Token[str] | None = getattr(getattr(task, "request", None), _REPLACED, None)
    if token is None:
        return
    try:
        current_request_id.reset(token)
    except ValueError:  # set in another context (a pool that moved the task): nothing to inherit there
        current_request_id.set(NO_REQUEST)


def connect_celery_signals() -> None:
    """Carry a request's id into the tasks it sends and run them under it: called by the Celery
    app (config/celery.py), so every process that loads it, web and workers, connects them."""
    before_task_publish.connect(add_request_id_header, dispatch_uid="config.request_id.publish")
    task_prerun.connect(take_request_id, dispatch_uid="config.request_id.prerun")
    task_postrun.connect(drop_request_id, dispatch_uid="config.request_id.postrun")


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
