"""bootstrap_cis (shared resamples), paired sign-flip test and significance tiers."""
import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest

from scoring.stats import (
    TIER_PROCEDURE,
    bootstrap_ci,
    bootstrap_cis,
    paired_test,
    significance_tiers,
    studentized_range_sf,
)


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
    rng = np.random.default_rng(1)
    data = {"x": rng.uniform(size=400), "y": rng.uniform(size=400) ** 2}
    assert bootstrap_cis(data, seed=11) == bootstrap_cis(data, seed=11)
    assert bootstrap_cis(data, seed=11) != bootstrap_cis(data, seed=12)


def test_binary_and_real_valued_metrics_together():
    # Multi-choice ExpMRC: answer accuracy is binary (Wilson), evidence and overall F1 are not
    # (BCa on shared resamples); each gets the interval it would get alone.
    rng = np.random.default_rng(3)
    answer = 100.0 * binary_scores(200, 0.7, 4)
    evidence = 100.0 * rng.uniform(size=200)
    together = bootstrap_cis({"answer": answer, "evidence": evidence, "overall": answer * evidence / 100}, seed=2)
    assert together["answer"] == bootstrap_ci(answer, seed=2) == bootstrap_ci(answer, seed=3)
    assert together["evidence"] == bootstrap_ci(evidence, seed=2)
    assert list(together) == ["answer", "evidence", "overall"]


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


def test_only_items_defined_for_both_count():
    a, b = binary_scores(300, 0.8, 20), binary_scores(300, 0.7, 21)
    undefined_a, undefined_b = np.arange(300) % 7 == 0, np.arange(300) % 5 == 0
    with_none_a = [None if u else v for u, v in zip(undefined_a, a.tolist(), strict=True)]
    with_nan_b = np.where(undefined_b, np.nan, b)  # NaN is undefined too
    both = ~(undefined_a | undefined_b)
    expected = paired_test(a[both], b[both], n_resamples=3000, seed=4)
    assert paired_test(with_none_a, with_nan_b, n_resamples=3000, seed=4) == expected
    assert paired_test(with_nan_b, with_none_a, n_resamples=3000, seed=4) == expected


def test_a_failed_item_is_not_a_zero():
    a = [1.0] * 40
    failed = [None] * 10 + [1.0] * 30
    assert paired_test(a, failed, n_resamples=2000) == 1.0  # equal on the 30 common items
    assert paired_test(a, [0.0] * 10 + [1.0] * 30, n_resamples=2000) < 0.01  # what counting 0 did
    assert paired_test([None, 1.0], [0.0, None]) == 1.0  # no common item: no evidence


def test_infinite_scores_raise():
    with pytest.raises(ValueError, match="finite"):
        paired_test([1.0, math.inf], [0.0, 0.0])


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

def tiers_of(result):
    return [row["tier"] for row in result]


def test_studentized_range_distribution():
    normal = NormalDist()
    for w in (0.5, 1.0, 2.772, 4.0):  # two variables: |Z1 - Z2| = sqrt(2) |Z|
        assert studentized_range_sf(w, 2) == pytest.approx(2 * (1 - normal.cdf(w / math.sqrt(2))), abs=1e-5)
    # Upper 5% points of the studentized range with infinite degrees of freedom (published tables).
    for m, q in ((3, 3.314), (5, 3.858), (10, 4.474), (20, 5.012)):
        assert studentized_range_sf(q, m) == pytest.approx(0.05, abs=3e-4)
    assert studentized_range_sf(0.0, 5) == 1.0 and studentized_range_sf(-1.0, 5) == 1.0
    assert studentized_range_sf(50.0, 5) == 0.0
    with pytest.raises(ValueError):
        studentized_range_sf(1.0, 1)


def test_ties_share_a_tier_and_a_big_gap_starts_a_new_one():
    base = binary_scores(400, 0.5, 10)
    top = np.maximum(base, binary_scores(400, 0.6, 11))  # much better than base
    near_top = top.copy()
    near_top[np.flatnonzero(top)[:2]] = 0.0  # two items worse: not significant
    tiers = significance_tiers([top, near_top, base])
    assert tiers_of(tiers) == [1, 1, 2]
    assert tiers[0] == {"tier": 1, "p_vs_above": None, "p_vs_leader": None, "p_adjusted": None}
    assert tiers[1]["p_vs_above"] == tiers[1]["p_vs_leader"] == paired_test(top, near_top) >= 0.05
    assert tiers[1]["p_adjusted"] >= 0.05
    assert tiers[2]["p_vs_above"] == paired_test(near_top, base) < 0.05
    assert (tiers[2]["p_vs_leader"], tiers[2]["p_adjusted"]) == (None, None)  # base leads tier 2


