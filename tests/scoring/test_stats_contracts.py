"""What scoring.stats refuses, with which words, and where its boundaries lie; and column_cis,
the confidence intervals the server stores for every column of an entry."""
import math
import re

import pytest

from scoring import stats


def refused(message):
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5])
def test_a_confidence_outside_zero_to_one_is_refused(confidence):
    with refused("confidence must be strictly between 0 and 1"):
        stats.bootstrap_cis({"x": [0.2, 0.4]}, confidence=confidence)


def test_one_resample_is_the_least_each_procedure_takes():
    for call in (lambda n: stats.bootstrap_cis({"x": [0.2, 0.4, 0.9]}, n_resamples=n),
                 lambda n: stats.paired_test([0.2, 0.4, 0.9], [0.1, 0.5, 0.3], n_resamples=n),
                 lambda n: stats.significance_tiers([[0.2, 0.4, 0.9], [0.1, 0.5, 0.3]], n_resamples=n)):
        with refused("n_resamples must be at least 1"):
            call(0)
        call(1)  # accepted


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_an_alpha_outside_zero_to_one_is_refused(alpha):
    with refused("alpha must be strictly between 0 and 1"):
        stats.significance_tiers([[0.2, 0.4], [0.1, 0.5]], alpha=alpha)
    assert len(stats.significance_tiers([[0.2, 0.4], [0.1, 0.5]], alpha=0.999)) == 2


def test_each_refusal_names_the_function_and_what_is_wrong():
    with refused("bootstrap_ci expects a flat sequence of numbers"):
        stats.bootstrap_ci([[0.1, 0.2]])
    with refused("metric 'em' expects a flat sequence of numbers"):
        stats.bootstrap_cis({"em": [[0.1, 0.2]]})
    with refused("all metrics must have the same number of items, found sizes [2, 3]"):
        stats.bootstrap_cis({"a": [0.1, 0.2], "b": [0.1, 0.2, 0.3]})
    with refused("paired_test expects a flat sequence of numbers"):
        stats.paired_test([[0.1]], [[0.2]])
    with refused("paired_test needs scores on the same items: got 2 and 1 values"):
        stats.paired_test([0.1, 0.2], [0.1])
    with refused("paired_test needs finite scores"):
        stats.paired_test([0.1, math.inf], [0.1, 0.2])
    with refused("significance_tiers expects a flat sequence of numbers"):
        stats.significance_tiers([[[0.1, 0.2]], [0.1, 0.2]])
    with refused("significance_tiers needs scores on the same items: got lengths [2, 3]"):
        stats.significance_tiers([[0.1, 0.2], [0.1, 0.2, 0.3]])
    with refused("the range needs at least 2 variables"):
        stats.studentized_range_sf(1.0, 1)


def test_the_range_of_two_or_more_variables_reaches_zero_only_at_once():
    assert stats.studentized_range_sf(0.0, 2) == 1.0 and stats.studentized_range_sf(-1.0, 3) == 1.0
    assert 0.0 < stats.studentized_range_sf(2.0, 2) < stats.studentized_range_sf(2.0, 5) < 1.0


ROWS = [(0.5, 0.93, None), (0.7, None, None), (0.2, 0.11, None), (0.9, 0.36, None), (0.4, 0.62, None)]


def test_column_cis_resample_each_column_over_its_defined_items_on_the_board_scale():
    cis = stats.column_cis(["full", "gappy", "empty"], ROWS, n_resamples=200, seed=3)
    full = [100 * row[0] for row in ROWS]
    gappy = [100 * row[1] for row in ROWS if row[1] is not None]
    assert cis["full"] == list(stats.bootstrap_ci(full, n_resamples=200, seed=3))
    assert cis["gappy"] == list(stats.bootstrap_ci(gappy, n_resamples=200, seed=3))
    assert cis["empty"] is None  # no defined item
    assert list(cis) == ["full", "gappy", "empty"]
    # The resamples and the seed asked for are the ones used.
    assert cis["full"] != list(stats.bootstrap_ci(full, n_resamples=1000, seed=3))
    assert cis["full"] != list(stats.bootstrap_ci(full, n_resamples=200, seed=0))
    assert cis["gappy"] != list(stats.bootstrap_ci(gappy, n_resamples=200, seed=0))
    assert cis["gappy"] != list(stats.bootstrap_ci(gappy, n_resamples=1000, seed=3))
    on_unit_scale = stats.column_cis(["full"], [row[:1] for row in ROWS], n_resamples=200, seed=3, scale=1.0)
    assert on_unit_scale["full"] == pytest.approx([bound / 100 for bound in cis["full"]])


def test_column_cis_give_none_for_an_interval_that_overflows():
    cis = stats.column_cis(["huge", "fine"], [(1e307, 0.5), (1e307, 0.7), (1e300, 0.6)], n_resamples=50)
    assert cis["huge"] is None and cis["fine"] is not None


def test_an_interval_whose_resampled_means_overflow_is_undefined():
    """The sample's own mean is finite, some resampled means are not: no interval, not a wrong one."""
    with pytest.warns(RuntimeWarning):
        assert all(math.isnan(bound) for bound in stats.bootstrap_ci([1.7e308, 0.0, 0.3], n_resamples=200))


def test_the_second_paired_entry_is_checked_too():
    with refused("paired_test expects a flat sequence of numbers"):
        stats.paired_test([0.1, 0.2], [[0.1, 0.2]])
