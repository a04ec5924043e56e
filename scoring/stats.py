"""Statistics over per-item scores (numpy, vectorised, seeded).

- ``bootstrap_ci`` / ``bootstrap_cis``: confidence interval of the mean of each metric. Binary
  outcomes (every value 0 or the top of the scale, 1 or 100) get the Wilson score interval;
  any other sample gets the BCa bootstrap interval (bias-corrected and accelerated, jackknife
  acceleration). All metrics of one entry share the same resampled items.
- ``paired_test``: two-sided sign-flip permutation test on the per-item differences of two
  systems, over the items both define.
- ``significance_tiers``: tiers that do not chain; ``TIER_PROCEDURE`` says how, in one sentence
  (docs/diagnostics.md#significance-tiers).

Everything is deterministic for a given seed and input.
"""
from __future__ import annotations

import math
from itertools import pairwise
from statistics import NormalDist
from typing import Mapping, MutableMapping, Sequence, TypeAlias

import numpy as np

# Server defaults, also the defaults of ``python -m scoring compare`` (config/settings.py:
# BOOTSTRAP_RESAMPLES, TIER_RESAMPLES; seed 0; alpha 0.05).
DEFAULT_BOOTSTRAP_RESAMPLES = 1000
DEFAULT_TIER_RESAMPLES = 10_000
TIER_ALPHA = 0.05

TIER_PROCEDURE = (
    "Tier 1 is the top entry plus every entry not significantly worse than it (paired sign-flip tests on the "
    "items both define, alpha = 0.05, with a step-down studentized-range correction for comparing against the "
    "best of several, so truly equal entries are split in at most 5% of boards); the rest are tiered the same way."
)

# Resampled indices are drawn in blocks of about this many elements (~8 MB of int64),
# so memory stays bounded however many items or resamples there are.
_BLOCK_ELEMENTS = 1 << 20

_NORMAL = NormalDist()
#: One entry's per-item scores: None (or NaN) for an item it leaves undefined.
Scores: TypeAlias = Sequence[float | None] | np.ndarray


def _as_flat_floats(values: Scores, name: str) -> np.ndarray:
    sample = np.asarray(values, dtype=float)
    if sample.ndim != 1:
        raise ValueError(f"{name} expects a flat sequence of numbers")
    return sample


# --------------------------------------------------------------------------- confidence intervals

