from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from submissions.serializers import SubmissionCreateSerializer, SubmissionSerializer
from submissions.api import create_submission_response

from .leaderboard import benchmark_average_rows, leaderboard_rows
from .models import Benchmark, Task
from .serializers import BenchmarkSerializer, LeaderboardSerializer, TaskSerializer


class BenchmarkViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Benchmark.objects.prefetch_related("tasks")
    serializer_class = BenchmarkSerializer
    lookup_field = "slug"
    permission_classes = [AllowAny]

    @extend_schema(summary="Average board: systems scored on every task, ranked by mean primary metric",
                   responses={200: OpenApiResponse(description='{"tasks": [...], "rows": [...]}')})
    @action(detail=True, methods=["get"])
    def leaderboard(self, request, slug=None, format=None):
        tasks, rows = benchmark_average_rows(self.get_object())
        return Response({"tasks": [t.slug for t in tasks], "rows": rows})


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Task.objects.filter(is_listed=True).select_related("benchmark")
    serializer_class = TaskSerializer
    lookup_field = "slug"
    permission_classes = [AllowAny]

    @extend_schema(
        summary="Public inputs of the task's hidden test set (no answers, no evidence)",
        responses={200: OpenApiResponse(description="ExpMRC-layout JSON without answers and evidences")},
    )
    @action(detail=True, methods=["get"])
    def inputs(self, request, slug=None, format=None):
        task = self.get_object()
        test_set = task.current_test_set()
        if test_set is None:
            return Response({"error": f"Task {task.slug} has no test set yet."}, status=status.HTTP_404_NOT_FOUND)
        return Response(test_set.public_inputs)

    @extend_schema(summary="Ranked leaderboard", responses=LeaderboardSerializer)
    @action(detail=True, methods=["get"])
    def leaderboard(self, request, slug=None, format=None):
        task = self.get_object()
        test_set = task.current_test_set()
        return Response(
            LeaderboardSerializer(
                {
                    "task": task.slug,
                    "primary_metric": task.primary_metric,
                    "test_set_version": test_set.version if test_set else None,
                    "rows": leaderboard_rows(task),
                }
            ).data
        )

    @extend_schema(
        summary="Upload a prediction file",
        request={"multipart/form-data": SubmissionCreateSerializer},
        responses={201: SubmissionSerializer, 400: OpenApiResponse(description="invalid file or fields"),
                   429: OpenApiResponse(description="daily quota reached")},
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def submissions(self, request, slug=None, format=None):
        task = get_object_or_404(Task, slug=slug)
        return create_submission_response(request, task)
