"""Linguistic-bias analysis (InDepth-Eva-MRC, Wu et al., 2022): subsets, F1 per subset, variance."""
import itertools
import json

import numpy as np
import pytest

from scoring.analysis.linguistic import (
    between_bin_test,
    character_length,
    count_syllables,
    flesch_kincaid_grade,
    linguistic_bias,
    word_frequencies,
    words,
)
from scoring.analysis.question_types import length_bin

SHORT = "The sky is blue today."  # 5 words
LONG = " ".join(["word"] * 59) + "."  # 59 words

ITEMS = [
    {"question": "What color is the sky?", "context": SHORT, "answers": ["blue"], "f1": 1.0},
    {"question": "What is it?", "context": SHORT, "answers": ["the sky is blue", "blue"], "f1": 0.5},
    {"question": "Who painted it?", "context": LONG, "answers": ["Monet"], "f1": 0.0},
    {"question": "Name the painter.", "context": LONG, "answers": ["Claude Monet"], "f1": 0.25},
]


def by_name(result):
    return {prop["name"]: prop for prop in result["properties"]}


def subsets(prop):
    return [(b["label"], b["n"], b["f1"]) for b in prop["bins"]]


def test_subsets_and_variance_by_hand():
    result = linguistic_bias(ITEMS)
    json.dumps(result)
    assert result["n_items"] == 4
    props = by_name(result)
    assert list(props) == ["question_words", "passage_length", "answer_length",
                           "flesch_kincaid_grade", "word_frequency"]

    assert subsets(props["question_words"]) == [("what", 2, 0.75), ("who", 1, 0.0), ("other", 1, 0.25)]
    mean = (0.75 + 0.0 + 0.25) / 3
    expected = ((0.75 - mean) ** 2 + mean ** 2 + (0.25 - mean) ** 2) / 3  # population variance
    assert props["question_words"]["bias"] == pytest.approx(expected)

    assert subsets(props["passage_length"]) == [("0-49", 2, 0.75), ("50-99", 2, 0.125)]
    assert props["passage_length"]["bias"] == pytest.approx(0.3125 ** 2)

    # First gold answer only: "blue" 1, "the sky is blue" 4, "Monet" 1, "Claude Monet" 2 words.
    assert subsets(props["answer_length"]) == [("1", 2, 0.5), ("2", 1, 0.25), ("4", 1, 0.5)]
    assert props["answer_length"]["bias"] == pytest.approx(np.var([0.5, 0.25, 0.5]))
    assert all(prop["applicable"] for prop in props.values())


def test_question_words_fold_whom_and_whose_into_who():
    items = [{"question": q, "context": SHORT, "answers": ["x"], "f1": 1.0}
             for q in ("Whom did he see?", "Whose book?", "Who came?", "Why?")]
    props = by_name(linguistic_bias(items))
    assert subsets(props["question_words"]) == [("who", 3, 1.0), ("why", 1, 1.0)]
    assert props["question_words"]["bias"] == 0.0


def test_bin_widths_can_be_overridden():
    props = by_name(linguistic_bias(ITEMS, bin_widths={"passage_length": 100, "answer_length": 2}))
    assert subsets(props["passage_length"]) == [("0-99", 4, 0.4375)]
    assert props["passage_length"]["bias"] == 0.0
    assert [b["label"] for b in props["answer_length"]["bins"]] == ["0-1", "2-3", "4-5"]
    for bad in ({"nope": 3}, {"passage_length": 0}, {"answer_length": 1.5}):
        with pytest.raises(ValueError):
            linguistic_bias(ITEMS, bin_widths=bad)


def test_flesch_kincaid_by_hand():
    # 6 one-syllable words in 2 sentences: 0.39 * 3 + 11.8 * 1 - 15.59 = -2.62
    assert flesch_kincaid_grade("The cat sat. The dog ran.") == pytest.approx(-2.62)
    assert flesch_kincaid_grade("...") is None
    items = [{"question": "What?", "context": "The cat sat. The dog ran.", "answers": ["cat"], "f1": 1.0}]
    assert subsets(by_name(linguistic_bias(items))["flesch_kincaid_grade"]) == [("[-4, -2)", 1, 1.0)]


