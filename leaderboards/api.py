"""The boards' API: a task's ranked board, a benchmark's average board, compare."""
import json

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from benchmark.models import Benchmark, Task, Visibility
from core.api_paths import is_legacy_api_path
from core.conditional import (
    CONDITIONAL_HEADERS,
    NOT_MODIFIED,
    stored_answer,
    stored_response,
    strong_etag,
    unchanged,
    weaken_for_gzip,
    with_validators,
)
from core.query_params import LIMIT_SCHEMA, OFFSET_SCHEMA, page_limit, whole_number

from .compare import CompareError, compare, visible_submission
from .ordering import Order, OrderError, read_order
from .serializers import BenchmarkLeaderboardSerializer, ComparisonSerializer, LeaderboardSerializer
from .store import (
    RELEASE,
    BoardState,
    benchmark_board,
    board_state,
    current_stamp,
    of_kind,
    page_rows,
    task_board,
)


class BoardComputing(APIException):
    """A board whose first computation is queued (a fresh start): a worker stores it shortly,
    and clients retry a 503 after ``Retry-After`` seconds."""

    status_code = 503
    default_detail = "This board is being computed; ask again in a few seconds."
    default_code = "board_computing"
    wait = 5


@extend_schema(
    summary="Ranked leaderboard, a page at a time, in any order the board page offers",
    parameters=[
        OpenApiParameter("limit", dict(LIMIT_SCHEMA), description=f"rows per page (default {settings.API_PAGE_SIZE}; "
                                                            f"a larger number is cut to {settings.API_MAX_PAGE_SIZE})"),
        OpenApiParameter("offset", dict(OFFSET_SCHEMA), description="rows to skip (default 0)"),
        OpenApiParameter("sort", str, description="rank (default), tier, system, ci, fails (QUACKIE) or a metric key; "
                                                  "pinned rows (human performance) come first in every order"),
        OpenApiParameter("order", str, enum=["asc", "desc"],
                         description="default: the key's natural direction (scores best first)"),
        *CONDITIONAL_HEADERS,
    ],
    responses={200: LeaderboardSerializer, 304: NOT_MODIFIED},
)
@api_view(["GET"])
@permission_classes([AllowAny])
def task_leaderboard(request: Request, slug: str) -> HttpResponse:
    state = board_state(slug)
    if state is None or state.visibility not in Visibility.reachable_by(request.user):
        raise NotFound("No Task matches the given query.")  # as get_object_or_404 says it
    order, limit, offset = page_asked(request._request, state)
    shown = current_stamp(state)
    if shown is None:
        raise BoardComputing()
    stamp, computed_at = shown
    etag = board_etag(request, stamp, order, limit, offset)
    private = state.visibility == Visibility.HIDDEN
    answer = unchanged(request, etag, computed_at, private=private)
    if answer is not None:
        return answer

    def render() -> HttpResponse:
        task = Task.objects.get(pk=state.task_id)
        return HttpResponse(board_body(request, task, order, limit, offset), content_type="application/json")

    # Stored encoded per ETag: every client asking for this page of this generation gets the same bytes.
    response = stored_response(request, stored_key(etag), render, seconds=BODY_CACHE_SECONDS,
                               content_type="application/json")
    return weaken_for_gzip(with_validators(response, etag, computed_at, private=private))


def page_asked(request: HttpRequest, state: BoardState) -> tuple[Order, int | None, int]:
    """The order, ``limit`` (None: the whole board, on the deprecated path) and ``offset`` the
    query asks for, or a ValidationError naming the parameter."""
    params = request.GET
    try:
        order = read_order(of_kind(state.kind), params.get("sort"), params.get("order"))
    except OrderError as exc:
        field = "order" if str(exc).startswith("order") else "sort"
        raise ValidationError({field: [str(exc).split(": ", 1)[1]]}) from None
    limit = page_limit(request, params.get("limit"), default=settings.API_PAGE_SIZE, ceiling=settings.API_MAX_PAGE_SIZE)
    return order, limit, whole_number("offset", params.get("offset", "0"), minimum=0)


def board_etag(request: HttpRequest, stamp: str, order: Order, limit: int | None, offset: int) -> str:
    """What the bytes of a board's API page depend on (the host and path appear in its links)."""
    return strong_etag(RELEASE, stamp, order, limit, offset, request.get_host(), request.path_info)


def stored_key(etag: str) -> str:
    """Where the encoded page of that ETag is kept in the shared cache."""
    return f"api-board:{etag}"


