from typing import Any

from django import forms
from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from .models import Benchmark, ReportedResult, Task, TestSet


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "order"]
    prepopulated_fields = {"slug": ["name"]}


def reported_result_form(task: Task | None) -> type[forms.ModelForm]:
    """A form for a reported row of ``task`` with one number field per score column of the task
    (instead of the raw JSON of ``scores``); a column left empty is absent from the row."""
    columns = task.metric_columns if task is not None else []

    class Meta:
        model = ReportedResult
        exclude = ["scores"]

    def __init__(self: forms.ModelForm, *args: Any, **kwargs: Any) -> None:
        forms.ModelForm.__init__(self, *args, **kwargs)
        for key, _ in columns:
            self.initial.setdefault(f"score_{key}", (self.instance.scores or {}).get(key))

    def clean(self: forms.ModelForm) -> dict[str, Any]:
        cleaned = forms.ModelForm.clean(self) or {}
        scores = {key: cleaned[f"score_{key}"] for key, _ in columns if cleaned.get(f"score_{key}") is not None}
        if not scores and not cleaned.get("DELETE"):
            raise forms.ValidationError("Give at least one score.")
        self.instance.scores = scores
        return cleaned

    # Declared on the class (not added per instance) so that the admin's fieldsets list them.
    attributes: dict[str, Any] = {"Meta": Meta, "__init__": __init__, "clean": clean}
    for key, label in columns:
        attributes[f"score_{key}"] = forms.FloatField(label=label, required=False)
    return type("ReportedResultForm", (forms.ModelForm,), attributes)


class ReportedResultInline(admin.StackedInline):
    model = ReportedResult
    extra = 0

    def get_formset(self, request: HttpRequest, obj: Task | None = None, **kwargs: Any) -> Any:
        kwargs["form"] = reported_result_form(obj)
        return super().get_formset(request, obj, **kwargs)


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
    list_select_related = ["task__benchmark"]
    exclude = ["gold", "public_inputs", "key_spec", "diagnostics"]
    readonly_fields = ["task", "split", "version", "checksum", "source_name", "n_items", "imported_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[TestSet]:
        # The gold, the public inputs and the diagnostics run to megabytes per row.
        return super().get_queryset(request).defer("gold", "public_inputs", "key_spec", "diagnostics")

    def save_model(self, request: HttpRequest, obj: TestSet, form: forms.ModelForm, change: bool) -> None:
        """One current version per task and split: ticking "current" here unticks the others,
        as an import of a new version does."""
        with transaction.atomic():
            if obj.is_current:
                TestSet.objects.filter(task=obj.task, split=obj.split).exclude(pk=obj.pk).update(is_current=False)
            super().save_model(request, obj, form, change)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
