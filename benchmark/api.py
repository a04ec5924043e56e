from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from .models import Benchmark, SkillVariant, Task
from .serializers import BenchmarkSerializer, TaskSerializer
from .skill_listing import skill_listing


class BenchmarkViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Benchmark.objects.prefetch_related("tasks")
    serializer_class = BenchmarkSerializer
    lookup_field = "slug"
    permission_classes = [AllowAny]


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Task.objects.select_related("benchmark")
    serializer_class = TaskSerializer
    lookup_field = "slug"
    permission_classes = [AllowAny]

    def get_queryset(self):
        # The list shows listed tasks; a detail route reaches unlisted ones too; hidden tasks
        # answer 404 to everyone but staff.
        tasks = super().get_queryset()
        if self.action == "list":
            return tasks.listed_for(self.request.user)
        return tasks.visible_to(self.request.user)

    @extend_schema(
        summary="Public inputs of the task's hidden test set (no answers, no evidence)",
        responses={200: OpenApiResponse(description="ExpMRC-layout JSON without answers and evidences")},
    )
    @action(detail=True, methods=["get"])
    def inputs(self, request: Request, slug: str | None = None, format: str | None = None) -> Response:
        task = self.get_object()
        test_set = task.current_test_set()
        if test_set is None:
            return Response({"error": f"Task {task.slug} has no test set yet."}, status=status.HTTP_404_NOT_FOUND)
        return Response(test_set.public_inputs)

    @extend_schema(summary="Reconstructed test sets (InDepth-Eva-MRC skills s1–s14, Wu et al., 2022) "
                           "of the task's hidden set",
                   responses={200: OpenApiResponse(description='{"build": {...}, "skills": [...]}')})
    @action(detail=True, methods=["get"])
    def skills(self, request: Request, slug: str | None = None, format: str | None = None) -> Response:
        return Response(skill_listing(self.get_object(), request))

    @extend_schema(summary="Public inputs of one reconstructed test set",
                   responses={200: OpenApiResponse(description="ExpMRC-layout JSON without answers and evidences")})
    @action(detail=True, methods=["get"], url_path=r"skills/(?P<skill>[a-z0-9]+)/inputs")
    def skill_inputs(self, request: Request, slug: str | None = None, skill: str | None = None,
                     format: str | None = None) -> Response:
        task = self.get_object()
        variant = SkillVariant.objects.filter(test_set=task.current_test_set(), skill=skill, status="ok").only(
            "public_inputs").first()
        if variant is None:
            return Response({"error": f"No built skill set {skill!r} for {task.slug}."},
                            status=status.HTTP_404_NOT_FOUND)
        return Response(variant.public_inputs)
