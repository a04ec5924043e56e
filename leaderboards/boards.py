"""Leaderboard rows for a task: human rows pinned on top, then reported baselines and
server-scored public submissions ranked together by the primary metric."""
import hashlib
import json
from typing import Any

from django.conf import settings
from django.core.cache import cache

from benchmark.models import Benchmark, RankingRule, ReportedResult, Task
from scoring.stats import significance_tiers
from submissions import phases
from submissions.models import Status, Submission
from submissions.rescoring import RESCORABLE_KINDS
from submissions.scorers import current_scorer_version
from submissions.selectors import item_scores_of, public_scored_submissions

from .models import PairTest
from .rows import BoardEntry


def leaderboard_rows(task: Task) -> list[dict[str, Any]]:
    metric = task.primary_metric
    pinned: list[dict[str, Any]] = []
    ranked: list[dict[str, Any]] = []
    for reported in task.reported_results.all():
        row = BoardEntry.reported_row(reported).as_dict()
        (pinned if reported.kind == ReportedResult.HUMAN else ranked).append(row)

    test_set = task.current_test_set()
    entries = list(public_scored_submissions(task, test_set))
    for sub in phases.final_entries(one_per_system(task, entries)):
        stale = sub.kind in RESCORABLE_KINDS and sub.scorer_version != current_scorer_version(task, sub.kind)
        ranked.append(BoardEntry.submission_row(task, sub, stale=stale).as_dict())
    # Ties on the primary metric share a rank (1, 2, 2, 4); earlier rows stay first. An entry
    # whose primary metric is undefined (a QUACKIE file where every sample failed), or a QUACKIE
    # run that failed on most samples, is listed last with its reason, without a rank or a tier.
    for row in ranked:
        if row["scores"].get(metric) is None and not row["unranked_reason"]:
            row["unranked_reason"] = "not ranked: its score is undefined"
    unranked = [row for row in ranked if row["unranked_reason"]]
    ranked = [row for row in ranked if not row["unranked_reason"]]
    ranked.sort(key=lambda row: -float(row["scores"][metric]))
    unranked.sort(key=lambda row: (row["scores"].get(metric) is None, -float(row["scores"].get(metric) or 0.0)))
    previous = None
    for position, row in enumerate(ranked, start=1):
        value = row["scores"].get(metric)
        row["rank"] = ranked[position - 2]["rank"] if value == previous else position
        previous = value
    for row in pinned + unranked:
        row.update(tier=None, p_vs_above=None, p_vs_leader=None, p_adjusted=None)
    add_tiers(task, ranked)
    return pinned + ranked + unranked


