from django.db.models import Q
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response

from . import services
from .models import Status, Submission
from .serializers import SubmissionCreateSerializer, SubmissionSerializer, SubmissionUpdateSerializer


def create_submission_response(request, task):
    """Shared by the task endpoint: validate fields, then the file, and answer 201 or 4xx."""
    form = SubmissionCreateSerializer(data=request.data)
    form.is_valid(raise_exception=True)
    try:
        submission = services.submit(user=request.user, task=task, uploaded_file=form.validated_data["file"],
                                                 **{k: v for k, v in form.validated_data.items() if k != "file"})
    except services.SubmissionRefused as exc:
        return Response({"error": exc.message}, status=exc.status_code)
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

    def get_queryset(self):
        user = self.request.user
        base = Submission.objects.select_related("task", "test_set", "user__profile").defer("item_scores", "test_set__gold", "test_set__public_inputs", "test_set__diagnostics")
        if self.action in ("retrieve", "diagnostics"):
            visible = Q(public=True, status=Status.SCORED)
            if user.is_authenticated:
                visible |= Q(user=user)
            return base.filter(visible)
        if not user.is_authenticated:
            return base.none()
        return base.filter(user=user)

    def get_permissions(self):
        if self.action in ("retrieve", "diagnostics"):
            return []
        return [IsAuthenticated()]

    def get_serializer_class(self):
        if self.action == "partial_update":
            return SubmissionUpdateSerializer
        return SubmissionSerializer

    def update(self, request, *args, **kwargs):
        """PATCH method_name, description, url or public (e.g. hide from the leaderboard)."""
        submission = self.get_object()
        form = SubmissionUpdateSerializer(submission, data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        form.save()
        return Response(SubmissionSerializer(submission).data)

    @extend_schema(request=None, responses=SubmissionSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None, format=None):
        submission = self.get_object()
        try:
            services.cancel(submission)
        except services.SubmissionRefused as exc:
            return Response({"error": exc.message}, status=exc.status_code)
        return Response(SubmissionSerializer(submission).data)

    @extend_schema(
        summary="Diagnostics of a scored submission (aggregates only; never per-question outcomes)",
        responses={200: OpenApiResponse(description='{"id", "status": "pending|running|done|failed|none", "diagnostics": {...}}')},
    )
    @action(detail=True, methods=["get"])
    def diagnostics(self, request, pk=None, format=None):
        submission = self.get_object()
        return Response({
            "id": submission.pk,
            "task": submission.task.slug,
            "status": submission.diagnostics_status or "none",
            "diagnostics": submission.diagnostics,
        })


@extend_schema(
    summary="Two scored entries side by side: scores with the paired p-value, skill gaps, CheckList rates, diagnostics",
    parameters=[OpenApiParameter("a", int, required=True), OpenApiParameter("b", int, required=True)],
    responses={200: OpenApiResponse(description="comparison"), 400: OpenApiResponse(description="bad ids")},
)
@api_view(["GET"])
@permission_classes([AllowAny])
def compare_view(request):
    from .compare import CompareError, compare, visible_submission

    try:
        a = visible_submission(request.user, request.query_params.get("a"))
        b = visible_submission(request.user, request.query_params.get("b"))
    except CompareError as exc:
        return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if a.task.kind != b.task.kind:
        return Response({"error": "the two entries belong to tasks of different kinds"}, status=status.HTTP_400_BAD_REQUEST)
    return Response(compare(a, b))
