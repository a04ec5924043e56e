"""What is measured: benchmarks, tasks (one leaderboard each), versioned hidden test sets and
reported (human / paper) results."""
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from core.jobs import JobStatus, send_after_commit

from . import kinds


class Benchmark(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    url = models.URLField(blank=True)
    citation = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)
    # The licence of the inputs researchers download (shown on the pages and in inputs.json).
    license = models.CharField(max_length=100, blank=True, help_text='e.g. "CC BY-SA 4.0"; empty: not stated.')
    license_url = models.URLField(blank=True)
    # The benchmark's own pages (plain text, blank lines between paragraphs): what it measures,
    # how entries are evaluated, the terms of taking part. Empty: the page says what the site knows.
    overview = models.TextField(blank=True)
    evaluation = models.TextField(blank=True)
    terms = models.TextField(blank=True)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self):
        return self.name


class Visibility(models.TextChoices):
    PUBLIC = "public", "Public (listed)"
    UNLISTED = "unlisted", "Unlisted (reachable by its address, not listed)"
    HIDDEN = "hidden", "Hidden (staff only)"

    @classmethod
    def reachable_by(cls, user: Any) -> list[str]:
        """The visibilities of the tasks ``user`` may reach by address: hidden ones are for staff."""
        return list(cls.values) if getattr(user, "is_staff", False) else [cls.PUBLIC, cls.UNLISTED]

    @classmethod
    def listed_for(cls, user: Any) -> list[str]:
        """The visibilities of the tasks lists show ``user``: never unlisted ones."""
        return [cls.PUBLIC, cls.HIDDEN] if getattr(user, "is_staff", False) else [cls.PUBLIC]


class InputsAccess(models.TextChoices):
    """Whether researchers may read a task's test inputs. Hidden inputs follow the rule of
    ExpMRC, SQuAD and CMRC 2018: the test inputs are never released; researchers upload a
    model that the server runs on them (docs/model_submissions.md)."""

    PUBLIC = "public", "Public: researchers download the inputs and upload predictions"
    HIDDEN = "hidden", "Hidden: researchers upload a model, run here on the inputs"


class RankingRule(models.TextChoices):
    ALL = "all", "Every public entry"
    BEST_PER_SYSTEM = "best_per_system", "One per system: its best entry"
    LATEST_PER_SYSTEM = "latest_per_system", "One per system: its latest entry"


class TaskQuerySet(QuerySet):
    def visible_to(self, user: Any) -> "TaskQuerySet":
        """Tasks ``user`` may reach by address: hidden tasks exist for staff only (everyone else
        gets a 404, never a 403, so their existence is not confirmed)."""
        if getattr(user, "is_staff", False):
            return self
        return self.filter(visibility__in=Visibility.reachable_by(user))

    def listed_for(self, user: Any) -> "TaskQuerySet":
        """Tasks shown in lists (home, benchmark pages, the API's task list): public ones, and
        for staff the hidden ones too (marked as such), never the unlisted ones."""
        return self.filter(visibility__in=Visibility.listed_for(user))

    def public(self) -> "TaskQuerySet":
        """Tasks anyone may list (what anonymous pages and caches show)."""
        return self.filter(visibility=Visibility.PUBLIC)


