from django.utils import timezone
from rest_framework import serializers

from .models import Benchmark, InputsAccess, Phase, Task


class BenchmarkSerializer(serializers.ModelSerializer):
    tasks = serializers.SerializerMethodField(help_text="slugs of the benchmark's listed tasks")

    class Meta:
        model = Benchmark
        fields = ["slug", "name", "description", "url", "citation", "license", "license_url", "tasks"]
        extra_kwargs = {"license": {"help_text": "the licence of the inputs researchers download (empty: not "
                                                 "stated)"}}

    def get_tasks(self, benchmark: Benchmark) -> list[str]:
        # Hidden tasks are staff only and unlisted ones are not listed: neither is named here.
        user = getattr(self.context.get("request"), "user", None)
        return [task.slug for task in benchmark.tasks.listed_for(user)]


class MetricSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a declared field, not Field.label


class TestSetSummarySerializer(serializers.Serializer):
    # Deliberately no checksum, no gold: only what a researcher needs to cite a result.
    version = serializers.CharField()
    split = serializers.CharField()
    n_items = serializers.IntegerField()
    imported_at = serializers.DateTimeField()


class PhaseSerializer(serializers.ModelSerializer):
    open = serializers.SerializerMethodField(help_text="taking uploads now")
    closed = serializers.SerializerMethodField(help_text="ended and closed: its entries are on the boards and its "
                                                         "private part (if any) revealed")

    class Meta:
        model = Phase
        fields = ["id", "name", "starts_at", "ends_at", "open", "closed", "daily_quota", "total_quota", "live_board",
                  "private_share"]

    def get_open(self, phase: Phase) -> bool:
        return phase.is_open(timezone.now())

    def get_closed(self, phase: Phase) -> bool:
        return phase.closed_at is not None


class TaskSerializer(serializers.ModelSerializer):
    benchmark: "serializers.SlugRelatedField[Benchmark]" = serializers.SlugRelatedField(read_only=True,
                                                                                       slug_field="slug")
    metrics = serializers.SerializerMethodField()
    primary_metric = serializers.CharField(read_only=True)
    test_set = serializers.SerializerMethodField()
    inputs = serializers.CharField(read_only=True, help_text="public: the inputs can be downloaded and predictions "
                                   "uploaded; hidden: only models are accepted, run on the server")
    submission_kinds = serializers.SerializerMethodField(help_text="what the task accepts as kind= on upload")
    phases = PhaseSerializer(many=True, read_only=True, help_text="windows of submission (UTC); none: always open")

    class Meta:
        model = Task
        fields = [
            "slug", "name", "benchmark", "kind", "language", "description",
            "metrics", "primary_metric", "accepts_submissions", "visibility", "ranking_rule", "test_set", "inputs",
            "submission_kinds", "phases", "requires_code_url", "requires_paper_url", "public_predictions",
            "public_model_files",
        ]
        read_only_fields = fields

    def get_metrics(self, task: Task) -> list[dict]:
        return [{"key": key, "label": label} for key, label in task.metric_columns]

    def get_submission_kinds(self, task: Task) -> list[str]:
        return task.submission_kinds

    def get_test_set(self, task: Task) -> dict | None:
        test_set = task.current_test_set()
        return TestSetSummarySerializer(test_set).data if test_set else None


class SkillSetRowSerializer(serializers.Serializer):
    skill = serializers.CharField()
    name = serializers.CharField()
    group = serializers.CharField()
    reading = serializers.CharField()
    status = serializers.CharField(help_text="ok, failed, or not built")
    note = serializers.CharField(allow_blank=True)
    n_items = serializers.IntegerField()
    n_changed = serializers.IntegerField()
    n_dropped = serializers.IntegerField()
    inputs_url = serializers.CharField(allow_null=True, help_text="the set's public inputs, when built")


class SkillListingSerializer(serializers.Serializer):
    task = serializers.CharField()
    test_set_version = serializers.CharField(allow_null=True)
    build = serializers.DictField(allow_null=True, help_text="the build's progress and timing")
    skills = SkillSetRowSerializer(many=True)
    note = serializers.CharField(required=False, help_text="why there are no skill sets")


class TaskSettingsSerializer(serializers.ModelSerializer):
    """What staff may change through ``PATCH /api/tasks/{slug}/``."""

    class Meta:
        model = Task
        fields = ["visibility", "ranking_rule", "accepts_submissions", "daily_quota", "inputs", "requires_code_url",
                  "requires_paper_url", "public_predictions", "public_model_files"]

    def validate(self, data: dict) -> dict:
        task = self.instance
        if (data.get("inputs") == InputsAccess.HIDDEN and task is not None
                and not task.kind_definition.takes_models):
            raise serializers.ValidationError({"inputs": f"{task.kind_definition.label} tasks take no model "
                                                         "submissions, so their inputs cannot be hidden"})
        return data
