"""Statistics over per-item scores (numpy, vectorised, seeded)."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

# Resampled indices are drawn in blocks of about this many elements (~8 MB of int64),
# so memory stays bounded however many items or resamples there are.
_BLOCK_ELEMENTS = 1 << 20


def bootstrap_ci(
    values: Sequence[float],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean, on the scale of ``values``.

    Deterministic for a given seed and input. Empty input gives (nan, nan); a single value
    or a constant sample gives a zero-width interval at that value.
    """
    sample = np.asarray(values, dtype=float)
    if sample.ndim != 1:
        raise ValueError("bootstrap_ci expects a flat sequence of numbers")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be strictly between 0 and 1")
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    n = sample.size
    if n == 0:
        return (math.nan, math.nan)
    # Every resample of a constant sample has that mean; answering directly also avoids
    # summation round-off giving a spurious non-zero width.
    if sample.min() == sample.max():
        value = float(sample[0])
        return (value, value)

    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    rows_per_block = max(1, _BLOCK_ELEMENTS // n)
    for start in range(0, n_resamples, rows_per_block):
        stop = min(start + rows_per_block, n_resamples)
        indices = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = sample[indices].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return (float(low), float(high))
