from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from . import intake
from .models import Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "user", "method_name", "status", "error_category", "public", "attempts", "created_at"]
    list_filter = ["status", "task", "public", "error_category"]
    list_select_related = ["task__benchmark", "user"]
    search_fields = ["method_name", "user__username"]
    exclude = ["item_scores", "file"]
    # The stored file is named, never linked: uploads are not served over HTTP (MEDIA_URL is
    # unset on purpose), and a link would make the page fail to render.
    readonly_fields = [
        "user", "task", "test_set", "kind", "stored_file", "original_filename", "size", "sha256", "status",
        "error_category", "error_message", "created_at", "queued_at", "started_at", "finished_at",
        "lease_expires_at", "attempts", "scorer_version", "scores", "ci", "total", "unanswered",
    ]
    actions = ["retry", "hide", "show"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Submission]:
        # Per-item scores and the test set's gold are large: the list and the form need neither.
        return super().get_queryset(request).defer("item_scores", "test_set__gold", "test_set__public_inputs")

    @admin.display(description="stored file")
    def stored_file(self, submission: Submission) -> str:
        return submission.file.name or "—"

    @admin.action(description="Re-queue (failed or scored) for scoring")
    def retry(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        done = 0
        for submission in queryset:
            try:
                done += bool(intake.retry(submission))
            except intake.SubmissionRefused as exc:
                self.message_user(request, f"#{submission.pk}: {exc.message}", messages.WARNING)
        self.message_user(request, f"{done} submission(s) re-queued.")

    @admin.action(description="Hide from the public leaderboard")
    def hide(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        changed = queryset.filter(public=True).update(public=False)
        self.message_user(request, f"{changed} submission(s) hidden from the public leaderboard.")

    @admin.action(description="Show on the public leaderboard")
    def show(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        changed = queryset.filter(public=False).update(public=True)
        self.message_user(request, f"{changed} submission(s) shown on the public leaderboard (once scored).")
