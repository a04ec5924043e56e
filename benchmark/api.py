from typing import Any, cast

from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from core.conditional import CONDITIONAL_HEADERS, NOT_MODIFIED

from . import kinds
from .averages import average_change
from .models import Benchmark, SkillVariant, Task, TaskQuerySet, Visibility
from .serializers import BenchmarkSerializer, SkillListingSerializer, TaskSerializer, TaskSettingsSerializer
from .skill_listing import skill_listing
from .views import INPUTS_HIDDEN, inputs_answer, inputs_source


def stored_inputs(request: HttpRequest, slug: str, format: str | None = None) -> HttpResponse | None:
    """The inputs answer of an anonymous JSON read when it is a 304 or the stored file, without
    DRF's dispatch (config.store_reads); None for anything else (an unknown, hidden or
    inputs-hidden task, no test set yet, another format), which ``TaskViewSet.inputs`` answers."""
    if format not in (None, "json") or "indent" in request.META.get("HTTP_ACCEPT", ""):
        return None  # another representation: rendered by the view
    source = inputs_source(slug)
    if (source is None or source.task.visibility not in Visibility.reachable_by(None)
            or source.test_set is None or source.task.inputs_hidden):
        return None
    # DRF's default renderer, as the view's negotiation picks it for such a read: the same bytes.
    renderer = cast(type[BaseRenderer], api_settings.DEFAULT_RENDERER_CLASSES[0])()
    answer = inputs_answer(request, source, renderer.format, Response, renderer.render,
                           content_type=renderer.media_type)
    return answer if isinstance(answer, HttpResponse) else None


class BenchmarkViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Benchmark.objects.prefetch_related("tasks")
    serializer_class = BenchmarkSerializer
    lookup_field = "slug"
    permission_classes = [AllowAny]


PUBLIC_INPUTS = OpenApiResponse(OpenApiTypes.OBJECT, description="the test set's inputs in the dataset's own "
                                "layout (ExpMRC, CheckList, a QUACKIE track): questions and contexts, never answers "
                                "or evidence")


class InputsHidden(PermissionDenied):
    """The inputs of a task whose inputs are hidden (problem type ``inputs-hidden``)."""

    problem_type = "inputs-hidden"


def filter_tasks(tasks: TaskQuerySet, query: Any) -> TaskQuerySet:
    """?kind= and ?benchmark= on the list; an unknown kind is a 400 naming it."""
    kind = query.get("kind")
    if kind is not None and kind not in kinds.names():
        raise ValidationError({"kind": [f"{kind!r} is not one of: {', '.join(kinds.names())}"]})
    if kind:
        tasks = tasks.filter(kind=kind)
    if query.get("benchmark"):
        tasks = tasks.filter(benchmark__slug=query["benchmark"])
    return tasks


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("kind", OpenApiTypes.STR, enum=kinds.names(), description="only tasks of this kind"),
    OpenApiParameter("benchmark", OpenApiTypes.STR, description="only tasks of this benchmark (its slug)"),
]))
class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Task.objects.select_related("benchmark").prefetch_related("phases")
    serializer_class = TaskSerializer
    lookup_field = "slug"
    permission_classes = [AllowAny]

    def get_queryset(self) -> TaskQuerySet:
        # The list shows listed tasks; a detail route reaches unlisted ones too; hidden tasks
        # answer 404 to everyone but staff.
        tasks = cast(TaskQuerySet, super().get_queryset())
        if self.action == "list":
            return filter_tasks(tasks.listed_for(self.request.user), self.request.query_params)
        return tasks.visible_to(self.request.user)

    @extend_schema(summary="Change a task's visibility, ranking rule, intake or quota (staff only)",
                   request=TaskSettingsSerializer, responses={200: TaskSerializer},
                   parameters=[OpenApiParameter("dry_run", OpenApiTypes.BOOL, description=(
                       "true: answer what the change would do to the benchmark's average board "
                       "(`warnings`) and change nothing"))])
    def partial_update(self, request: Request, slug: str | None = None) -> Response:
        # Others get the 404 of a task they may not change (a 403 would confirm a hidden task).
        if not request.user.is_staff:
            raise NotFound("No Task matches the given query.")
        task = self.get_object()
        unknown = sorted(set(request.data) - set(TaskSettingsSerializer.Meta.fields))
        if unknown:
            raise ValidationError({name: [f"cannot be changed here; editable: "
                                          f"{', '.join(TaskSettingsSerializer.Meta.fields)}"] for name in unknown})
        settings_ = TaskSettingsSerializer(task, data=request.data, partial=True)
        settings_.is_valid(raise_exception=True)
        visibility = settings_.validated_data.get("visibility")
        # What the change does to the benchmark's average board: with "dry_run" the answer says it
        # and nothing changes, so a maintainer can see it before it happens.
        warning = average_change(task, visibility) if visibility and visibility != task.visibility else ""
        if request.query_params.get("dry_run") in ("1", "true"):
            return Response({"dry_run": True, "warnings": [warning] if warning else []})
        settings_.save()
        return Response({**TaskSerializer(task, context={"request": request}).data,
                         "warnings": [warning] if warning else []})

    @extend_schema(
        summary="Public inputs of the task's hidden test set (no answers, no evidence)",
        responses={200: PUBLIC_INPUTS, 304: NOT_MODIFIED}, parameters=CONDITIONAL_HEADERS,
    )
    @action(detail=True, methods=["get"])
    def inputs(self, request: Request, slug: str | None = None, format: str | None = None) -> HttpResponseBase:
        # One query, as the download's (without the inputs and the gold); the task as get_object finds it.
        source = inputs_source(str(slug))
        if source is None or source.task.visibility not in Visibility.reachable_by(request.user):
            raise Http404("No Task matches the given query.")
        if source.test_set is None:
            raise NotFound(f"Task {slug} has no test set yet.")
        if source.task.inputs_hidden:
            raise InputsHidden(INPUTS_HIDDEN.format(slug=slug))
        # The renderer is part of the ETag: JSON and the browsable API are different bytes. Plain
        # JSON is encoded once per test-set version and kept (plain and gzipped); the browsable
        # page, or JSON indented on request, is rendered per request.
        renderer = request.accepted_renderer
        stored = isinstance(renderer, JSONRenderer) and "indent" not in (request.accepted_media_type or "")
        return inputs_answer(request, source, renderer.format, Response,
                             cast(Any, renderer).render if stored else None, content_type=renderer.media_type)

    @extend_schema(summary="Reconstructed test sets (InDepth-Eva-MRC skills s1–s14, Wu et al., 2022) "
                           "of the task's hidden set",
                   responses={200: SkillListingSerializer})
    @action(detail=True, methods=["get"])
    def skills(self, request: Request, slug: str | None = None, format: str | None = None) -> Response:
        return Response(skill_listing(self.get_object(), request))

    @extend_schema(summary="Public inputs of one reconstructed test set", responses={200: PUBLIC_INPUTS})
    @action(detail=True, methods=["get"], url_path=r"skills/(?P<skill>[a-z0-9]+)/inputs")
    def skill_inputs(self, request: Request, slug: str | None = None, skill: str | None = None,
                     format: str | None = None) -> Response:
        task = self.get_object()
        if task.inputs_hidden:
            raise InputsHidden(INPUTS_HIDDEN.format(slug=task.slug))
        variant = SkillVariant.objects.filter(test_set=task.current_test_set(), skill=skill, status="ok").only(
            "public_inputs").first()
        if variant is None:
            raise NotFound(f"No built skill set {skill!r} for {task.slug}.")
        return Response(variant.public_inputs)
