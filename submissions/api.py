import math
from typing import Any, cast

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from benchmark.models import Task

from . import intake
from .models import Status, Submission
from .serializers import (
    QuotaSerializer,
    SubmissionCreateSerializer,
    SubmissionSerializer,
    SubmissionUpdateSerializer,
)


def refusal_response(exc: intake.SubmissionRefused) -> Response:
    """400/429/503 for an upload that could not be accepted. A quota refusal also says when to
    retry: the ``Retry-After`` header (seconds) and the quota itself in the body."""
    if not isinstance(exc, intake.QuotaExceeded):
        return Response({"error": exc.message}, status=exc.status_code)
    retry_after = max(1, math.ceil((exc.quota["resets_at"] - timezone.now()).total_seconds()))
    body = {"error": exc.message, **QuotaSerializer(exc.quota).data}
    return Response(body, status=exc.status_code, headers={"Retry-After": str(retry_after)})


@extend_schema(summary="Your submission quota on a task today (UTC day)", responses={200: QuotaSerializer})
@api_view(["GET"])
@permission_classes([IsAuthenticated])
def task_quota(request: Request, slug: str) -> Response:
    """GET /api/tasks/{slug}/quota/: limit, used, remaining and when the count resets."""
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    user = cast(User, request.user)  # IsAuthenticated: never the anonymous user here
    return Response({"task": task.slug, **QuotaSerializer(intake.quota_status(user, task)).data})


@extend_schema(
    summary="Upload a prediction file",
    request={"multipart/form-data": SubmissionCreateSerializer},
    responses={201: SubmissionSerializer, 400: OpenApiResponse(description="invalid file or fields"),
               429: OpenApiResponse(description="daily quota reached: a Retry-After header (seconds) and "
                                                "the quota (limit, used, remaining, resets_at) in the body")},
)
@api_view(["POST"])
@permission_classes([IsAuthenticated])
def task_submissions(request: Request, slug: str) -> Response:
    """POST /api/tasks/{slug}/submissions/: validate fields, then the file; answer 201 or 4xx."""
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    form = SubmissionCreateSerializer(data=request.data)
    form.is_valid(raise_exception=True)
    try:
        submission = intake.submit(user=request.user, task=task, uploaded_file=form.validated_data["file"],
                                                 **{k: v for k, v in form.validated_data.items() if k != "file"})
    except intake.SubmissionRefused as exc:
        return refusal_response(exc)
    if submission.status == Status.REJECTED:
        return Response(
            {"id": submission.pk, "status": submission.status, "error": submission.error_message,
             "category": submission.error_category},
            status=status.HTTP_400_BAD_REQUEST,
        )
    return Response({"id": submission.pk, "status": submission.status}, status=status.HTTP_201_CREATED)


class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin,
                        viewsets.GenericViewSet):
    """Your submissions (list), and any of yours or any public scored one (detail)."""

    serializer_class = SubmissionSerializer
    http_method_names = ["get", "patch", "post", "head", "options"]

    def get_queryset(self) -> QuerySet[Submission]:
        user = self.request.user
        base = Submission.objects.select_related("task", "test_set", "user__profile").defer(
            "item_scores", "test_set__gold", "test_set__public_inputs", "test_set__diagnostics")
        if self.action in ("retrieve", "diagnostics"):
            visible = Q(public=True, status=Status.SCORED)
            if user.is_authenticated:
                visible |= Q(user=user)
            return base.filter(visible)
        if not user.is_authenticated:
            return base.none()
        return base.filter(user=user)

    def get_permissions(self) -> list[BasePermission]:
        if self.action in ("retrieve", "diagnostics"):
            return []
        return [IsAuthenticated()]

    def get_serializer_class(self) -> type[BaseSerializer]:
        if self.action == "partial_update":
            return SubmissionUpdateSerializer
        return SubmissionSerializer

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """PATCH method_name, description, url or public (e.g. hide from the leaderboard)."""
        submission = self.get_object()
        form = SubmissionUpdateSerializer(submission, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        form.save()
        return Response(SubmissionSerializer(submission, context={"request": request}).data)

    @extend_schema(request=None, responses=SubmissionSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None, format: str | None = None) -> Response:
        submission = self.get_object()
        try:
            intake.cancel(submission)
        except intake.SubmissionRefused as exc:
            return Response({"error": exc.message}, status=exc.status_code)
        return Response(SubmissionSerializer(submission, context={"request": request}).data)

    @extend_schema(
        summary="Diagnostics of a scored submission (aggregates only; never per-question outcomes)",
        responses={200: OpenApiResponse(
            description='{"id", "status": "queued|running|done|failed|none", "diagnostics": {...}}')},
    )
    @action(detail=True, methods=["get"])
    def diagnostics(self, request: Request, pk: str | None = None, format: str | None = None) -> Response:
        submission = self.get_object()
        return Response({
            "id": submission.pk,
            "task": submission.task.slug,
            "status": submission.diagnostics_status or "none",
            "diagnostics": submission.diagnostics,
        })
