from typing import Any

from rest_framework import serializers

from benchmark.models import Task
from core.api_fields import name_field

from .forms import EDITABLE_FIELDS, save_entry_edit
from .models import DevSetUse, Submission
from .selectors import board_placement


class SubmissionCreateSerializer(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=True, use_url=False)
    kind = serializers.ChoiceField(
        choices=[Submission.PREDICTIONS, Submission.SKILLS, Submission.CODE, Submission.MODEL],
        default=Submission.PREDICTIONS,
        help_text="skills: {\"original\": {...}, \"s1\": {...}} for span tasks; code: an interpreter "
                  "(.py or .zip) for QUACKIE tracks, run in the sandbox; model: a .zip whose root holds predict.py, "
                  "run in the sandbox on the test inputs (the only kind a task with hidden inputs takes)")
    method_name = name_field(120, help_text="the name shown on the board")
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)
    url = serializers.URLField(required=False, allow_blank=True, default="")
    dev_set_use = serializers.ChoiceField(choices=DevSetUse.choices, default=DevSetUse.NONE,
                                          help_text="was the task's dev set used to train the system: none, part, "
                                                    "whole (part or whole marks the row on the board)")
    external_data = serializers.CharField(required=False, allow_blank=True, default="", max_length=300,
                                          help_text="external human-annotated data used, named (empty: none)")
    code_url = serializers.URLField(required=False, allow_blank=True, default="")
    paper_url = serializers.URLField(required=False, allow_blank=True, default="")
    # Omitted (null): the account's preference, private unless changed in the account settings.
    public = serializers.BooleanField(required=False, allow_null=True, default=None,
                                      help_text="show on the public leaderboard once scored; default: the "
                                                "account's preference (private unless changed in its settings)")


class SubmissionSerializer(serializers.ModelSerializer):
    task: "serializers.SlugRelatedField[Task]" = serializers.SlugRelatedField(read_only=True, slug_field="slug")
    test_set_version = serializers.CharField(source="test_set.version", read_only=True)
    team = serializers.CharField(read_only=True)
    error = serializers.SerializerMethodField()
    stalled = serializers.BooleanField(source="is_stalled", read_only=True,
                                       help_text="running, but its worker stopped renewing the run: it will be "
                                                 "given to another worker")

    leaderboard = serializers.SerializerMethodField(
        help_text='where the entry stands with the public leaderboard: {"listed", "ranked", "note"} (note says why '
                  "not listed or not ranked: private, flagged, scored on an earlier test-set version, ...)")

    class Meta:
        model = Submission
        # Never item_scores: per-question results of hidden splits stay on the server.
        fields = [
            "id", "task", "test_set_version", "kind", "method_name", "system_name", "team", "description", "url",
            "public", "dev_set_use", "external_data", "code_url", "paper_url",
            "status", "stalled", "error", "scores", "ci", "details", "diagnostics_status", "total", "unanswered",
            "attempts", "leaderboard",
            "scorer_version",
            "original_filename", "size", "sha256", "created_at", "queued_at", "started_at", "finished_at",
        ]
        read_only_fields = [f for f in fields if f not in ("method_name", "description", "url", "public")]

    def to_representation(self, instance: Submission) -> dict[str, Any]:
        data = super().to_representation(instance)
        request = self.context.get("request")
        user = getattr(request, "user", None)
        owner = user is not None and (user.pk == instance.user_id or user.is_staff)
        if owner:
            # The smoke run's log (public sample only): the owner's to read.
            data["run_log"] = instance.run_log
        sandbox = (data.get("details") or {}).get("sandbox")
        if not owner and isinstance(sandbox, dict) and "first_failures" in sandbox:
            # Tracebacks of the submitter's own code: theirs (and the maintainers') to read only.
            data["details"] = {**data["details"], "sandbox": {k: v for k, v in sandbox.items()
                                                              if k != "first_failures"}}
        return data

    def get_leaderboard(self, sub: Submission) -> dict[str, Any]:
        placement = board_placement(sub)
        return {"listed": placement.listed, "ranked": placement.ranked, "note": placement.text}

    def get_error(self, sub: Submission) -> dict | None:
        if not sub.error_category:
            return None
        return {"category": sub.error_category, "message": sub.error_message, "help": sub.error_help}


class QuotaSerializer(serializers.Serializer):
    """A user's daily quota on one task (``intake.quota_status``)."""

    limit = serializers.IntegerField()
    used = serializers.IntegerField()
    remaining = serializers.IntegerField()
    resets_at = serializers.DateTimeField()
    phase = serializers.CharField(required=False, help_text="the open phase, if the task has phases")
    phase_limit = serializers.IntegerField(required=False, help_text="submissions allowed in the whole phase")
    phase_used = serializers.IntegerField(required=False)


class DiagnosticsAnswerSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed", "none"])
    diagnostics = serializers.DictField(allow_null=True, help_text="aggregates only (docs/diagnostics.md); "
                                                                   "never per-question outcomes")


class FieldErrorSerializer(serializers.Serializer):
    field = serializers.CharField(allow_null=True,
                                  help_text="the field or query parameter; null for the request as a whole")
    detail = serializers.CharField()


class ProblemSerializer(serializers.Serializer):
    """An error answer: RFC 9457 problem details (config/errors.py, docs/client.md#errors)."""

    type = serializers.CharField(help_text="about:blank, or /api/v1/problems/<name>/ for a documented problem type")
    title = serializers.CharField(help_text="a short summary of the type")
    status = serializers.IntegerField(help_text="the HTTP status code")
    detail = serializers.CharField(help_text="what went wrong with this request")
    errors = FieldErrorSerializer(  # type: ignore[assignment]  # a declared field, not Serializer.errors
        many=True, required=False, help_text="invalid fields (validation-error only)")


class QuotaProblemSerializer(ProblemSerializer):
    """quota-exceeded: the daily quota is spent; Retry-After says when it resets."""

    limit = serializers.IntegerField()
    used = serializers.IntegerField()
    remaining = serializers.IntegerField()
    resets_at = serializers.DateTimeField()


class UploadProblemSerializer(ProblemSerializer):
    """validation-error (a field), submission-rejected (the file: submission_id and category
    name the stored, rejected submission) or submission-refused (the task is closed)."""

    submission_id = serializers.IntegerField(required=False, help_text="submission-rejected only")
    category = serializers.CharField(required=False, help_text="submission-rejected only: which check failed")


class SubmissionUpdateSerializer(serializers.ModelSerializer):
    """PATCH by the owner: the fields of the web edit page (forms.EntryEditForm), same rules."""

    method_name = name_field(120, required=False, help_text="the name shown on the board")
    description = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    team = serializers.CharField(required=False, allow_blank=True, max_length=120,
                                 help_text="the account's team: changes it for all the owner's entries")

    class Meta:
        model = Submission
        fields = [*EDITABLE_FIELDS, "team"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # A field that cannot be changed (a score, the status) is refused, not silently ignored.
        unknown = sorted(set(getattr(self, "initial_data", None) or {}) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {name: [f"cannot be changed; editable: {', '.join(self.fields)}"] for name in unknown})
        return attrs

    def update(self, instance: Submission, validated_data: dict[str, Any]) -> Submission:
        team = validated_data.pop("team", None)
        old_name, was_public = instance.method_name, instance.public
        for name, value in validated_data.items():
            setattr(instance, name, value)
        request = self.context["request"]
        save_entry_edit(instance, old_name=old_name, was_public=was_public, team=team, changed_by=request.user)
        return instance
