from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from benchmark.api import BenchmarkViewSet, TaskViewSet
from submissions.api import SubmissionViewSet, compare_view
from submissions.views import compare_page, submit

router = DefaultRouter()
router.register("benchmarks", BenchmarkViewSet, basename="api-benchmark")
router.register("tasks", TaskViewSet, basename="api-task")
router.register("submissions", SubmissionViewSet, basename="api-submission")

urlpatterns = [
    path("api/auth/token/", obtain_auth_token, name="api-token"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/compare/", compare_view, name="api-compare"),
    path("api/", include(router.urls)),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("submissions/", include("submissions.urls")),
    path("tasks/<slug:slug>/submit/", submit, name="task-submit"),
    path("compare/", compare_page, name="compare"),
    path("", include("benchmark.urls")),
]
