"""Phases on the submissions side (docs/phases.md): the public/private split of an entry's
score before its phase ends, and the closing of ended phases (their hidden entries join the
boards, their private part is revealed).

Before the reveal, what is stored as the entry's scores, intervals and per-item rows covers the
public part only; its rows over the whole test set are held in ``held_item_scores``, which no
page, answer or diagnostic reads. Every reader of item rows (tiers, intervals, compare) thus
sees the public part without knowing about phases, and nothing of the private part can leak
through them. Diagnostics of such an entry wait for the reveal."""
import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from accounts.teams import team_of
from benchmark.models import Phase, TestSet, boards_changed
from scoring import splits, stats

from . import diagnostics
from .models import PhaseSelection, ScoreRecord, Status, Submission

log = logging.getLogger(__name__)


def private_mask(phase: Phase, test_set: TestSet, n_rows: int) -> list[bool]:
    gold = TestSet.objects.only("gold").get(pk=test_set.pk).gold
    strata = test_set.task.kind_definition.split_strata(gold)
    if strata is not None and len(strata) != n_rows:
        strata = None  # rows that do not follow the gold's items (cannot happen for shipped kinds)
    return splits.private_mask(n_rows, phase.private_share, phase.split_seed, strata)


def part_scores(keys: list[str], rows: list[list[float | None]]) -> tuple[dict[str, Any], dict[str, Any]]:
    return (splits.column_means(keys, rows),
            stats.column_cis(keys, rows, n_resamples=settings.BOOTSTRAP_RESAMPLES, seed=0))


def hold_private_part(submission: Submission, scores: dict, ci: dict, item_scores: list,
                      ) -> tuple[dict, dict, list, list | None]:
    """(scores, ci, item rows, held rows) to store: unchanged (held None), or, for an entry of a
    phase with a private part that has not been revealed, those of the public part with the
    whole rows held back."""
    phase = submission.phase
    if phase is None or phase.private_share <= 0 or phase.closed_at is not None or not item_scores:
        return scores, ci, item_scores, None
    mask = private_mask(phase, submission.scoring_test_set, len(item_scores))
    public = splits.part_rows(item_scores, mask, private=False)
    keys = [key for key, _ in submission.task.metric_columns]
    public_scores, public_ci = part_scores(keys, public)
    return public_scores, public_ci, public, item_scores


def reveal(submission: Submission, now: datetime | None = None) -> bool:
    """Replace a held entry's public-part score by its score on the whole test set, with the
    private part's alone kept beside the public part's in ``details["split"]``. Conditional
    on the rows still being held, so two closers never reveal twice."""
    whole = submission.held_item_scores
    if whole is None or submission.phase is None:
        return False
    keys = [key for key, _ in submission.task.metric_columns]
    mask = private_mask(submission.phase, submission.test_set, len(whole))
    scores, ci = part_scores(keys, whole)
    private_scores = splits.column_means(keys, splits.part_rows(whole, mask, private=True))
    details = {**(submission.details or {}),
               "split": {"public": submission.scores, "private": private_scores,
                         "private_share": submission.phase.private_share}}
    with transaction.atomic():
        revealed = Submission.objects.filter(pk=submission.pk, held_item_scores__isnull=False).update(
            scores=scores, ci=ci, item_scores=whole, held_item_scores=None, details=details)
        if revealed:
            ScoreRecord.objects.create(
                submission=submission, test_set=submission.test_set, test_set_version=submission.test_set.version,
                scorer_version=submission.scorer_version, scores=scores, ci=ci, total=submission.total,
                unanswered=submission.unanswered, reason=f"phase {submission.phase.name!r} ended: the whole "
                                                         "test set revealed", scored_at=now or timezone.now())
    return bool(revealed)


class SelectionRefused(Exception):
    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


def entrant_of(user: User) -> str:
    team = team_of(user)
    return f"team:{team.pk}" if team is not None else f"user:{user.pk}"


def select_entry(user: User, phase: Phase, submission: Submission) -> PhaseSelection:
    """``user``'s team (or ``user`` alone) picks ``submission`` to count in ``phase``'s final
    ranking; a later pick replaces the earlier one, until the phase is closed."""
    if submission.phase_id != phase.pk:
        raise SelectionRefused(f"Entry #{submission.pk} was not made in phase {phase.name!r}.")
    if submission.entrant != entrant_of(user):
        raise SelectionRefused(f"Entry #{submission.pk} is not your {'team' if team_of(user) else 'own'} entry.",
                               403)
    if submission.status != Status.SCORED:
        raise SelectionRefused(f"Entry #{submission.pk} is {submission.status}: only a scored entry can count.")
    if phase.closed_at is not None:
        raise SelectionRefused(f"Phase {phase.name!r} is closed: its final ranking is fixed.", 409)
    selection, _ = PhaseSelection.objects.update_or_create(
        phase=phase, entrant=submission.entrant, defaults={"submission": submission, "chosen_by": user})
    boards_changed([phase.task_id])
    return selection


def final_entries(entries: list[Submission]) -> list[Submission]:
    """The entries a board ranks: for a closed phase, one per team (or researcher alone): its
    pick, or without one its latest. ``entries`` oldest first, their phases loaded."""
    closed = [entry for entry in entries if entry.phase is not None and entry.phase.closed_at is not None]
    if not closed:
        return entries
    picks: dict[tuple[int | None, str], int] = {
        (pick.phase_id, pick.entrant): pick.submission_id
        for pick in PhaseSelection.objects.filter(phase_id__in={entry.phase_id for entry in closed})}
    counted: dict[tuple[int | None, str], int] = {}
    for entry in closed:
        key = (entry.phase_id, entry.entrant)
        if key not in picks or picks[key] == entry.pk:
            counted[key] = entry.pk  # the pick, or the latest so far
    kept = set(counted.values())
    closed_ids = {entry.pk for entry in closed}
    return [entry for entry in entries if entry.pk not in closed_ids or entry.pk in kept]


def close_ended_phases(now: datetime | None = None) -> dict[str, int]:
    """Close every phase whose end has passed (once: a conditional update claims it), then
    reveal every held entry of a closed phase (also those a closer that died left behind), and
    have their boards rebuilt. Returns the counts."""
    now = now or timezone.now()
    closed = 0
    for phase in Phase.objects.filter(ends_at__lte=now, closed_at__isnull=True):
        if Phase.objects.filter(pk=phase.pk, closed_at__isnull=True).update(closed_at=now):
            closed += 1
            boards_changed([phase.task_id])
    held = (Submission.objects.filter(held_item_scores__isnull=False, phase__closed_at__isnull=False)
            .select_related("phase", "task", "test_set"))
    revealed = [submission for submission in held if reveal(submission, now)]
    for submission in revealed:
        if submission.status == Status.SCORED and submission.task.kind_definition.has_entry_diagnostics:
            diagnostics.schedule(submission)  # they waited for the whole test set
    boards_changed(submission.task_id for submission in revealed)
    return {"closed": closed, "revealed": len(revealed)}