def bootstrap_ci(
    values: Sequence[float],
    *,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Confidence interval of the mean, on the scale of ``values`` (see ``bootstrap_cis``).

    Deterministic for a given seed and input. Empty input gives (nan, nan); binary outcomes get
    the Wilson interval, another constant sample a zero-width interval at its value. Same result
    as ``bootstrap_cis({"x": values}, ...)["x"]``.
    """
    sample = _as_flat_floats(values, "bootstrap_ci")
    return bootstrap_cis({"x": sample}, n_resamples=n_resamples, confidence=confidence, seed=seed)["x"]


def bootstrap_cis(
    per_metric: Mapping[str, Scores],
    *,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Confidence interval of the mean of every metric of one entry.

    ``per_metric`` maps a metric name to its per-item scores; all metrics must cover the same
    items in the same order (ValueError otherwise). Per metric:

    - binary outcomes, i.e. every value is 0 or s and s occurs, for s = 1 or s = 100 (accuracy,
      a pass rate): the Wilson score interval, times s. A percentile bootstrap gives a sample
      with no failure a zero-width interval, which misses the truth whenever it is below 100%;
    - any other constant sample (an all-zero one included: its scale is unknown): a zero-width
      interval at its value;
    - otherwise the BCa bootstrap interval (Efron 1987): the bootstrap means' quantiles at the
      levels Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q))), q = tail and 1 - tail, with z0 =
      Phi^-1(share of bootstrap means below the mean, ties counted half) and the jackknife
      acceleration a = sum(d^3) / (6 sum(d^2)^1.5), d = x - mean;
    - a sample with a non-finite value or a non-finite result: (nan, nan).

    One matrix of resampled item indices is drawn and used for every bootstrapped metric, so a
    resample means the same pseudo test set for all of them (answer, evidence and overall F1 move
    together). Indices are drawn in blocks whose size depends only on the number of items, so
    the intervals do not depend on how many metrics are passed: a metric gets the same interval
    alone or with others.
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
        scale = _binary_scale(sample)
        if not np.isfinite(sample).all():
            result[name] = (math.nan, math.nan)
        elif scale is not None:
            result[name] = _wilson_interval(int(np.count_nonzero(sample)), n, confidence, scale)
        elif sample.min() == sample.max():
            # Every resample of a constant sample has that mean; answering directly also avoids
            # summation round-off giving a spurious non-zero width.
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
        for name, sample in varying.items():
            result[name] = _bca_interval(sample, means[name], confidence)
    return {name: result[name] for name in samples}  # input order


def column_cis(keys: Sequence[str], item_rows: Sequence[Sequence[float | None]], *, n_resamples: int = 1000,
               seed: int = 0, scale: float = 100.0) -> dict[str, list[float] | None]:
    """95% CI of the mean of each column of ``item_rows`` (one row per item, one column per key),
    on ``scale`` (100: the boards' 0-100 scale). Columns defined on every item share one resample
    matrix; a column with undefined items (None: a QUACKIE fail, an undefined SNR) is resampled
    over its defined items only, like its mean. No defined item, or an overflow: None."""
    per_column = {key: [row[i] for row in item_rows] for i, key in enumerate(keys)}
    complete = {key: [float(v) * scale for v in values if v is not None]
                for key, values in per_column.items() if None not in values}
    intervals: dict[str, tuple[float, float]] = dict(bootstrap_cis(complete, n_resamples=n_resamples, seed=seed))
    for key, values in per_column.items():
        if key not in complete:
            defined = [float(v) * scale for v in values if v is not None]
            intervals[key] = bootstrap_ci(defined, n_resamples=n_resamples, seed=seed)
    return {key: list(bounds) if all(math.isfinite(b) for b in bounds) else None
            for key, bounds in ((key, intervals[key]) for key in keys)}


def _binary_scale(sample: np.ndarray) -> float | None:
    """s when every value is 0 or s and s occurs (s = 1, then 100), else None."""
    for scale in (1.0, 100.0):
        is_top = sample == scale
        if is_top.any() and (is_top | (sample == 0.0)).all():
            return scale
    return None


def _wilson_interval(successes: int, n: int, confidence: float, scale: float) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion, times ``scale``."""
    z = _NORMAL.inv_cdf(0.5 + confidence / 2.0)
    share = successes / n
    denominator = 1.0 + z * z / n
    centre = (share + z * z / (2.0 * n)) / denominator
    half_width = z * math.sqrt(share * (1.0 - share) / n + z * z / (4.0 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half_width)
    high = 1.0 if successes == n else min(1.0, centre + half_width)
    return scale * low, scale * high


def _bca_interval(sample: np.ndarray, means: np.ndarray, confidence: float) -> tuple[float, float]:
    """BCa interval of the mean of ``sample`` from its bootstrap means (see ``bootstrap_cis``)."""
    estimate = float(sample.mean())
    if not (math.isfinite(estimate) and np.isfinite(means).all()):
        return math.nan, math.nan
    # Means of the same items summed in another order differ by round-off only (far below
    # 1e-12 of the largest value); such a mean counts as a tie with the estimate.
    tolerance = 1e-12 * float(np.abs(sample).max())
    below = np.count_nonzero(means < estimate - tolerance)
    ties = np.count_nonzero(np.abs(means - estimate) <= tolerance)
    share: float = (below + 0.5 * ties) / means.size
    share = min(max(share, 0.5 / means.size), 1.0 - 0.5 / means.size)  # z0 stays finite
    bias = _NORMAL.inv_cdf(share)
    deviations = sample - estimate
    deviations = deviations / np.abs(deviations).max()  # the ratio below is scale-free; no overflow
    acceleration = float((deviations ** 3).sum() / (6.0 * (deviations ** 2).sum() ** 1.5))
    tail = (1.0 - confidence) / 2.0
    levels = []
    for quantile in (tail, 1.0 - tail):
        shifted = bias + _NORMAL.inv_cdf(quantile)
        denominator = 1.0 - acceleration * shifted
        if denominator <= 0.0:  # beyond the range where the correction is defined: the far end
            levels.append(1.0 if shifted > 0.0 else 0.0)
        else:
            levels.append(_NORMAL.cdf(bias + shifted / denominator))
    low, high = np.quantile(means, levels)
    return float(low), float(high)


# --------------------------------------------------------------------------- paired test

# Ties between a permuted statistic and the observed one must count as "at least as extreme"
# even when the two were summed in a different order; 1e-12 is far below any real difference
# of means of scores in 0..1 (or 0..100).
_TIE_TOLERANCE = 1e-12


def _common_differences(a: Scores, b: Scores) -> np.ndarray:
    """a - b on the items both define (None and NaN are undefined); ValueError on a length
    mismatch or an infinite score."""
    first = _as_flat_floats(a, "paired_test")  # None becomes NaN
    second = _as_flat_floats(b, "paired_test")
    if first.size != second.size:
        raise ValueError(f"paired_test needs scores on the same items: got {first.size} and {second.size} values")
    if np.isinf(first).any() or np.isinf(second).any():
        raise ValueError("paired_test needs finite scores")
    both = ~(np.isnan(first) | np.isnan(second))
    return first[both] - second[both]


def paired_test(
    a: Sequence[float | None],
    b: Sequence[float | None],
    *,
    n_resamples: int = DEFAULT_TIER_RESAMPLES,
    seed: int = 0,
) -> float:
    """Two-sided p-value of H0 "mean(a) == mean(b)" for paired per-item scores.

    Only the items both systems define count: an item that is None (or NaN) in either, e.g. a
    failed QUACKIE sample, is left out, as it is left out of the ranked mean. Sign-flip
    permutation test on d = a - b over those N items: under H0 each item's difference is as
    likely to have either sign, so every resample flips each sign with probability 1/2 and the
    p-value is (1 + #{|mean(flipped d)| >= |mean(d)| - 1e-12}) / (1 + n_resamples); counting the
    observed arrangement as one of the resamples keeps the p-value valid (never 0). Identical
    vectors, or no common item, give 1.0. Symmetric: paired_test(a, b) == paired_test(b, a) for
    the same seed.
    """
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    return _sign_flip_p(_common_differences(a, b), n_resamples, seed)


def _sign_flip_p(differences: np.ndarray, n_resamples: int, seed: int) -> float:
    n = differences.size
    if n == 0 or not differences.any():
        return 1.0
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


# --------------------------------------------------------------------------- tiers

# The distribution of the range of m independent standard normal variables,
# P(R_m <= w) = m * integral phi(x) (Phi(x + w) - Phi(x))^(m - 1) dx, by the trapezoid rule on
# a fixed grid (the integrand is smooth and negligible beyond |x| = 9). Phi(x + w) is read off a
# table by linear interpolation (step 0.005); the result is within 1e-5 (checked against scipy).
_GRID = np.linspace(-9.0, 9.0, 3601)
_GRID_STEP = float(_GRID[1] - _GRID[0])
_GRID_PDF = np.exp(-_GRID ** 2 / 2.0) / math.sqrt(2.0 * math.pi)
_CDF_X = np.linspace(-30.0, 30.0, 12001)
_CDF_TABLE = np.array([0.5 * math.erfc(-x / math.sqrt(2.0)) for x in _CDF_X.tolist()])
_GRID_CDF = np.interp(_GRID, _CDF_X, _CDF_TABLE)


def studentized_range_sf(w: float, m: int) -> float:
    """P(R_m >= w) for the range R_m of m independent standard normal variables (m >= 2)."""
    if m < 2:
        raise ValueError("the range needs at least 2 variables")
    if not w > 0.0:
        return 1.0
    spread = np.clip(np.interp(_GRID + w, _CDF_X, _CDF_TABLE) - _GRID_CDF, 0.0, 1.0)
    below = m * float((_GRID_PDF * spread ** (m - 1)).sum()) * _GRID_STEP
    return min(1.0, max(0.0, 1.0 - below))


def _pair_statistics(first: np.ndarray, second: np.ndarray, n_resamples: int, seed: int) -> tuple[float, float]:
    """(two-sided sign-flip p, z) of first vs second on their common items; z = sum(d) /
    sqrt(sum(d^2)) is sum(d) over its exact standard deviation under sign flips (0 if d == 0)."""
    differences = _common_differences(first, second)
    spread = float(np.sqrt((differences ** 2).sum()))
    z = float(differences.sum()) / spread if spread > 0.0 else 0.0
    return _sign_flip_p(differences, n_resamples, seed), z


def significance_tiers(
    ranked_items: Sequence[Scores | None],
    *,
    alpha: float = TIER_ALPHA,
    n_resamples: int = DEFAULT_TIER_RESAMPLES,
    seed: int = 0,
    known_pairs: MutableMapping[tuple[int, int], tuple[float, float]] | None = None,
) -> list[dict]:
    """Tier 1 is the top entry plus every entry not significantly worse than it (paired sign-flip tests on the
    items both define, step-down studentized-range correction, at ``alpha``); the rest are tiered the same way.

    ``ranked_items[i]`` holds entry i's per-item scores of the primary metric, best entry first
    (all entries on the same items, same order; None or NaN for an item the entry leaves
    undefined), or None for an entry without per-item data (a reported row).

    Each round takes the best remaining entry as the leader L and the m - 1 others. For each
    other entry j, on the items both define, d = L - j, p_j is the two-sided ``paired_test``
    p-value and z_j = sum(d) / sqrt(sum(d^2)). Going down from the largest z, step s (s = 0,
    1, ...) gives the adjusted p-value max(previous step, p_j, P(R_(m - s) >= sqrt(2) z_j)), R_k
    being the range of k standard normal means: the most separated entry is judged against the
    spread that m equal entries would show by chance, so picking L as the best is accounted for.
    Entries are split off while the adjusted p-value stays below alpha; L and the others form the
    tier; the split-off entries go to the next round. When the m entries are truly equal, the
    round splits one off with probability at most alpha (studentized range, normal approximation
    of the sign-flip statistic; the sign-flip p-value itself is never undercut).

    Returns one dict per input row: ``tier`` (int), ``p_vs_above`` (the paired p-value against
    the nearest entry above that has data, as shown on boards so far), ``p_vs_leader`` (against
    the leader of its tier) and ``p_adjusted`` (the adjusted p-value that kept it in that tier;
    p >= alpha); the leader of each tier gets None for the last two, the first entry with data
    None for all p-values. Rows without data, or with no defined item, get None everywhere.
    Every pair uses the same seed, so a pair's p-value does not depend on the rest of the board.
    Entries of different lengths raise ValueError.

    ``known_pairs``: (p, z) of pairs tested before, keyed by (upper row, lower row); the pairs
    this call tests are added to it, so a caller that keeps them (the server, per pair of
    entries) tests only the pairs that involve a new entry when the board changes.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be strictly between 0 and 1")
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    rows: list[np.ndarray | None] = []
    for items in ranked_items:
        scores = None if items is None else _as_flat_floats(items, "significance_tiers")
        rows.append(scores if scores is not None and not np.isnan(scores).all() else None)
    sizes = {scores.size for scores in rows if scores is not None}
    if len(sizes) > 1:
        raise ValueError(f"significance_tiers needs scores on the same items: got lengths {sorted(sizes)}")

    defined = {i: scores for i, scores in enumerate(rows) if scores is not None}
    pairs: MutableMapping[tuple[int, int], tuple[float, float]] = {} if known_pairs is None else known_pairs

    def pair(upper: int, lower: int) -> tuple[float, float]:
        if (upper, lower) not in pairs:
            pairs[upper, lower] = _pair_statistics(defined[upper], defined[lower], n_resamples, seed)
        return pairs[upper, lower]

    result: list[dict] = [{"tier": None, "p_vs_above": None, "p_vs_leader": None, "p_adjusted": None}
                          for _ in rows]
    with_data = [i for i, scores in enumerate(rows) if scores is not None]
    for above, below in pairwise(with_data):
        result[below]["p_vs_above"] = pair(above, below)[0]

    remaining = with_data
    tier = 0
    while remaining:
        tier += 1
        leader, others = remaining[0], remaining[1:]
        # Most separated first; on equal z the lower-ranked entry first.
        order = sorted(others, key=lambda j: (-pair(leader, j)[1], -j))
        adjusted = 0.0
        split: set[int] = set()
        for step, j in enumerate(order):
            p_value, z = pair(leader, j)
            adjusted = max(adjusted, p_value, studentized_range_sf(math.sqrt(2.0) * z, len(remaining) - step))
            if adjusted < alpha:
                split.add(j)
            else:
                result[j].update(p_vs_leader=p_value, p_adjusted=adjusted)
        result[leader]["tier"] = tier
        for j in others:
            if j not in split:
                result[j]["tier"] = tier
        remaining = [j for j in others if j in split]
    return result
