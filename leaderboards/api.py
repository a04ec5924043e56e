"""The boards' API: a task's ranked board, a benchmark's average board, compare."""
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from benchmark.models import Benchmark, Task

from .compare import CompareError, compare, visible_submission
from .serializers import BenchmarkLeaderboardSerializer, ComparisonSerializer, LeaderboardSerializer
from .store import RELEASE, benchmark_board, etag_for, not_modified, task_board, validators


@extend_schema(summary="Ranked leaderboard", responses=LeaderboardSerializer)
@api_view(["GET"])
@permission_classes([AllowAny])
def task_leaderboard(request: Request, slug: str) -> HttpResponse:
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    # Stored encoded, as DRF's JSON renderer writes it (leaderboards.store.task_payload).
    board = task_board(task, "body")
    etag = etag_for(RELEASE, board.stamp)
    return not_modified(request, etag, board.computed_at) or validators(
        HttpResponse(board.payload, content_type="application/json"), etag, board.computed_at,
        private=task.is_hidden)


@extend_schema(summary="Average board: systems scored on every task, ranked by mean primary metric",
               responses={200: BenchmarkLeaderboardSerializer})
@api_view(["GET"])
@permission_classes([AllowAny])
def benchmark_leaderboard(request: Request, slug: str) -> HttpResponse:
    board = benchmark_board(get_object_or_404(Benchmark, slug=slug), "body")
    etag = etag_for(RELEASE, board.stamp)
    return not_modified(request, etag, board.computed_at) or validators(
        HttpResponse(board.payload, content_type="application/json"), etag, board.computed_at)


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