def test_sentences_come_from_punkt_not_from_every_full_stop():
    # "Mr." is a known abbreviation: one sentence of 4 words of 1 syllable each ("Mr" has no
    # vowel and counts 1).
    assert flesch_kincaid_grade("Mr. Smith came home.") == pytest.approx(0.39 * 4 + 11.8 * 4 / 4 - 15.59)


@pytest.mark.parametrize("word, syllables", [
    ("the", 1), ("make", 1), ("table", 2), ("free", 1), ("jumped", 1), ("wanted", 2),
    ("beautiful", 3), ("syllable", 3), ("1853", 1), ("rhythm", 1),
    ("Victoria's", 3),  # really 4: a vowel group such as "ia" can hold two syllables
])
def test_syllable_heuristic(word, syllables):
    assert count_syllables(word) == syllables


def test_word_frequency_by_hand():
    # Distinct passages "a b a" and "b c" (the repeat counts once): a 2, b 2, c 1 of 5 words.
    frequencies = word_frequencies(["a b a", "b c", "a b a"])
    assert frequencies == {"a": 400_000.0, "b": 400_000.0, "c": 200_000.0}
    items = [{"question": "What?", "context": context, "answers": ["a"], "f1": f1}
             for context, f1 in (("a b a", 1.0), ("b c", 0.0), ("a b a", 0.5))]
    prop = by_name(linguistic_bias(items, bin_widths={"word_frequency": 100_000}))["word_frequency"]
    # passage means: "a b a" -> 400,000; "b c" -> 300,000 per million
    assert subsets(prop) == [("[300000, 400000)", 1, 0.0), ("[400000, 500000)", 2, 0.75)]
    assert prop["bias"] == pytest.approx(0.375 ** 2)
    assert "test set" in prop["note"]


def test_words():
    assert words("Victoria's centre-left party, (ALP) won 95,000 votes!") == [
        "Victoria's", "centre-left", "party", "ALP", "won", "95", "000", "votes"]


def test_chinese():
    items = [
        {"question": "谁是作者？", "context": "天天 向上。", "answers": ["鲁迅"], "f1": 1.0},
        {"question": "为什么下雨？", "context": "天" * 60, "answers": ["因为云"], "f1": 0.0},
    ]
    result = linguistic_bias(items, language="zh")
    props = by_name(result)
    assert subsets(props["question_words"]) == [("为什么", 1, 0.0), ("谁", 1, 1.0)]
    assert subsets(props["passage_length"]) == [("0-49", 1, 1.0), ("50-99", 1, 0.0)]
    assert props["passage_length"]["unit"] == "characters"
    assert subsets(props["answer_length"]) == [("2", 1, 1.0), ("3", 1, 0.0)]
    for name in ("flesch_kincaid_grade", "word_frequency"):
        assert props[name]["applicable"] is False
        assert props[name]["bins"] == [] and props[name]["bias"] is None and props[name]["note"]
    assert character_length("天天 向上。") == 4


def test_empty_and_invalid_input():
    result = linguistic_bias([])
    assert all(prop["bias"] is None and prop["bins"] == [] for prop in result["properties"])
    bad_items = [
        [{"question": "What?", "context": "x", "answers": ["x"]}],
        [{"question": "What?", "context": "x", "answers": ["x"], "f1": 1.5}],
        [{"question": "What?", "context": "x", "answers": "x", "f1": 1.0}],
        ["not a dict"],
    ]
    for items in bad_items:
        with pytest.raises(ValueError):
            linguistic_bias(items)
    with pytest.raises(ValueError):
        linguistic_bias(ITEMS, language="fr")


def test_passage_length_has_an_open_last_bin_at_600():
    items = [{"question": "What?", "context": "word " * n, "answers": ["word"], "f1": f1}
             for n, f1 in ((580, 1.0), (600, 0.5), (2000, 0.0))]
    assert subsets(by_name(linguistic_bias(items))["passage_length"]) == [("550-599", 1, 1.0), ("600+", 2, 0.25)]


def small_subset_items(whose_f1):
    """Question words: 6 what, 6 which, 1 who (the lone "whose"), 4 why; the whose question
    and the first why question share 1.0 F1 between them, as ``whose_f1`` says."""
    rows = ([("What is it?", 1.0)] * 3 + [("What is it?", 0.0)] * 3 + [("Which is it?", 0.5)] * 6
            + [("Whose is it?", whose_f1), ("Why is it?", 1.0 - whose_f1)] + [("Why is it?", 0.25)] * 3)
    return [{"question": q, "context": SHORT, "answers": ["blue"], "f1": f1} for q, f1 in rows]


