"""The boards' API: a task's ranked board, a benchmark's average board, compare."""
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from benchmark.models import Benchmark, Task

from .boards import benchmark_average_rows, leaderboard_rows
from .compare import CompareError, compare, visible_submission
from .serializers import LeaderboardSerializer


@extend_schema(summary="Ranked leaderboard", responses=LeaderboardSerializer)
@api_view(["GET"])
@permission_classes([AllowAny])
def task_leaderboard(request: Request, slug: str) -> Response:
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    test_set = task.current_test_set()
    return Response(LeaderboardSerializer({
        "task": task.slug,
        "primary_metric": task.primary_metric,
        "test_set_version": test_set.version if test_set else None,
        "rows": leaderboard_rows(task),
    }).data)


@extend_schema(summary="Average board: systems scored on every task, ranked by mean primary metric",
               responses={200: OpenApiResponse(description='{"tasks": [...], "rows": [...]}')})
@api_view(["GET"])
@permission_classes([AllowAny])
def benchmark_leaderboard(request: Request, slug: str) -> Response:
    tasks, rows = benchmark_average_rows(get_object_or_404(Benchmark, slug=slug))
    return Response({"tasks": [t.slug for t in tasks], "rows": rows})


@extend_schema(
    summary="Two scored entries side by side: scores with the paired p-value, skill gaps, CheckList rates, diagnostics",
    parameters=[OpenApiParameter("a", int, required=True), OpenApiParameter("b", int, required=True)],
    responses={200: OpenApiResponse(description="comparison"), 400: OpenApiResponse(description="bad ids")},
)
@api_view(["GET"])
@permission_classes([AllowAny])
def compare_view(request: Request) -> Response:
    try:
        a = visible_submission(request.user, request.query_params.get("a"))
        b = visible_submission(request.user, request.query_params.get("b"))
    except CompareError as exc:
        return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if a.task.kind != b.task.kind:
        return Response({"error": "the two entries belong to tasks of different kinds"},
                        status=status.HTTP_400_BAD_REQUEST)
    return Response(compare(a, b))