def board_summary(task: Task, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A task's line on the home and benchmark pages: its best ranked entry, the human row and
    the number of entries. A board of published numbers only (it takes no uploads) counts and
    shows its reported rows; any other board counts the entries scored here."""
    published = not task.accepts_submissions
    shown = [r for r in rows if r["rank"] and (r["kind"] == "submission" or (published and r["reported"]))]
    return {"best": shown[0] if shown else None,
            "human": next((r for r in rows if r["kind"] == "human"), None),
            "entries": sum(1 for r in rows if r["kind"] != "human" and (published or r["kind"] == "submission"))}


def one_per_system(task: Task, entries: list[Submission]) -> list[Submission]:
    """The entries the task's ranking rule lets rank: all of them, or one per system (same user
    and system name): its best on the primary metric or its latest. ``entries`` oldest first."""
    if task.ranking_rule == RankingRule.ALL:
        return entries
    def primary(sub: Submission) -> float:
        value = sub.scores.get(task.primary_metric)
        return float("-inf") if value is None else float(value)

    chosen: dict[tuple[int, str], Submission] = {}
    for sub in entries:
        key = (sub.user_id, sub.system)
        held = chosen.get(key)
        # Latest: a later entry replaces the held one; best: only a strictly better one does.
        if held is None or task.ranking_rule == RankingRule.LATEST_PER_SYSTEM or primary(sub) > primary(held):
            chosen[key] = sub
    kept = {sub.pk for sub in chosen.values()}
    return [sub for sub in entries if sub.pk in kept]


def entries_awaiting_rescore(task: Task) -> int:
    """Public scored entries still on an earlier test-set version: they return to the board once
    re-scored (``manage.py rescore``)."""
    test_set = task.current_test_set()
    if test_set is None:
        return 0
    return (Submission.objects.filter(task=task, status__in=[Status.SCORED, Status.QUEUED, Status.RUNNING], public=True,
                                      kind__in=RESCORABLE_KINDS, flag_reason="")
            .exclude(test_set=test_set).exclude(scores={}).count())


# QUACKIE (docs/metrics.md#quackie): a sample whose scores failed is left out of the means, so an
# entry that failed on most samples would be ranked on the few it got right. Such an entry is
# listed with its scores, but without a rank or a tier.
def unranked_reason(task: Task, details: dict[str, Any]) -> str:
    """Why a scored entry is listed without a rank ("" when it is ranked)."""
    return task.kind_definition.unranked_reason(details)


def add_tiers(task: Task, ranked: list[dict[str, Any]]) -> None:
    """Significance tiers (docs/diagnostics.md#significance-tiers, ``scoring.stats.TIER_PROCEDURE``):
    tier 1 is the top scored entry plus every entry not significantly worse than it, the rest
    tiered the same way; paired tests on the items both entries define, so a QUACKIE sample that
    failed is left out as it is from the ranked mean. Reported rows have no per-item data and get
    no tier. Each pair's test is kept (``PairTest``, by the two entries' score fingerprints), so
    a board that gains one entry runs the tests that involve it, not one per entry; the tiers
    themselves are cached until the entries' scores change."""
    ids = [row["submission_id"] for row in ranked if row["submission_id"]]
    items = item_scores_of(ids) if ids else {}
    column = task.primary_index
    # A failed item (None: a QUACKIE sample whose scores failed) is left out of its pairs.
    columns = [[r[column] for r in items[row["submission_id"]]] if row["submission_id"] else None for row in ranked]
    prints = [None if values is None else score_fingerprint(values) for values in columns]
    key = (f"tiers-v4:{task.pk}:{settings.TIER_RESAMPLES}:"
           + hashlib.sha256(",".join(map(str, prints)).encode()).hexdigest())
    tiers = cache.get(key)
    if tiers is None:
        known = stored_pairs(task, prints)
        tested_before = set(known)
        tiers = significance_tiers(columns, alpha=0.05, n_resamples=settings.TIER_RESAMPLES, seed=0,
                                   known_pairs=known)
        store_pairs(task, prints, {pair: known[pair] for pair in known.keys() - tested_before})
        cache.set(key, tiers, 3600)
    for row, tier in zip(ranked, tiers, strict=True):
        row.update(tier=tier["tier"], p_vs_above=tier["p_vs_above"], p_vs_leader=tier["p_vs_leader"],
                   p_adjusted=tier["p_adjusted"])


def score_fingerprint(values: list[Any]) -> str:
    """What a paired test of an entry depends on: its per-item primary scores, as a digest."""
    return hashlib.sha256(json.dumps(values, separators=(",", ":")).encode()).hexdigest()


def stored_pairs(task: Task, prints: list[str | None]) -> dict[tuple[int, int], tuple[float, float]]:
    """{(upper row, lower row): (p, z)} of the pairs of these rows tested before (z of upper minus
    lower). Kept pairs of entries no longer on the board are deleted on the way."""
    rows: dict[str, list[int]] = {}
    for position, fingerprint in enumerate(prints):
        if fingerprint is not None:
            rows.setdefault(fingerprint, []).append(position)
    known: dict[tuple[int, int], tuple[float, float]] = {}
    gone = []
    for pk, first, second, p_value, z in PairTest.objects.filter(task=task, resamples=settings.TIER_RESAMPLES) \
            .values_list("pk", "first", "second", "p_value", "z").iterator(chunk_size=5000):
        if first not in rows or second not in rows:
            gone.append(pk)
            continue
        for i in rows[first]:
            for j in rows[second]:
                known[(i, j) if i < j else (j, i)] = (p_value, z if i < j else -z)
    for start in range(0, len(gone), 5000):
        PairTest.objects.filter(pk__in=gone[start:start + 5000]).delete()
    return known


