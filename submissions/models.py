"""What people send: a submission and its lifecycle.

Status machine (docs/architecture.md#the-submission-state-machine): uploaded -> queued ->
running -> scored | failed, plus rejected (invalid input) and cancelled (withdrawn before
scoring started). Every status write goes through ``submissions.lifecycle.transition``, which
checks ``LEGAL_TRANSITIONS`` and writes with a conditional UPDATE, so two workers can never
both move the same submission.
"""
import uuid
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy

from core.jobs import JobStatus

if TYPE_CHECKING:
    from benchmark.models import TestSet


class Status(models.TextChoices):
    UPLOADED = "uploaded", gettext_lazy("Uploaded")
    QUEUED = "queued", gettext_lazy("Queued")
    RUNNING = "running", gettext_lazy("Running")
    SCORED = "scored", gettext_lazy("Scored")
    FAILED = "failed", gettext_lazy("Failed")
    REJECTED = "rejected", gettext_lazy("Rejected")
    CANCELLED = "cancelled", gettext_lazy("Cancelled")


LEGAL_TRANSITIONS = {
    Status.UPLOADED: {Status.QUEUED, Status.REJECTED},
    Status.QUEUED: {Status.RUNNING, Status.CANCELLED},
    # running -> queued: the reaper gives back a run whose worker vanished; running -> running:
    # a worker re-claims a run whose lease expired (its first worker died) before the reaper did.
    Status.RUNNING: {Status.SCORED, Status.FAILED, Status.REJECTED, Status.QUEUED, Status.RUNNING},
    # A platform failure can be retried; a scored submission can be re-scored by maintainers.
    Status.FAILED: {Status.QUEUED},
    Status.SCORED: {Status.QUEUED},
    Status.REJECTED: set(),
    Status.CANCELLED: set(),
}
TERMINAL = {Status.SCORED, Status.FAILED, Status.REJECTED, Status.CANCELLED}


# A submission's diagnostics are a background job (core.jobs) with the jobs' vocabulary.
DiagnosticsStatus = JobStatus


class ErrorCategory(models.TextChoices):
    INVALID_INPUT = "invalid_input", gettext_lazy("Invalid file")
    WORKER_LOST = "worker_lost", gettext_lazy("Scoring worker lost")
    SCORER_ERROR = "scorer_error", gettext_lazy("Internal scoring error")
    CODE_FAILED = "code_failed", gettext_lazy("Interpreter code failed")
    SCORING_TIME = "scoring_time", gettext_lazy("Scoring time limit")
    SMOKE_FAILED = "smoke_failed", gettext_lazy("Model failed on the public sample")
    MODEL_FAILED = "model_failed", gettext_lazy("Model failed on the hidden inputs")


# Failures caused by the platform, not by the researcher: they are refunded (not counted
# against the quota) and can be retried.
PLATFORM_CATEGORIES = {ErrorCategory.WORKER_LOST, ErrorCategory.SCORER_ERROR}

ERROR_HELP: dict[str, str] = {
    ErrorCategory.INVALID_INPUT: "The file does not follow the prediction format. Fix it and upload again; "
    "files rejected at upload do not count against your quota. A file too large to check at upload is checked "
    "by the scoring worker, and a refusal there counts (the file had been stored and queued).",
    ErrorCategory.WORKER_LOST: "The scoring worker stopped repeatedly while scoring this file. "
    "This is our fault; it does not count against your quota and maintainers can retry it.",
    ErrorCategory.SCORER_ERROR: "The scorer failed on this file. This is our fault; it does not count "
    "against your quota and maintainers can retry it.",
    ErrorCategory.SCORING_TIME: "Your file took longer to score than the limit for one file. It counts against "
    "your quota. Send short predictions (spans of the passage) and upload again.",
    ErrorCategory.SMOKE_FAILED: "Your model failed its smoke run on the task's public sample (its full log is on "
    "this page). It never reached the hidden inputs and does not count against your quota. Fix it and submit "
    "again; `python -m scoring run-model BUNDLE INPUTS.json` reproduces the run on your machine.",
    ErrorCategory.MODEL_FAILED: "Your model failed on the hidden inputs. Only the category is shown: its output "
    "could quote the hidden inputs. It counts against your quota. Reproduce it on the public sample with "
    "`python -m scoring run-model`.",
    ErrorCategory.CODE_FAILED: "Your interpreter could not run to the end in the sandbox (see the message: import "
    "error, crash, memory or time limit, output flood, or a malformed message on the sandbox's protocol channel). "
    "It counts against your quota. Fix it and submit again.",
}


