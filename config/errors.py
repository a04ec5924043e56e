"""One error shape for the whole API: RFC 9457 problem details (docs/client.md#errors).

Every error answer under ``/api/`` is a JSON object served as ``application/problem+json``:

* ``type``: ``about:blank`` when the HTTP status says it all, else ``/api/v1/problems/<name>/``
  (one of :data:`PROBLEM_TYPES`; that address describes the type);
* ``title``: a short summary of the type (the HTTP reason phrase for ``about:blank``);
* ``status``: the HTTP status code, repeated;
* ``detail``: what went wrong with this request, in a sentence a person can act on;
* ``errors`` (invalid input only): ``[{"field": "method_name", "detail": "..."}]``, ``field``
  null for an error about the request as a whole;
* extension members named by the type, e.g. the quota (``limit``, ``used``, ``remaining``,
  ``resets_at``) on ``quota-exceeded``.

The shape comes from three places: DRF's exceptions (:func:`problem_exception_handler`, the
``EXCEPTION_HANDLER``), and Django's own error views for what happens before or outside DRF
(:func:`bad_request`, :func:`not_found`, :func:`server_error`, :func:`permission_denied`). A view
that needs a problem type or extension members raises an ``APIException`` carrying
``problem_type`` (a key of :data:`PROBLEM_TYPES`) and ``problem_extensions`` (a dict).

The unversioned ``/api/`` paths are deprecated aliases of ``/api/v1/``: their problems also
carry ``error``, a copy of ``detail``, the member clients read before problem details, and the
exception's ``legacy_members`` (what that answer carried before, e.g. a rejection's ``id``).
"""
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler

from core.api_paths import CURRENT_API_PREFIX, is_api_path, is_legacy_api_path

PROBLEM_CONTENT_TYPE = "application/problem+json"

#: name -> (title, what it means). ``type`` is ``/api/v1/problems/<name>/``.
PROBLEM_TYPES: dict[str, tuple[str, str]] = {
    "validation-error": (
        "Invalid request",
        "A field or query parameter is missing or has a value the server cannot accept; "
        "`errors` lists each one with its field."),
    "quota-exceeded": (
        "Daily submission quota reached",
        "The user has used every submission of the UTC day on this task. The Retry-After header "
        "gives the seconds until the count resets; `limit`, `used`, `remaining` and `resets_at` "
        "give the quota."),
    "submission-rejected": (
        "Submission rejected",
        "The file was stored and checked, and it is not a valid submission for the task; "
        "`submission_id` names the rejected submission and `category` says which check failed. "
        "A rejected file does not count against the quota."),
    "submission-refused": (
        "Submission refused",
        "The task or the server cannot take this submission now (the task is closed, has no test "
        "set yet, or code submissions are disabled); nothing was stored."),
    "inputs-hidden": (
        "The task's inputs are hidden",
        "The task's test inputs are never released: prediction files cannot be made for it and its inputs are "
        "not served. Upload a model instead (kind=model, docs/model_submissions.md): it runs on the hidden "
        "inputs on the server."),
    "outside-phase": (
        "No phase is open",
        "The task takes submissions only while one of its phases is open; `detail` lists the phases' "
        "windows in UTC."),
    "declaration-required": (
        "A link the task requires is missing",
        "The task's maintainers require every upload to give the URL of its code or of its paper; `errors` "
        "names the field left out. Nothing was stored and the quota is not charged."),
    "conflict": (
        "Not possible in the current state",
        "The action does not fit the resource's current state, e.g. cancelling a submission "
        "that has started scoring."),
}


def problem_type_uri(name: str) -> str:
    return f"{CURRENT_API_PREFIX}problems/{name}/"


def problem(status: int, detail: str, *, problem_type: str | None = None, errors: list[dict] | None = None,
            extensions: dict[str, Any] | None = None, legacy: bool = False,
            legacy_members: dict[str, Any] | None = None) -> dict[str, Any]:
    """The problem document. ``problem_type`` None means about:blank (the status says it all)."""
    if problem_type is None:
        body: dict[str, Any] = {"type": "about:blank", "title": HTTPStatus(status).phrase}
    else:
        body = {"type": problem_type_uri(problem_type), "title": PROBLEM_TYPES[problem_type][0]}
    body.update(status=status, detail=detail)
    if errors:
        body["errors"] = errors
    # Extensions never replace the members the RFC defines.
    body.update({k: v for k, v in (extensions or {}).items() if k not in body})
    if legacy:
        body.update({k: v for k, v in (legacy_members or {}).items() if k not in body}, error=detail)
    return body