def store_pairs(task: Task, prints: list[str | None], tested: dict[tuple[int, int], tuple[float, float]]) -> None:
    """Keep the pairs just tested, by the fingerprints of their rows (first < second)."""
    kept = {}
    for (upper, lower), (p_value, z) in tested.items():
        first, second = prints[upper], prints[lower]
        if first is None or second is None or first == second:
            continue
        if first > second:
            first, second, z = second, first, -z
        kept[first, second] = PairTest(task=task, first=first, second=second, resamples=settings.TIER_RESAMPLES,
                                       p_value=p_value, z=z)
    PairTest.objects.bulk_create(list(kept.values()), batch_size=1000, ignore_conflicts=True)


def pair_p_value(task: Task, first: list[Any], second: list[Any]) -> float:
    """The paired test's p-value of two entries of ``task`` from their per-item primary scores
    (``scoring.stats.paired_test``: symmetric, seed 0, ``TIER_RESAMPLES``): the one kept when
    a board tested this pair for its tiers, else the test is run once here and kept, so a page
    that shows it never runs it again."""
    prints = sorted([score_fingerprint(first), score_fingerprint(second)])
    if prints[0] == prints[1]:
        return 1.0  # identical scores: the test's own answer
    kept = PairTest.objects.filter(task=task, first=prints[0], second=prints[1],
                                   resamples=settings.TIER_RESAMPLES).values_list("p_value", flat=True).first()
    if kept is not None:
        return kept
    # Two entries ranked as a board ranks them: the tiers' test of the pair gives its p and z.
    tested: dict[tuple[int, int], tuple[float, float]] = {}
    significance_tiers([first, second], n_resamples=settings.TIER_RESAMPLES, seed=0, known_pairs=tested)
    store_pairs(task, [score_fingerprint(first), score_fingerprint(second)], tested)
    return tested[0, 1][0] if (0, 1) in tested else 1.0  # no item both define: no evidence of a difference


def benchmark_average_rows(benchmark: Benchmark) -> tuple[list[Task], list[dict[str, Any]]]:
    """The benchmark-wide board: systems (same user and system name) with a public scored
    submission on every task of the benchmark, ranked by the mean of their primary metric.
    For each task the system's latest scored submission counts. The human row is the mean
    of the reported human rows when every task has one."""
    tasks = [t for t in benchmark.tasks.public() if t.current_test_set() is not None]
    if not tasks:
        return tasks, []
    per_system: dict[tuple[int, str], dict[str, Submission]] = {}
    for task in tasks:
        for sub in public_scored_submissions(task, task.current_test_set()):  # oldest first: latest wins
            per_system.setdefault((sub.user_id, sub.system), {})[task.slug] = sub
    rows = []
    humans = {r.task.slug: r for r in ReportedResult.objects.filter(task__in=tasks, kind=ReportedResult.HUMAN)}
    if len(humans) == len(tasks):
        per_task = {t.slug: humans[t.slug].scores[t.primary_metric] for t in tasks}
        rows.append({"rank": None, "method": "Human Performance", "team": humans[tasks[0].slug].team,
                     "per_task": per_task, "average": sum(per_task.values()) / len(tasks), "reported": True,
                     "kind": "human"})
    ranked = []
    for (_, method), subs in per_system.items():
        if len(subs) < len(tasks):
            continue
        per_task = {t.slug: subs[t.slug].scores.get(t.primary_metric) for t in tasks}
        if any(value is None for value in per_task.values()) or any(
                unranked_reason(t, subs[t.slug].details or {}) for t in tasks):
            continue  # not ranked on some task (undefined, or mostly failed): no average to rank by
        ranked.append({"rank": None, "method": method, "team": subs[tasks[0].slug].team, "per_task": per_task,
                       "average": sum(per_task.values()) / len(tasks), "reported": False, "kind": "submission",
                       "submission_ids": {slug: sub.pk for slug, sub in subs.items()}})
    ranked.sort(key=lambda row: -row["average"])
    for position, row in enumerate(ranked, start=1):
        row["rank"] = position
    return tasks, rows + ranked