class Task(models.Model):
    # English words (messages that are stored, such as a rejected file's, quote them); a page
    # translates them when it shows them.
    LANGUAGE_CHOICES = [("en", gettext_noop("English")), ("zh", gettext_noop("Chinese"))]

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="tasks")
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    # A registered kind's name (benchmark.kinds): the choices are read when used, so a new
    # kind needs no migration.
    kind = models.CharField(max_length=20, choices=kinds.choices)
    language = models.CharField(max_length=5, choices=LANGUAGE_CHOICES, default="en")
    description = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC,
        help_text="Public: listed. Unlisted: reachable by its address only. Hidden: staff only, 404 for others.",
    )
    ranking_rule = models.CharField(
        max_length=20, choices=RankingRule.choices, default=RankingRule.ALL,
        help_text="Which public entries rank: all, or one per system (same user and system name).",
    )
    accepts_submissions = models.BooleanField(default=True)
    inputs = models.CharField(
        max_length=10, choices=InputsAccess.choices, default=InputsAccess.PUBLIC,
        help_text="Hidden: no page, API answer or export serves the test inputs; only model submissions are "
                  "accepted, run on the server (docs/model_submissions.md).")
    model_max_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Largest model bundle (bytes); empty = site default (MODEL_MAX_BYTES).")
    model_budget = models.JSONField(
        default=dict, blank=True,
        help_text='What one model run may use: {"cpu_seconds": N, "memory_mb": N, "wall_seconds": N}; a key '
                  "left out takes the site default.")
    daily_quota = models.PositiveIntegerField(
        null=True, blank=True, help_text="Submissions per user per UTC day; empty = site default."
    )
    # What an upload must declare: a maintainer may ask every entry for its code or its paper.
    requires_code_url = models.BooleanField(default=False, help_text="Uploads must give the URL of their code.")
    requires_paper_url = models.BooleanField(default=False, help_text="Uploads must give the URL of their paper.")
    # What anyone may download of a public scored entry besides its results (leaderboards/downloads.py).
    public_predictions = models.BooleanField(
        default=False, help_text="Anyone may download the prediction file of a public scored entry (never for a "
                                 "task with hidden inputs, never before a phase's private part is revealed).")
    public_model_files = models.BooleanField(
        default=False, help_text="Anyone may download the model bundle or interpreter code of a public scored entry.")

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["benchmark__order", "order", "name"]

    def __str__(self):
        return f"{self.benchmark.name} / {self.name}"

    @property
    def is_hidden(self) -> bool:
        return self.visibility == Visibility.HIDDEN

    @property
    def inputs_hidden(self) -> bool:
        return self.inputs == InputsAccess.HIDDEN

    @property
    def upload_choices(self) -> list[tuple[str, str]]:
        """(submission kind, label) of what researchers may upload: the kind's own uploads and a
        model where the kind takes models; only a model when the inputs are hidden."""
        definition = self.kind_definition
        model = [kinds.MODEL_UPLOAD] if definition.takes_models else []
        return model if self.inputs_hidden else [*definition.upload_kinds, *model]

    @property
    def submission_kinds(self) -> list[str]:
        return [kind for kind, _ in self.upload_choices]

    def get_absolute_url(self) -> str:
        return reverse("task-leaderboard", args=[self.slug])

    def clean(self) -> None:
        if self.inputs_hidden and self.kind in kinds.names() and not self.kind_definition.takes_models:
            raise ValidationError({"inputs": f"{self.kind_definition.label} tasks take no model submissions, so "
                                             "their inputs cannot be hidden."})

    @property
    def kind_definition(self) -> kinds.TaskKind:
        """Everything about this task's kind: scorer, columns, wording, uploads, diagnostics."""
        return kinds.get(self.kind)

    @property
    def primary_metric(self) -> str:
        """The metric leaderboards rank by (higher is better)."""
        return self.kind_definition.ranking_metric

    @property
    def primary_index(self) -> int:
        """Position of the primary metric in metric_columns (and in per-item score rows)."""
        return [key for key, _ in self.metric_columns].index(self.primary_metric)

    @property
    def metric_decimals(self) -> int:
        return self.kind_definition.metric_decimals

    @property
    def item_noun(self) -> str:
        """What one scored unit of this task is called, in the active language (English outside a
        page: commands, workers, the API)."""
        return gettext(self.kind_definition.item_noun)

    @property
    def answer_metric(self) -> str:
        return self.kind_definition.answer_metric

    @property
    def metric_columns(self) -> list[tuple[str, str]]:
        """(key, label) of the score columns, in display order."""
        return list(self.kind_definition.metric_columns)

    @property
    def scored_split(self) -> str:
        """The split submissions are scored on: the hidden test split, or the public one for a
        kind whose items are public (CheckList)."""
        return self.kind_definition.scored_split

    def current_test_set(self) -> "TestSet | None":
        """The split submissions are scored on now. Gold and inputs are deferred: most
        callers need only the version and the key spec."""
        return (
            self.test_sets.filter(split=self.scored_split, is_current=True)
            .defer("gold", "public_inputs")
            .first()
        )


class TestSet(models.Model):
    DEV, TEST, REFERENCE = "dev", "test", "reference"
    SPLIT_CHOICES = [
        (DEV, "dev (public)"),
        (TEST, "test (hidden)"),
        (REFERENCE, "reference (training data for cue discovery)"),
    ]

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="test_sets")
    split = models.CharField(max_length=10, choices=SPLIT_CHOICES, default=TEST)
    version = models.CharField(max_length=50)
    checksum = models.CharField(max_length=64, help_text="sha256 of the imported file")
    source_name = models.CharField(max_length=255, blank=True)
    imported_at = models.DateTimeField(auto_now_add=True)
    is_current = models.BooleanField(default=True)
    n_items = models.PositiveIntegerField()
    # Server-side only: never serialised, never rendered, never logged.
    gold = models.JSONField()
    # Public facts validation needs (kind, question keys, option letters): no gold text.
    key_spec = models.JSONField()
    # What researchers download: the gold with answers and evidences removed.
    public_inputs = models.JSONField()
    # What a maintainer says changed from the previous version (shown in entries' score history).
    change_note = models.TextField(blank=True)
    # Dataset-level diagnostics of this version (e.g. ICQ cues vs the reference split):
    # aggregates only, computed by a worker after import.
    diagnostics = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["task", "-imported_at"]
        constraints = [
            models.UniqueConstraint(fields=["task", "split", "version"], name="unique_test_set_version")
        ]

    def __str__(self):
        return f"{self.task.slug} {self.split} v{self.version}"

    @property
    def is_hidden(self) -> bool:
        return self.split == self.TEST


