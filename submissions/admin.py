from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from . import intake
from .models import Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "user", "method_name", "status", "error_category", "public", "attempts", "created_at"]
    list_filter = ["status", "task", "public", "error_category"]
    search_fields = ["method_name", "user__username"]
    exclude = ["item_scores"]
    readonly_fields = [
        "user", "task", "test_set", "kind", "file", "original_filename", "size", "sha256", "status",
        "error_category", "error_message", "created_at", "queued_at", "started_at", "finished_at",
        "lease_expires_at", "attempts", "scorer_version", "scores", "ci", "total", "unanswered",
    ]
    actions = ["retry"]

    @admin.action(description="Re-queue (failed or scored) for scoring")
    def retry(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        done = 0
        for submission in queryset:
            try:
                done += bool(intake.retry(submission))
            except intake.SubmissionRefused as exc:
                self.message_user(request, f"#{submission.pk}: {exc.message}", messages.WARNING)
        self.message_user(request, f"{done} submission(s) re-queued.")
