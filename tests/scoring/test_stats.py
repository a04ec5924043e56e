"""Confidence interval of a mean: BCa bootstrap, Wilson for binary outcomes (docs/diagnostics.md)."""
import math
from statistics import NormalDist

import numpy as np
import pytest

from scoring import stats
from scoring.stats import bootstrap_ci


def scores(n, seed=1):
    return np.random.default_rng(seed).uniform(0, 100, size=n)


def test_deterministic_for_a_seed_and_varies_with_it():
    values = scores(200)
    assert bootstrap_ci(values, seed=7) == bootstrap_ci(list(values), seed=7)
    assert bootstrap_ci(values, seed=7) != bootstrap_ci(values, seed=8)


def test_interval_contains_the_mean_and_keeps_the_input_scale():
    values = scores(300)
    low, high = bootstrap_ci(values)
    assert 0 < low < values.mean() < high < 100
    assert isinstance(low, float) and isinstance(high, float)


def test_width_shrinks_with_n():
    widths = [np.subtract(*bootstrap_ci(scores(n))[::-1]) for n in (50, 500, 5000)]
    assert widths[0] > widths[1] > widths[2] > 0


def test_width_shrinks_with_confidence():
    values = scores(300)
    (low90, high90), (low99, high99) = bootstrap_ci(values, confidence=0.90), bootstrap_ci(values, confidence=0.99)
    assert low99 < low90 and high90 < high99


def test_known_case_matches_the_normal_approximation():
    values = np.array([0.2, 0.8] * 200)  # mean 0.5, standard error 0.015; symmetric, so BCa ~ normal
    low, high = bootstrap_ci(values, n_resamples=4000)
    assert low == pytest.approx(0.5 - 1.96 * 0.015, abs=0.003)
    assert high == pytest.approx(0.5 + 1.96 * 0.015, abs=0.003)


def test_constant_vector_has_zero_width():
    assert bootstrap_ci([0.1] * 37) == (0.1, 0.1)
    assert bootstrap_ci([0.0] * 37) == (0.0, 0.0)  # all zero: 0-1 or 0-100 scale unknown, not treated as binary


def test_degenerate_sizes():
    low, high = bootstrap_ci([])
    assert math.isnan(low) and math.isnan(high)
    assert bootstrap_ci([42.0]) == (42.0, 42.0)


Z_975 = NormalDist().inv_cdf(0.975)


def wilson(successes, n, z=Z_975):
    p = successes / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_binary_outcomes_get_the_wilson_interval_on_their_scale(scale):
    values = scale * (np.arange(50) < 47)  # 47 of 50 right
    low, high = wilson(47, 50)
    assert bootstrap_ci(values) == pytest.approx((scale * low, scale * high), rel=1e-12)
    assert bootstrap_ci(values, seed=1) == bootstrap_ci(values, seed=2)  # analytic: no resampling


def test_binary_sample_without_a_failure_is_not_a_zero_width_interval():
    # The old percentile bootstrap gave (100, 100): every resample of a constant sample is that
    # constant, and the interval missed any true accuracy below 100%.
    low, high = bootstrap_ci([100.0] * 50)
    assert high == 100.0 and low == pytest.approx(100 * 50 / (50 + 1.959964 ** 2), rel=1e-6)  # 92.87
    assert bootstrap_ci([1.0])[0] == pytest.approx(1 / (1 + 1.959964 ** 2), rel=1e-6)  # n = 1: 0.21
    assert bootstrap_ci([0.0, 100.0]) == pytest.approx(tuple(100 * b for b in wilson(1, 2)))


def test_bca_matches_its_definition():
    values = np.random.default_rng(4).exponential(size=40)  # right-skewed: BCa moves the interval up
    n_resamples, seed = 2000, 5
    means = values[np.random.default_rng(seed).integers(0, 40, size=(n_resamples, 40))].mean(axis=1)
    normal = NormalDist()
    z0 = normal.inv_cdf(np.mean(means < values.mean()))
    d = values - values.mean()
    a = (d ** 3).sum() / (6 * (d ** 2).sum() ** 1.5)
    levels = [normal.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in (normal.inv_cdf(0.025), normal.inv_cdf(0.975))]
    expected = np.quantile(means, levels)
    assert bootstrap_ci(values, n_resamples=n_resamples, seed=seed) == pytest.approx(tuple(expected), rel=1e-12)
    percentile = np.quantile(means, [0.025, 0.975])
    assert expected[0] > percentile[0] and expected[1] > percentile[1]
    assert levels[0] > 0.025 and levels[1] > 0.975


def test_a_single_outlier_gives_a_finite_interval_inside_the_data():
    low, high = bootstrap_ci([0.0] * 3 + [0.5], n_resamples=500)
    assert 0.0 <= low < 0.125 < high <= 0.5


def test_a_level_past_the_range_of_the_correction_takes_the_end_of_the_bootstrap_distribution():
    # |a| < 1/6 for a mean, so 1 - a (z0 + z) <= 0 needs |z0 + z| > 6: a left-skewed sample
    # (a = -0.16, mean 0.99) and all of 2 million bootstrap means above its mean (z0 = -5.0).
    sample = np.array([1.0] * 99 + [0.0])
    means = np.linspace(0.995, 1.0, 2_000_000)
    low, high = stats._bca_interval(sample, means, 0.95)
    assert low == 0.995  # level 0: the smallest bootstrap mean
    assert 0.995 <= high < 0.996  # level Phi(-11.2)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_non_finite_values_give_no_interval(bad):
    low, high = bootstrap_ci([0.3, bad, 0.5])
    assert math.isnan(low) and math.isnan(high)


def test_blocking_bounds_memory_without_changing_the_result(monkeypatch):
    values = scores(1000)
    expected = bootstrap_ci(values, n_resamples=300, seed=3)
    monkeypatch.setattr(stats, "_BLOCK_ELEMENTS", 2500)  # two resamples per block
    assert bootstrap_ci(values, n_resamples=300, seed=3) == expected


def test_large_n_runs_in_blocks():
    low, high = bootstrap_ci(scores(2_000_000), n_resamples=20)
    assert low < 50 < high and high - low < 0.2


@pytest.mark.parametrize("kwargs", [{"confidence": 1.0}, {"confidence": 0.0}, {"n_resamples": 0}])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], **kwargs)


def test_rejects_nested_input():
    with pytest.raises(ValueError):
        bootstrap_ci([[1.0, 2.0]])
