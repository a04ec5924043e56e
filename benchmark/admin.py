from django.contrib import admin
from django.http import HttpRequest

from .models import Benchmark, ReportedResult, Task, TestSet


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "order"]
    prepopulated_fields = {"slug": ["name"]}


class ReportedResultInline(admin.TabularInline):
    model = ReportedResult
    extra = 0


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "benchmark", "kind", "language", "accepts_submissions", "daily_quota"]
    list_filter = ["benchmark", "kind", "language"]
    inlines = [ReportedResultInline]


@admin.register(TestSet)
class TestSetAdmin(admin.ModelAdmin):
    # Test sets are created by the import commands (checksummed); the admin only switches
    # which version is current. Gold and inputs are too large for a form and never edited.
    list_display = ["task", "split", "version", "n_items", "is_current", "imported_at", "checksum"]
    list_filter = ["task", "split", "is_current"]
    exclude = ["gold", "public_inputs", "key_spec"]
    readonly_fields = ["task", "split", "version", "checksum", "source_name", "n_items", "imported_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
