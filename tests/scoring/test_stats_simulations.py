"""Simulations with known truth: significance tiers and confidence intervals (scoring/stats.py).

Each test draws synthetic boards or samples from a fixed seed, so it gives the same figures on
every run; the tolerances leave at least 3 binomial standard errors to the expected figure. The
separation tests and the coverage test at n = 50 fail the earlier procedures (chained
tiers, percentile bootstrap), computed beside. Run this file as a script for the same figures
with more replications and the old procedures beside:

    python -m tests.scoring.test_stats_simulations [--boards 2000] [--samples 10000] [--part all|tiers|ci]
"""
import argparse
import math
import time

import numpy as np

from scoring.stats import TIER_ALPHA, bootstrap_ci, paired_test, significance_tiers

N_QUESTIONS = 501
# Five systems two points apart. STRONG: the direct paired test separates the top and the
# bottom in ~95% of boards; REVIEWER: ~86%, as in the reviewer's report. Items are independent
# Bernoulli outcomes (a question is right or wrong), the board is ranked by observed accuracy.
STRONG = (0.90, 0.88, 0.86, 0.84, 0.82)
REVIEWER = (0.83, 0.81, 0.79, 0.77, 0.75)
# Tests run the sign-flip test with 1,000 resamples (the server: 10,000); it decides alone only
# in the last step of a round and then only near alpha.
TEST_RESAMPLES = 1000


