"""What is measured: benchmarks, tasks (one leaderboard each), versioned hidden test sets and
reported (human / paper) results."""
from django.db import models
from django.urls import reverse


class Benchmark(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    url = models.URLField(blank=True)
    citation = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["order", "name"]

    def __str__(self):
        return self.name


class Task(models.Model):
    SPAN, MULTICHOICE = "span", "multichoice"
    INTERPRETATION, CLASSIFICATION, CHECKLIST = "interpretation", "classification", "checklist"
    KIND_CHOICES = [
        (SPAN, "Span extraction"),
        (MULTICHOICE, "Multiple choice"),
        (INTERPRETATION, "Interpretation"),
        (CLASSIFICATION, "Classification"),
        (CHECKLIST, "CheckList"),
    ]
    LANGUAGE_CHOICES = [("en", "English"), ("zh", "Chinese")]

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="tasks")
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=KIND_CHOICES)
    language = models.CharField(max_length=5, choices=LANGUAGE_CHOICES, default="en")
    description = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)
    is_listed = models.BooleanField(default=True, help_text="Shown on the home page and in the API.")
    accepts_submissions = models.BooleanField(default=True)
    daily_quota = models.PositiveIntegerField(
        null=True, blank=True, help_text="Submissions per user per UTC day; empty = site default."
    )

    class Meta:
        ordering = ["benchmark__order", "order", "name"]

    def __str__(self):
        return f"{self.benchmark.name} / {self.name}"

    def get_absolute_url(self):
        return reverse("task-leaderboard", args=[self.slug])

    @property
    def primary_metric(self):
        """The metric leaderboards rank by: the last of the metric columns."""
        return self.metric_columns[-1][0]

    @property
    def answer_metric(self):
        return "answer_acc" if self.kind == self.MULTICHOICE else "answer_f1"

    @property
    def metric_columns(self):
        """(key, label) of the score columns, in display order; the last one ranks."""
        if self.kind == self.CLASSIFICATION:
            return [("accuracy", "Accuracy")]
        if self.kind == self.CHECKLIST:
            return [("pass_rate", "Cases passed (%)")]
        answer_label = "Answer Acc" if self.kind == self.MULTICHOICE else "Answer F1"
        return [
            (self.answer_metric, answer_label),
            ("evidence_f1", "Evidence F1"),
            ("overall_f1", "Overall F1"),
        ]

    @property
    def scored_split(self):
        """CheckList items are public (they test behaviour); every other task has a hidden split."""
        return TestSet.DEV if self.kind == self.CHECKLIST else TestSet.TEST

    def current_test_set(self):
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
    def is_hidden(self):
        return self.split == self.TEST


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
    """One reconstructed test set (seed 000 skills s1–s14) of a hidden span test set.
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