def test_hidden_sets_show_no_subset_below_the_minimum():
    result = linguistic_bias(small_subset_items(1.0), min_group_size=5)
    json.dumps(result)
    assert result["min_group_size"] == 5
    words_prop = by_name(result)["question_words"]
    assert subsets(words_prop) == [("which", 6, 0.5), ("what", 6, 0.5), ("other (small groups)", 5, 0.35)]
    assert words_prop["pooled_groups"] == ["who", "why"]
    assert words_prop["bias"] == 0.0  # over the subsets shown on their own, not the pool
    for prop in result["properties"]:
        assert all(b["n"] >= 5 for b in prop["bins"])
    # Without the minimum the lone who subset shows its F1.
    assert ("who", 1, 1.0) in subsets(by_name(linguistic_bias(small_subset_items(1.0)))["question_words"])


def test_what_is_published_does_not_depend_on_a_small_subsets_f1():
    assert linguistic_bias(small_subset_items(1.0), min_group_size=5) == \
        linguistic_bias(small_subset_items(0.0), min_group_size=5)
    assert linguistic_bias(small_subset_items(1.0)) != linguistic_bias(small_subset_items(0.0))


# ---------------------------------------------------------------- noise-corrected score and its null

def test_corrected_score_by_hand():
    groups = {"a": [1.0, 1.0, 0.0, 1.0], "b": [0.0, 0.5, 0.0, 0.5, 0.0, 0.0], "tiny": [1.0]}
    result = between_bin_test(groups, n_permutations=200, min_bin_size=2)
    assert result["bins_left_out"] == ["tiny"] and result["n_analysed"] == 10 and result["min_bin_size"] == 2
    # N = 10, w = (0.4, 0.6), means 0.75 and 1/6, overall mean 0.4.
    between = 0.4 * (0.75 - 0.4) ** 2 + 0.6 * (1 / 6 - 0.4) ** 2
    s2_a, s2_b = np.var([1, 1, 0, 1], ddof=1), np.var([0, 0.5, 0, 0.5, 0, 0], ddof=1)
    null = ((1 - 0.4) * s2_a + (1 - 0.6) * s2_b) / 10
    assert result["between_bin_variance"] == pytest.approx(between)
    assert result["null_expectation"] == pytest.approx(null)
    assert result["bias_corrected"] == pytest.approx(between - null)
    assert 1 / 201 <= result["p_value"] <= 1
    assert result == between_bin_test(groups, n_permutations=200, min_bin_size=2)  # seeded
    json.dumps(result)


def test_null_expectation_is_the_mean_over_every_shuffle():
    """Over all ways of dealing the values into bins of the same sizes, the between-bin variance
    averages exactly what null_expectation averages; the sampled p-value converges on the exact
    one counted over every arrangement."""
    values = np.array([0.0, 0.2, 1.0, 1.0, 0.5, 0.0, 1.0])
    sizes = (3, 4)
    observed = between_bin_test({"x": values[:3], "y": values[3:]}, min_bin_size=2, n_permutations=20_000)
    betweens, nulls = [], []
    for first in itertools.combinations(range(values.size), sizes[0]):
        rest = [i for i in range(values.size) if i not in first]
        one = between_bin_test({"x": values[list(first)], "y": values[rest]}, min_bin_size=2, n_permutations=1)
        betweens.append(one["between_bin_variance"])
        nulls.append(one["null_expectation"])
    assert np.mean(betweens) == pytest.approx(np.mean(nulls))
    corrected = np.array(betweens) - np.array(nulls)
    exact = np.mean(corrected >= observed["bias_corrected"] - 1e-12)
    assert observed["p_value"] == pytest.approx(exact, abs=0.01)


def test_separated_bins_are_significant_and_constant_f1_is_not():
    separated = between_bin_test({"good": [1.0] * 10, "bad": [0.0] * 10}, n_permutations=2000)
    assert separated["p_value"] < 0.005  # 2 arrangements in C(20, 10) = 184,756 are as extreme
    assert separated["bias_corrected"] == pytest.approx(0.25)  # nothing to subtract: no within-bin spread
    flat = between_bin_test({"a": [0.5] * 12, "b": [0.5] * 15}, n_permutations=50)
    assert flat["bias_corrected"] == 0.0 and flat["p_value"] == 1.0


