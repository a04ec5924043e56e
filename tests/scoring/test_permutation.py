"""Question-type permutation tests (Luo 2022): TVD, one-vs-rest deltas, Bonferroni."""
import json
import math
import time

import numpy as np
import pytest
from scipy.stats import hypergeom

from scoring.analysis.permutation import categorical_test, one_vs_rest_tests, question_type_report, tertile_bins
from scoring.analysis.question_types import SMALL_GROUPS

# a: 1 of 2 correct (0.5), b: 2 of 2 (1.0), c: 1 of 4 (0.25); overall 4 of 8 = 0.5.
HAND_GROUPS = ["a", "a", "b", "b", "c", "c", "c", "c"]
HAND_CORRECT = [1, 0, 1, 1, 0, 0, 1, 0]


def test_tvd_by_hand():
    result = categorical_test(HAND_GROUPS, HAND_CORRECT, n_permutations=100)
    # As published (Luo 2022): 1/2 (|0.5 - 0.5| + |1.0 - 0.5| + |0.25 - 0.5|) = 0.375
    assert result["statistic_published"] == pytest.approx(0.375)
    # Size-weighted: 1/2 (2/8 |0.5 - 0.5| + 2/8 |1.0 - 0.5| + 4/8 |0.25 - 0.5|) = 0.125
    assert result["statistic"] == pytest.approx(0.125)
    assert result["statistic_name"] == "size-weighted TVD"
    assert result["groups"] == {
        "a": {"n": 2, "correct": 1, "accuracy": 0.5},
        "b": {"n": 2, "correct": 2, "accuracy": 1.0},
        "c": {"n": 4, "correct": 1, "accuracy": 0.25},
    }
    assert result["overall_accuracy"] == 0.5
    assert result["n_permutations"] == 100


def test_one_vs_rest_deltas_by_hand():
    result = one_vs_rest_tests(HAND_GROUPS, HAND_CORRECT, min_items=2, n_permutations=100)
    by_group = {test["group"]: test for test in result["tests"]}
    # delta = accuracy(rest) - accuracy(group)
    assert by_group["a"]["statistic"] == pytest.approx(3 / 6 - 1 / 2)
    assert by_group["b"]["statistic"] == pytest.approx(2 / 6 - 2 / 2)
    assert by_group["c"]["statistic"] == pytest.approx(3 / 4 - 1 / 4)
    assert by_group["c"]["accuracy"] == 0.25 and by_group["c"]["rest_accuracy"] == 0.75
    assert result["threshold"] == pytest.approx(0.05 / 3)


def test_order_of_items_does_not_matter():
    order = [7, 2, 5, 0, 3, 6, 1, 4]
    shuffled = categorical_test([HAND_GROUPS[i] for i in order], [HAND_CORRECT[i] for i in order])
    assert shuffled == categorical_test(HAND_GROUPS, HAND_CORRECT)


def test_deterministic_for_a_seed():
    groups, correct = synthetic(300, seed=1)
    assert categorical_test(groups, correct, seed=5) == categorical_test(groups, correct, seed=5)
    # A strong effect: the sequential runs of both seeds stop with no exceedance (same p); the
    # full budget tells the seeds apart.
    fixed = {"sequential": False}
    assert (categorical_test(groups, correct, seed=5, **fixed)["p_value"]
            != categorical_test(groups, correct, seed=6, **fixed)["p_value"])
    assert one_vs_rest_tests(groups, correct, seed=5) == one_vs_rest_tests(groups, correct, seed=5)


def test_degenerate_inputs_give_p_one():
    for correct in ([1] * 8, [0] * 8):
        result = categorical_test(HAND_GROUPS, correct, n_permutations=50)
        assert result["statistic"] == 0.0 and result["p_value"] == 1.0
        assert result["statistic_published"] == 0.0 and result["p_value_published"] == 1.0
        tests = one_vs_rest_tests(HAND_GROUPS, correct, min_items=2, n_permutations=50)["tests"]
        assert [test["p_value"] for test in tests] == [1.0, 1.0, 1.0]
    single = categorical_test(["what"] * 5, [1, 0, 1, 0, 0], n_permutations=50)
    assert single["statistic"] == 0.0 and single["p_value"] == 1.0
    # A group holding every item has no rest to compare with: not tested.
    assert one_vs_rest_tests(["what"] * 12, [1, 0] * 6, n_permutations=50)["tests"] == []


