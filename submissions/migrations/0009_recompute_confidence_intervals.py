"""Confidence intervals stored before the BCa bootstrap (docs/diagnostics.md#bootstrap-confidence-intervals)
were percentile intervals, which under-cover at small n. Recompute every scored entry's CI from
its stored per-item scores with the current method; the scores themselves are not touched.

The metric columns are frozen here as they were when these rows were stored (``Task.metric_columns``),
and so is the interval computation (``scoring.stats.column_cis`` and what it calls, at the bottom),
since a migration must not depend on today's models or today's code."""
import math
from statistics import NormalDist

import numpy as np
from django.conf import settings
from django.db import migrations

COLUMNS_BY_KIND = {
    "span": ["answer_f1", "evidence_f1", "overall_f1"],
    "multichoice": ["answer_acc", "evidence_f1", "overall_f1"],
    "classification": ["accuracy"],
    "checklist": ["pass_rate"],
    "interpretation": ["iou", "hpd", "snr", "hpd_rank", "snr_raw"],
}


def recompute_confidence_intervals(apps, schema_editor):
    Submission = apps.get_model("submissions", "Submission")
    scored = Submission.objects.filter(status="scored").exclude(item_scores=[]).select_related("task")
    for submission in scored.only("pk", "item_scores", "ci", "task__kind").iterator(chunk_size=200):
        keys = COLUMNS_BY_KIND.get(submission.task.kind)
        rows = submission.item_scores
        if not keys or not isinstance(rows, list) or any(len(row) != len(keys) for row in rows):
            continue  # a shape this upgrade does not know: leave the stored interval as it is
        ci = column_cis(keys, rows, n_resamples=getattr(settings, "BOOTSTRAP_RESAMPLES", 1000), seed=0)
        if ci != submission.ci:
            Submission.objects.filter(pk=submission.pk).update(ci=ci)


# --------------------------------------------------------------------------- frozen statistics
# scoring.stats as it stood when this migration was last changed: a migration must give the same
# result whatever later releases do to the live module (the methods are in docs/diagnostics.md).

_BLOCK_ELEMENTS = 1 << 20
_NORMAL = NormalDist()


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
    share = (below + 0.5 * ties) / means.size
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


def bootstrap_cis(per_metric, *, n_resamples, seed, confidence=0.95):
    """The interval of the mean of each metric; every metric covers the same items (one shared
    resample matrix): Wilson for binary outcomes, the value for a constant sample, else BCa."""
    samples = {name: np.asarray(values, dtype=float) for name, values in per_metric.items()}
    sizes = {sample.size for sample in samples.values()}
    if not samples:
        return {}
    n = sizes.pop()
    if n == 0:
        return {name: (math.nan, math.nan) for name in samples}
    result = {}
    varying = {}
    for name, sample in samples.items():
        scale = _binary_scale(sample)
        if not np.isfinite(sample).all():
            result[name] = (math.nan, math.nan)
        elif scale is not None:
            result[name] = _wilson_interval(int(np.count_nonzero(sample)), n, confidence, scale)
        elif sample.min() == sample.max():
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
    return {name: result[name] for name in samples}


def column_cis(keys, item_rows, *, n_resamples, seed, scale=100.0):
    """95% CI of the mean of each column, on the boards' 0-100 scale; a column with undefined
    items (None) is resampled over its defined items only. No defined item, or an overflow: None."""
    per_column = {key: [row[i] for row in item_rows] for i, key in enumerate(keys)}
    complete = {key: [float(v) * scale for v in values if v is not None]
                for key, values in per_column.items() if None not in values}
    intervals = dict(bootstrap_cis(complete, n_resamples=n_resamples, seed=seed))
    for key, values in per_column.items():
        if key not in complete:
            defined = [float(v) * scale for v in values if v is not None]
            intervals[key] = bootstrap_cis({"x": defined}, n_resamples=n_resamples, seed=seed)["x"]
    return {key: list(bounds) if all(math.isfinite(b) for b in bounds) else None
            for key, bounds in ((key, intervals[key]) for key in keys)}


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0008_recompute_diagnostics_with_nulls"),
    ]

    operations = [
        migrations.RunPython(recompute_confidence_intervals, migrations.RunPython.noop),
    ]