def test_fewer_than_two_bins_big_enough_give_no_score():
    result = between_bin_test({"a": [1.0] * 30, "b": [0.0] * 9}, n_permutations=10)
    assert result["bins_left_out"] == ["b"] and result["n_analysed"] == 30
    assert all(result[key] is None for key in ("between_bin_variance", "null_expectation", "bias_corrected",
                                               "p_value"))


def test_invalid_test_arguments():
    for bad in ({"n_permutations": 0}, {"n_permutations": 2.5}, {"min_bin_size": 1}, {"min_bin_size": True},
                {"seed": -1}):
        with pytest.raises(ValueError):
            linguistic_bias(ITEMS, **bad)
    with pytest.raises(ValueError):
        between_bin_test({"a": [0.1, float("nan")], "b": [0.0, 1.0]}, min_bin_size=2)


def many_items(seed, n=300):
    """Passages of 5 to 400 words; answers right 80% of the time under 100 words, 30% above."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 400, size=n)
    return [{"question": str(rng.choice(["What is it?", "Who is it?", "How is it?", "Why?"])),
             "context": "Word " * int(length) + "end.", "answers": ["word " * int(rng.integers(1, 6))],
             "f1": float(rng.random() < 0.3 + 0.5 * (length < 100))} for length in lengths]


def test_every_property_carries_raw_and_corrected_scores_with_their_null():
    items = many_items(3)
    result = linguistic_bias(items, n_permutations=500)
    json.dumps(result)
    assert (result["n_permutations"], result["min_bin_size"], result["seed"]) == (500, 10, 0)
    for prop in result["properties"]:
        shown = [b for b in prop["bins"] if "pooled" not in b]
        kept = [b for b in shown if b["n"] >= 10]
        assert prop["bias"] == pytest.approx(np.var([b["f1"] for b in shown]))  # Wu et al., unchanged
        assert prop["bins_left_out"] == [b["label"] for b in shown if b["n"] < 10]
        assert prop["n_analysed"] == sum(b["n"] for b in kept)
        if len(kept) < 2:
            assert prop["bias_corrected"] is None and prop["p_value"] is None
            continue
        weights = np.array([b["n"] for b in kept]) / prop["n_analysed"]
        means = np.array([b["f1"] for b in kept])
        assert prop["between_bin_variance"] == pytest.approx(np.sum(weights * (means - weights @ means) ** 2))
        assert prop["bias_corrected"] == pytest.approx(prop["between_bin_variance"] - prop["null_expectation"])
    props = by_name(result)
    assert props["passage_length"]["p_value"] < 0.01  # planted
    assert props["question_words"]["p_value"] > 0.01
    # A property's shuffles depend on the seed and its name alone, not on the other properties.
    groups = {}
    for item in items:
        groups.setdefault(length_bin(len(words(item["context"])), 50, cap=600), []).append(item["f1"])
    groups = {b["label"]: groups[b["label"]] for b in props["passage_length"]["bins"]}
    alone = between_bin_test(groups, n_permutations=500, stream="passage_length")
    assert alone["p_value"] == props["passage_length"]["p_value"]
    assert linguistic_bias(items, n_permutations=500) == result
    assert linguistic_bias(items, n_permutations=500, seed=1) != result


def test_hidden_sets_test_only_the_subsets_shown_on_their_own():
    """The pool of small subsets (and a withheld pool) never enters the corrected score: what is
    published still does not depend on a small subset's F1."""
    result = linguistic_bias(small_subset_items(1.0), min_group_size=5, min_bin_size=5)
    words_prop = by_name(result)["question_words"]
    assert words_prop["n_analysed"] == 12 and words_prop["bins_left_out"] == []
    assert words_prop["bias_corrected"] is not None
    for prop in result["properties"]:
        assert prop["n_analysed"] <= sum(b["n"] for b in prop["bins"] if "pooled" not in b)
    assert result == linguistic_bias(small_subset_items(0.0), min_group_size=5, min_bin_size=5)
