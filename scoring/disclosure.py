"""What a per-group statistic of a hidden split may show (docs/diagnostics.md#hidden-splits-what-is-never-shown).

The questions of a hidden split are public, so anyone can tell which questions make up a group
(a question type, a length bin, the questions carrying an ICQ cue). A group's published mean is
therefore a statement about its members, and it must not pin down any one of them: a group of
18 questions at accuracy 1.0 says that each of the 18 was answered right, and whoever knows
the entry's predictions (its author, or anyone running a public model) then knows 18 gold
answers. Every place that publishes a per-group statistic of a hidden split calls this module.

Outcomes are on the 0..1 scale: 0/1 correctness, or a per-question score such as answer F1.

**The rule.** A group of n members whose outcomes sum to S (each member in [0, 1]) *reveals its
members* when S < 1 or S > n - 1 (``reveals_members``); it is shown only when it does not and
n >= ``MIN_GROUP_SIZE`` (``disclosable``). For 0/1 outcomes that reads 0 < correct < n; for F1 it
is stricter than "not all at 0 or 100": a group of 5 at mean F1 0.99 has S = 4.95 > 4, and
since the four others contribute at most 4, every member has F1 >= 0.95.

*Why it is enough for one group.* With 1 <= S <= n - 1, any member x can be 1 (the other n - 1
carry S - 1, between 0 and n - 2) and can be 0 (the others carry S <= n - 1): the mean leaves
every member's outcome fully open. With 0/1 outcomes and integer S the witnesses are 0/1 too.

**Totals are public** (the score, the number of questions), so within one grouping the items
not shown on their own (the pool of small groups, items in no group) are a group as well: their
sum is the total minus what is shown. Such a block must not reveal its members either.

**Coarsening instead of hiding** (``coarsen_groups``). A group that would reveal its members
cannot simply be left out: its sum would follow from the total. It is pooled. The order in which
groups join the pool is fixed in advance from public facts only (size, then label: the order
``question_types.pool_small_groups`` already uses for groups under the minimum), giving a ladder
of groupings L_start, L_start+1, ..., each equal to the previous one or the previous one with two
blocks merged (the next group joins the pool; finally the pool joins the items in no group), and
ending in one block, the total, which is public anyway. The first grouping in which no block
reveals its members is published.

*Why choosing by the data gives nothing away.* An observer who knows the rule sees grouping L_j
with its sums, and learns that L_j-1 had a revealing block (which implies it of every finer
grouping: a block that reveals its members is a union of blocks that do). The blocks L_j shares
with L_j-1 are shown and do not reveal theirs, so the revealing one was A or B, the two blocks
merged into R = A u B. Lemma: if all that is known of R is its sum S, with 1 <= S <= |R| - 1,
and that A or B reveals its members, every member of R can still be 1 and can still be 0.
Proof for x in A (a = |A|, b = |B|; B is symmetric), each time exhibiting outcomes consistent
with what is known:
  x = 1: if S > a - 1, give A the sum min(S, a) (x = 1, the rest of A carry min(S, a) - 1 <= a - 1;
         A reveals, its sum exceeds a - 1) and B the rest S - min(S, a), between 0 and b - 1;
         else S <= a - 1: B all 0 (B reveals, its sum is under 1), A carries S with x = 1.
  x = 0: if S >= b + 1, B all 1 (B reveals) and the rest of A carry S - b, between 1 and a - 1;
         else give A the sum max(0, S - b) < 1 without x (A reveals) and B the rest, at most b.
With integer S (0/1 outcomes) every witness is a 0/1 assignment. Blocks outside R are shown
and do not reveal their members, so they combine freely with any of these.

What is not covered: different groupings of the same questions (question type and question
length, two ICQ cues sharing questions) are checked one at a time, not against each other; and
the fact that a grouping was coarsened tells that one of two blocks was all right or all wrong,
which the entry's overall accuracy can make likely one way without determining it.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from .analysis.question_types import SMALL_GROUPS, bin_sort_key, pool_small_groups

# Smallest group of a hidden split shown on its own (the questions are public: a group of one
# would be that question's outcome).
MIN_GROUP_SIZE = 5
# Sums of float F1 values are exact to far better than this; a sum within it of n - 1 (or 1) is
# an exact boundary case (e.g. F1 values 0 and 1 only), which reveals nothing.
_TOLERANCE = 1e-9

RULE = ("a group is shown on its own only with at least 5 questions and when its mean leaves each "
        "member's outcome open (0/1 outcomes: not all right and not all wrong); otherwise it is pooled, "
        "and so is whatever the published total would give away by subtraction")


def reveals_members(total: float, lowest: float, highest: float) -> bool:
    """Whether a published sum ``total`` pins something down about every member of its group,
    given that the public facts allow any sum from ``lowest`` to ``highest`` (a group of n
    outcomes in [0, 1]: 0 and n). It does when it lies within 1 of either end: then each member
    is forced above 0 (or below 1). A range of one value is known anyway and reveals nothing new."""
    if not all(math.isfinite(v) for v in (total, lowest, highest)):
        raise ValueError("a group's sum and its bounds must be finite numbers")
    if highest - lowest <= _TOLERANCE:
        return False
    return total < lowest + 1 - _TOLERANCE or total > highest - 1 + _TOLERANCE


def disclosable(total: float, n: int, min_size: int = MIN_GROUP_SIZE) -> bool:
    """May a group of ``n`` members whose outcomes (each in [0, 1]) sum to ``total`` be shown?
    Only with ``n >= min_size`` and when it does not reveal its members (module docstring)."""
    return n >= min_size and not reveals_members(total, 0.0, float(n))


@dataclass(frozen=True)
class Coarsening:
    """One grouping as it may be published.

    ``labels``: each item's group, pooled groups relabelled ``SMALL_GROUPS`` (None stays None);
    ``pooled``: the original labels pooled, in display order; ``pool_published``: whether the
    pool may be shown as one group; ``pooled_for_outcomes``: the labels pooled beyond the size
    rule because a block would have revealed its members' outcomes (empty when none were)."""
    labels: list[str | None]
    pooled: list[str]
    pool_published: bool
    pooled_for_outcomes: list[str]


