"""Read-side queries other apps use."""
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from benchmark.models import RankingRule, Task, TestSet, Visibility

from .models import Status, Submission


def public_scored_submissions(task: Task, test_set: TestSet | None,
                              kinds: Iterable[str] = (Submission.PREDICTIONS, Submission.CODE, Submission.MODEL),
                              ) -> QuerySet[Submission]:
    """Public scored entries of a task's test set, oldest first, except flagged ones. Prediction
    files and code runs rank on the leaderboard; skill submissions have their own board. An entry
    being re-scored keeps its place with the score it has until the new one is stored."""
    if test_set is None:
        return Submission.objects.none()
    being_rescored = Q(status__in=[Status.QUEUED, Status.RUNNING], rescore_test_set__isnull=False)
    return (
        Submission.objects.filter(Q(status=Status.SCORED) | being_rescored, task=task, test_set=test_set, public=True,
                                  kind__in=kinds, flag_reason="")
        .exclude(scores={})
        # A phase whose board is not live keeps its entries off the boards until it is closed.
        .exclude(phase__live_board=False, phase__closed_at__isnull=True)
        .select_related("user__profile", "phase", "submitting_team")
        .defer("item_scores")
        .order_by("finished_at", "pk")
    )


def item_scores_of(submission_ids: Iterable[int]) -> dict[int, Any]:
    """{id: per-question rows} for leaderboard statistics. Internal: never serialised."""
    return dict(Submission.objects.filter(pk__in=submission_ids).values_list("pk", "item_scores"))


def public_skill_submissions(task: Task, test_set: TestSet | None) -> QuerySet[Submission]:
    """Public scored skill submissions of a task (their own board, not the main ranking)."""
    return public_scored_submissions(task, test_set, kinds=(Submission.SKILLS,))


@dataclass(frozen=True)
class Placement:
    """Where a scored entry stands with its task's public leaderboard, in words a page can show:
    ``listed`` only when the board lists it now; ``ranked`` when it has a rank there."""

    listed: bool
    ranked: bool
    text: str


def board_placement(submission: Submission) -> Placement:
    """What the entry's page and API say about the board, never more than is true: a private,
    flagged, out-of-date (scored on an earlier test-set version), held (a phase whose board is not
    live) or hidden-task entry is not on it, with the reason; a listed entry without a rank says why."""
    task = submission.task
    off = _off_board_reason(submission, task)
    if off:
        return Placement(False, False, off)
    unranked = task.kind_definition.unranked_reason(submission.details or {})
    if task.primary_metric and (submission.scores or {}).get(task.primary_metric) is None:
        unranked = unranked or _("not ranked: its score is undefined")
    phase = submission.phase
    if task.ranking_rule != RankingRule.ALL or (phase is not None and phase.closed_at):
        # One entry per system (or per team after a phase) is shown: whether it is this one
        # depends on the others, which this layer does not rank.
        return Placement(False, False, _("Public: the leaderboard shows one entry per system (or per team once "
                                         "a phase ends); this entry is listed only if it is the one chosen."))
    if unranked:
        return Placement(True, False, _("Listed on the public leaderboard without a rank: %(reason)s.")
                         % {"reason": unranked})
    return Placement(True, True, _("Ranked on the public leaderboard."))


def _off_board_reason(submission: Submission, task: Task) -> str:
    """Why the entry is not on the board ("" when nothing keeps it off)."""
    if submission.status != Status.SCORED and submission.rescore_test_set_id is None:
        return _("Not on the leaderboard: it has no score.")
    if not submission.public:
        return _("Private: not on the leaderboard.")
    if submission.flag_reason:
        return _("Flagged by the maintainers: not on the leaderboard.")
    if task.visibility == Visibility.HIDDEN:
        return _("The task is hidden: its leaderboard is shown to maintainers only.")
    current = task.current_test_set()
    if current is None or submission.test_set_id != current.pk:
        return _out_of_date_reason(submission, current)
    phase = submission.phase
    if phase is not None and not phase.live_board and phase.closed_at is None:
        return _("Kept off the leaderboards until phase %(phase)s ends.") % {"phase": phase.name}
    if not submission.scores:
        return _("Not on the leaderboard: it has no score.")
    return ""


def _out_of_date_reason(submission: Submission, current: TestSet | None) -> str:
    if current is None:
        return _("Not on the leaderboard: the task has no current test set.")
    scored_on = submission.test_set.version
    failed = (submission.score_history.filter(test_set=current, scores={}).order_by("-pk")
              .values_list("reason", flat=True).first())
    if failed and not submission.score_history.filter(test_set=current).exclude(scores={}).exists():
        return (_("Not on the leaderboard: scored on test set %(scored_on)s, and the board shows %(current)s; "
                  "%(failure)s.") % {"scored_on": scored_on, "current": current.version, "failure": failed})
    return (_("Not on the leaderboard now: scored on test set %(scored_on)s, and the board shows %(current)s. "
              "It returns once re-scored.") % {"scored_on": scored_on, "current": current.version})


@dataclass(frozen=True)
class PublicDownloads:
    """What anyone may download of an entry (leaderboards.downloads): its results (the aggregates
    its page and the API show) once it is public; its prediction file, or its model bundle or
    interpreter code, only where the task's maintainers allow it. ``withheld`` says why an entry's
    file is not offered ("" when it is, or when there is nothing to say)."""

    results: bool
    predictions: bool
    files: bool
    withheld: str = ""


PREDICTION_KINDS = (Submission.PREDICTIONS, Submission.SKILLS)
PROGRAM_KINDS = (Submission.CODE, Submission.MODEL)


def is_public_entry(submission: Submission) -> bool:
    """Anyone may see the entry's results: it is public, scored, not flagged, on a task that is
    not hidden, and not kept off the boards by a phase whose board is not live yet."""
    task, phase = submission.task, submission.phase
    held = phase is not None and not phase.live_board and phase.closed_at is None
    return (submission.status == Status.SCORED and submission.public and not submission.flag_reason
            and task.visibility != Visibility.HIDDEN and not held)


def public_downloads(submission: Submission) -> PublicDownloads:
    """What of ``submission`` anyone may download. Never gold, never a hidden-input task's inputs
    (nor predictions, which would quote them), never anything of a private part before its
    phase reveals it."""
    if not is_public_entry(submission):
        return PublicDownloads(False, False, False)
    task, phase = submission.task, submission.phase
    has_file = bool(submission.file)
    if submission.kind in PREDICTION_KINDS and has_file:
        withheld = ""
        if task.inputs_hidden:
            withheld = _("The task's inputs are hidden: its prediction files are never public.")
        elif phase is not None and phase.private_share > 0 and phase.closed_at is None:
            withheld = _("The prediction file becomes downloadable once phase %(phase)s has ended and its "
                         "private part is revealed.") % {"phase": phase.name}
        elif not task.public_predictions:
            withheld = _("The task's maintainers keep prediction files private.")
        return PublicDownloads(True, not withheld, False, withheld)
    if submission.kind in PROGRAM_KINDS and has_file:
        withheld = "" if task.public_model_files else _("The task's maintainers keep models and code private.")
        return PublicDownloads(True, False, not withheld, withheld)
    return PublicDownloads(True, False, False)