@pytest.mark.parametrize("kwargs", [
    {"groups": ["a", "b"], "correct": [1]},
    {"groups": [], "correct": []},
    {"groups": ["a", "b"], "correct": [1, 2]},
    {"groups": ["a", "b"], "correct": [1, 0], "n_permutations": 0},
])
def test_invalid_input(kwargs):
    with pytest.raises(ValueError):
        categorical_test(**kwargs)


# --------------------------------------------------------------------------- exactness

def synthetic(n, seed, accuracies=(0.3, 0.6, 0.7, 0.8)):
    rng = np.random.default_rng(seed)
    names = ["how", "what", "when", "who"][: len(accuracies)]
    codes = rng.integers(0, len(names), size=n)
    correct = rng.random(n) < np.asarray(accuracies)[codes]
    return [names[c] for c in codes], correct.astype(int).tolist()


def row_shuffling_null(groups, correct, statistic, n_permutations, seed):
    """Reference: shuffle the group labels of the rows, as Luo (2022) describes."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(groups)
    outcome = np.asarray(correct, dtype=float)
    names = sorted(set(groups))
    shuffled = rng.permuted(np.tile(labels, (n_permutations, 1)), axis=1)
    counts = np.stack([((shuffled == name) * outcome).sum(axis=1) for name in names], axis=1)
    sizes = np.array([np.sum(labels == name) for name in names])
    return statistic(counts, sizes, outcome.mean()), statistic(
        np.array([[outcome[labels == name].sum() for name in names]]), sizes, outcome.mean())[0]


def tvd(counts, sizes, overall):
    return 0.5 * np.abs(counts / sizes - overall).sum(axis=1)


def weighted_tvd(counts, sizes, overall):
    return 0.5 * (np.abs(counts / sizes - overall) * sizes).sum(axis=1) / sizes.sum()


def assert_close_p(ours, reference, n_permutations):
    # Two independent Monte Carlo estimates: standard error of their difference.
    error = math.sqrt(2 * reference * (1 - reference) / n_permutations) + 2 / n_permutations
    assert abs(ours - reference) < 4 * error, (ours, reference)


@pytest.mark.parametrize("seed", [0, 1])
def test_categorical_matches_row_shuffling(seed):
    groups, correct = synthetic(30, seed=seed, accuracies=(0.4, 0.6, 0.7))
    n = 20_000
    result = categorical_test(groups, correct, n_permutations=n, seed=seed, sequential=False)
    for statistic, key in ((weighted_tvd, ""), (tvd, "_published")):
        null, observed = row_shuffling_null(groups, correct, statistic, n, seed=99)
        reference = np.mean(null >= observed - 1e-12)
        assert result[f"statistic{key}"] == pytest.approx(observed)
        assert 0.01 < reference < 0.99  # a p-value where Monte Carlo error is visible
        assert_close_p(result[f"p_value{key}"], reference, n)


def test_one_vs_rest_matches_row_shuffling_and_the_exact_hypergeometric_tail():
    groups, correct = synthetic(30, seed=3, accuracies=(0.4, 0.7, 0.8))
    n = 20_000
    result = one_vs_rest_tests(groups, correct, min_items=5, n_permutations=n, seed=1, sequential=False)
    assert result["tests"]
    total, total_correct = len(correct), sum(correct)
    for test in result["tests"]:
        binary = ["in" if g == test["group"] else "out" for g in groups]

        def delta(counts, sizes, overall):  # columns: "in", "out" (sorted names)
            return counts[:, 1] / sizes[1] - counts[:, 0] / sizes[0]

        null, observed = row_shuffling_null(binary, correct, delta, n, seed=7)
        assert test["statistic"] == pytest.approx(observed)
        assert_close_p(test["p_value"], np.mean(null >= observed - 1e-12), n)
        # delta only grows as the group's correct count falls: p = P(count <= observed count).
        exact = hypergeom.cdf(round(test["accuracy"] * test["n"]), total, total_correct, test["n"])
        assert_close_p(test["p_value"], exact, n)
        assert test["p_value_exact"] == pytest.approx(exact, rel=1e-9)


def test_bonferroni_threshold_and_flags():
    rng = np.random.default_rng(8)
    groups = ["why"] * 40 + ["what"] * 200 + ["who"] * 60 + ["whom"] * 5
    correct = np.concatenate([rng.random(40) < 0.2, rng.random(200) < 0.8, rng.random(60) < 0.8,
                              np.ones(5, bool)]).astype(int)
    result = one_vs_rest_tests(groups, correct, n_permutations=20_000, alpha=0.05)
    assert [test["group"] for test in result["tests"]] == ["what", "who", "why"]  # whom: 5 < 10 items
    assert result["threshold"] == pytest.approx(0.05 / 3) and result["alpha"] == 0.05
    flags = {test["group"]: test["significant"] for test in result["tests"]}
    assert flags == {"what": False, "who": False, "why": True}
    for test in result["tests"]:
        assert test["significant"] == (test["p_value"] < result["threshold"])
    assert one_vs_rest_tests(["a"] * 3 + ["b"] * 3, [1, 0] * 3)["threshold"] is None


def test_a_million_permutations_are_fast():
    groups, correct = synthetic(501, seed=4, accuracies=(0.7, 0.8, 0.8, 0.85))
    start = time.perf_counter()
    result = categorical_test(groups, correct, n_permutations=1_000_000, sequential=False)
    assert time.perf_counter() - start < 5  # ~0.8 s on 2 cores
    assert result["n_permutations"] == 1_000_000
    assert 0 < result["p_value"] <= 1


# --------------------------------------------------------------------------- report

def test_tertile_bins_give_every_bin_data():
    # numpy's linear quantiles: 14 + 2/3 (30 - 14) = 24.7 -> 25, 33 + 1/3 (70 - 33) = 45.3 -> 45
    labels, cuts = tertile_bins([10, 12, 14, 30, 31, 33, 70, 80, 90])
    assert cuts == [25, 45]
    assert labels == ["0-24"] * 3 + ["25-44"] * 3 + ["45+"] * 3
    assert tertile_bins([5] * 10) == (["0+"] * 10, [])  # all tied: one bin, no empty ones
    labels, cuts = tertile_bins([1] * 8 + [2, 3])  # tertiles both 1 = the minimum: dropped
    assert cuts == [] and set(labels) == {"0+"}
    assert tertile_bins([]) == ([], [])


def report_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    starts = ["What is", "Who was", "When did", "Why did", "How many", "Which one"]
    questions, contexts, correct = [], [], []
    for i in range(n):
        start = starts[i % len(starts)]
        questions.append(f"{start} {'x' * int(rng.integers(5, 60))}?")
        contexts.append("word " * int(rng.integers(20, 200)))
        # "Why" questions are much harder.
        correct.append(bool(rng.random() < (0.2 if start.startswith("Why") else 0.85)))
    return questions, contexts, correct


def test_question_type_report():
    questions, contexts, correct = report_data()
    report = question_type_report(questions, contexts, correct, n_permutations=20_000)
    json.dumps(report)  # plain JSON
    assert report["n_items"] == 400 and report["n_correct"] == sum(correct)
    categorical = report["categorical"]
    assert categorical["threshold"] == pytest.approx(0.05 / 3)
    assert [t["variable"] for t in categorical["tests"]] == ["question_type", "question_length", "context_length"]
    by_variable = {t["variable"]: t for t in categorical["tests"]}
    assert by_variable["question_type"]["significant"] is True
    assert by_variable["question_type"]["order"] == ["how", "what", "when", "which", "who", "why"]
    for test in categorical["tests"]:
        assert test["significant"] == (test["p_value"] < categorical["threshold"])
        assert all(group["n"] > 0 for group in test["groups"].values())
        assert sum(group["n"] for group in test["groups"].values()) == 400
    assert len(by_variable["context_length"]["groups"]) == 3
    assert by_variable["context_length"]["binning"]["unit"] == "characters"
    one_vs_rest = report["one_vs_rest"]
    assert one_vs_rest["threshold"] == pytest.approx(0.05 / 6)
    flagged = [t["group"] for t in one_vs_rest["tests"] if t["significant"]]
    assert flagged == ["why"]
    assert report == question_type_report(questions, contexts, correct, n_permutations=20_000)


def test_question_type_report_chinese():
    questions = ["谁是作者？", "为什么下雨？", "这是什么？", "哪里？"] * 10
    contexts = ["天" * (10 + i) for i in range(40)]
    correct = [i % 3 != 0 for i in range(40)]
    report = question_type_report(questions, contexts, correct, language="zh", n_permutations=2000)
    groups = report["categorical"]["tests"][0]["groups"]
    assert set(groups) == {"谁", "为什么", "什么", "哪里"}
    assert [t["group"] for t in report["one_vs_rest"]["tests"]] == sorted(groups)


def test_question_type_report_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        question_type_report(["What?"], ["c", "d"], [True])


def test_groups_are_listed_in_a_stable_order_with_other_last():
    result = categorical_test(["other", "what", "how", "what", "other", "how"], [1, 0, 1, 1, 0, 1], n_permutations=10)
    assert list(result["groups"]) == ["how", "what", "other"]
    bins = categorical_test(["100-149", "0-49", "50-99"], [1, 0, 1], n_permutations=10)
    assert list(bins["groups"]) == ["0-49", "50-99", "100-149"]


def small_group_data(whose_correct):
    """20 what (half right), 20 who (all right), 1 whose, 4 why; all questions and contexts of
    one length so that only the question type tells items apart. Exactly one of the whose
    question and the first why question is answered, which one is ``whose_correct``."""
    types = ["What"] * 20 + ["Who"] * 20 + ["Whose"] + ["Why"] * 4
    questions = [f"{word.ljust(5)} is it?" for word in types]
    contexts = ["context"] * len(types)
    correct = [i % 2 == 0 for i in range(20)] + [True] * 20 + [whose_correct, not whose_correct, True, False, True]
    return questions, contexts, correct


def test_hidden_sets_pool_groups_below_the_minimum():
    questions, contexts, correct = small_group_data(whose_correct=True)
    report = question_type_report(questions, contexts, correct, n_permutations=2000, min_group_size=5)
    json.dumps(report)
    assert report["min_group_size"] == 5
    test = report["categorical"]["tests"][0]
    assert test["variable"] == "question_type"
    assert test["order"] == ["what", "who", SMALL_GROUPS] and test["pooled_groups"] == ["whose", "why"]
    assert test["groups"][SMALL_GROUPS] == {"n": 5, "correct": 3, "accuracy": 0.6}
    # Every item is still tested, and the statistic is the test of the groups as published.
    assert sum(group["n"] for group in test["groups"].values()) == 45
    pooled_labels = ["what"] * 20 + ["who"] * 20 + [SMALL_GROUPS] * 5
    assert test["statistic"] == pytest.approx(categorical_test(pooled_labels, correct, n_permutations=10)["statistic"])
    assert [t["group"] for t in report["one_vs_rest"]["tests"]] == ["what", "who"]  # not the pool


def test_what_is_published_does_not_depend_on_a_small_groups_outcome():
    """Swap the outcomes of the whose question and a why question (same pool): the published
    question-type results must not change, or they would tell whether "whose" was answered."""
    def published(whose_correct, min_group_size):
        report = question_type_report(*small_group_data(whose_correct), n_permutations=2000,
                                      min_group_size=min_group_size)
        return report["categorical"]["tests"][0], report["one_vs_rest"]

    assert published(True, 5) == published(False, 5)
    # Without the minimum (public sets) the whose group is listed, and with it its outcome.
    assert published(True, None)[0]["groups"]["whose"]["accuracy"] == 1.0
    assert published(False, None)[0]["groups"]["whose"]["accuracy"] == 0.0


def test_type_aliases_merge_question_types_before_testing():
    questions, contexts, correct = small_group_data(whose_correct=True)
    report = question_type_report(questions, contexts, correct, n_permutations=500, type_aliases={"whose": "who"})
    groups = report["categorical"]["tests"][0]["groups"]
    assert "whose" not in groups and groups["who"]["n"] == 21
    assert report["categorical"]["tests"][0]["binning"]["merged"] == {"whose": "who"}
