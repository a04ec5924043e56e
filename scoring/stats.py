"""Statistics over per-item scores (numpy, vectorised, seeded).

- ``bootstrap_ci`` / ``bootstrap_cis``: percentile bootstrap CI of the mean of each metric;
  all metrics of one entry share the same resampled items, so their intervals are coherent.
- ``paired_test``: two-sided sign-flip permutation test on per-item differences of two systems
  scored on the same items.
- ``significance_tiers``: walks a ranked leaderboard and starts a new tier wherever an entry is
  significantly worse than the entry directly above it (docs/diagnostics.md#significance-tiers).

Everything is deterministic for a given seed and input.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

# Resampled indices are drawn in blocks of about this many elements (~8 MB of int64),
# so memory stays bounded however many items or resamples there are.
_BLOCK_ELEMENTS = 1 << 20


def _as_flat_floats(values: Sequence[float], name: str) -> np.ndarray:
    sample = np.asarray(values, dtype=float)
    if sample.ndim != 1:
        raise ValueError(f"{name} expects a flat sequence of numbers")
    return sample


def bootstrap_ci(
    values: Sequence[float],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean, on the scale of ``values``.

    Deterministic for a given seed and input. Empty input gives (nan, nan); a single value
    or a constant sample gives a zero-width interval at that value. Same result as
    ``bootstrap_cis({"x": values}, ...)["x"]``.
    """
    sample = _as_flat_floats(values, "bootstrap_ci")
    return bootstrap_cis({"x": sample}, n_resamples=n_resamples, confidence=confidence, seed=seed)["x"]