def stored_task_leaderboard(request: HttpRequest, slug: str) -> HttpResponse | None:
    """What ``task_leaderboard`` answers an anonymous reader, when that answer is a 304 or was
    stored earlier, without DRF's dispatch; None for anything else (a hidden or unknown board, a
    bad parameter, a board to compute or a page to render), which the view itself answers.

    The caller checks that the request is an anonymous GET that accepts JSON and counts it
    against the anonymous rate limit; DRF's dispatch (request wrapper, authenticators,
    negotiation) costs more than serving a stored page, on the API's busiest read."""
    state = board_state(slug)
    if state is None or state.visibility != Visibility.PUBLIC:
        return None
    try:
        order, limit, offset = page_asked(request, state)
    except ValidationError:
        return None
    shown = current_stamp(state)  # the stored board's, current or not (a rebuild is then queued)
    if shown is None:
        return None
    stamp, computed_at = shown
    etag = board_etag(request, stamp, order, limit, offset)
    answer = unchanged(request, etag, computed_at)
    if answer is None:
        answer = stored_answer(request, stored_key(etag), content_type="application/json")
    return None if answer is None else weaken_for_gzip(with_validators(answer, etag, computed_at))


#: How long an encoded board page stays in the shared cache (its key is its ETag, so a changed
#: board gets a new key at once; this only bounds the cache's size).
BODY_CACHE_SECONDS = 600


def board_body(request: Request, task: Task, order: Order, limit: int | None, offset: int) -> str:
    """The answer's bytes, the rows as they were stored (``leaderboards.store.board_rows``)."""
    board = task_board(task)
    if board is None:
        raise BoardComputing()
    count = board.payload["n_rows"]
    limit = count if limit is None else limit
    rows = page_rows(board, task, order.sort, order.descending, offset, limit, encoded=True)

    def link(at: int) -> str:
        return request.build_absolute_uri(f"{request.path}?{order.query}&limit={limit}&offset={at}")

    head = {"task": task.slug, "primary_metric": task.primary_metric,
            "test_set_version": board.payload["test_set_version"], "count": count,
            "next": link(offset + limit) if offset + limit < count else None,
            "previous": link(max(offset - limit, 0)) if offset > 0 else None,
            "sort": order.sort, "order": "desc" if order.descending else "asc"}
    # The one envelope of every paged answer under /api/v1/ puts the items under "results"; the
    # deprecated unversioned path keeps "rows", its answer of before (docs/client.md#versions).
    items = "rows" if is_legacy_api_path(request) else "results"
    return (json.dumps(head, ensure_ascii=False, separators=(",", ":"))[:-1]
            + f',"{items}":[' + ",".join(rows) + "]}")


@extend_schema(summary="Average board: systems scored on every task, ranked by mean primary metric",
               parameters=CONDITIONAL_HEADERS, responses={200: BenchmarkLeaderboardSerializer, 304: NOT_MODIFIED})
@api_view(["GET"])
@permission_classes([AllowAny])
def benchmark_leaderboard(request: Request, slug: str) -> HttpResponse:
    board = benchmark_board(get_object_or_404(Benchmark, slug=slug), "body")
    if board is None:
        raise BoardComputing()
    # The envelope of every list on /api/v1/ (one page: the average board is short); the
    # deprecated path keeps its answer of before, the rows under "rows".
    legacy = is_legacy_api_path(request)
    etag = strong_etag(RELEASE, board.stamp, "rows" if legacy else "results")
    answer = unchanged(request, etag, board.computed_at)
    if answer is not None:
        return answer
    body = board.payload if legacy else in_list_envelope(board.payload)
    return with_validators(HttpResponse(body, content_type="application/json"), etag, board.computed_at)


def in_list_envelope(body: str) -> str:
    """The stored average board ``{"tasks", "rows"}`` as one page of a list."""
    board = json.loads(body)
    rows = board.pop("rows")
    return json.dumps({**board, "count": len(rows), "next": None, "previous": None, "results": rows},
                      ensure_ascii=False, separators=(",", ":"))


@extend_schema(
    summary="Two scored entries side by side: scores with the paired p-value, skill gaps, CheckList rates, diagnostics",
    parameters=[OpenApiParameter("a", int, required=True), OpenApiParameter("b", int, required=True)],
    responses={200: ComparisonSerializer},
)
@api_view(["GET"])
@permission_classes([AllowAny])
def compare_view(request: Request) -> Response:
    entries = {}
    for side in ("a", "b"):
        try:
            entries[side] = visible_submission(request.user, request.query_params.get(side))
        except CompareError as exc:
            raise ValidationError({side: [str(exc)]}) from None
    a, b = entries["a"], entries["b"]
    if a.task.kind != b.task.kind:
        raise ValidationError("the two entries belong to tasks of different kinds")
    return Response(compare(a, b))
