import math
from typing import Any, cast

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from accounts.models import profile_of
from benchmark.models import Phase, Task, Visibility

from . import diagnostics as diagnostics_module
from . import intake, phases
from .models import Status, Submission
from .serializers import (
    DiagnosticsAnswerSerializer,
    QuotaProblemSerializer,
    QuotaSerializer,
    SubmissionCreateSerializer,
    SubmissionSerializer,
    SubmissionUpdateSerializer,
    UploadProblemSerializer,
)


class Problem(APIException):
    """An error answer with a problem type and extension members (config/errors.py renders
    ``problem_type``, ``problem_extensions`` and, on the deprecated unversioned paths,
    ``legacy_members``; DRF sends ``wait`` as Retry-After)."""

    def __init__(self, status_code: int, detail: str, problem_type: str | None = None,
                 extensions: dict[str, Any] | None = None, wait: int | None = None,
                 legacy_members: dict[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.problem_type = problem_type
        self.problem_extensions = extensions or {}
        self.wait = wait
        self.legacy_members = legacy_members or {}


def refusal(exc: intake.SubmissionRefused) -> Problem:
    """The problem for an upload or action that could not be accepted. A quota refusal also says
    when to retry: the ``Retry-After`` header (seconds) and the quota itself."""
    if isinstance(exc, intake.QuotaExceeded):
        retry_after = max(1, math.ceil((exc.quota["resets_at"] - timezone.now()).total_seconds()))
        return Problem(exc.status_code, exc.message, "quota-exceeded", dict(QuotaSerializer(exc.quota).data),
                       wait=retry_after)
    if isinstance(exc, intake.DeclarationRequired):
        return Problem(exc.status_code, exc.message, exc.problem_type,
                       {"errors": [{"field": name, "detail": why} for name, why in exc.missing]})
    kind = exc.problem_type or ("conflict" if exc.status_code == 409 else "submission-refused")
    return Problem(exc.status_code, exc.message, kind)


@extend_schema(summary="Your submission quota on a task today (UTC day)", responses={200: QuotaSerializer})
@api_view(["GET"])
@permission_classes([IsAuthenticated])
def task_quota(request: Request, slug: str) -> Response:
    """Limit, used, remaining and when the count resets."""
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    user = cast(User, request.user)  # IsAuthenticated: never the anonymous user here
    return Response({"task": task.slug, **QuotaSerializer(intake.quota_status(user, task)).data})


@extend_schema(
    summary="Upload a prediction file",
    request={"multipart/form-data": SubmissionCreateSerializer},
    responses={201: SubmissionSerializer,
               400: OpenApiResponse(UploadProblemSerializer, description="invalid fields (validation-error), an "
                                    "invalid file (submission-rejected), a closed task (submission-refused) or a "
                                    "link the task requires left out (declaration-required: `errors` names it)"),
               429: OpenApiResponse(QuotaProblemSerializer, description="daily quota reached (quota-exceeded): a "
                                    "Retry-After header (seconds) and the quota; or the API's rate limit"),
               503: OpenApiResponse(description="code submissions are disabled: no sandbox on this server")},
)
@api_view(["POST"])
@permission_classes([IsAuthenticated])
def task_submissions(request: Request, slug: str) -> Response:
    """Validate the fields, then the file: 201 with the queued submission, or a problem."""
    task = get_object_or_404(Task.objects.visible_to(request.user), slug=slug)
    form = SubmissionCreateSerializer(data=request.data)
    form.is_valid(raise_exception=True)
    try:
        declared = Submission.DECLARATION_FIELDS
        fields = {k: v for k, v in form.validated_data.items() if k != "file" and k not in declared}
        if fields.get("public") is None:  # not sent: the account's preference (private by default)
            fields["public"] = profile_of(request.user).default_public
        submission = intake.submit(user=request.user, task=task, uploaded_file=form.validated_data["file"],
                                   declarations={k: form.validated_data[k] for k in declared}, **fields)
    except intake.SubmissionRefused as exc:
        raise refusal(exc) from None
    if submission.status == Status.REJECTED:
        raise Problem(status.HTTP_400_BAD_REQUEST, submission.error_message, "submission-rejected",
                      {"submission_id": submission.pk, "category": submission.error_category},
                      legacy_members={"id": submission.pk})
    location = reverse("api-submission-detail", kwargs={"pk": submission.pk})
    return Response(SubmissionSerializer(submission, context={"request": request}).data,
                    status=status.HTTP_201_CREATED, headers={"Location": location})


class SelectionSerializer(serializers.Serializer):
    submission = serializers.IntegerField(help_text="the entry (its id) that counts in the phase's final ranking")


@extend_schema(summary="Pick the entry of your team (or your own) that counts in a phase's final ranking",
               request=SelectionSerializer, responses={200: SelectionSerializer})
@api_view(["POST"])
@permission_classes([IsAuthenticated])
def phase_selection(request: Request, pk: int) -> Response:
    phase = get_object_or_404(Phase, pk=pk, task__in=Task.objects.visible_to(request.user))
    form = SelectionSerializer(data=request.data)
    form.is_valid(raise_exception=True)
    submission = get_object_or_404(Submission, pk=form.validated_data["submission"])
    try:
        phases.select_entry(cast(User, request.user), phase, submission)
    except phases.SelectionRefused as exc:
        raise Problem(exc.status_code, exc.message, "conflict" if exc.status_code == 409 else None) from None
    return Response({"submission": submission.pk})


LIST_FILTERS = [
    OpenApiParameter("status", OpenApiTypes.STR, enum=Status.values, description="only submissions in this state"),
    OpenApiParameter("task", OpenApiTypes.STR, description="only submissions to this task (its slug)"),
    OpenApiParameter("kind", OpenApiTypes.STR, enum=[c for c, _ in Submission.KIND_CHOICES],
                     description="only this kind of submission"),
]


def filter_submissions(submissions: QuerySet[Submission], query: Any) -> QuerySet[Submission]:
    """?status=, ?task=, ?kind= on the list; a value that cannot match is a 400 naming it."""
    choices = {"status": Status.values, "kind": [c for c, _ in Submission.KIND_CHOICES]}
    for name, allowed in choices.items():
        value = query.get(name)
        if value is not None and value not in allowed:
            raise ValidationError({name: [f"{value!r} is not one of: {', '.join(allowed)}"]})
    if query.get("status"):
        submissions = submissions.filter(status=query["status"])
    if query.get("kind"):
        submissions = submissions.filter(kind=query["kind"])
    if query.get("task"):
        submissions = submissions.filter(task__slug=query["task"])
    return submissions


@extend_schema_view(
    list=extend_schema(summary="Your submissions, newest first", parameters=LIST_FILTERS),
    partial_update=extend_schema(request=SubmissionUpdateSerializer, responses=SubmissionSerializer),
)
class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin,
                        viewsets.GenericViewSet):
    """Your submissions (list), and any of yours or any public scored one (detail)."""

    serializer_class = SubmissionSerializer
    http_method_names = ["get", "patch", "post", "head", "options"]

    def get_queryset(self) -> QuerySet[Submission]:
        user = self.request.user
        base = Submission.objects.select_related("task", "test_set", "user__profile").defer(
            "item_scores", "test_set__gold", "test_set__public_inputs", "test_set__diagnostics")
        if not user.is_staff:
            base = base.exclude(task__visibility=Visibility.HIDDEN)  # staff only, their entries too
        if self.action in ("retrieve", "diagnostics"):
            visible = Q(public=True, status=Status.SCORED)
            if user.is_authenticated:
                visible |= Q(user=user)
            return base.filter(visible)
        if not user.is_authenticated:
            return base.none()
        if self.action == "list":
            return filter_submissions(base.filter(user=user), self.request.query_params)
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
        """PATCH method_name, system_name, description, url, public or team (the account's); renaming
        a scored public entry is recorded (forms.save_entry_edit)."""
        submission = self.get_object()
        form = SubmissionUpdateSerializer(submission, data=request.data, partial=True, context={"request": request})
        form.is_valid(raise_exception=True)
        form.save()
        return Response(SubmissionSerializer(submission, context={"request": request}).data)

    @extend_schema(request=None, responses={
        200: SubmissionSerializer,
        409: OpenApiResponse(description="only a queued submission can be cancelled (conflict)")})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None, format: str | None = None) -> Response:
        submission = self.get_object()
        try:
            intake.cancel(submission)
        except intake.SubmissionRefused as exc:
            raise refusal(exc) from None
        return Response(SubmissionSerializer(submission, context={"request": request}).data)

    @extend_schema(
        summary="Diagnostics of a scored submission (aggregates only; never per-question outcomes)",
        responses={200: DiagnosticsAnswerSerializer},
    )
    @action(detail=True, methods=["get"])
    def diagnostics(self, request: Request, pk: str | None = None, format: str | None = None) -> Response:
        submission = self.get_object()
        return Response({
            "id": submission.pk,
            "task": submission.task.slug,
            "status": submission.diagnostics_status or "none",
            "diagnostics": diagnostics_module.published(submission.diagnostics,
                                                        hidden=submission.test_set.is_hidden),
        })
