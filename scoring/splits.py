"""A public/private split of one test set (docs/phases.md): a seeded, stratified partition of
its items, and scores of a part computed from per-item rows.

A phase with a private share ranks entries on the public part until its end, then reveals the
whole. Which items are private is never published: knowing it would let a participant tune on
the public part's items alone. The partition is stratified (each stratum, e.g. a gold label,
keeps the private share to within one item), so the public part is a fair sample of the test
set, and it is the same for every entry of the phase (seeded by the phase)."""
from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence


def private_mask(n_items: int, private_share: float, seed: int,
                 strata: Sequence[str] | None = None) -> list[bool]:
    """For each of ``n_items`` items (in test-set order), whether it is private. Per stratum,
    round(share x size) items are private, chosen by a generator seeded with ``seed`` and the
    stratum's name (independent of the order strata appear in), the remainders made up so the
    total is round(share x n_items) exactly."""
    if not 0.0 <= private_share < 1.0:
        raise ValueError("private_share must be in [0, 1)")
    strata = list(strata) if strata is not None else [""] * n_items
    if len(strata) != n_items:
        raise ValueError(f"{len(strata)} strata for {n_items} items")
    members: dict[str, list[int]] = defaultdict(list)
    for index, stratum in enumerate(strata):
        members[stratum].append(index)
    wanted_total = round(private_share * n_items)
    exact = {name: private_share * len(items) for name, items in members.items()}
    counts = {name: math.floor(value) for name, value in exact.items()}
    # Largest remainders first (ties by name) until the total is reached.
    for name in sorted(members, key=lambda name: (-(exact[name] - counts[name]), name)):
        if sum(counts.values()) >= wanted_total:
            break
        counts[name] += 1
    mask = [False] * n_items
    for name, items in members.items():
        chosen = random.Random(f"{seed}:{name}").sample(items, counts[name])
        for index in chosen:
            mask[index] = True
    return mask


def part_rows(item_rows: Sequence[Sequence[float | None]], mask: Sequence[bool], *,
              private: bool) -> list[list[float | None]]:
    """The rows of one part: the private items (``private``) or the public ones."""
    return [list(row) for row, is_private in zip(item_rows, mask, strict=True) if is_private == private]


def column_means(keys: Sequence[str], item_rows: Sequence[Sequence[float | None]],
                 scale: float = 100.0) -> dict[str, float | None]:
    """The score of each column over ``item_rows``: its mean over the items where it is defined,
    on ``scale`` (every kind's score is such a mean: per-question overall F1, accuracy, cases
    passed, QUACKIE's means over the samples that did not fail)."""
    scores: dict[str, float | None] = {}
    for column, key in enumerate(keys):
        values = [row[column] for row in item_rows if row[column] is not None]
        scores[key] = scale * math.fsum(values) / len(values) if values else None  # type: ignore[arg-type]
    return scores