class IllegalTransition(Exception):
    pass


UPLOAD_SUFFIXES = {".json", ".py", ".zip"}

# Built-in baselines run by the server (``manage.py run_quackie_baselines``) are submissions
# of this system account; boards mark them as baselines.
BASELINES_USERNAME = "expbench-baselines"


def submission_upload_path(instance: "Submission", filename: str) -> str:
    # Random names: uploaded files are private and never guessable. The suffix is kept (from a
    # fixed list) because the sandbox tells a module from a zip by it.
    suffix = "." + filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    return f"submissions/{instance.task_id}/{uuid.uuid4().hex}{suffix if suffix in UPLOAD_SUFFIXES else '.bin'}"


class DevSetUse(models.TextChoices):
    """Whether the system was trained on the task's dev set (ExpMRC's submission policy: allowed,
    but declared, and marked on the board)."""

    NONE = "none", gettext_lazy("Not used for training")
    PART = "part", gettext_lazy("Part of the dev set used for training")
    WHOLE = "whole", gettext_lazy("The whole dev set used for training")


class Submission(models.Model):
    PREDICTIONS, SKILLS, CODE, MODEL = "predictions", "skills", "code", "model"
    KIND_CHOICES = [(PREDICTIONS, "Prediction file"), (SKILLS, "Skill predictions (original + reconstructed sets)"),
                    (CODE, "Interpreter code (run in the sandbox)"),
                    (MODEL, "Model (predict.py in a .zip), run in the sandbox on the test inputs")]
    # What the submitter declares with an upload (shown on the entry, the board, the API and exports).
    DECLARATION_FIELDS = ("dev_set_use", "external_data", "code_url", "paper_url")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    task = models.ForeignKey("benchmark.Task", on_delete=models.PROTECT, related_name="submissions")
    test_set = models.ForeignKey("benchmark.TestSet", on_delete=models.PROTECT, related_name="submissions")
    kind = models.CharField(max_length=20, choices=KIND_CHOICES, default=PREDICTIONS)
    # The team of the submitter at upload (docs/phases.md#teams): its members share the quota.
    submitting_team = models.ForeignKey("accounts.Team", on_delete=models.PROTECT, null=True, blank=True,
                                        related_name="submissions")
    # The phase the upload was made in (tasks with phases only, docs/phases.md).
    phase = models.ForeignKey("benchmark.Phase", on_delete=models.PROTECT, null=True, blank=True,
                              related_name="submissions")

    method_name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    url = models.URLField(blank=True)
    public = models.BooleanField(default=True, help_text="Shown on the public leaderboard once scored.")
    # Entries of one system share this name (empty: the method name is the system). The average
    # board and the one-per-system ranking rule group entries by (user, system).
    system_name = models.CharField(max_length=120, blank=True)

    # Declarations at upload (ExpMRC's submission policy).
    dev_set_use = models.CharField(max_length=5, choices=DevSetUse.choices, default=DevSetUse.NONE,
                                   help_text="Was the task's dev set used to train the system?")
    external_data = models.CharField(max_length=300, blank=True,
                                     help_text="External human-annotated data used, named (empty: none).")
    code_url = models.URLField(blank=True)
    paper_url = models.URLField(blank=True)
    # A model run's own log (the smoke run on the public sample): for the owner only, never for
    # the hidden run (whose output could carry test inputs).
    run_log = models.TextField(blank=True)

    # Curation by maintainers: a flagged entry leaves the board and its page says why (the reason
    # is public); a verified entry carries a mark on the board.
    flag_reason = models.CharField(max_length=300, blank=True)
    flagged_at = models.DateTimeField(null=True, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)

    file = models.FileField(upload_to=submission_upload_path, blank=True)
    original_filename = models.CharField(max_length=255, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.UPLOADED, db_index=True)
    error_category = models.CharField(max_length=20, choices=ErrorCategory.choices, blank=True)
    error_message = models.TextField(blank=True)

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    # A re-score (``submissions.rescoring``) scores the stored file on this test set; when the
    # score is stored it becomes ``test_set`` (until then the entry keeps its previous score).
    rescore_test_set = models.ForeignKey("benchmark.TestSet", on_delete=models.PROTECT, null=True, blank=True,
                                         related_name="+")
    scorer_version = models.CharField(max_length=40, blank=True)
    scores = models.JSONField(default=dict, blank=True)
    ci = models.JSONField(default=dict, blank=True)
    total = models.PositiveIntegerField(default=0)
    unanswered = models.PositiveIntegerField(default=0)
    # Per-question results: used for CIs and diagnostics, never shown for hidden splits.
    item_scores = models.JSONField(default=list, blank=True)
    # An entry of a phase with a private part, before the phase ends: its rows over the whole
    # test set, held back (item_scores, scores and ci then cover the public part only). Never
    # serialised; revealed when the phase is closed (``phases.reveal``).
    held_item_scores = models.JSONField(null=True, blank=True)
    # Kind-specific aggregate breakdowns stored with the score: per-skill gaps of a skill
    # submission, per-test failure rates of a CheckList submission.
    details = models.JSONField(default=dict, blank=True)

    # Diagnostics run after the score is stored (the score never waits for them). Only
    # aggregates are kept here: they are what the entry page and the API show.
    diagnostics_status = models.CharField(max_length=12, choices=JobStatus.choices, blank=True)
    diagnostics = models.JSONField(default=dict, blank=True)
    # Last change of diagnostics_status and claimed runs: the reaper re-sends diagnostics whose
    # worker died (or whose message was lost) and gives up after SCORING_MAX_ATTEMPTS runs.
    diagnostics_updated_at = models.DateTimeField(null=True, blank=True)
    diagnostics_attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["task", "status", "public"])]

    def __str__(self):
        return f"#{self.pk} {self.method_name} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("submission-detail", args=[self.pk])

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def error_help(self) -> str:
        return ERROR_HELP.get(self.error_category, "")

    @property
    def is_stalled(self) -> bool:
        """Running, but no worker has renewed its lease: its worker stopped (the reaper will
        give it to another worker, or fail it as the platform's fault after several tries)."""
        from django.utils import timezone  # noqa: PLC0415  # models import nothing at load time

        return (self.status == Status.RUNNING and self.lease_expires_at is not None
                and self.lease_expires_at < timezone.now())

    @property
    def scoring_test_set(self) -> "TestSet":
        """The test set a run scores on: the re-score's target while one is pending."""
        return self.rescore_test_set or self.test_set

    @property
    def system(self) -> str:
        return self.system_name or self.method_name

    @property
    def is_flagged(self) -> bool:
        return bool(self.flag_reason)

    @property
    def team(self) -> str:
        """Who the entry is shown as: its team, else the submitter's stated affiliation, else their name."""
        if self.submitting_team_id is not None and self.submitting_team is not None:
            return self.submitting_team.name
        profile = getattr(self.user, "profile", None)
        return (profile.team if profile and profile.team else "") or self.user.username

    @property
    def entrant(self) -> str:
        """Who quotas and a phase's final choice belong to: the team, or the user alone."""
        return f"team:{self.submitting_team_id}" if self.submitting_team_id else f"user:{self.user_id}"


