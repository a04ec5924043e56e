"""Percentile bootstrap confidence interval of a mean."""
import math

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
    values = np.array([0.0, 1.0] * 200)  # mean 0.5, standard error 0.025
    low, high = bootstrap_ci(values, n_resamples=4000)
    assert low == pytest.approx(0.5 - 1.96 * 0.025, abs=0.01)
    assert high == pytest.approx(0.5 + 1.96 * 0.025, abs=0.01)


def test_constant_vector_has_zero_width():
    assert bootstrap_ci([0.1] * 37) == (0.1, 0.1)


def test_degenerate_sizes():
    low, high = bootstrap_ci([])
    assert math.isnan(low) and math.isnan(high)
    assert bootstrap_ci([42.0]) == (42.0, 42.0)


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
