"""The maintainers' admin: every model they work with. The large JSON columns (gold, public
inputs, QUACKIE samples, inclusion flags) are never loaded by a list or change page, so pages stay
fast and never render hidden gold; the objects built by import commands are read-only here."""
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from core.jobs import JobStatus

from . import quackie_tracks
from .averages import average_change
from .models import (
    Benchmark,
    HostedModel,
    InterpretationSet,
    Phase,
    ReportedResult,
    SkillVariant,
    Task,
    TestSet,
    Track,
    Visibility,
)


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


class PhaseInline(admin.TabularInline):
    """A task's phases (docs/phases.md): times in UTC."""

    model = Phase
    extra = 0
    fields = ["name", "starts_at", "ends_at", "daily_quota", "total_quota", "live_board", "private_share",
              "split_seed", "closed_at"]
    readonly_fields = ["closed_at"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "benchmark", "kind", "language", "visibility", "inputs", "ranking_rule",
                    "accepts_submissions", "daily_quota"]
    list_filter = ["benchmark", "kind", "language", "visibility", "inputs", "ranking_rule"]
    list_select_related = ["benchmark"]
    search_fields = ["slug", "name"]
    inlines = [ReportedResultInline, PhaseInline]

    def get_form(self, request: HttpRequest, obj: Task | None = None, change: bool = False,
                 **kwargs: Any) -> type[forms.ModelForm]:
        """The visibility field says, before saving, what hiding (or listing) the task does to its
        benchmark's average board."""
        form = super().get_form(request, obj, change=change, **kwargs)
        field = form.base_fields.get("visibility")
        if obj is not None and field is not None:
            effects = [text for value, _ in Visibility.choices if value != obj.visibility
                       for text in [average_change(obj, value)] if text]
            if effects:
                field.help_text = f"{field.help_text} Changing it: {' '.join(dict.fromkeys(effects))}"
        return form

    def save_model(self, request: HttpRequest, obj: Task, form: forms.ModelForm, change: bool) -> None:
        warning = ""
        if change and "visibility" in form.changed_data:
            warning = average_change(Task.objects.get(pk=obj.pk), obj.visibility)
        super().save_model(request, obj, form, change)
        if warning:
            self.message_user(request, warning, messages.WARNING)


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


class HostedModelForm(forms.ModelForm):
    class Meta:
        model = HostedModel
        fields = ["slug", "name", "kind", "path", "description"]

    def clean_path(self) -> str:
        # The models worker loads it with local_files_only: a folder without config.json would
        # only fail later, inside an inclusion run.
        path = self.cleaned_data["path"]
        if not (Path(path) / "config.json").is_file():
            raise forms.ValidationError("No config.json there: not a local transformers model folder.")
        return path


@admin.register(HostedModel)
class HostedModelAdmin(admin.ModelAdmin):
    form = HostedModelForm
    list_display = ["slug", "name", "kind", "path", "created_at"]
    list_filter = ["kind"]
    search_fields = ["slug", "name"]
    readonly_fields = ["created_at"]


@admin.register(InterpretationSet)
class InterpretationSetAdmin(admin.ModelAdmin):
    # Built by import_quackie (checksummed, frozen); the samples hold the hidden ground truth.
    list_display = ["name", "version", "n_samples", "source_name", "imported_at", "checksum"]
    search_fields = ["name"]
    exclude = ["samples"]
    readonly_fields = ["name", "version", "checksum", "source_name", "imported_at", "n_samples", "stats"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[InterpretationSet]:
        return super().get_queryset(request).defer("samples")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Track)
class TrackAdmin(admin.ModelAdmin):
    # Made by create_track (task + scheduled inclusion run); here it is watched and re-run.
    list_display = ["task", "interpretation_set", "hosted_model", "status", "done", "total", "n_included",
                    "attempts", "updated_at"]
    list_filter = ["status", "hosted_model"]
    exclude = ["inclusion"]
    readonly_fields = ["task", "interpretation_set", "hosted_model", "status", "done", "total", "n_included",
                       "exclusions", "error", "attempts", "updated_at"]
    actions = ["compute_inclusion_again"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Track]:
        # The per-sample inclusion flags and the set's samples run to megabytes per row.
        return (super().get_queryset(request).select_related("task__benchmark", "interpretation_set", "hosted_model")
                .defer("inclusion", "interpretation_set__samples"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Compute the inclusion flags again (models worker)")
    def compute_inclusion_again(self, request: HttpRequest, queryset: QuerySet[Track]) -> None:
        tracks = list(queryset.exclude(status=JobStatus.RUNNING))
        for track in tracks:
            quackie_tracks.schedule_inclusion(track)
        skipped = queryset.count() - len(tracks)
        self.message_user(request, f"{len(tracks)} inclusion run(s) queued"
                                   + (f"; {skipped} still running, left alone" if skipped else ""),
                          messages.SUCCESS if tracks else messages.WARNING)


@admin.register(SkillVariant)
class SkillVariantAdmin(admin.ModelAdmin):
    # Built by the skill-set worker from a hidden test set; its gold stays on the server.
    list_display = ["test_set", "skill", "status", "n_items", "n_changed", "n_dropped", "built_at"]
    list_filter = ["status", "skill", ("test_set__task", admin.RelatedOnlyFieldListFilter)]
    exclude = ["gold", "public_inputs", "key_spec"]
    readonly_fields = ["test_set", "skill", "status", "note", "n_items", "n_changed", "n_dropped", "built_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[SkillVariant]:
        return (super().get_queryset(request).select_related("test_set__task")
                .defer("gold", "public_inputs", "key_spec", "test_set__gold", "test_set__public_inputs",
                       "test_set__key_spec", "test_set__diagnostics"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
