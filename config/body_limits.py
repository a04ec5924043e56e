"""Request bodies over their path's limit are refused with 413 from ``Content-Length`` alone,
before any byte of the body is read.

Without this, Django reads a multipart upload to its end (spooling it to a temporary file)
before the view can look at the file's size: a 300 MB upload cost a web worker 12.5 s and
300 MB of disk only to be refused. The upload addresses (``UPLOAD_PATHS``) take the largest
file they accept plus room for the form's other fields; every other address takes
``REQUEST_BODY_MAX_BYTES``. A file just over its limit still reaches the view, which names the
file's own limit in a 400. A body without ``Content-Length``
(chunked) is never read by Django, so it needs no check.
"""
import re
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from core.api_paths import is_api_path

from .errors import ProblemResponse

# Room for an upload's other form fields and the multipart framing around the file.
UPLOAD_FORM_OVERHEAD_BYTES = 1024 * 1024


@lru_cache(maxsize=8)
def compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


def body_limit(path: str) -> int:
    """The most bytes a request to ``path`` may send: the largest upload plus the form's
    fields on the addresses of ``UPLOAD_PATHS``, ``REQUEST_BODY_MAX_BYTES`` elsewhere."""
    if any(pattern.match(path) for pattern in compiled(tuple(settings.UPLOAD_PATHS))):
        return max(settings.SUBMISSION_MAX_BYTES, settings.CODE_MAX_BYTES) + UPLOAD_FORM_OVERHEAD_BYTES
    return int(settings.REQUEST_BODY_MAX_BYTES)


def declared_length(request: HttpRequest) -> int | None:
    """The body's announced size; None when absent or not a number (Django then reads nothing)."""
    value = request.META.get("CONTENT_LENGTH") or ""
    return int(value) if value.strip().isdigit() else None


def too_large(request: HttpRequest, size: int, limit: int) -> HttpResponse:
    detail = (f"The request body is {size:,} bytes; this address takes at most {limit:,} bytes "
              f"(an uploaded file at most {settings.SUBMISSION_MAX_BYTES:,}).")
    if is_api_path(request):
        response: HttpResponse = ProblemResponse(request, 413, detail, extensions={"size": size, "limit": limit})
    else:
        response = render(request, "413.html", {"detail": detail}, status=413)
    return response


class RequestBodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        size = declared_length(request)
        if size is not None:
            limit = body_limit(request.path_info)
            if size > limit:
                return too_large(request, size, limit)
        return self.get_response(request)