class BoardGeneration(models.Model):
    """How many times a task's board has changed: the stored boards (leaderboards.store) are
    recomputed when theirs is older. A row of its own, only ever written by ``boards_changed``
    with an UPDATE of ``generation + 1``, so that saving a Task loaded earlier can never set
    the counter back (docs/operations.md#stored-boards)."""

    task = models.OneToOneField(Task, on_delete=models.CASCADE, primary_key=True, related_name="board_generation")
    generation = models.PositiveBigIntegerField(default=0)
    changed_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.task_id}: {self.generation}"


#: The Celery task that recomputes stored boards, sent by name (it lives in a higher layer).
REBUILD_BOARDS_TASK = "leaderboards.tasks.rebuild_boards"


def boards_changed(task_ids: "Iterable[int | None]") -> None:
    """Something a board of these tasks shows has changed (an entry scored, hidden, flagged,
    renamed; a reported row; the task's settings; a new test set): bump their generations, and
    have a worker recompute their boards once the change is committed."""
    ids = sorted({int(pk) for pk in task_ids if pk is not None})
    if not ids:
        return
    now = timezone.now()
    # Create the missing counters at 0, then one UPDATE for all: two concurrent changes give +2.
    BoardGeneration.objects.bulk_create([BoardGeneration(task_id=pk, generation=0, changed_at=now) for pk in ids],
                                        ignore_conflicts=True)
    BoardGeneration.objects.filter(task_id__in=ids).update(generation=F("generation") + 1, changed_at=now)
    send_after_commit(REBUILD_BOARDS_TASK, ids)


class PhaseQuerySet(QuerySet):
    def open_at(self, when: datetime) -> "PhaseQuerySet":
        return self.filter(starts_at__lte=when, ends_at__gt=when)


class Phase(models.Model):
    """A window in which a task takes submissions (docs/phases.md): a task with phases takes
    uploads only while one is open, with the phase's quotas. A phase whose board is not live
    keeps its entries off every board until its end; a phase with a private share ranks them on
    the public part of the test set until its end, then on the private part (the reveal)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="phases")
    name = models.CharField(max_length=100)
    starts_at = models.DateTimeField(help_text="UTC")
    ends_at = models.DateTimeField(help_text="UTC; uploads are refused from this moment on")
    daily_quota = models.PositiveIntegerField(null=True, blank=True,
                                              help_text="Submissions per user (or team) per UTC day in this phase; "
                                                        "empty = the task's.")
    total_quota = models.PositiveIntegerField(null=True, blank=True,
                                              help_text="Submissions per user (or team) over the whole phase; "
                                                        "empty = no limit.")
    live_board = models.BooleanField(default=True, help_text="Off: the phase's entries appear on boards only "
                                                             "once it has ended.")
    private_share = models.FloatField(default=0.0, help_text="Share of the test items kept private (0 = no split): "
                                                             "ranked on the public part until the end, then revealed.")
    split_seed = models.PositiveIntegerField(default=0, help_text="Seed of the public/private split.")
    # Set once, by the worker that closes the phase after its end: its hidden entries join the
    # boards and its private part is revealed (submissions.phases.close_ended_phases).
    closed_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = PhaseQuerySet.as_manager()

    class Meta:
        ordering = ["task", "starts_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(ends_at__gt=models.F("starts_at")),
                                   name="phase_ends_after_start"),
            models.CheckConstraint(condition=models.Q(private_share__gte=0.0, private_share__lt=1.0),
                                   name="phase_private_share_in_range"),
            models.UniqueConstraint(fields=["task", "name"], name="unique_phase_name"),
        ]

    def __str__(self):
        return f"{self.task.slug} / {self.name}"

    def is_open(self, when: datetime) -> bool:
        return self.starts_at <= when < self.ends_at

    def has_ended(self, when: datetime) -> bool:
        return when >= self.ends_at

    @property
    def window(self) -> str:
        return f"{self.starts_at:%Y-%m-%d %H:%M} – {self.ends_at:%Y-%m-%d %H:%M} UTC"


class ReportedResult(models.Model):
    """A number taken from a paper or an official leaderboard, never scored here."""

    HUMAN, BASELINE = "human", "baseline"
    KIND_CHOICES = [(HUMAN, "Human performance"), (BASELINE, "Published baseline")]

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="reported_results")
    kind = models.CharField(max_length=10, choices=KIND_CHOICES)
    method = models.CharField(max_length=200)
    team = models.CharField(max_length=200, blank=True)
    scores = models.JSONField(help_text='e.g. {"answer_f1": 91.3, "evidence_f1": 92.9, "overall_f1": 84.7}')
    source = models.CharField(max_length=300, help_text="Where the number comes from.")
    url = models.URLField(blank=True)
    note = models.TextField(blank=True, help_text="Shown beside the row: how the number differs from ours.")
    date = models.DateField(null=True, blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["task", "order"]
        constraints = [
            models.UniqueConstraint(fields=["task", "kind", "method"], name="unique_reported_row")
        ]

    def __str__(self):
        return f"{self.task.slug}: {self.method} (reported)"


class SkillVariant(models.Model):
    """One reconstructed test set (the InDepth-Eva-MRC skills s1–s14, Wu et al., 2022) of a hidden span test set.
    Its gold stays on the server like the test set's; its inputs are public."""

    test_set = models.ForeignKey(TestSet, on_delete=models.CASCADE, related_name="skill_variants")
    skill = models.CharField(max_length=10)
    status = models.CharField(max_length=20, help_text='"ok", "not applicable" or "not configured"')
    note = models.TextField(blank=True)
    n_items = models.PositiveIntegerField(default=0)
    n_changed = models.PositiveIntegerField(default=0)
    n_dropped = models.PositiveIntegerField(default=0)
    gold = models.JSONField(null=True, blank=True)
    key_spec = models.JSONField(default=dict, blank=True)
    public_inputs = models.JSONField(default=dict, blank=True)
    built_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["test_set", "id"]
        constraints = [models.UniqueConstraint(fields=["test_set", "skill"], name="unique_skill_variant")]

    def __str__(self):
        return f"{self.test_set} {self.skill} ({self.status})"


