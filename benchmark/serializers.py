from rest_framework import serializers

from .models import Benchmark, Task


class BenchmarkSerializer(serializers.ModelSerializer):
    tasks: "serializers.SlugRelatedField[Task]" = serializers.SlugRelatedField(many=True, read_only=True,
                                                                              slug_field="slug")

    class Meta:
        model = Benchmark
        fields = ["slug", "name", "description", "url", "citation", "tasks"]


class MetricSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a declared field, not Field.label


class TestSetSummarySerializer(serializers.Serializer):
    # Deliberately no checksum, no gold: only what a researcher needs to cite a result.
    version = serializers.CharField()
    split = serializers.CharField()
    n_items = serializers.IntegerField()
    imported_at = serializers.DateTimeField()


class TaskSerializer(serializers.ModelSerializer):
    benchmark: "serializers.SlugRelatedField[Benchmark]" = serializers.SlugRelatedField(read_only=True,
                                                                                       slug_field="slug")
    metrics = serializers.SerializerMethodField()
    primary_metric = serializers.CharField(read_only=True)
    test_set = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = [
            "slug", "name", "benchmark", "kind", "language", "description",
            "metrics", "primary_metric", "accepts_submissions", "test_set",
        ]

    def get_metrics(self, task: Task) -> list[dict]:
        return [{"key": key, "label": label} for key, label in task.metric_columns]

    def get_test_set(self, task: Task) -> dict | None:
        test_set = task.current_test_set()
        return TestSetSummarySerializer(test_set).data if test_set else None