def test_entries_without_items_are_skipped():
    base = binary_scores(400, 0.5, 12)
    top = np.maximum(base, binary_scores(400, 0.6, 13))
    tiers = significance_tiers([None, top, None, base, None, [None] * 400])
    empty = {"tier": None, "p_vs_above": None, "p_vs_leader": None, "p_adjusted": None}
    assert tiers == [
        empty,
        {"tier": 1, "p_vs_above": None, "p_vs_leader": None, "p_adjusted": None},
        empty,
        {"tier": 2, "p_vs_above": paired_test(top, base), "p_vs_leader": None, "p_adjusted": None},
        empty,
        empty,  # per-item data with no defined item: no ranked score, no tier
    ]
    assert significance_tiers([]) == []
    assert significance_tiers([None]) == [empty]


def test_tiers_do_not_chain_through_close_neighbours():
    # Each step down loses 3 items out of 300: never significant between neighbours, so the
    # tiers of before (a new tier only when significantly worse than the entry just above)
    # put all eight in tier 1 although the first and last differ clearly.
    scores = [np.ones(300)]
    for step in range(1, 8):
        lower = scores[-1].copy()
        lower[(step - 1) * 3: step * 3] = 0.0
        scores.append(lower)
    tiers = significance_tiers(scores, n_resamples=2000)
    assert all(t["p_vs_above"] is None or t["p_vs_above"] >= 0.05 for t in tiers)  # the chain of before
    assert tiers_of(tiers) == [1, 1, 2, 2, 3, 3, 4, 4]
    # Everyone in a tier is not significantly worse than its leader, after the correction.
    for t in tiers:
        assert t["p_adjusted"] is None or t["p_adjusted"] >= 0.05
    assert paired_test(scores[0], scores[-1], n_resamples=2000) < 0.05


def test_the_correction_accounts_for_the_number_of_entries():
    # Leader vs an entry 14 items worse out of 400 (14 discordant items, all one way: z = 3.74,
    # sign-flip p ~ 0.0001). Alone that splits them. With 60 more entries in the round the
    # correction asks for the spread that the best and worst of 62 equal entries reach by
    # chance in 5% of boards (5.8 standard errors of a difference / sqrt(2), i.e. z > 4.1).
    leader = np.ones(400)
    worse = leader.copy()
    worse[:14] = 0.0
    assert tiers_of(significance_tiers([leader, worse], n_resamples=2000)) == [1, 2]
    crowd = [leader] + [leader.copy() for _ in range(60)] + [worse]
    # the 60 copies (z = 0) never count as split off; m = 62 at the first step
    assert studentized_range_sf(math.sqrt(2) * math.sqrt(14), 62) > 0.05
    assert set(tiers_of(significance_tiers(crowd, n_resamples=2000))) == {1}


def test_an_entry_better_than_the_leader_on_the_common_items_is_not_split_off():
    # Ranked by the mean over its own defined items, B is second; on the items both define it
    # is better than A. It is not "significantly worse than the leader".
    a = np.array([1.0] * 80 + [0.0] * 120)
    b = np.array([None] * 80 + [1.0] * 60 + [0.0] * 60, dtype=object)
    tiers = significance_tiers([a, b], n_resamples=2000)
    assert tiers_of(tiers) == [1, 1] and tiers[1]["p_vs_leader"] < 0.05


def test_tiers_are_deterministic_and_use_one_seed_per_pair():
    rng = np.random.default_rng(30)
    board = [(rng.random(300) < p).astype(float) for p in (0.8, 0.78, 0.7, 0.69, 0.5)]
    first = significance_tiers(board, n_resamples=1000, seed=3)
    assert first == significance_tiers(board, n_resamples=1000, seed=3)
    assert first[1]["p_vs_above"] == paired_test(board[0], board[1], n_resamples=1000, seed=3)


def test_tiers_reject_bad_arguments():
    with pytest.raises(ValueError):
        significance_tiers([[1.0]], alpha=0.0)
    with pytest.raises(ValueError, match="same items"):
        significance_tiers([[1.0, 0.0], None, [1.0]])


def test_the_procedure_is_one_plain_sentence_with_alpha_and_the_correction():
    assert TIER_PROCEDURE.count(". ") == 0 and TIER_PROCEDURE.endswith(".")
    assert "alpha = 0.05" in TIER_PROCEDURE and "studentized-range" in TIER_PROCEDURE
    assert significance_tiers.__doc__.startswith("Tier 1 is the top entry plus every entry not significantly worse")
