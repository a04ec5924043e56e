from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from benchmark.models import boards_changed
from scoring import withdrawn

from . import intake, rescoring
from .models import NameChange, ScoreRecord, Status, Submission
from .selectors import board_placement


class ScoreRecordInline(admin.TabularInline):
    """The entry's score history: every score it had, with the versions it was computed on."""
    model = ScoreRecord
    extra = 0
    can_delete = False
    fields = readonly_fields = ("scored_at", "test_set_version", "scorer_version", "scores", "total", "reason")
    ordering = ["-scored_at", "-id"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class NameChangeInline(admin.TabularInline):
    """Audit trail of the entry's public name."""
    model = NameChange
    extra = 0
    can_delete = False
    fields = readonly_fields = ("changed_at", "old_name", "new_name", "changed_by")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def update_on_boards(rows: QuerySet[Submission], **fields: Any) -> int:
    """``rows.update(**fields)``, and tell the boards of the tasks it touched (an UPDATE sends no
    save signal), so their stored rows are recomputed. Returns how many rows changed."""
    task_ids = list(rows.values_list("task_id", flat=True).distinct())
    changed = rows.update(**fields)
    if changed:
        boards_changed(task_ids)
    return changed


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "user", "method_name", "status", "error_category", "public", "flagged", "verified",
                    "attempts", "created_at"]
    list_filter = ["status", "task", "public", "error_category"]
    inlines = [ScoreRecordInline, NameChangeInline]
    list_select_related = ["task__benchmark", "user"]
    search_fields = ["method_name", "user__username"]
    exclude = ["item_scores", "file", "flagged_at", "verified_at", "rescore_test_set"]
    # The stored file is named, never linked: uploads are not served over HTTP (MEDIA_URL is
    # unset on purpose), and a link would make the page fail to render.
    readonly_fields = [
        "user", "task", "test_set", "kind", "stored_file", "original_filename", "size", "sha256", "status",
        "error_category", "error_message", "created_at", "queued_at", "started_at", "finished_at",
        "lease_expires_at", "attempts", "scorer_version", "scores", "ci", "total", "unanswered", "leaderboard",
    ]
    actions = ["retry", "hide", "show", "verify", "unverify", "unflag"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Submission]:
        # Per-item scores and the test set's gold are large: the list and the form need neither.
        return super().get_queryset(request).defer("item_scores", "test_set__gold", "test_set__public_inputs")

    @admin.display(description="stored file")
    def stored_file(self, submission: Submission) -> str:
        return submission.file.name or "—"

    @admin.display(description="leaderboard")
    def leaderboard(self, submission: Submission) -> str:
        """What the entry's page says about the board (off it, and why; listed without a rank), and
        the predictions a re-score on a corrected version ignored."""
        ignored = (submission.details or {}).get("withdrawn_predictions")
        note = f" {withdrawn.note(ignored)}." if ignored else ""
        return board_placement(submission).text + note

    @admin.display(boolean=True)
    def flagged(self, submission: Submission) -> bool:
        return submission.is_flagged

    @admin.display(boolean=True)
    def verified(self, submission: Submission) -> bool:
        return submission.verified_at is not None

    def save_model(self, request: HttpRequest, obj: Submission, form: forms.ModelForm, change: bool) -> None:
        """Flagging stamps the date; renaming a scored entry leaves an audit row."""
        if "flag_reason" in form.changed_data:
            obj.flagged_at = timezone.now() if obj.flag_reason else None
        if change and "method_name" in form.changed_data and obj.status == Status.SCORED:
            NameChange.objects.create(submission=obj, old_name=form.initial.get("method_name", ""),
                                      new_name=obj.method_name,
                                      changed_by=request.user if request.user.is_authenticated else None)
        super().save_model(request, obj, form, change)

    @admin.action(description="Re-score on the current test set and scorer (scored), or retry (failed); "
                              "predictions for withdrawn questions are ignored, missing ones score 0")
    def retry(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        """Scored entries are re-scored as ``manage.py rescore`` does (current test set, current
        scorer, previous score kept until the new one is stored); failed ones are retried."""
        done = 0
        scored = [s.pk for s in queryset if s.status == Status.SCORED]
        if scored:
            tasks = {s.task for s in queryset.select_related("task") if s.pk in scored}
            plan = rescoring.plan(tasks, scored, force=True)
            done += rescoring.queue_all(plan)
        for submission in queryset.exclude(status=Status.SCORED):
            try:
                done += bool(intake.retry(submission))
            except intake.SubmissionRefused as exc:
                self.message_user(request, f"#{submission.pk}: {exc.message}", messages.WARNING)
        self.message_user(request, f"{done} submission(s) re-queued.")

    @admin.action(description="Mark verified (a mark on the board)")
    def verify(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        changed = update_on_boards(queryset.filter(verified_at__isnull=True), verified_at=timezone.now())
        self.message_user(request, f"{changed} submission(s) marked verified.")

    @admin.action(description="Remove the verified mark")
    def unverify(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        changed = update_on_boards(queryset.filter(verified_at__isnull=False), verified_at=None)
        self.message_user(request, f"{changed} submission(s) no longer marked verified.")

    @admin.action(description="Unflag (back on the board); flag an entry by giving a reason on its page")
    def unflag(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        changed = update_on_boards(queryset.exclude(flag_reason=""), flag_reason="", flagged_at=None)
        self.message_user(request, f"{changed} submission(s) unflagged.")

    @admin.action(description="Hide from the public leaderboard")
    def hide(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        changed = update_on_boards(queryset.filter(public=True), public=False)
        self.message_user(request, f"{changed} submission(s) hidden from the public leaderboard.")

    @admin.action(description="Show on the public leaderboard")
    def show(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        changed = update_on_boards(queryset.filter(public=False), public=True)
        self.message_user(request, f"{changed} submission(s) shown on the public leaderboard (once scored).")