def bootstrap_cis(
    per_metric: Mapping[str, Sequence[float]],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap CI of the mean of every metric of one entry.

    ``per_metric`` maps a metric name to its per-item scores; all metrics must cover the same
    items in the same order (ValueError otherwise). One matrix of resampled item indices is
    drawn and used for every metric, so a resample means the same pseudo test set for all of
    them (e.g. answer, evidence and overall F1 move together). Indices are drawn in blocks
    whose size depends only on the number of items, so the intervals do not depend on how many
    metrics are passed: a metric gets the same interval alone or with others.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be strictly between 0 and 1")
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    samples = {name: _as_flat_floats(values, f"metric {name!r}") for name, values in per_metric.items()}
    sizes = {sample.size for sample in samples.values()}
    if len(sizes) > 1:
        raise ValueError(f"all metrics must have the same number of items, found sizes {sorted(sizes)}")
    if not samples:
        return {}
    n = sizes.pop()
    if n == 0:
        return {name: (math.nan, math.nan) for name in samples}

    result: dict[str, tuple[float, float]] = {}
    varying: dict[str, np.ndarray] = {}
    for name, sample in samples.items():
        # Every resample of a constant sample has that mean; answering directly also avoids
        # summation round-off giving a spurious non-zero width.
        if sample.min() == sample.max():
            result[name] = (float(sample[0]), float(sample[0]))
        else:
            varying[name] = sample
    if varying:
        rng = np.random.default_rng(seed)
        means = {name: np.empty(n_resamples) for name in varying}
        rows_per_block = max(1, _BLOCK_ELEMENTS // n)
        for start in range(0, n_resamples, rows_per_block):
            stop = min(start + rows_per_block, n_resamples)
            indices = rng.integers(0, n, size=(stop - start, n))
            for name, sample in varying.items():
                means[name][start:stop] = sample[indices].mean(axis=1)
        tail = (1.0 - confidence) / 2.0
        for name in varying:
            low, high = np.quantile(means[name], [tail, 1.0 - tail])
            result[name] = (float(low), float(high))
    return {name: result[name] for name in samples}  # input order


# Ties between a permuted statistic and the observed one must count as "at least as extreme"
# even when the two were summed in a different order; 1e-12 is far below any real difference
# of means of scores in 0..1 (or 0..100).
_TIE_TOLERANCE = 1e-12


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> float:
    """Two-sided p-value of H0 "mean(a) == mean(b)" for paired per-item scores.

    Sign-flip permutation test on d = a - b: under H0 each item's difference is as likely to
    have either sign, so every resample flips each sign with probability 1/2 and the p-value is
    (1 + #{|mean(flipped d)| >= |mean(d)| - 1e-12}) / (1 + n_resamples); counting the observed
    arrangement as one of the resamples keeps the p-value valid (never 0). Identical vectors give
    1.0. Symmetric: paired_test(a, b) == paired_test(b, a) for the same seed.
    """
    first = _as_flat_floats(a, "paired_test")
    second = _as_flat_floats(b, "paired_test")
    if first.size != second.size:
        raise ValueError(f"paired_test needs scores on the same items: got {first.size} and {second.size} values")
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    n = first.size
    differences = first - second
    if n == 0 or not differences.any():
        return 1.0
    if not np.isfinite(differences).all():
        raise ValueError("paired_test needs finite scores")
    # Zero differences are unchanged by a sign flip: leaving them out of the random part gives
    # the same sums with fewer random bits (two strong systems agree on most items).
    nonzero = differences[differences != 0.0]
    m = nonzero.size
    total = nonzero.sum()
    observed = abs(total) / n
    # With bits u in {0, 1} the flipped sum is sum((2u - 1) d) = sum(2 u d) - sum(d). Signs are
    # drawn as raw random bytes, 8 items per byte, and never unpacked: a table gives, for every
    # byte position and each of its 256 values, the sum of 2d over the items whose bit is set,
    # so a resample costs m/8 table look-ups instead of m multiply-adds (~4x faster than a
    # bits-by-d matrix product). The block size depends only on m: results are reproducible.
    n_bytes = (m + 7) // 8
    padded = np.zeros(n_bytes * 8)
    padded[:m] = 2.0 * nonzero  # padding items have d = 0 and never change a sum
    byte_bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(float)  # (256, 8)
    table = (padded.reshape(n_bytes, 8) @ byte_bits.T).ravel()  # [position * 256 + byte value]
    offsets = np.arange(n_bytes, dtype=np.intp) * 256
    rng = np.random.default_rng(seed)
    rows_per_block = max(1, _BLOCK_ELEMENTS // n_bytes)
    extreme = 0
    for start in range(0, n_resamples, rows_per_block):
        rows = min(rows_per_block, n_resamples - start)
        signs = np.frombuffer(rng.bytes(rows * n_bytes), dtype=np.uint8).reshape(rows, n_bytes)
        flipped_means = np.abs(np.take(table, signs + offsets).sum(axis=1) - total) / n
        extreme += int(np.count_nonzero(flipped_means >= observed - _TIE_TOLERANCE))
    return (1 + extreme) / (1 + n_resamples)


def significance_tiers(
    ranked_items: list[Sequence[float] | None],
    *,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> list[dict]:
    """Tier of every entry of a ranked leaderboard (best first).

    ``ranked_items[i]`` holds entry i's per-item scores of the primary metric (all entries on
    the same items, same order), or None for an entry without per-item data (a reported row).
    Each entry is compared with the nearest entry above it that has data (``paired_test``, the
    same seed for every pair so a pair's p-value does not depend on the rest of the board); an
    entry that is not significantly different (p >= alpha) shares that entry's tier, otherwise
    it starts the next tier. Tiers are therefore chains: A~B and B~C put A, B, C in one tier
    even if A and C differ. Returns ``[{"tier": int | None, "p_vs_above": float | None}]``;
    None entries get None for both, the first entry with data gets tier 1 and p None.
    Entries of different lengths raise ValueError (from ``paired_test``).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be strictly between 0 and 1")
    tiers: list[dict] = []
    above: Sequence[float] | None = None
    tier = 0
    for items in ranked_items:
        if items is None:
            tiers.append({"tier": None, "p_vs_above": None})
            continue
        if above is None:
            tier, p_value = 1, None
        else:
            p_value = paired_test(above, items, n_resamples=n_resamples, seed=seed)
            if p_value < alpha:
                tier += 1
        tiers.append({"tier": tier, "p_vs_above": p_value})
        above = items
    return tiers
