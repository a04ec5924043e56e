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
"""
from __future__ import annotations

import zlib
from typing import Collection, Mapping, Sequence

import numpy as np

from scoring.analysis.question_types import OTHER, SMALL_GROUPS, bin_sort_key, pool_small_groups, question_type

# Permuted count vectors are drawn in blocks of about this many numbers (8 MB of int64), so
# 1,000,000 permutations of many groups do not need one huge array.
_BLOCK_ELEMENTS = 1 << 20
# A permuted statistic mathematically equal to the observed one can differ from it in the last
# bits (same counts in groups of different sizes, other summation order); it must count as
# "at least as extreme". Differences of real interest are many orders of magnitude larger.
_TIE_TOLERANCE = 1e-12


def _validated(groups: Sequence, correct: Sequence, n_permutations: int) -> tuple[list[str], np.ndarray]:
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


def _pvalue(extreme: int, n_permutations: int) -> float:
    return (1 + extreme) / (1 + n_permutations)


def _at_least(permuted: np.ndarray, observed: float) -> int:
    return int(np.count_nonzero(permuted >= observed - _TIE_TOLERANCE * max(1.0, abs(observed))))


def categorical_test(
    groups: Sequence[str],
    correct: Sequence[bool | int],
    *,
    n_permutations: int = 100_000,
    seed: int = 0,
) -> dict:
    """Does correctness depend on the category? (Luo, 2022, §3.2)

    Statistic: TVD = 1/2 sum_i |X_i - mu| over the groups present (X_i: proportion correct in
    group i, mu: proportion correct overall). Null: group labels shuffled among items, drawn
    exactly as multivariate hypergeometric counts. p = (1 + #{TVD_perm >= TVD_obs}) / (1 + B).
    Returns ``{"statistic", "p_value", "n_permutations", "overall_accuracy",
    "groups": {label: {"n", "correct", "accuracy"}}}``.
    """
    labels, outcome = _validated(groups, correct, n_permutations)
    names, sizes, correct_counts = _group_table(labels, outcome)
    total_correct = int(correct_counts.sum())
    overall = total_correct / outcome.size
    observed = float(_tvd(correct_counts[None, :], sizes, overall)[0])

    extreme = 0
    if len(names) == 1 or total_correct in (0, outcome.size):
        # Every permutation reproduces the observed counts exactly.
        extreme = n_permutations
    else:
        rng = np.random.default_rng(seed)
        rows_per_block = max(1, _BLOCK_ELEMENTS // len(names))
        for start in range(0, n_permutations, rows_per_block):
            rows = min(rows_per_block, n_permutations - start)
            permuted = rng.multivariate_hypergeometric(sizes, total_correct, size=rows)
            extreme += _at_least(_tvd(permuted, sizes, overall), observed)
    return {
        "statistic": observed,
        "p_value": _pvalue(extreme, n_permutations),
        "n_permutations": int(n_permutations),
        "overall_accuracy": overall,
        "groups": {
            name: {"n": int(size), "correct": int(count), "accuracy": int(count) / int(size)}
            for name, size, count in zip(names, sizes, correct_counts)
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
) -> dict:
    """Is a category answered worse than the rest? (Luo, 2022, §3.3)

    For every group with at least ``min_items`` items (and at least one item outside it), except
    the groups named in ``exclude`` (a pool of unrelated small groups is no category to test;
    its items still count in "the rest"):
    one-sided statistic delta = accuracy(rest) - accuracy(group), large when the group is
    harder; null: labels shuffled, i.e. the group's correct count is hypergeometric (K correct
    among N items, n drawn); p = (1 + #{delta_perm >= delta_obs}) / (1 + B). Bonferroni over
    the m tests done: threshold = alpha / m, significant = p < threshold. With no group big
    enough, ``tests`` is empty and ``threshold`` is None.
    Returns ``{"threshold", "alpha", "tests": [{"group", "n", "accuracy", "rest_accuracy",
    "statistic", "p_value", "significant"}]}``, tests in group order.
    """
    labels, outcome = _validated(groups, correct, n_permutations)
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be strictly between 0 and 1")
    names, sizes, correct_counts = _group_table(labels, outcome)
    total, total_correct = outcome.size, int(correct_counts.sum())

    tests = []
    for name, size, count in zip(names, sizes, correct_counts):
        size, count = int(size), int(count)
        if size < min_items or size == total or name in exclude:
            continue
        rest = total - size
        observed = (total_correct - count) / rest - count / size
        if total_correct in (0, total):
            extreme = n_permutations  # no freedom: every permutation gives delta = 0
        else:
            rng = _label_rng(seed, name)
            extreme = 0
            for start in range(0, n_permutations, _BLOCK_ELEMENTS):
                rows = min(_BLOCK_ELEMENTS, n_permutations - start)
                in_group = rng.hypergeometric(total_correct, total - total_correct, size, size=rows)
                deltas = (total_correct - in_group) / rest - in_group / size
                extreme += _at_least(deltas, observed)
        tests.append({
            "group": name,
            "n": size,
            "accuracy": count / size,
            "rest_accuracy": (total_correct - count) / rest,
            "statistic": observed,
            "p_value": _pvalue(extreme, n_permutations),
        })
    threshold = alpha / len(tests) if tests else None
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
    names = [f"{low}-{high - 1}" for low, high in zip(edges, edges[1:])] + [f"{edges[-1]}+"]
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
) -> dict:
    """Luo (2022) for one submission: is correctness related to question type, question length
    or context length, and which question types are answered worse than the rest?

    - question type: ``question_types.question_type`` (first wh-word; Chinese interrogatives);
    - question / context length: characters of the stripped text, three tertile bins
      (``tertile_bins``);
    - one categorical TVD test per variable, Bonferroni over the three (threshold alpha / 3);
    - one-vs-rest one-sided tests for question types with >= 10 items, Bonferroni over those.
    All tests use ``seed`` (the three categorical tests draw from independent child seeds).
    Plain JSON-able dict; group labels are also listed in display order under ``order``
    because a JSON object's key order is not preserved everywhere (PostgreSQL jsonb).

    ``min_group_size`` (hidden test sets): groups smaller than this are pooled into one
    ``SMALL_GROUPS`` group before testing (``question_types.pool_small_groups``), and the pool
    is only listed when it is that big itself. Every item is still tested. The tests run on the
    pooled groups, not the original ones, because the observed TVD sums one term per group: next
    to the published groups it would give away the split of the pool's correct count between
    its members (a group of one: that question's outcome). Pooled labels are listed per test
    under ``pooled_groups``; pooled types get no one-vs-rest test, nor does the pool.

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
    for (name, labels, binning), child_seed in zip(variables, child_seeds):
        pooled, pool_published = [], True
        if min_group_size is not None:
            labels, pooled, pool_published = pool_small_groups(labels, min_group_size)
        if name == "question_type":
            tested_types = labels
        result = categorical_test(labels, outcome, n_permutations=n_permutations, seed=int(child_seed))
        if not pool_published:
            result["groups"].pop(SMALL_GROUPS, None)
        categorical.append({
            "variable": name,
            "binning": binning,
            **result,
            "order": list(result["groups"]),
            "pooled_groups": pooled,
            "significant": bool(result["p_value"] < threshold),
        })
    one_vs_rest = one_vs_rest_tests(tested_types, outcome, min_items=10, n_permutations=n_permutations,
                                    seed=seed, alpha=alpha, exclude={SMALL_GROUPS})
    n_correct = sum(outcome)
    return {
        "language": language,
        "n_items": len(outcome),
        "n_correct": n_correct,
        "accuracy": n_correct / len(outcome) if outcome else None,
        "n_permutations": int(n_permutations),
        "seed": seed,
        "min_group_size": min_group_size,
        "p_value_formula": "(1 + #{permuted >= observed}) / (1 + n_permutations)",
        "categorical": {"alpha": alpha, "threshold": threshold, "tests": categorical},
        "one_vs_rest": {"variable": "question_type", "min_items": 10, **one_vs_rest},
    }
