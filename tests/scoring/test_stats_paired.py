"""bootstrap_cis (shared resamples), paired sign-flip test and significance tiers."""
import itertools
import math

import numpy as np
import pytest

from scoring.stats import bootstrap_ci, bootstrap_cis, paired_test, significance_tiers


def binary_scores(n, accuracy, seed):
    return (np.random.default_rng(seed).random(n) < accuracy).astype(float)


# --------------------------------------------------------------------------- bootstrap_cis

def test_one_metric_gives_the_same_interval_as_bootstrap_ci():
    values = np.random.default_rng(1).uniform(0, 100, size=300)
    assert bootstrap_cis({"f1": values}, seed=4) == {"f1": bootstrap_ci(values, seed=4)}


def test_all_metrics_use_the_same_resampled_items():
    answer = np.random.default_rng(2).uniform(0, 1, size=200)
    # A metric that is an affine function of another has, resample by resample, the affine
    # mean: its interval is the image of the other's only if the same items were drawn.
    result = bootstrap_cis({"answer": answer, "scaled": 100 * answer + 5}, n_resamples=500, seed=3)
    low, high = result["answer"]
    assert result["scaled"] == pytest.approx((100 * low + 5, 100 * high + 5), rel=1e-12)
    assert list(result) == ["answer", "scaled"]


def test_a_metric_gets_the_same_interval_alone_or_with_others():
    rng = np.random.default_rng(5)
    answer, evidence = rng.uniform(size=150), rng.uniform(size=150)
    together = bootstrap_cis({"answer": answer, "evidence": evidence}, seed=9)
    assert together["evidence"] == bootstrap_cis({"evidence": evidence}, seed=9)["evidence"]


def test_constant_metric_and_empty_input():
    result = bootstrap_cis({"a": [1.0, 0.0, 1.0], "b": [0.5, 0.5, 0.5]})
    assert result["b"] == (0.5, 0.5)
    assert result["a"][0] < result["a"][1]
    empty = bootstrap_cis({"a": [], "b": []})
    assert all(math.isnan(x) for pair in empty.values() for x in pair)
    assert bootstrap_cis({}) == {}


def test_metrics_of_different_lengths_are_rejected():
    with pytest.raises(ValueError, match="same number of items"):
        bootstrap_cis({"a": [1.0, 2.0], "b": [1.0]})


def test_bootstrap_cis_is_deterministic():
    data = {"x": binary_scores(400, 0.7, 1), "y": binary_scores(400, 0.4, 2)}
    assert bootstrap_cis(data, seed=11) == bootstrap_cis(data, seed=11)
    assert bootstrap_cis(data, seed=11) != bootstrap_cis(data, seed=12)


# --------------------------------------------------------------------------- paired_test

def test_identical_vectors_give_one():
    scores = binary_scores(100, 0.6, 3)
    assert paired_test(scores, scores) == 1.0
    assert paired_test(scores, list(scores), n_resamples=10) == 1.0


def test_clearly_better_system_gets_a_small_p_value():
    weak = binary_scores(500, 0.5, 4)
    strong = np.maximum(weak, binary_scores(500, 0.4, 5))  # fixes ~20% of the items, breaks none
    p = paired_test(strong, weak, n_resamples=5000)
    assert p == 1 / 5001  # no sign flip comes close: the floor of (1 + 0) / (1 + B)


def test_symmetric_and_deterministic():
    a, b = binary_scores(300, 0.7, 6), binary_scores(300, 0.65, 7)
    assert paired_test(a, b, seed=2) == paired_test(b, a, seed=2)
    assert paired_test(a, b, seed=2) == paired_test(a, b, seed=2)


def test_length_mismatch_raises():
    with pytest.raises(ValueError, match="same items"):
        paired_test([1.0, 0.0], [1.0])


def test_single_item_difference_is_never_significant():
    # Flipping the only difference gives |mean| equal to the observed one every time.
    assert paired_test([1.0], [0.0], n_resamples=100) == 1.0


def exact_sign_flip_p(differences):
    """Share of all 2^m sign patterns at least as extreme (brute force)."""
    d = np.asarray(differences, dtype=float)
    observed = abs(d.mean())
    hits = sum(abs((np.array(signs) * d).mean()) >= observed - 1e-12
               for signs in itertools.product((-1, 1), repeat=d.size))
    return hits / 2 ** d.size


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_exact_enumeration_within_monte_carlo_error(seed):
    rng = np.random.default_rng(100 + seed)
    a = rng.uniform(size=12)
    b = a - rng.normal(0.15, 0.3, size=12)
    b[:2] = a[:2]  # zero differences are allowed and change nothing
    exact = exact_sign_flip_p(a - b)
    n_resamples = 20_000
    estimate = paired_test(a, b, n_resamples=n_resamples, seed=seed)
    error = math.sqrt(exact * (1 - exact) / n_resamples)
    assert abs(estimate - exact) < 4 * error + 1 / n_resamples


def test_five_equal_differences():
    # |mean| reaches the observed 1 only when all five signs agree: p = 2 / 32.
    p = paired_test([1.0] * 5, [0.0] * 5, n_resamples=40_000, seed=1)
    assert p == pytest.approx(1 / 16, abs=4 * math.sqrt(1 / 16 * 15 / 16 / 40_000))


def test_paired_test_is_fast_on_a_large_test_set():
    a, b = binary_scores(10_000, 0.8, 8), binary_scores(10_000, 0.79, 9)
    p = paired_test(a, b)
    assert 0 < p <= 1


# --------------------------------------------------------------------------- tiers

def test_ties_share_a_tier_and_a_big_gap_starts_a_new_one():
    base = binary_scores(400, 0.5, 10)
    top = np.maximum(base, binary_scores(400, 0.6, 11))  # much better than base
    near_top = top.copy()
    near_top[np.flatnonzero(top)[:2]] = 0.0  # two items worse: not significant
    tiers = significance_tiers([top, near_top, base])
    assert [t["tier"] for t in tiers] == [1, 1, 2]
    assert tiers[0]["p_vs_above"] is None
    assert tiers[1]["p_vs_above"] >= 0.05
    assert tiers[2]["p_vs_above"] < 0.05


def test_entries_without_items_are_skipped():
    base = binary_scores(400, 0.5, 12)
    top = np.maximum(base, binary_scores(400, 0.6, 13))
    tiers = significance_tiers([None, top, None, base, None])
    assert tiers == [
        {"tier": None, "p_vs_above": None},
        {"tier": 1, "p_vs_above": None},
        {"tier": None, "p_vs_above": None},
        {"tier": 2, "p_vs_above": paired_test(top, base)},  # compared with the entry two rows up
        {"tier": None, "p_vs_above": None},
    ]
    assert significance_tiers([]) == []
    assert significance_tiers([None]) == [{"tier": None, "p_vs_above": None}]


def test_tiers_chain_through_close_neighbours():
    # Each step down loses 3 items out of 300: never significant between neighbours, so all
    # share tier 1 although the first and last differ clearly.
    scores = [np.ones(300)]
    for step in range(1, 8):
        lower = scores[-1].copy()
        lower[(step - 1) * 3: step * 3] = 0.0
        scores.append(lower)
    tiers = significance_tiers(scores, n_resamples=2000)
    assert {t["tier"] for t in tiers} == {1}
    assert paired_test(scores[0], scores[-1], n_resamples=2000) < 0.05


def test_tiers_reject_bad_alpha():
    with pytest.raises(ValueError):
        significance_tiers([[1.0]], alpha=0.0)
