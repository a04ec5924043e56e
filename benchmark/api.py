from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from submissions.serializers import SubmissionCreateSerializer, SubmissionSerializer
from submissions.api import create_submission_response

from .leaderboard import benchmark_average_rows, leaderboard_rows
from .models import Benchmark, SkillVariant, Task
from .skill_listing import skill_listing
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

    @extend_schema(summary="Reconstructed test sets (skills s1–s14, seed 000) of the task's hidden set",
                   responses={200: OpenApiResponse(description='{"build": {...}, "skills": [...]}')})
    @action(detail=True, methods=["get"])
    def skills(self, request, slug=None, format=None):
        return Response(skill_listing(self.get_object(), request))

    @extend_schema(summary="Public inputs of one reconstructed test set",
                   responses={200: OpenApiResponse(description="ExpMRC-layout JSON without answers and evidences")})
    @action(detail=True, methods=["get"], url_path=r"skills/(?P<skill>[a-z0-9]+)/inputs")
    def skill_inputs(self, request, slug=None, skill=None, format=None):
        task = self.get_object()
        variant = SkillVariant.objects.filter(test_set=task.current_test_set(), skill=skill, status="ok").only(
            "public_inputs").first()
        if variant is None:
            return Response({"error": f"No built skill set {skill!r} for {task.slug}."}, status=status.HTTP_404_NOT_FOUND)
        return Response(variant.public_inputs)

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