class ScoreRecord(models.Model):
    """One score a submission had: every stored score is kept, tagged with the test-set version
    and scorer version it was computed on. The submission's own columns hold the latest one."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="score_history")
    test_set = models.ForeignKey("benchmark.TestSet", on_delete=models.PROTECT, related_name="+")
    test_set_version = models.CharField(max_length=50)
    scorer_version = models.CharField(max_length=40)
    scores = models.JSONField(default=dict)
    ci = models.JSONField(default=dict, blank=True)
    total = models.PositiveIntegerField(default=0)
    unanswered = models.PositiveIntegerField(default=0)
    # Why this score was computed: "first score", or what changed since the previous one.
    reason = models.CharField(max_length=300, blank=True)
    scored_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["submission", "-scored_at", "-id"]

    def __str__(self):
        return f"#{self.submission_id} on v{self.test_set_version} / scorer {self.scorer_version}"


class PhaseSelection(models.Model):
    """The entry a team (or a researcher alone) picks to count in a phase's final ranking
    (docs/phases.md#teams). Without a pick, their latest scored entry of the phase counts."""

    phase = models.ForeignKey("benchmark.Phase", on_delete=models.CASCADE, related_name="selections")
    entrant = models.CharField(max_length=40, help_text="team:<id> or user:<id>")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    chosen_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    chosen_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["phase", "entrant"], name="one_selection_per_entrant")]

    def __str__(self):
        return f"{self.phase}: {self.entrant} -> #{self.submission_id}"


class NameChange(models.Model):
    """Audit trail of a scored entry's public name (shown to staff)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="name_changes")
    old_name = models.CharField(max_length=120)
    new_name = models.CharField(max_length=120)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["submission", "-changed_at", "-id"]
