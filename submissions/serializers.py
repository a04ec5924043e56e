from typing import Any

from rest_framework import serializers

from benchmark.models import Task

from .models import Submission


class SubmissionCreateSerializer(serializers.Serializer):
    file = serializers.FileField(allow_empty_file=True, use_url=False)
    kind = serializers.ChoiceField(
        choices=[Submission.PREDICTIONS, Submission.SKILLS, Submission.CODE], default=Submission.PREDICTIONS,
        help_text="skills: {\"original\": {...}, \"s1\": {...}} for span tasks; code: an interpreter "
                  "(.py or .zip) for QUACKIE tracks, run in the sandbox")
    method_name = serializers.CharField(max_length=120)
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=5000)
    url = serializers.URLField(required=False, allow_blank=True, default="")
    public = serializers.BooleanField(required=False, default=True)


class SubmissionSerializer(serializers.ModelSerializer):
    task: "serializers.SlugRelatedField[Task]" = serializers.SlugRelatedField(read_only=True, slug_field="slug")
    test_set_version = serializers.CharField(source="test_set.version", read_only=True)
    team = serializers.CharField(read_only=True)
    error = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        # Never item_scores: per-question results of hidden splits stay on the server.
        fields = [
            "id", "task", "test_set_version", "kind", "method_name", "team", "description", "url", "public",
            "status", "error", "scores", "ci", "details", "diagnostics_status", "total", "unanswered", "attempts",
            "scorer_version",
            "original_filename", "size", "sha256", "created_at", "queued_at", "started_at", "finished_at",
        ]
        read_only_fields = [f for f in fields if f not in ("method_name", "description", "url", "public")]

    def to_representation(self, instance: Submission) -> dict[str, Any]:
        data = super().to_representation(instance)
        request = self.context.get("request")
        user = getattr(request, "user", None)
        owner = user is not None and (user.pk == instance.user_id or user.is_staff)
        sandbox = (data.get("details") or {}).get("sandbox")
        if not owner and isinstance(sandbox, dict) and "first_failures" in sandbox:
            # Tracebacks of the submitter's own code: theirs (and the maintainers') to read only.
            data["details"] = {**data["details"], "sandbox": {k: v for k, v in sandbox.items()
                                                              if k != "first_failures"}}
        return data

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


class SubmissionUpdateSerializer(serializers.ModelSerializer):
    class Meta:
        model = Submission
        fields = ["method_name", "description", "url", "public"]
