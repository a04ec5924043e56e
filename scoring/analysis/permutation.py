"""Permutation tests of correctness against item categories (Luo, 2022), as defined in
docs/diagnostics.md#question-types.

Luo (2022) shuffles the category labels of the items a million times and recomputes a statistic
each time. With group sizes fixed and the number of correct items K fixed, a shuffle only
matters through how many correct items land in each group, and that vector of counts follows a
multivariate hypergeometric distribution (drawing K items without replacement from an urn with
n_i items of colour i). Sampling those counts directly gives exactly the null distribution of a
row shuffle, at the cost of a handful of numbers per permutation instead of N: 100,000
permutations take a few tens of milliseconds, 1,000,000 well under a second.

p-values count the observed arrangement as one of the permutations,
p = (1 + #{permuted statistic >= observed}) / (1 + B), which is never 0 and keeps the test
valid at any B (Phipson & Smyth 2010; scipy.stats.permutation_test does the same). Luo (2022)
reports the bare share #{...} / B; the difference is at most 1 / (B + 1).

Sequential Monte Carlo (the default): most p-values are far from their threshold, and a few
thousand draws settle the decision that B draws would take. The draws come in looks at
n_1 = 1,000, 2,000, 4,000, ... (doubling) and finally B, always from the same generator in the
same order, so the first n draws of the full-budget run *are* the sequential run's draws. With
X_n the number of draws at least as extreme as the observed statistic after n draws, t the
decision threshold (the test is significant when p < t) and

    k* = max{k : (1 + k) / (1 + B) < t}      (the full-budget run is significant iff X_B <= k*),

the run stops at an early look n_j (j = 1..L, L = number of looks before B, delta = eps / L):

    "significant"      when X_{n_j} <= r_j,  r_j = max{r : P(H(B, k* + 1, n_j) <= r) <= delta},
    "not significant"  when X_{n_j} >= a_j,  a_j = min{a : P(H(B, k*, n_j) >= a) <= delta},

(and only when the estimate (1 + X_n) / (1 + n) is on the same side of t), or when the full-budget
decision is already certain (X_n > k*, or X_n + B - n <= k*); H(N, K, n) is the hypergeometric
count of K marked items among n drawn from N. Bound: given X_B = m the B indicators are
exchangeable, so X_{n_j} ~ H(B, m, n_j) whatever the table and the true p; H is stochastically
increasing in m, so by a union bound over the looks

    P(sequential decision != full-budget decision)
        <= max(sum_j P(H(B, k*, n_j) >= a_j), sum_j P(H(B, k* + 1, n_j) <= r_j)) <= L * delta = eps,

eps = 0.001 by default. The reported p-value is (1 + X_n) / (1 + n) at the look where the run
stopped, with its Monte Carlo standard error sqrt(p (1 - p) / n).

References beside the Monte Carlo p-values, numpy and pure Python only (scipy is no dependency
of the scorers): Pearson's chi-square test of the same groups x {correct, wrong} table (its
asymptotic p-value; a different statistic for the same null, equal in ranking to the TVD with two
groups) and, for one-vs-rest, the exact permutation p-value, a hypergeometric tail.
"""
from __future__ import annotations

import functools
import math
import zlib
from itertools import pairwise
from typing import Callable, Collection, Mapping, Sequence

import numpy as np

from ..disclosure import coarsen_groups
from .question_types import OTHER, SMALL_GROUPS, bin_sort_key, question_type

# Permuted count vectors are drawn in blocks of about this many numbers (8 MB of int64), so
# 1,000,000 permutations of many groups do not need one huge array.
_BLOCK_ELEMENTS = 1 << 20
# A permuted statistic mathematically equal to the observed one can differ from it in the last
# bits (same counts in groups of different sizes, other summation order); it must count as
# "at least as extreme". Differences of real interest are many orders of magnitude larger.
_TIE_TOLERANCE = 1e-12
# First look of the sequential procedure; looks double from there. 1,000 draws settle a p-value
# of ~0.5 against thresholds down to ~0.005 (the upper stopping bound is then ~20-40 of 1,000).
FIRST_LOOK = 1_000
# Bound on P(sequential decision != full-budget decision) per test.
DEFAULT_EPSILON = 1e-3
# The name of the statistic the categorical tests decide with, stored with each result (results
# computed before it was introduced decided with Luo's unweighted TVD and carry no name).
WEIGHTED_TVD = "size-weighted TVD"
# Continued-fraction accuracy of the incomplete gamma function (chi-square survival).
_GAMMA_EPS = 1e-15
_GAMMA_MAX_ITERATIONS = 10_000