def simulate_boards(accuracies, boards, seed, *, n=N_QUESTIONS, n_resamples=TEST_RESAMPLES, holm=False):
    """Per board: (new tier of each system, chained tier of each system, direct p of top vs
    bottom[, Holm tier of each system]), systems in their true order. The chained tiers (the
    earlier procedure: a new tier whenever an entry is significantly worse than the
    entry just above) are rebuilt from ``p_vs_above``, which is that procedure's p-value."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(boards):
        scores = (rng.random((len(accuracies), n)) < np.asarray(accuracies)[:, None]).astype(float)
        order = np.argsort(-scores.mean(axis=1), kind="stable")
        ranked = [scores[i] for i in order]
        tiers = significance_tiers(ranked, n_resamples=n_resamples, seed=0)
        chained = np.cumsum([t["p_vs_above"] is not None and t["p_vs_above"] < TIER_ALPHA for t in tiers]) + 1
        holm_ranked = holm_tiers(ranked, n_resamples) if holm else None
        new, old, by_holm = [0] * len(order), [0] * len(order), [0] * len(order)
        for position, system in enumerate(order):
            new[system], old[system] = tiers[position]["tier"], int(chained[position])
            by_holm[system] = holm_ranked[position] if holm else None
        direct = paired_test(scores[0], scores[-1], n_resamples=n_resamples, seed=0)
        out.append((new, old, direct, by_holm))
    return out


def holm_tiers(ranked, n_resamples):
    """For comparison only: the leader's tier by Holm's correction of the sign-flip p-values
    against the leader, as if the leader had been chosen in advance."""
    tiers, remaining, tier = [0] * len(ranked), list(range(len(ranked))), 0
    while remaining:
        tier += 1
        leader, others = remaining[0], remaining[1:]
        p_values = sorted((paired_test(ranked[leader], ranked[j], n_resamples=n_resamples, seed=0), j) for j in others)
        split = set()
        for step, (p_value, j) in enumerate(p_values):
            if p_value >= TIER_ALPHA / (len(p_values) - step):
                break
            split.add(j)
        for j in [leader] + others:
            if j not in split:
                tiers[j] = tier
        remaining = [j for j in others if j in split]
    return tiers


def separation_rates(results):
    """Shares of boards where the true top and bottom are in different tiers (new, chained) and
    where the direct paired test separates them."""
    new = np.mean([r[0][0] != r[0][-1] for r in results])
    old = np.mean([r[1][0] != r[1][-1] for r in results])
    direct = np.mean([r[2] < TIER_ALPHA for r in results])
    return float(new), float(old), float(direct)


def split_rate(results):
    """Share of boards that show more than one tier (new, chained)."""
    return (float(np.mean([len(set(r[0])) > 1 for r in results])),
            float(np.mean([len(set(r[1])) > 1 for r in results])))


def holm_rates(results):
    """(top and bottom in different tiers, more than one tier) under Holm vs the leader."""
    return (float(np.mean([r[3][0] != r[3][-1] for r in results])),
            float(np.mean([len(set(r[3])) > 1 for r in results])))


# --------------------------------------------------------------------------- tiers

def test_systems_eight_points_apart_are_separated_in_most_boards():
    # 600 boards (~3 s): new 0.88, chained 0.30, direct test 0.95. Over 2,000 boards with
    # 10,000 sign flips (the script): 0.866, 0.305, 0.947.
    new, old, direct = separation_rates(simulate_boards(STRONG, 600, seed=1))
    assert new >= 0.80
    assert old < 0.50  # the chained tiers fail the assertion above by far
    assert new <= direct + 0.03  # the direct test of the one pair is the ceiling


def test_reviewer_setting_separates_far_more_often_than_chained_tiers():
    # 600 boards (~3 s): new 0.69, chained 0.20, direct test 0.84 (script: 0.723, 0.197, 0.865). No procedure that
    # splits 5 equal systems in at most 5-10% of boards reaches 0.80 here: it must not split
    # them unless the observed range of 5 means exceeds the 5% (10%) point of the studentized
    # range, 2.73 (2.46) standard errors of a difference, against a mean difference of 3.04.
    new, old, direct = separation_rates(simulate_boards(REVIEWER, 600, seed=2))
    assert new >= 0.62
    assert old < 0.35
    assert direct > 0.78


def test_equal_systems_stay_in_one_tier():
    # 5 and 10 systems of identical true accuracy, 600 boards each (~9 s). The error rate is
    # the share of boards split into more than one tier; stated: at most 5%. Expected ~4.5%
    # for both sizes, binomial SE 0.009 (Holm on the comparisons with the top entry, which
    # ignores that the top entry is the observed best, splits 7.5% and 11.7% of such boards;
    # script: new 4.6%, 4.4%, and 4.3% for 20 systems, where Holm splits 18.4%).
    for systems, seed in ((5, 3), (10, 4)):
        new, _ = split_rate(simulate_boards((0.8,) * systems, 600, seed=seed))
        assert new <= 0.08, (systems, new)


def test_failed_items_are_left_out_not_counted_as_zero():
    # B equals A where both are defined but 25% of B's items failed (None). The ranked metric
    # (mean over defined items) ties them; counting failures as 0 would put B 20 points down.
    rng = np.random.default_rng(5)
    a = (rng.random(N_QUESTIONS) < 0.8).astype(float)
    b = [None if failed else value for value, failed in zip(a.tolist(), rng.random(N_QUESTIONS) < 0.25, strict=True)]
    c = (rng.random(N_QUESTIONS) < 0.5).astype(float)  # clearly worse
    tiers = significance_tiers([a, b, c], n_resamples=TEST_RESAMPLES)
    assert [t["tier"] for t in tiers] == [1, 1, 2]
    assert tiers[1]["p_vs_leader"] == 1.0  # identical on the common items
    as_zero = [0.0 if value is None else value for value in b]
    assert [t["tier"] for t in significance_tiers([a, as_zero, c], n_resamples=TEST_RESAMPLES)] == [1, 2, 3]
    # The same for a weaker B: its undefined items do not drag it down, its defined ones count.
    b_worse = [None if v is None else (0.0 if i % 3 == 0 else v) for i, v in enumerate(b)]
    assert significance_tiers([a, b_worse], n_resamples=TEST_RESAMPLES)[1]["tier"] == 2


# --------------------------------------------------------------------------- confidence intervals

def coverage(n, accuracy, samples, seed, interval):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(samples):
        low, high = interval(100.0 * (rng.random(n) < accuracy))
        hits += low <= 100.0 * accuracy <= high
    return hits / samples


def percentile_ci(values, n_resamples=1000, seed=0):
    """The earlier interval: quantiles 2.5% and 97.5% of the bootstrap means."""
    values = np.asarray(values)
    means = values[np.random.default_rng(seed).integers(0, values.size, (n_resamples, values.size))].mean(axis=1)
    return tuple(np.quantile(means, [0.025, 0.975]))


def test_ci_coverage_at_n_50_with_97_percent_accuracy():
    # 2,000 samples (binomial SE of a coverage near 0.95: 0.005): 0.943; exact coverage of the
    # Wilson interval here: 0.937. The percentile bootstrap (500 samples): 0.79; 0.774 over
    # 10,000 (a sample with no failure, 22% of them, got a zero-width interval at 100).
    new = coverage(50, 0.97, 2000, seed=6, interval=bootstrap_ci)
    assert 0.92 <= new <= 0.975
    old = coverage(50, 0.97, 500, seed=6, interval=percentile_ci)
    assert old < 0.85


def test_ci_coverage_at_n_500_with_80_percent_accuracy():
    # 2,000 samples: 0.948. Exact Wilson coverage: 0.950 (the percentile bootstrap was right
    # here too: 0.956 over 10,000 samples).
    assert 0.92 <= coverage(500, 0.8, 2000, seed=7, interval=bootstrap_ci) <= 0.975


def f1_like(rng, n, top):
    """Per-question F1: 1 with probability ``top``, else 0 or partial credit (uniform), evenly."""
    u = rng.random(n)
    return np.where(u < top, 1.0, np.where(u < top + (1 - top) / 2, 0.0, rng.random(n)))


def continuous_coverage(draw, truth, samples, seed, interval):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(samples):
        low, high = interval(draw(rng))
        hits += low <= truth <= high
    return hits / samples


def test_bca_coverage_on_real_valued_f1_near_the_ceiling():
    # n = 50, F1 = 1 with probability 0.97: 1,000 samples, BCa with 1,000 resamples (~2 s):
    # 0.956; the percentile bootstrap: 0.72.
    truth = 0.97 + 0.015 * 0.5
    assert 0.92 <= continuous_coverage(lambda rng: f1_like(rng, 50, 0.97), truth, 1000, 8, bootstrap_ci) <= 0.975


# --------------------------------------------------------------------------- the figures, as a script

def report(boards, samples, part):
    started = time.time()
    if part in ("all", "ci"):
        report_cis(samples)
    if part in ("all", "tiers"):
        report_tiers(boards)
    print(f"({time.time() - started:.0f} s)")


def report_tiers(boards):
    for name, accuracies in (("strong", STRONG), ("reviewer", REVIEWER)):
        results = simulate_boards(accuracies, boards, seed=11, n_resamples=10_000, holm=True)
        new, old, direct = separation_rates(results)
        print(f"{name} {accuracies}, n = {N_QUESTIONS}, {boards} boards: top and bottom in different tiers: "
              f"new {new:.3f}, chained {old:.3f} (share a tier: {1 - old:.3f}), Holm vs leader "
              f"{holm_rates(results)[0]:.3f}; direct paired test p < 0.05: {direct:.3f}")
    for systems in (5, 10, 20):
        results = simulate_boards((0.8,) * systems, boards, seed=12, n_resamples=10_000, holm=True)
        new, old = split_rate(results)
        print(f"{systems} equal systems, {boards} boards: split into more than one tier: new {new:.3f}, "
              f"chained {old:.3f}, Holm vs leader {holm_rates(results)[1]:.3f}")


def report_cis(samples):
    for n, accuracy in ((50, 0.97), (500, 0.8)):
        new = coverage(n, accuracy, samples, seed=13, interval=bootstrap_ci)
        old = coverage(n, accuracy, samples, seed=13, interval=percentile_ci)
        print(f"95% CI of the mean, Bernoulli n = {n}, p = {accuracy}, {samples} samples: coverage new {new:.3f}, "
              f"percentile bootstrap {old:.3f} (binomial SE {math.sqrt(0.95 * 0.05 / samples):.3f})")
    few = max(1, samples // 10)
    designs = (("F1 1 w.p. 0.97 else 0 or partial", lambda rng: f1_like(rng, 50, 0.97), 0.97 + 0.015 * 0.5),
               ("F1 1 w.p. 0.9 else 0 or partial", lambda rng: f1_like(rng, 50, 0.9), 0.9 + 0.05 * 0.5),
               ("log-normal(0, 1)", lambda rng: rng.lognormal(0.0, 1.0, 50), math.exp(0.5)))
    for name, draw, truth in designs:
        new = continuous_coverage(draw, truth, few, 14, bootstrap_ci)
        old = continuous_coverage(draw, truth, few, 14, percentile_ci)
        print(f"95% CI of the mean, {name}, n = 50, {few} samples: coverage new {new:.3f}, "
              f"percentile bootstrap {old:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--part", choices=("all", "tiers", "ci"), default="all")
    arguments = parser.parse_args()
    report(arguments.boards, arguments.samples, arguments.part)
