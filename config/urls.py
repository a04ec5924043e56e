from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from accounts.throttling import ThrottledObtainAuthToken
from benchmark.api import BenchmarkViewSet, TaskViewSet
from leaderboards import api as board_api
from submissions.api import SubmissionViewSet, task_quota, task_submissions
from submissions.views import submit

handler400 = "config.errors.bad_request"

router = DefaultRouter()
router.register("benchmarks", BenchmarkViewSet, basename="api-benchmark")
router.register("tasks", TaskViewSet, basename="api-task")
router.register("submissions", SubmissionViewSet, basename="api-submission")

urlpatterns = [
    path("api/auth/token/", ThrottledObtainAuthToken.as_view(), name="api-token"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/compare/", board_api.compare_view, name="api-compare"),
    path("api/benchmarks/<slug:slug>/leaderboard/", board_api.benchmark_leaderboard, name="api-benchmark-leaderboard"),
    path("api/tasks/<slug:slug>/leaderboard/", board_api.task_leaderboard, name="api-task-leaderboard"),
    path("api/tasks/<slug:slug>/submissions/", task_submissions, name="api-task-submissions"),
    path("api/tasks/<slug:slug>/quota/", task_quota, name="api-task-quota"),
    path("api/", include(router.urls)),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("submissions/", include("submissions.urls")),
    path("tasks/<slug:slug>/submit/", submit, name="task-submit"),
    path("", include("benchmark.urls")),
    path("", include("leaderboards.urls")),
]