def coarsen_groups(labels: Sequence[str | None], outcomes: Sequence[float], min_size: int = MIN_GROUP_SIZE,
                   *, protect_outcomes: bool = True) -> Coarsening:
    """The finest grouping of the ladder (module docstring) in which every block is at least
    ``min_size`` and none reveals its members' outcomes (``outcomes[i]`` in [0, 1], the item's
    correctness or score). Items labelled None belong to no group; they count as a block of
    their own (or with the pool), since the public total gives their sum away.

    ``protect_outcomes=False`` applies the size rule only (``pool_small_groups``)."""
    labels = list(labels)
    values = [float(value) for value in outcomes]
    if len(values) != len(labels):
        raise ValueError(f"labels has {len(labels)} items but outcomes has {len(values)}")
    if not all(0.0 <= value <= 1.0 for value in values):
        raise ValueError("outcomes must lie between 0 and 1")
    relabelled, pooled, pool_published = pool_small_groups(labels, min_size)
    if not protect_outcomes:
        return Coarsening(relabelled, pooled, pool_published, [])

    sizes = Counter(label for label in labels if label is not None)
    sums: dict[str | None, list[float]] = {}
    for label, value in zip(labels, values, strict=True):
        sums.setdefault(label, []).append(value)
    # The order groups join the pool: public facts only. pool_small_groups pools a prefix of it.
    order = sorted(sizes, key=lambda label: (sizes[label], bin_sort_key(label)))
    start = len(pooled)
    if set(order[:start]) != set(pooled):
        raise AssertionError("pool_small_groups no longer pools the smallest groups first")
    left_out = sums.get(None, [])
    # Items in no group form a block apart from the pool only where the size rule already
    # publishes them apart (fixed for the whole ladder, so that each step merges two blocks).
    left_out_apart = bool(left_out) and (start == 0 or pool_published)

    def block(group_labels: Sequence[str | None]) -> tuple[float, int]:
        members = [value for label in group_labels for value in sums.get(label, [])]
        return math.fsum(members), len(members)

    def blocks(joined: int, left_out_merged: bool) -> list[tuple[float, int]]:
        singles = [block([label]) for label in order[joined:]]
        pool = list(order[:joined])
        if left_out_apart and not left_out_merged:
            rest = [block(pool), block([None])]
        else:
            rest = [block(pool + [None])]
        return singles + [b for b in rest if b[1] > 0]

    ladder = [(joined, False) for joined in range(start, len(order) + 1)]
    if left_out_apart:
        ladder.append((len(order), True))
    chosen = ladder[-1]
    for joined, merged in ladder:
        found = blocks(joined, merged)
        # One block is the whole set: its sum is the published total.
        if len(found) <= 1 or all(not reveals_members(total, 0.0, float(n)) for total, n in found):
            chosen = (joined, merged)
            break
    joined, merged = chosen
    if joined == start and not merged:
        return Coarsening(relabelled, pooled, pool_published, [])
    pooled_set = set(order[:joined])
    pool_size = sum(sizes[label] for label in pooled_set)
    published = pool_size >= min_size and not merged and (not left_out or left_out_apart)
    return Coarsening(
        labels=[SMALL_GROUPS if label in pooled_set else label for label in labels],
        pooled=sorted(pooled_set, key=bin_sort_key),
        pool_published=published,
        pooled_for_outcomes=sorted(pooled_set - set(pooled), key=bin_sort_key),
    )


def withheld_holm(p_values: Sequence[float | None], adjust) -> list[float | None]:
    """Multiplicity-adjusted p-values where the tests whose results are withheld (None) count
    as tested with p = 1: the adjusted values shown then depend on the shown p-values and the
    number of tests only, and the correction stays valid (raising a p-value never adds a
    rejection). ``adjust`` maps a list of p-values to adjusted ones (e.g. Holm's)."""
    adjusted = adjust([1.0 if p is None else p for p in p_values])
    return [None if p is None else value for p, value in zip(p_values, adjusted, strict=True)]
