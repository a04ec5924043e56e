from rest_framework import serializers

from .models import Benchmark, Task


class BenchmarkSerializer(serializers.ModelSerializer):
    tasks = serializers.SlugRelatedField(many=True, read_only=True, slug_field="slug")

    class Meta:
        model = Benchmark
        fields = ["slug", "name", "description", "url", "citation", "tasks"]


class MetricSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()


class TestSetSummarySerializer(serializers.Serializer):
    # Deliberately no checksum, no gold: only what a researcher needs to cite a result.
    version = serializers.CharField()
    split = serializers.CharField()
    n_items = serializers.IntegerField()
    imported_at = serializers.DateTimeField()


class TaskSerializer(serializers.ModelSerializer):
    benchmark = serializers.SlugRelatedField(read_only=True, slug_field="slug")
    metrics = serializers.SerializerMethodField()
    primary_metric = serializers.CharField(read_only=True)
    test_set = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = [
            "slug", "name", "benchmark", "kind", "language", "description",
            "metrics", "primary_metric", "accepts_submissions", "test_set",
        ]

    def get_metrics(self, task) -> list[dict]:
        return [{"key": key, "label": label} for key, label in task.metric_columns]

    def get_test_set(self, task) -> dict | None:
        test_set = task.current_test_set()
        return TestSetSummarySerializer(test_set).data if test_set else None


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    method = serializers.CharField()
    team = serializers.CharField()
    date = serializers.CharField(allow_null=True)
    url = serializers.CharField(allow_blank=True)
    scores = serializers.DictField(child=serializers.FloatField(allow_null=True))
    ci = serializers.DictField(child=serializers.ListField(child=serializers.FloatField(), allow_null=True),
                               allow_null=True)
    reported = serializers.BooleanField()
    kind = serializers.CharField()
    source = serializers.CharField(allow_blank=True)
    submission_id = serializers.IntegerField(allow_null=True)
    tier = serializers.IntegerField(allow_null=True, help_text="significance tier (1 = top); null for reported rows")
    fails = serializers.IntegerField(allow_null=True, required=False, help_text="QUACKIE: samples that failed")
    baseline = serializers.BooleanField(required=False, help_text="a published or built-in baseline")
    p_vs_above = serializers.FloatField(
        allow_null=True, help_text="paired sign-flip p-value against the scored entry ranked just above")


class LeaderboardSerializer(serializers.Serializer):
    task = serializers.CharField()
    primary_metric = serializers.CharField()
    test_set_version = serializers.CharField(allow_null=True)
    rows = LeaderboardRowSerializer(many=True)