def _validated(groups: Sequence, correct: Sequence, n_permutations: int,
               epsilon: float = DEFAULT_EPSILON) -> tuple[list[str], np.ndarray]:
    # Plain str labels: they become JSON object keys (numpy str_ would not serialise cleanly).
    labels = [str(group) for group in groups]
    outcome = np.asarray(correct)
    if outcome.ndim != 1:
        raise ValueError("correct must be a flat sequence of booleans or 0/1")
    if len(labels) != outcome.size:
        raise ValueError(f"groups has {len(labels)} items but correct has {outcome.size}")
    if outcome.size == 0:
        raise ValueError("a permutation test needs at least one item")
    if not np.isin(outcome, (0, 1)).all():
        raise ValueError("correct must hold only booleans or 0/1")
    if isinstance(n_permutations, bool) or int(n_permutations) != n_permutations or n_permutations < 1:
        raise ValueError("n_permutations must be a positive integer")
    if not 0.0 < epsilon < 1.0:
        raise ValueError("epsilon must be strictly between 0 and 1")
    return labels, outcome.astype(bool)


def _group_table(labels: list[str], outcome: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Distinct group labels in a fixed order (sorted, so the random draws and thus the
    p-value do not depend on the order of the items; numeric bins in numeric order, "other"
    and then the pool of small groups last), their sizes and correct counts."""
    names = sorted(set(labels), key=lambda label: (label == SMALL_GROUPS, label == OTHER, bin_sort_key(label)))
    index = {name: i for i, name in enumerate(names)}
    codes = np.fromiter((index[label] for label in labels), dtype=np.intp, count=len(labels))
    sizes = np.bincount(codes, minlength=len(names))
    correct_counts = np.bincount(codes, weights=outcome, minlength=len(names)).astype(np.int64)
    return names, sizes, correct_counts


def _tvd(correct_counts: np.ndarray, sizes: np.ndarray, overall: float) -> np.ndarray:
    """Luo (2022) eq. (4), one value per row of counts: 1/2 sum_i |X_i - mu| with X_i the share
    correct in group i and mu the share correct over all items. Note the groups are not
    weighted by size (as in the paper), so the value can exceed 1 with many groups."""
    return 0.5 * np.abs(correct_counts / sizes - overall).sum(axis=-1)


def _weighted_tvd(correct_counts: np.ndarray, sizes: np.ndarray, overall: float) -> np.ndarray:
    """The size-weighted TVD, 1/2 sum_i (n_i / N) |X_i - mu|: each group weighs what its
    questions weigh. Luo's unweighted sum gives a group of one question the weight of a group of
    300, and the chance swings of groups of 1-9 questions then drown a real gap in a large group
    (docs/diagnostics.md#question-types: 4% power against 54% for this statistic, with one type
    of 74 questions in 501 answered 20 points worse)."""
    return 0.5 * np.abs(correct_counts - sizes * overall).sum(axis=-1) / sizes.sum()


def _pvalue(extreme: int, n_permutations: int) -> float:
    return (1 + extreme) / (1 + n_permutations)


def _at_least(permuted: np.ndarray, observed: float) -> int:
    return int(np.count_nonzero(permuted >= observed - _TIE_TOLERANCE * max(1.0, abs(observed))))


# --------------------------------------------------------------------------- sequential Monte Carlo

def look_schedule(budget: int) -> list[int]:
    """Cumulative draws at each look: FIRST_LOOK, doubling, then the budget itself."""
    looks = []
    draws = FIRST_LOOK
    while draws < budget:
        looks.append(draws)
        draws *= 2
    return [*looks, int(budget)]


def _max_significant_count(budget: int, threshold: float) -> int:
    """k*: the largest exceedance count whose full-budget p-value is below the threshold (-1 if
    none). Adjusted with the very comparison the decision makes, so float rounding cannot make
    the bound and the decision disagree."""
    count = min(budget, max(-1, math.ceil(threshold * (1 + budget)) - 2))
    while count >= 0 and not _pvalue(count, budget) < threshold:
        count -= 1
    while count < budget and _pvalue(count + 1, budget) < threshold:
        count += 1
    return count


def _hypergeometric_pmf(population: int, marked: int, drawn: int) -> tuple[int, np.ndarray]:
    """(lowest value, probabilities over the support) of the number of marked items among
    ``drawn`` taken without replacement from ``population``. numpy has no log-gamma, so one
    point comes from math.lgamma and the rest from the ratio of consecutive probabilities."""
    low, high = max(0, drawn + marked - population), min(drawn, marked)

    def log_choose(n: int, k: int) -> float:
        return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)

    anchor = log_choose(marked, low) + log_choose(population - marked, drawn - low) - log_choose(population, drawn)
    x = np.arange(low, high, dtype=np.float64)
    ratios = (marked - x) * (drawn - x) / ((x + 1) * (population - marked - drawn + x + 1))
    log_pmf = anchor + np.concatenate(([0.0], np.cumsum(np.log(ratios))))
    pmf = np.exp(log_pmf - log_pmf.max())
    # Normalising absorbs the rounding of the anchor; the shape comes from exact ratios.
    return low, pmf / pmf.sum()


def hypergeometric_cdf(value: int, population: int, marked: int, drawn: int) -> float:
    """P(H <= value) for H hypergeometric (``marked`` of ``population``, ``drawn`` drawn)."""
    low, pmf = _hypergeometric_pmf(population, marked, drawn)
    if value < low:
        return 0.0
    return float(min(1.0, pmf[: value - low + 1].sum()))


@functools.lru_cache(maxsize=4096)
def stopping_bounds(budget: int, max_significant: int, draws: int, delta: float) -> tuple[int, int]:
    """(r, a) at a look after ``draws`` draws: stop "significant" when X <= r, "not
    significant" when X >= a, each with probability at most ``delta`` of contradicting the
    full-budget run (see the module docstring). Cached: the same budget, threshold and look
    recur for every test of a report."""
    if max_significant < 0:
        accept_from = 0  # the full-budget run can never be significant
    else:
        low, pmf = _hypergeometric_pmf(budget, max_significant, draws)
        upper_tail = np.cumsum(pmf[::-1])[::-1]  # P(H >= low + i)
        accept_from = low + int(np.argmax(upper_tail <= delta)) if upper_tail[-1] <= delta else low + pmf.size
    if max_significant + 1 > budget:
        reject_to = draws  # the full-budget run is always significant
    else:
        low, pmf = _hypergeometric_pmf(budget, max_significant + 1, draws)
        lower_tail = np.cumsum(pmf)  # P(H <= low + i)
        reject_to = low + int(np.count_nonzero(lower_tail <= delta)) - 1
    return reject_to, accept_from


def sequential_count(draw: Callable[[int], int], budget: int, threshold: float, *,
                     epsilon: float = DEFAULT_EPSILON, sequential: bool = True) -> tuple[int, int]:
    """Run the looks of ``look_schedule(budget)``; ``draw(rows)`` draws that many more null
    statistics and returns how many are at least as extreme as the observed one. Returns
    (exceedances, draws used). ``sequential=False`` spends the whole budget, with the same
    draws in the same order, so both runs share their first draws (the bound's coupling)."""
    looks = look_schedule(budget)
    max_significant = _max_significant_count(budget, threshold)
    delta = epsilon / max(1, len(looks) - 1)
    extreme = done = 0
    for draws in looks:
        extreme += draw(draws - done)
        done = draws
        if not sequential or draws == budget:
            continue
        if extreme > max_significant or extreme + budget - draws <= max_significant:
            break  # the remaining draws cannot change the full-budget decision
        reject_to, accept_from = stopping_bounds(budget, max_significant, draws, delta)
        significant = _pvalue(extreme, draws) < threshold
        if (extreme <= reject_to and significant) or (extreme >= accept_from and not significant):
            break
    return extreme, done


def _monte_carlo(extreme: int, draws: int, budget: int) -> dict:
    p_value = _pvalue(extreme, draws)
    return {
        "p_value": p_value,
        "p_value_se": math.sqrt(p_value * (1 - p_value) / draws),
        "draws": int(draws),
        "stopped_early": draws < budget,
    }


def _no_freedom() -> dict:
    # Every permutation reproduces the observed table: p = 1 exactly, nothing to draw.
    return {"p_value": 1.0, "p_value_se": 0.0, "draws": 0, "stopped_early": True}


# --------------------------------------------------------------------------- references

def _regularized_upper_gamma(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a): series below x = a + 1, Lentz's continued fraction
    above (Numerical Recipes 6.2), where each converges fast."""
    if x <= 0:
        return 1.0
    log_prefactor = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        denominator = a
        for _ in range(_GAMMA_MAX_ITERATIONS):
            denominator += 1
            term *= x / denominator
            total += term
            if abs(term) < abs(total) * _GAMMA_EPS:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefactor))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, _GAMMA_MAX_ITERATIONS):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < _GAMMA_EPS:
            break
    return min(1.0, math.exp(log_prefactor) * h)


def chi_square_sf(statistic: float, df: int) -> float:
    """P(chi-square with ``df`` degrees of freedom >= statistic)."""
    return _regularized_upper_gamma(df / 2, statistic / 2)


def pearson_chi_square_p(sizes: np.ndarray, correct_counts: np.ndarray) -> float:
    """Asymptotic p-value of Pearson's chi-square test of independence on the groups x
    {correct, wrong} table (k - 1 degrees of freedom): the classical reference for the same
    null hypothesis. 1.0 when the table has no freedom."""
    sizes = np.asarray(sizes, dtype=np.float64)
    total = sizes.sum()
    overall = float(np.sum(correct_counts)) / total
    if sizes.size < 2 or overall in (0.0, 1.0):
        return 1.0
    statistic = float(np.sum((correct_counts - sizes * overall) ** 2 / (sizes * overall * (1 - overall))))
    return chi_square_sf(statistic, sizes.size - 1)


def categorical_test(
    groups: Sequence[str],
    correct: Sequence[bool | int],
    *,
    n_permutations: int = 100_000,
    seed: int = 0,
    threshold: float = 0.05,
    sequential: bool = True,
    epsilon: float = DEFAULT_EPSILON,
) -> dict:
    """Does correctness depend on the category? (Luo, 2022, §3.2)

    Null: group labels shuffled among items (correctness unrelated to the category), drawn
    exactly as multivariate hypergeometric counts. Two statistics on the same draws:

    - ``statistic`` (the one the decision uses): the size-weighted TVD
      1/2 sum_i (n_i / N) |X_i - mu| (X_i: proportion correct in group i, mu: overall);
    - ``statistic_published``: Luo's TVD 1/2 sum_i |X_i - mu|, each group weighing the same
      whatever its size (as published; blind to a gap in a large group when small groups exist).

    p = (1 + #{stat_perm >= stat_obs}) / (1 + n) after n draws. ``n_permutations`` is the budget
    B; with ``sequential`` (the default) the draws stop as soon as the decision p < ``threshold``
    of the weighted statistic is settled, and P(decision != the decision of all B draws with this
    seed) <= ``epsilon`` (module docstring); the published p-value uses the same draws.
    Returns ``{"statistic", "statistic_name", "p_value", "p_value_se", "draws", "stopped_early",
    "statistic_published", "p_value_published", "p_value_published_se", "p_value_chi_square",
    "n_permutations", "overall_accuracy", "groups": {label: {"n", "correct", "accuracy"}}}``;
    ``p_value_chi_square`` is Pearson's asymptotic test of the same table (same null, another
    statistic).
    """
    labels, outcome = _validated(groups, correct, n_permutations, epsilon)
    if not 0.0 < threshold <= 1.0:
        raise ValueError("threshold must be in (0, 1]")
    names, sizes, correct_counts = _group_table(labels, outcome)
    total_correct = int(correct_counts.sum())
    overall = total_correct / outcome.size
    observed = float(_weighted_tvd(correct_counts[None, :], sizes, overall)[0])
    observed_published = float(_tvd(correct_counts[None, :], sizes, overall)[0])

    if len(names) == 1 or total_correct in (0, outcome.size):
        monte_carlo = _no_freedom()
        published = _no_freedom()
    else:
        rng = np.random.default_rng(seed)
        rows_per_block = max(1, _BLOCK_ELEMENTS // len(names))
        published_extreme = 0  # counted on the draws the weighted decision takes

        def draw(rows: int) -> int:
            nonlocal published_extreme
            extreme = 0
            for start in range(0, rows, rows_per_block):
                permuted = rng.multivariate_hypergeometric(sizes, total_correct, size=min(rows_per_block, rows - start))
                extreme += _at_least(_weighted_tvd(permuted, sizes, overall), observed)
                published_extreme += _at_least(_tvd(permuted, sizes, overall), observed_published)
            return extreme

        extreme, draws = sequential_count(draw, n_permutations, threshold, epsilon=epsilon, sequential=sequential)
        monte_carlo = _monte_carlo(extreme, draws, n_permutations)
        published = _monte_carlo(published_extreme, draws, n_permutations)
    return {
        "statistic": observed,
        "statistic_name": WEIGHTED_TVD,
        **monte_carlo,
        "statistic_published": observed_published,
        "p_value_published": published["p_value"],
        "p_value_published_se": published["p_value_se"],
        "p_value_chi_square": pearson_chi_square_p(sizes, correct_counts),
        "n_permutations": int(n_permutations),
        "overall_accuracy": overall,
        "groups": {
            name: {"n": int(size), "correct": int(count), "accuracy": int(count) / int(size)}
            for name, size, count in zip(names, sizes, correct_counts, strict=True)
        },
    }


def _label_rng(seed: int, label: str) -> np.random.Generator:
    """A generator for one group's test that depends on the seed and the group label only, so
    a group's p-value does not change when other groups come or go."""
    return np.random.default_rng([seed, zlib.crc32(label.encode("utf-8"))])


def one_vs_rest_tests(
    groups: Sequence[str],
    correct: Sequence[bool | int],
    *,
    min_items: int = 10,
    n_permutations: int = 100_000,
    seed: int = 0,
    alpha: float = 0.05,
    exclude: Collection[str] = (),
    sequential: bool = True,
    epsilon: float = DEFAULT_EPSILON,
) -> dict:
    """Is a category answered worse than the rest? (Luo, 2022, §3.3)

    For every group with at least ``min_items`` items (and at least one item outside it), except
    the groups named in ``exclude`` (a pool of unrelated small groups is no category to test;
    its items still count in "the rest"):
    one-sided statistic delta = accuracy(rest) - accuracy(group), large when the group is
    harder; null: labels shuffled, i.e. the group's correct count is hypergeometric (K correct
    among N items, n drawn); p = (1 + #{delta_perm >= delta_obs}) / (1 + draws). Bonferroni over
    the m tests done: threshold = alpha / m, significant = p < threshold. With ``sequential``
    each test stops drawing once its decision is settled (budget ``n_permutations``; at most
    ``epsilon`` probability per test of a decision other than the full budget's). With no group
    big enough, ``tests`` is empty and ``threshold`` is None.
    Returns ``{"threshold", "alpha", "tests": [{"group", "n", "accuracy", "rest_accuracy",
    "statistic", "p_value", "p_value_se", "draws", "stopped_early", "p_value_exact",
    "significant"}]}``, tests in group order. ``p_value_exact`` is the exact permutation p-value
    P(correct count <= observed) under the hypergeometric null, the limit of the Monte Carlo one.
    """
    labels, outcome = _validated(groups, correct, n_permutations, epsilon)
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be strictly between 0 and 1")
    names, sizes, correct_counts = _group_table(labels, outcome)
    total, total_correct = outcome.size, int(correct_counts.sum())
    tested = [(name, int(size), int(count)) for name, size, count in zip(names, sizes, correct_counts, strict=True)
              if min_items <= size < total and name not in exclude]
    # Known before any draw: the sequential rule needs the Bonferroni threshold it decides against.
    threshold = alpha / len(tested) if tested else None

    tests = []
    for name, size, count in tested:
        rest = total - size
        observed = (total_correct - count) / rest - count / size
        if total_correct in (0, total):
            monte_carlo = _no_freedom()  # every permutation gives delta = 0
        else:
            rng = _label_rng(seed, name)

            def draw(rows: int, size: int = size, rest: int = rest, observed: float = observed,
                     rng: np.random.Generator = rng) -> int:
                extreme = 0
                for start in range(0, rows, _BLOCK_ELEMENTS):
                    block = min(_BLOCK_ELEMENTS, rows - start)
                    in_group = rng.hypergeometric(total_correct, total - total_correct, size, size=block)
                    deltas = (total_correct - in_group) / rest - in_group / size
                    extreme += _at_least(deltas, observed)
                return extreme

            extreme, draws = sequential_count(draw, n_permutations, alpha / len(tested),  # the threshold above
                                              epsilon=epsilon, sequential=sequential)
            monte_carlo = _monte_carlo(extreme, draws, n_permutations)
        tests.append({
            "group": name,
            "n": size,
            "accuracy": count / size,
            "rest_accuracy": (total_correct - count) / rest,
            "statistic": observed,
            **monte_carlo,
            # delta only grows as the group's correct count falls: p = P(count <= observed count).
            "p_value_exact": hypergeometric_cdf(count, total, total_correct, size),
        })
    for test in tests:
        test["significant"] = bool(test["p_value"] < threshold)
    return {"threshold": threshold, "alpha": alpha, "tests": tests}


def tertile_bins(lengths: Sequence[int]) -> tuple[list[str], list[int]]:
    """Three length bins cut at the data's tertiles (rounded to whole characters).

    Luo (2022) cut question lengths at 45/75 and context lengths at 500/1000 characters, read off
    SQuAD histograms; on other data (Chinese questions are ~15 characters) fixed cuts leave
    bins empty. Tertiles keep the paper's three bins and give each one data (bins only depend on
    the lengths, never on correctness, so the permutation test stays valid). Equal cut points
    (many tied lengths) merge bins. Returns (label of each item, cut points used); labels read
    "0-44", "45-74", "75+".
    """
    values = np.asarray(lengths, dtype=np.int64)
    if values.size == 0:
        return [], []
    cuts = sorted({int(round(q)) for q in np.quantile(values, [1 / 3, 2 / 3])})
    # A cut at or below the minimum would make an empty first bin.
    cuts = [cut for cut in cuts if cut > values.min()]
    edges = [0, *cuts]
    names = [f"{low}-{high - 1}" for low, high in pairwise(edges)] + [f"{edges[-1]}+"]
    positions = np.searchsorted(np.asarray(cuts, dtype=np.int64), values, side="right")
    return [names[i] for i in positions], cuts


def question_type_report(
    questions: Sequence[str],
    contexts: Sequence[str],
    correct: Sequence[bool],
    *,
    language: str = "en",
    n_permutations: int = 100_000,
    seed: int = 0,
    alpha: float = 0.05,
    min_group_size: int | None = None,
    type_aliases: Mapping[str, str] | None = None,
    sequential: bool = True,
    epsilon: float = DEFAULT_EPSILON,
    protect_outcomes: bool = False,
) -> dict:
    """Luo (2022) for one submission: is correctness related to question type, question length
    or context length, and which question types are answered worse than the rest?

    - question type: ``question_types.question_type`` (first wh-word; Chinese interrogatives);
    - question / context length: characters of the stripped text, three tertile bins
      (``tertile_bins``);
    - one categorical test per variable, Bonferroni over the three (threshold alpha / 3), decided
      by the size-weighted TVD, Luo's unweighted TVD beside it as published (``categorical_test``);
    - one-vs-rest one-sided tests for question types with >= 10 items, Bonferroni over those.
    All tests use ``seed`` (the three categorical tests draw from independent child seeds).
    ``n_permutations`` is each test's budget; with ``sequential`` (the default) a test stops
    drawing once its decision against its Bonferroni threshold is settled, with probability at
    most ``epsilon`` per test of a decision other than the full budget's (module docstring); each
    test reports its ``draws``, ``p_value_se`` and ``stopped_early``.
    Plain JSON-able dict; group labels are also listed in display order under ``order``
    because a JSON object's key order is not preserved everywhere (PostgreSQL jsonb).

    ``min_group_size`` (hidden test sets): groups smaller than this are pooled into one
    ``SMALL_GROUPS`` group before testing (``question_types.pool_small_groups``), and the pool
    is only listed when it is that big itself. Every item is still tested. The tests run on the
    pooled groups, not the original ones, because the observed TVD sums one term per group: next
    to the published groups it would give away the split of the pool's correct count between
    its members (a group of one: that question's outcome). Pooled labels are listed per test
    under ``pooled_groups``; pooled types get no one-vs-rest test, nor does the pool.

    ``protect_outcomes`` (hidden test sets, with ``min_group_size``): a group all right or all
    wrong would give its questions' outcomes away, so groups are pooled further until none does
    (``scoring.disclosure.coarsen_groups``); listed per test under ``pooled_for_outcomes``.

    ``type_aliases`` merges question types before anything else (e.g. {"whose": "who"}), so
    that the groups can match those another analysis publishes for the same items: two
    near-identical groupings side by side would give away the items where they differ.
    """
    if not len(questions) == len(contexts) == len(correct):
        raise ValueError(
            f"questions, contexts and correct differ in length: {len(questions)}, {len(contexts)}, {len(correct)}")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be strictly between 0 and 1")
    outcome = [bool(value) for value in correct]
    types = [question_type(question, language) for question in questions]
    if type_aliases:
        types = [type_aliases.get(kind, kind) for kind in types]
    question_bins, question_cuts = tertile_bins([len(question.strip()) for question in questions])
    context_bins, context_cuts = tertile_bins([len(context.strip()) for context in contexts])

    variables = [
        ("question_type", types, {"kind": "first interrogative word", "language": language,
                                  "merged": dict(type_aliases or {})}),
        ("question_length", question_bins, {"kind": "tertiles", "unit": "characters", "cut_points": question_cuts}),
        ("context_length", context_bins, {"kind": "tertiles", "unit": "characters", "cut_points": context_cuts}),
    ]
    threshold = alpha / len(variables)
    child_seeds = np.random.SeedSequence(seed).generate_state(len(variables))
    categorical = []
    tested_types = types
    for (name, labels, binning), child_seed in zip(variables, child_seeds, strict=True):
        pooled, pool_published, for_outcomes = [], True, []
        if min_group_size is not None:
            coarsening = coarsen_groups(labels, outcome, min_group_size, protect_outcomes=protect_outcomes)
            # No label here is None, and the tests read every label as str(label) anyway.
            labels = [str(label) for label in coarsening.labels]
            pooled, pool_published = coarsening.pooled, coarsening.pool_published
            for_outcomes = coarsening.pooled_for_outcomes
        if name == "question_type":
            tested_types = labels
        result = categorical_test(labels, outcome, n_permutations=n_permutations, seed=int(child_seed),
                                  threshold=threshold, sequential=sequential, epsilon=epsilon)
        if not pool_published:
            result["groups"].pop(SMALL_GROUPS, None)
        categorical.append({
            "variable": name,
            "binning": binning,
            **result,
            "order": list(result["groups"]),
            "pooled_groups": pooled,
            "pooled_for_outcomes": for_outcomes,
            "significant": bool(result["p_value"] < threshold),
        })
    one_vs_rest = one_vs_rest_tests(tested_types, outcome, min_items=10, n_permutations=n_permutations,
                                    seed=seed, alpha=alpha, exclude={SMALL_GROUPS}, sequential=sequential,
                                    epsilon=epsilon)
    n_correct = sum(outcome)
    return {
        "language": language,
        "n_items": len(outcome),
        "n_correct": n_correct,
        "accuracy": n_correct / len(outcome) if outcome else None,
        "n_permutations": int(n_permutations),
        "seed": seed,
        "min_group_size": min_group_size,
        "outcomes_protected": bool(protect_outcomes and min_group_size is not None),
        "p_value_formula": "(1 + #{permuted >= observed}) / (1 + draws)",
        "procedure": "sequential" if sequential else "fixed",
        "sequential": {
            "epsilon": epsilon if sequential else 0.0,
            "looks": look_schedule(int(n_permutations)) if sequential else [int(n_permutations)],
            "bound": "P(decision differs from the full-budget decision, same seed) <= epsilon per test",
        },
        "categorical": {"alpha": alpha, "threshold": threshold, "tests": categorical},
        "one_vs_rest": {"variable": "question_type", "min_items": 10, **one_vs_rest},
    }
