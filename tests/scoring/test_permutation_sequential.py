"""Sequential Monte Carlo permutation p-values: the stopping bounds, their error bound, and
simulations with known truth (null rejection rate, power, agreement with the full budget)."""
import math

import numpy as np
import pytest
from scipy.stats import chi2, chi2_contingency, hypergeom

from scoring.analysis.permutation import (
    DEFAULT_EPSILON,
    FIRST_LOOK,
    _max_significant_count,
    categorical_test,
    chi_square_sf,
    hypergeometric_cdf,
    look_schedule,
    one_vs_rest_tests,
    pearson_chi_square_p,
    question_type_report,
    stopping_bounds,
)

NAMES = ("how", "what", "when", "who")


def table(n, seed, accuracies):
    """n items over len(accuracies) question types (uniform), correct with the type's accuracy."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, len(accuracies), size=n)
    correct = rng.random(n) < np.asarray(accuracies)[codes]
    return [NAMES[c] for c in codes], correct.astype(int).tolist()


def binomial_band(rate, count, sigmas=3.0):
    return sigmas * math.sqrt(rate * (1 - rate) / count)


# --------------------------------------------------------------------------- the procedure itself

def test_look_schedule_doubles_up_to_the_budget():
    assert look_schedule(100_000) == [1000, 2000, 4000, 8000, 16000, 32000, 64000, 100_000]
    assert look_schedule(1_000_000)[-2:] == [512_000, 1_000_000] and len(look_schedule(1_000_000)) == 11
    assert look_schedule(FIRST_LOOK) == [FIRST_LOOK] and look_schedule(50) == [50]


@pytest.mark.parametrize("budget, threshold", [(100_000, 0.05 / 3), (1_000_000, 0.05 / 3), (100_000, 0.05 / 9),
                                               (20_000, 0.05), (5_000, 0.5)])
def test_stopping_bounds_are_the_hypergeometric_quantiles_and_the_error_sums_to_epsilon(budget, threshold):
    k_star = _max_significant_count(budget, threshold)
    assert (1 + k_star) / (1 + budget) < threshold <= (2 + k_star) / (1 + budget)
    looks = look_schedule(budget)[:-1]
    delta = DEFAULT_EPSILON / len(looks)
    accept_error = reject_error = 0.0
    for draws in looks:
        reject_to, accept_from = stopping_bounds(budget, k_star, draws, delta)
        # a: the smallest value with P(H(B, k*, n) >= a) <= delta; r: the largest with P(H(B, k*+1, n) <= r) <= delta.
        assert hypergeom.sf(accept_from - 1, budget, k_star, draws) <= delta * (1 + 1e-9)
        assert hypergeom.sf(accept_from - 2, budget, k_star, draws) > delta
        assert hypergeom.cdf(reject_to, budget, k_star + 1, draws) <= delta * (1 + 1e-9)
        assert hypergeom.cdf(reject_to + 1, budget, k_star + 1, draws) > delta
        accept_error += hypergeom.sf(accept_from - 1, budget, k_star, draws)
        reject_error += hypergeom.cdf(reject_to, budget, k_star + 1, draws)
    # The stated bound: P(decision != full-budget decision) <= max(both sums) <= epsilon.
    assert max(accept_error, reject_error) <= DEFAULT_EPSILON * (1 + 1e-9)


def test_references_match_scipy():
    for df in (1, 2, 3, 5, 9, 30):
        for x in (0.01, 0.5, 1.0, 3.84, 10.0, 40.0, 150.0):
            assert chi_square_sf(x, df) == pytest.approx(chi2.sf(x, df), rel=1e-9, abs=1e-300)
    for value, population, marked, drawn in [(30, 1000, 300, 100), (0, 501, 400, 3), (2, 40, 30, 20),
                                             (120, 100_000, 1666, 8000)]:
        assert hypergeometric_cdf(value, population, marked, drawn) == pytest.approx(
            hypergeom.cdf(value, population, marked, drawn), rel=1e-9, abs=1e-300)
    groups, correct = table(500, seed=2, accuracies=(0.6, 0.7, 0.75, 0.8))
    result = categorical_test(groups, correct, n_permutations=100)
    counts = np.array([[g["correct"], g["n"] - g["correct"]] for g in result["groups"].values()])
    assert result["p_value_chi_square"] == pytest.approx(chi2_contingency(counts, correction=False).pvalue, rel=1e-9)
    assert pearson_chi_square_p(np.array([5, 5]), np.array([5, 5])) == 1.0  # no freedom


def test_the_sequential_draws_are_the_first_draws_of_the_full_budget():
    """The coupling the bound rests on: stopping after n draws gives exactly the count the
    full-budget run had after its first n draws (same seed)."""
    groups, correct = table(300, seed=11, accuracies=(0.7, 0.75, 0.8, 0.8))
    for threshold in (0.05, 0.01, 0.3):
        sequential = categorical_test(groups, correct, n_permutations=64_000, seed=3, threshold=threshold)
        prefix = categorical_test(groups, correct, n_permutations=sequential["draws"], seed=3, sequential=False)
        assert sequential["p_value"] == prefix["p_value"] and prefix["draws"] == sequential["draws"]


def test_far_from_the_threshold_the_test_stops_after_one_or_two_looks():
    groups, correct = table(400, seed=5, accuracies=(0.8, 0.8, 0.8, 0.8))
    result = categorical_test(groups, correct, n_permutations=1_000_000, seed=0, threshold=0.05 / 3)
    assert 0.2 < result["p_value"] < 0.8
    assert result["draws"] <= 2 * FIRST_LOOK and result["stopped_early"] is True
    assert result["p_value_se"] == pytest.approx(math.sqrt(result["p_value"] * (1 - result["p_value"])
                                                           / result["draws"]))
    strong = categorical_test(*table(400, seed=5, accuracies=(0.3, 0.8, 0.8, 0.9)), n_permutations=1_000_000,
                              threshold=0.05 / 3)
    assert strong["p_value"] < 0.05 / 3 and strong["draws"] <= 4 * FIRST_LOOK
    # With the full budget the same tables draw everything.
    fixed = categorical_test(groups, correct, n_permutations=20_000, sequential=False)
    assert fixed["draws"] == 20_000 and fixed["stopped_early"] is False


def test_near_the_threshold_the_test_spends_more():
    groups, correct = table(600, seed=1, accuracies=(0.72, 0.8, 0.8, 0.8))
    full = categorical_test(groups, correct, n_permutations=100_000, sequential=False)
    threshold = full["p_value"] * 1.05  # just above the full-budget p-value
    result = categorical_test(groups, correct, n_permutations=100_000, threshold=threshold)
    assert result["draws"] >= 32_000
    assert (result["p_value"] < threshold) == (full["p_value"] < threshold)


def test_epsilon_and_threshold_are_validated():
    for kwargs in ({"epsilon": 0.0}, {"epsilon": 1.0}, {"threshold": 0.0}):
        with pytest.raises(ValueError):
            categorical_test(["a", "b"], [1, 0], **kwargs)


# --------------------------------------------------------------------------- references on large samples

def test_sequential_p_values_are_close_to_the_asymptotic_and_exact_ones_on_large_samples():
    rng = np.random.default_rng(4)
    for seed, effect in enumerate((0.0, 0.02, 0.035)):
        n = 6000
        groups = ["how" if rng.random() < 0.3 else "what" for _ in range(n)]
        correct = (rng.random(n) < np.where(np.asarray(groups) == "how", 0.75 - effect, 0.75)).astype(int).tolist()
        # Two groups: the TVD is a monotone function of Pearson's chi-square, so both p-values
        # estimate the same number, up to the normal approximation (tiny at n = 6,000).
        result = categorical_test(groups, correct, n_permutations=100_000, seed=seed)
        assert abs(result["p_value"] - result["p_value_chi_square"]) < 4 * result["p_value_se"] + 0.01, result
        full = categorical_test(groups, correct, n_permutations=100_000, seed=seed, sequential=False)
        se = math.hypot(result["p_value_se"], full["p_value_se"])
        assert abs(result["p_value"] - full["p_value"]) < 4 * se + 1 / result["draws"]
        for test in one_vs_rest_tests(groups, correct, n_permutations=100_000, seed=seed, min_items=10)["tests"]:
            # one-vs-rest: the exact hypergeometric tail is the limit of the Monte Carlo p-value.
            assert abs(test["p_value"] - test["p_value_exact"]) < 4 * test["p_value_se"] + 2 / test["draws"], test


# --------------------------------------------------------------------------- simulations with known truth

def decisions(tables, threshold, budget):
    """(sequential, full-budget) decisions and sequential draws, same seed per table."""
    sequential, full, draws = [], [], []
    for seed, (groups, correct) in enumerate(tables):
        fast = categorical_test(groups, correct, n_permutations=budget, seed=seed, threshold=threshold)
        slow = categorical_test(groups, correct, n_permutations=budget, seed=seed, threshold=threshold,
                                sequential=False)
        sequential.append(fast["p_value"] < threshold)
        full.append(slow["p_value"] < threshold)
        draws.append(fast["draws"])
    return np.array(sequential), np.array(full), np.array(draws)


def test_under_the_null_the_rejection_rate_is_alpha():
    alpha, count = 0.05, 400
    tables = [table(300, seed=1000 + i, accuracies=(0.75, 0.75, 0.75, 0.75)) for i in range(count)]
    sequential, full, draws = decisions(tables, alpha, budget=10_000)
    rate = sequential.mean()
    print(f"\nnull: sequential rejection rate {rate:.4f} (full budget {full.mean():.4f}) at alpha {alpha} "
          f"on {count} tables; mean draws {draws.mean():,.0f} of 10,000")
    assert abs(rate - alpha) <= binomial_band(alpha, count) + DEFAULT_EPSILON
    assert np.count_nonzero(sequential != full) <= 1


def test_with_a_planted_effect_the_power_is_that_of_the_full_budget():
    threshold, count = 0.05 / 3, 200
    tables = [table(300, seed=2000 + i, accuracies=(0.62, 0.8, 0.8, 0.85)) for i in range(count)]
    sequential, full, draws = decisions(tables, threshold, budget=20_000)
    print(f"\nplanted effect: power {sequential.mean():.3f} sequential, {full.mean():.3f} full budget "
          f"on {count} tables; mean draws {draws.mean():,.0f} of 20,000")
    assert 0.2 < full.mean() < 0.95  # a regime where the power is neither trivial nor saturated
    assert abs(sequential.mean() - full.mean()) <= 1 / count


def test_decisions_agree_with_the_full_budget():
    """Tables with effects of every size (p-values over [0, 1], many near the threshold). The
    perf script (--agreement 1000) runs the same check on 1,000 tables with the production
    budget; here 300 tables at 20,000."""
    threshold, count = 0.05 / 3, 300
    rng = np.random.default_rng(77)
    tables = [table(300, seed=3000 + i, accuracies=np.clip(0.8 + rng.uniform(0, 0.12) * rng.standard_normal(4),
                                                           0.05, 0.95)) for i in range(count)]
    sequential, full, draws = decisions(tables, threshold, budget=20_000)
    agreement = np.mean(sequential == full)
    print(f"\nagreement with the full budget: {agreement:.4f} on {count} tables "
          f"({full.sum()} significant); mean draws {draws.mean():,.0f} of 20,000")
    # epsilon = 0.001 per table: P(2 or more disagreements in 300) < 0.04 even at the bound.
    assert np.count_nonzero(sequential != full) <= 1
    assert 0.1 < full.mean() < 0.9
    assert np.median(draws) <= 4 * FIRST_LOOK


# --------------------------------------------------------------------------- the report

def test_report_lists_the_procedure_and_each_tests_monte_carlo_error():
    starts = ["What is", "Who was", "When did", "Why did"]
    rng = np.random.default_rng(0)
    questions = [f"{starts[i % 4]} {'x' * int(rng.integers(5, 40))}?" for i in range(200)]
    contexts = ["word " * int(rng.integers(20, 100)) for _ in range(200)]
    correct = [bool(rng.random() < (0.3 if i % 4 == 3 else 0.85)) for i in range(200)]
    report = question_type_report(questions, contexts, correct, n_permutations=100_000)
    assert report["procedure"] == "sequential" and report["n_permutations"] == 100_000
    assert report["sequential"]["epsilon"] == DEFAULT_EPSILON
    assert report["sequential"]["looks"] == look_schedule(100_000)
    tests = report["categorical"]["tests"] + report["one_vs_rest"]["tests"]
    for test in tests:
        assert 0 < test["draws"] <= 100_000 and test["stopped_early"] == (test["draws"] < 100_000)
        assert test["p_value_se"] >= 0
    assert all("p_value_chi_square" in t for t in report["categorical"]["tests"])
    assert all("p_value_exact" in t for t in report["one_vs_rest"]["tests"])
    assert [t["group"] for t in report["one_vs_rest"]["tests"] if t["significant"]] == ["why"]
    fixed = question_type_report(questions, contexts, correct, n_permutations=5000, sequential=False)
    assert fixed["procedure"] == "fixed" and all(t["draws"] == 5000 for t in fixed["categorical"]["tests"])
