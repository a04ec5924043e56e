"""The false-alarm rates and power the diagnostic pages print (scoring/analysis/reading_limits.py):
each simulation is re-run here with its seed and must give the stored figures, and the figures
must say what the pages claim (a valid size, power where power is claimed, the paper's readings
as blind or as trigger-happy as the pages say). About 20 s in all."""
import math

import pytest

from scoring.analysis import reading_limits
from scoring.analysis.reading_limits import QUESTION_TYPE_THRESHOLD


def assert_same_figures(measured, stored):
    """Seeded, hence reproducible; the tolerance only absorbs the rounding to 3 decimals."""
    if isinstance(stored, dict):
        assert measured.keys() == stored.keys()
        for key in stored:
            assert_same_figures(measured[key], stored[key])
    elif isinstance(stored, list):
        assert len(measured) == len(stored)
        for one, other in zip(measured, stored, strict=True):
            assert_same_figures(one, other)
    else:
        assert measured == pytest.approx(stored, abs=0.0011), (measured, stored)


def upper_bound(rate, replicates):
    """The most a false-alarm share of ``replicates`` runs may reach when the true rate is ``rate``."""
    return rate + 3 * math.sqrt(rate * (1 - rate) / replicates)


def test_question_type_flag_has_its_size_and_power_where_lucs_statistic_is_blind():
    rates = reading_limits.question_type_rates()
    assert_same_figures(rates, reading_limits.QUESTION_TYPE_RATES)
    for layout in ("all types", "hidden split"):
        for null in rates[layout]["null"]:  # no type harder: flagged at most at the threshold's rate
            assert null["weighted"] <= upper_bound(QUESTION_TYPE_THRESHOLD, 400), (layout, null)
            assert null["published"] <= upper_bound(QUESTION_TYPE_THRESHOLD, 400), (layout, null)
        for planted in rates[layout]["planted"]:  # "how", 74 of 501 questions, 20 points worse
            assert planted["weighted"] >= 0.4, (layout, planted)
            assert planted["weighted"] >= 3 * planted["published"], (layout, planted)
    # Luo's unweighted statistic, as published: groups of 1-9 questions drown the gap.
    assert all(planted["published"] <= 0.1 for planted in rates["all types"]["planted"])


def test_question_type_report_keeps_its_family_wise_error_rate():
    family = reading_limits.question_type_family_error()
    assert_same_figures(family, reading_limits.QUESTION_TYPE_FAMILY_ERROR)
    assert family["categorical"] <= upper_bound(0.05, 150)
    assert family["one_vs_rest"] <= upper_bound(0.05, 150)


def test_bias_test_power_is_low_for_one_subset_ten_points_worse():
    power = reading_limits.bias_power()
    assert_same_figures(power, reading_limits.BIAS_POWER)
    assert power["null"]["0.05"] <= upper_bound(0.05, 300)
    assert power["null"]["0.01"] <= upper_bound(0.01, 300)
    # Low, as the page says: a p-value above 0.05 is no evidence of no bias.
    assert all(0.1 <= planted["0.05"] <= 0.5 for planted in power["planted"].values())
    # The larger the subset, the likelier the test sees it.
    assert power["planted"]["148"]["0.05"] > power["planted"]["50"]["0.05"]


def test_icq_papers_reading_flags_cue_free_models_on_two_and_four_options():
    flags = reading_limits.icq_cue_free_flags()
    assert_same_figures(flags, reading_limits.ICQ_CUE_FREE_FLAGS)
    assert all(row["cues"] >= 200 for row in flags.values())
    assert all(row["flagged"] <= 0.03 for row in flags.values())  # the test the page decides with
    assert all(row["published"] >= 0.25 for key, row in flags.items() if key.startswith("2 "))
    assert max(row["published"] for key, row in flags.items() if key.startswith("4 ")) >= 0.4


def test_pages_print_the_stored_figures():
    figures = reading_limits.FIGURES
    assert figures["qt_power_published"] == "3–5%" and figures["qt_power"] == "42–64%"
    assert figures["icq_published_two"] == "35–37%" and figures["bias_power_05"] == "16–31%"
    assert figures == reading_limits.figures(reading_limits.QUESTION_TYPE_RATES,
                                             reading_limits.QUESTION_TYPE_FAMILY_ERROR,
                                             reading_limits.BIAS_POWER, reading_limits.ICQ_CUE_FREE_FLAGS)