class ProblemResponse(JsonResponse):
    def __init__(self, request: HttpRequest, status: int, detail: str, **kwargs: Any) -> None:
        super().__init__(problem(status, detail, legacy=is_legacy_api_path(request), **kwargs), status=status,
                         content_type=PROBLEM_CONTENT_TYPE)


def field_errors(detail: Any, field: str | None = None) -> list[dict[str, Any]]:
    """DRF's nested validation detail as a flat list: ``{"file": ["Required."]}`` ->
    ``[{"field": "file", "detail": "Required."}]``; nested names are dotted (``rows.2.score``)."""
    if isinstance(detail, dict):
        found = []
        for key, value in detail.items():
            if key == api_settings.NON_FIELD_ERRORS_KEY:
                found += field_errors(value, field)
            else:
                found += field_errors(value, f"{field}.{key}" if field else str(key))
        return found
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return [{"field": field, "detail": str(item)} for item in detail]
        found = []
        for index, item in enumerate(detail):
            found += field_errors(item, f"{field}.{index}" if field else str(index))
        return found
    return [{"field": field, "detail": str(detail)}]


def summary(errors: list[dict[str, Any]]) -> str:
    """One line naming every field error, for clients that only show ``detail``."""
    return "; ".join(f"{e['field']}: {e['detail']}" if e["field"] else e["detail"] for e in errors)


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Any:
    """DRF's EXCEPTION_HANDLER: DRF's own handler decides the status and headers
    (WWW-Authenticate, Retry-After); this turns its body into a problem document."""
    response = exception_handler(exc, context)
    if response is None:
        return None  # an unexpected exception: Django's 500 handler answers (server_error below)
    request = context["request"]
    problem_type = getattr(exc, "problem_type", None)
    errors = None
    if isinstance(exc, ValidationError):
        errors = field_errors(response.data)
        detail = summary(errors) or "The request is invalid."
        problem_type = problem_type or "validation-error"
    else:
        detail = str(response.data["detail"] if isinstance(response.data, dict) else response.data)
    if problem_type is None and response.status_code == 409:
        problem_type = "conflict"
    response.data = problem(response.status_code, detail, problem_type=problem_type, errors=errors,
                            extensions=getattr(exc, "problem_extensions", None),
                            legacy=is_legacy_api_path(request), legacy_members=getattr(exc, "legacy_members", None))
    renderer = getattr(request, "accepted_renderer", None)
    if renderer is None or renderer.media_type == "application/json":
        # Not for the browsable API's HTML page, which must stay text/html.
        response.content_type = PROBLEM_CONTENT_TYPE
    return response


# Django's error views (config/urls.py): problem details under /api/, the site's pages elsewhere.
def bad_request_reason(exception: Exception | None) -> str:
    if isinstance(exception, RequestDataTooBig):
        return (f"The form fields are larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes "
                "(files are not counted: send large content as a file).")
    if isinstance(exception, TooManyFieldsSent):
        return f"More than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} form fields."
    return "The request is malformed."


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_path(request):
        return ProblemResponse(request, 400, bad_request_reason(exception))
    return defaults.bad_request(request, exception)  # type: ignore[arg-type]  # Django accepts None here


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_path(request):
        return ProblemResponse(request, 403, "You are not allowed to do this.")
    return defaults.permission_denied(request, exception)  # type: ignore[arg-type]


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if is_api_path(request):
        return ProblemResponse(request, 404, f"Nothing at {request.path}; the API is described at "
                                             f"{CURRENT_API_PREFIX}docs/.")
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if is_api_path(request):
        # Never the exception itself: its message could quote anything, gold text included.
        return ProblemResponse(request, 500, "The server failed on this request; the maintainers have been told.")
    return defaults.server_error(request)


def problem_type_description(request: HttpRequest, slug: str) -> HttpResponse:
    """What a problem ``type`` URI answers when dereferenced: its title and meaning."""
    if slug not in PROBLEM_TYPES:
        raise Http404(slug)
    title, meaning = PROBLEM_TYPES[slug]
    return JsonResponse({"type": problem_type_uri(slug), "title": title, "description": meaning})
