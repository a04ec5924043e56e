import functools
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.i18n import set_language
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from accounts import api as team_api
from accounts.throttling import ThrottledObtainAuthToken, admin_login
from benchmark.api import BenchmarkViewSet, TaskViewSet, stored_inputs
from core.api_paths import API_PREFIX, CURRENT_API_PREFIX
from leaderboards import api as board_api
from leaderboards import embeds
from leaderboards import views as board_views
from submissions.api import SubmissionViewSet, phase_selection, task_quota, task_submissions
from submissions.views import submit

from . import errors, metrics
from .store_reads import served_from_store

handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.not_found"
handler500 = "config.errors.server_error"

router = DefaultRouter()
router.register("benchmarks", BenchmarkViewSet, basename="api-benchmark")
router.register("tasks", TaskViewSet, basename="api-task")
router.register("submissions", SubmissionViewSet, basename="api-submission")

def inputs_from_store(pattern: URLPattern | URLResolver) -> URLPattern | URLResolver:
    """The router's inputs route, with anonymous JSON reads answered from the stored file ahead
    of DRF, as the board's are (config/store_reads.py); every other route as it is."""
    if not isinstance(pattern, URLPattern) or pattern.name != "api-task-inputs":
        return pattern
    return URLPattern(pattern.pattern, served_from_store(pattern.callback, stored_inputs), pattern.default_args,
                      pattern.name)


# The API, relative to its prefix: /api/v1/ (named, described in the schema), and the same views
# under /api/ as deprecated aliases for one release (docs/client.md#versions).
api_patterns = [
    path("auth/token/", ThrottledObtainAuthToken.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves the page's start-up script as a file: no inline script for the CSP.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("problems/<slug:slug>/", errors.problem_type_description, name="api-problem-type"),
    path("compare/", board_api.compare_view, name="api-compare"),
    path("benchmarks/<slug:slug>/leaderboard/", board_api.benchmark_leaderboard, name="api-benchmark-leaderboard"),
    path("tasks/<slug:slug>/leaderboard/",
         served_from_store(board_api.task_leaderboard, board_api.stored_task_leaderboard),
         name="api-task-leaderboard"),
    path("tasks/<slug:slug>/badge/", embeds.task_badge, name="api-task-badge"),
    path("tasks/<slug:slug>/submissions/", task_submissions, name="api-task-submissions"),
    path("tasks/<slug:slug>/quota/", task_quota, name="api-task-quota"),
    path("phases/<int:pk>/selection/", phase_selection, name="api-phase-selection"),
    path("teams/", team_api.create_team, name="api-teams"),
    path("teams/<slug:slug>/", team_api.team_detail, name="api-team"),
    path("teams/<slug:slug>/invite/", team_api.invite, name="api-team-invite"),
    path("teams/<slug:slug>/accept/", team_api.accept, name="api-team-accept"),
    path("teams/<slug:slug>/leave/", team_api.leave, name="api-team-leave"),
    *[inputs_from_store(pattern) for pattern in router.urls],
]

# RFC 9745: the unversioned paths are deprecated since this date (as a Unix time, 2026-11-24).
DEPRECATED_SINCE = "@1795478400"


def deprecated(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The view under its old path: the same answer, plus ``Deprecation`` and a ``Link`` to the
    versioned path. functools.wraps keeps the view's attributes (csrf_exempt, DRF's cls)."""

    @functools.wraps(view)
    def alias(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        script_prefix = request.path[: len(request.path) - len(request.path_info)]
        successor = script_prefix + CURRENT_API_PREFIX + request.path_info[len(API_PREFIX):]
        response["Deprecation"] = DEPRECATED_SINCE
        # Beside the view's own links (the inputs' licence), never instead of them.
        links = [response["Link"]] if response.has_header("Link") else []
        response["Link"] = ", ".join([*links, f'<{successor}>; rel="successor-version"'])
        return response

    return alias


def unnamed_alias(pattern: URLPattern | URLResolver) -> URLPattern:
    # No name: reverse() always gives the versioned path.
    if not isinstance(pattern, URLPattern):
        raise TypeError("an include() cannot be aliased path by path: list its paths in api_patterns")
    return URLPattern(pattern.pattern, deprecated(pattern.callback), pattern.default_args, None)


urlpatterns = [
    path("api/v1/", include(api_patterns)),
    path("api/", include([unnamed_alias(pattern) for pattern in api_patterns])),
    # Before the admin's own URLs: its login spends the site login's budgets.
    path("admin/login/", admin_login),
    # Prometheus (docs/operations.md#metrics): a token or a staff session, 404 to anyone else.
    path("metrics", metrics.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    # The language chooser posts here (Django's set_language: the choice in a cookie, then back to
    # the page). No CSRF token: pages for anonymous readers are stored and shared, so they carry
    # none, and a forged post could only change the language a browser reads pages in.
    path("i18n/setlang/", csrf_exempt(set_language), name="set_language"),
    # An entry's page, kept for anonymous visitors like a board's (leaderboards.views.entry_page).
    path("submissions/<int:pk>/", board_views.entry_page),
    path("submissions/", include("submissions.urls")),
    path("tasks/<slug:slug>/submit/", submit, name="task-submit"),
    path("", include("benchmark.urls")),
    path("", include("leaderboards.urls")),
]
