"""Request bodies over their path's limit are refused with 413 from ``Content-Length`` alone,
before any byte of the body is read.

Without this, Django reads a multipart upload to its end (spooling it to a temporary file)
before the view can look at the file's size: a 300 MB upload cost a web worker 12.5 s and
300 MB of disk only to be refused. The upload addresses (``UPLOAD_PATHS``) take the largest
file they accept plus room for the form's other fields; every other address takes
``REQUEST_BODY_MAX_BYTES``. A file just over its limit still reaches the view, which names the
file's own limit in a 400. A body without ``Content-Length``
(chunked) is never read by Django, so it needs no check.

A task that takes model submissions takes, on its submission addresses, a bundle up to its own
limit (``Task.model_max_bytes``, else ``MODEL_MAX_BYTES``: 2 GiB): the task is looked up by its
slug, once, and only for a body over the file limit, so ordinary uploads cost no query. Django
streams such a body to a temporary file (``FILE_UPLOAD_MAX_MEMORY_SIZE``), never into memory;
``DATA_UPLOAD_MAX_MEMORY_SIZE`` counts the form's other fields only.
"""
import re
from collections.abc import Callable
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from benchmark import kinds
from benchmark.models import Task
from core.api_paths import is_api_path

from .errors import ProblemResponse

# Room for an upload's other form fields and the multipart framing around the file.
UPLOAD_FORM_OVERHEAD_BYTES = 1024 * 1024
# A task's submission addresses (the API's and the web form's), which take its model bundles.
SUBMISSION_UPLOAD_PATH = re.compile(r"^/(?:api/(?:v1/)?)?tasks/(?P<slug>[^/]+)/(?:submissions|submit)/$")


@lru_cache(maxsize=8)
def compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


def is_upload_path(path: str) -> bool:
    return any(pattern.match(path) for pattern in compiled(tuple(settings.UPLOAD_PATHS)))


def body_limit(path: str) -> int:
    """The most bytes a request to ``path`` may send: the largest upload plus the form's
    fields on the addresses of ``UPLOAD_PATHS``, ``REQUEST_BODY_MAX_BYTES`` elsewhere (a task
    that takes models may take more: ``model_bundle_limit``)."""
    if is_upload_path(path):
        return max(settings.SUBMISSION_MAX_BYTES, settings.CODE_MAX_BYTES) + UPLOAD_FORM_OVERHEAD_BYTES
    return int(settings.REQUEST_BODY_MAX_BYTES)


def model_bundle_limit(path: str) -> int | None:
    """The largest model bundle the task of a submission address takes; None for any other
    address, an unknown task, or a task whose kind takes no models. One query, by the unique
    (indexed) slug."""
    match = SUBMISSION_UPLOAD_PATH.match(path)
    if match is None or not is_upload_path(path):
        return None
    row = Task.objects.filter(slug=match["slug"]).values_list("kind", "model_max_bytes").first()
    if row is None:
        return None
    kind, own_limit = row
    if kind not in kinds.names() or not kinds.get(kind).takes_models:
        return None
    return int(own_limit or settings.MODEL_MAX_BYTES)


def limits(path: str, size: int) -> tuple[int, int | None]:
    """(the most bytes the address takes, the largest model bundle it takes or None). The task
    is looked up only when ``size`` is over the address's ordinary limit."""
    limit = body_limit(path)
    if size <= limit:
        return limit, None
    bundle = model_bundle_limit(path)
    if bundle is None:
        return limit, None
    return max(limit, bundle + UPLOAD_FORM_OVERHEAD_BYTES), bundle


def declared_length(request: HttpRequest) -> int | None:
    """The body's announced size; None when absent or not a number (Django then reads nothing)."""
    value = request.META.get("CONTENT_LENGTH") or ""
    return int(value) if value.strip().isdigit() else None


def too_large(request: HttpRequest, size: int, limit: int, bundle: int | None = None) -> HttpResponse:
    largest = (f"a model bundle at most {bundle:,}, a prediction file at most {settings.SUBMISSION_MAX_BYTES:,}"
               if bundle is not None else f"an uploaded file at most {settings.SUBMISSION_MAX_BYTES:,}")
    detail = f"The request body is {size:,} bytes; this address takes at most {limit:,} bytes ({largest})."
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
            limit, bundle = limits(request.path_info, size)
            if size > limit:
                return too_large(request, size, limit, bundle)
        return self.get_response(request)
