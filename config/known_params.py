"""Unknown query parameters are refused on the versioned API, as the schema says.

A list that silently ignores ``?ordering=`` or ``?page=`` answers something other than what the
client asked for, and the client cannot tell. So each operation under ``/api/v1/`` takes exactly
the query parameters its OpenAPI operation declares (plus ``format``, DRF's choice of renderer,
which every operation takes); anything else is a 400 problem document naming it and the
parameters the operation does take. The list comes from the schema itself, generated once per
process, so the document and the behaviour cannot drift apart.

The deprecated unversioned ``/api/`` paths keep their old leniency (docs/client.md#versions)."""
import functools
import re
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from drf_spectacular.generators import SchemaGenerator

from core.api_paths import CURRENT_API_PREFIX

from .errors import ProblemResponse

#: Taken by every operation: DRF's renderer override (``?format=json``, the browsable ``api``).
ALWAYS_TAKEN = frozenset({"format"})

Operations = dict[str, list[tuple[re.Pattern[str], frozenset[str]]]]


@functools.cache
def declared_query_parameters() -> Operations:
    """method -> (path pattern, its query parameters) for every operation the schema describes."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found: Operations = {}
    for template, operations in schema["paths"].items():
        pattern = re.compile("".join(r"[^/]+" if part.startswith("{") else re.escape(part)
                                     for part in re.split(r"(\{[^}]+\})", template)) + r"\Z")
        for method, operation in operations.items():
            names = frozenset(p["name"] for p in operation.get("parameters", []) if p.get("in") == "query")
            found.setdefault(method.upper(), []).append((pattern, names))
    return found


def taken_by(method: str, path: str) -> frozenset[str] | None:
    """The query parameters the operation at ``path`` takes, or None when the schema does not
    describe it (nothing to hold it to)."""
    operations = declared_query_parameters().get("GET" if method == "HEAD" else method, [])
    return next((names for pattern, names in operations if pattern.match(path)), None)


class KnownQueryParametersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.GET and request.path_info.startswith(CURRENT_API_PREFIX):
            refusal = unknown_parameters(request)
            if refusal is not None:
                return refusal
        return self.get_response(request)


def unknown_parameters(request: HttpRequest) -> HttpResponse | None:
    taken = taken_by(request.method or "GET", request.path_info)
    if taken is None:
        return None
    unknown = sorted(set(request.GET) - taken - ALWAYS_TAKEN)
    if not unknown:
        return None
    offered = ", ".join(sorted(taken)) or "none"
    errors = [{"field": name, "detail": f"unknown query parameter; this operation takes: {offered}"}
              for name in unknown]
    detail = "; ".join(f"{e['field']}: {e['detail']}" for e in errors)
    return ProblemResponse(request, 400, detail, problem_type="validation-error", errors=errors)