class HostedModel(models.Model):
    """A model the server runs for QUACKIE tracks, loaded from a local path only
    (``from_pretrained(path, local_files_only=True)``)."""

    CLASSIFICATION, QA = "classification", "qa"
    KIND_CHOICES = [(CLASSIFICATION, "Answerability classifier (class 1 = answerable)"),
                    (QA, "Extractive QA model (answerability from span scores)")]

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=20, choices=KIND_CHOICES)
    path = models.CharField(max_length=500, help_text="Local directory with config, weights and tokenizer.")
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.name} ({self.kind})"

    @property
    def described(self) -> str:
        """How pages name what this model is."""
        return {self.CLASSIFICATION: "a classifier (class 1 = answerable)",
                self.QA: "a QA model (P(answer) from its span scores)"}.get(self.kind, self.kind)


class InterpretationSet(models.Model):
    """A hidden QUACKIE set built from SQuAD-format data: per sample the question, context,
    frozen sentences and ground-truth candidates (official findanswer arithmetic)."""

    name = models.SlugField()
    version = models.CharField(max_length=50)
    checksum = models.CharField(max_length=64)
    source_name = models.CharField(max_length=255, blank=True)
    imported_at = models.DateTimeField(auto_now_add=True)
    n_samples = models.PositiveIntegerField()
    stats = models.JSONField(default=dict, blank=True)
    # Server-side only, like TestSet.gold.
    samples = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="unique_interpretation_set")]

    def __str__(self):
        return f"{self.name} v{self.version}"


class Track(models.Model):
    """A QUACKIE track = (interpretation set, hosted model) = one task. The samples a track
    scores depend on the model (<= 512 tokens with its tokenizer, model says answerable), so
    the inclusion flags are computed per track by a worker on the ``models`` queue."""

    # The inclusion run is a background job (core.jobs): its status is a JobStatus.
    QUEUED, RUNNING, DONE, FAILED = JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.DONE, JobStatus.FAILED
    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="track")
    interpretation_set = models.ForeignKey(InterpretationSet, on_delete=models.PROTECT, related_name="tracks")
    hosted_model = models.ForeignKey(HostedModel, on_delete=models.PROTECT, related_name="tracks")
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    n_included = models.PositiveIntegerField(default=0)
    exclusions = models.JSONField(default=dict, blank=True, help_text="counts per exclusion reason")
    inclusion = models.JSONField(default=dict, blank=True)  # {sample_id: {"tokens", "answerable", "included"}}
    error = models.TextField(blank=True)
    # Set explicitly on every progress step (queryset updates skip auto_now): the reaper
    # re-sends an inclusion run whose worker died, up to SCORING_MAX_ATTEMPTS runs.
    updated_at = models.DateTimeField(auto_now=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    def __str__(self):
        return f"track {self.task.slug} ({self.status})"
