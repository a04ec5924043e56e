from core.templatetags.expbench import score


def test_score_shows_fixed_decimals_and_a_dash_when_missing():
    assert score(71.6904) == "71.690"
    assert score(54.3449, 2) == "54.34"
    assert score(None) == "—" and score("") == "—"


def test_unbounded_ratios_switch_to_scientific_notation():
    # raw SNR over a near-constant rest: the value is right, a 45-digit print would break the table
    assert score(1.0741103146653e44, 2) == "1.07e+44"
    assert score(9_999_999.0, 2) == "9999999.00"
    assert score(-3.2e9, 2) == "-3.20e+09"
    assert score(float("inf"), 2) == "inf"
