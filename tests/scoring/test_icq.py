"""ICQ statistics (scoring/analysis/icq.py): cueness against the label prior (and the published
one), the exact tests (Poisson-binomial, Fisher, Holm), the multi-choice attachment rule, question
correctness, ΔAcc, flattening and the distribution test, input validation, and an end-to-end run
on the real C3 data. Simulations with known truth are in test_icq_simulations.py."""
import itertools
import json
import math
import random
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from scoring.analysis import icq
from scoring.analysis.icq import Instance

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data"
EXPMRC = SHARED / "expmrc"
ROC_COUNTS = SHARED / "icq" / "roc_train_feature_label_counts.tsv"
LABELS3 = ("contradiction", "entailment", "neutral")


def nli(ident, hypothesis, label, premise="A person is outside."):
    return Instance(str(ident), premise, [hypothesis], label)


# --------------------------------------------------------------------------- cueness

def test_worked_vectors_of_the_published_formula():
    score, mse, jsd = icq.cueness([30, 10, 10], [12, 6, 6])  # no prior: the uniform 1/|L| of the paper
    assert mse == pytest.approx(0.035556, abs=5e-7)
    assert jsd == pytest.approx(0.005059, abs=5e-7)
    assert score == pytest.approx(0.035376, abs=5e-7)
    assert score == pytest.approx(mse / math.exp(jsd))
    # base 2 would give 0.007299: we use natural logarithms
    assert jsd / math.log(2) == pytest.approx(0.007299, abs=5e-7)
    # against a prior equal to R_f's own proportions the feature tells nothing: 0
    assert icq.cueness([30, 10, 10], [12, 6, 6], prior=[0.6, 0.2, 0.2])[:2] == (0.0, 0.0)


def test_mse_is_measured_from_the_prior():
    prior = [0.25, 0.75]  # right/wrong option rows of four-option questions
    assert icq.mse([0.25, 0.75], prior) == 0.0  # no cue value
    assert icq.mse([0.25, 0.75]) == pytest.approx(0.0625)  # ... which the published formula scores (1/2 - 1/4)^2
    assert icq.mse([0.75, 0.25], prior) == pytest.approx(0.25)  # a 75%-right cue
    assert icq.mse([0.75, 0.25]) == pytest.approx(0.0625)  # ... scored like no cue at all by the published formula
    # +0.2 and -0.2 from the prior score alike (two labels: mse = d^2); published: 0.0025 vs 0.2025
    assert icq.mse([0.45, 0.55], prior) == pytest.approx(0.04) == icq.mse([0.05, 0.95], prior)
    assert (icq.mse([0.45, 0.55]), icq.mse([0.05, 0.95])) == (pytest.approx(0.0025), pytest.approx(0.2025))
    # with a uniform prior both are the same number
    assert icq.mse([0.6, 0.3, 0.1], [1 / 3] * 3) == pytest.approx(icq.mse([0.6, 0.3, 0.1]))
    with pytest.raises(ValueError):
        icq.mse([0.5, 0.5], [1.0])


def test_exact_tests_against_brute_force():
    probabilities = [0.1] * 4 + [0.7] * 3 + [0.33, 0.5, 1.0, 0.0]
    brute = [0.0] * (len(probabilities) + 1)
    for outcome in itertools.product((0, 1), repeat=len(probabilities)):
        brute[sum(outcome)] += math.prod(p if o else 1 - p for p, o in zip(probabilities, outcome, strict=True))
    assert list(icq.poisson_binomial_pmf(probabilities)) == pytest.approx(brute, abs=1e-12)
    assert list(icq.binomial_pmf(5, 0.3)) == pytest.approx([math.comb(5, x) * 0.3 ** x * 0.7 ** (5 - x)
                                                            for x in range(6)])

    def fisher_by_hand(a, b, c, d):
        n1, k, n = a + b, a + c, a + b + c + d
        pmf = {x: math.comb(k, x) * math.comb(n - k, n1 - x) / math.comb(n, n1)
               for x in range(max(0, n1 + k - n), min(n1, k) + 1)}
        return sum(p for p in pmf.values() if p <= pmf[a] * (1 + 1e-7))

    rng = random.Random(0)
    for _ in range(50):
        table = [rng.randrange(0, 15) for _ in range(4)]
        if sum(table) > 0:
            assert icq.fisher_exact(*table) == pytest.approx(fisher_by_hand(*table), rel=1e-9)
    assert icq.fisher_exact(5, 0, 0, 5) == pytest.approx(2 / math.comb(10, 5))


def test_holm_adjustment():
    assert icq.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert icq.holm([0.3, 0.6]) == pytest.approx([0.6, 0.6])  # monotone step-down
    assert icq.holm([0.9, 0.9, 0.9]) == [1.0, 1.0, 1.0]
    assert icq.holm([]) == []


@pytest.mark.parametrize("right, wrong, expected", [
    (106, 250, 0.040904),   # negation
    (671, 440, 0.010808),   # sentiment positive
    (1870, 1870, 0.0),      # overlap
    (177, 198, 0.000784),   # typo
])
def test_roc_mse_examples(right, wrong, expected):
    assert icq.mse(icq.proportions([right, wrong])) == pytest.approx(expected, abs=5e-7)


@pytest.mark.skipif(not ROC_COUNTS.is_file(), reason=f"{ROC_COUNTS} not found")
def test_roc_counts_file_gives_the_same_mse():
    rows = {}
    for line in ROC_COUNTS.read_text(encoding="utf-8").splitlines()[1:]:
        feature, value, right, wrong = line.split("\t")
        rows[(feature, value)] = (int(right), int(wrong))
    assert icq.mse(icq.proportions(rows[("negation", "negation")])) == pytest.approx(0.040904, abs=5e-7)
    assert icq.mse(icq.proportions(rows[("typo", "typo")])) == pytest.approx(0.000784, abs=5e-7)


def test_jsd_properties():
    assert icq.jsd([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert icq.jsd([1.0, 0.0], [0.0, 1.0]) == pytest.approx(math.log(2))  # the maximum, natural log
    assert icq.jsd([0.2, 0.8], [0.6, 0.4]) == pytest.approx(icq.jsd([0.6, 0.4], [0.2, 0.8]))
    assert icq.mse([1 / 3] * 3) == 0.0


def balanced_split(prefix, cue_labels, n_plain=24):
    """Hypotheses with the cue word "never" get ``cue_labels``; plain ones cycle the 3 labels."""
    rows = [nli(f"{prefix}c{i}", f"The man never sleeps {i}.", label) for i, label in enumerate(cue_labels)]
    rows += [nli(f"{prefix}p{i}", f"The man sleeps {i}.", LABELS3[i % 3]) for i in range(n_plain)]
    return rows


def test_discover_cues_finds_the_planted_word_with_its_numbers():
    reference = balanced_split("r", ["contradiction"] * 30 + ["entailment"] * 10 + ["neutral"] * 10)
    test = balanced_split("t", ["contradiction"] * 12 + ["entailment"] * 6 + ["neutral"] * 6)
    cues = icq.discover_cues(reference, test, kind=icq.CLASSIFICATION, feature_types=["word"])
    top = cues[0]
    assert (top["feature"], top["value"]) == ("word", "never")
    # R: 50 "never" rows (30/10/10) and 24 plain rows (8/8/8): the prior is 38/74, 18/74, 18/74
    prior = [38 / 74, 18 / 74, 18 / 74]
    assert top["prior"] == pytest.approx(dict(zip(LABELS3, prior, strict=True)))
    mse = ((0.6 - prior[0]) ** 2 + 2 * (0.2 - prior[1]) ** 2) / 3
    assert top["mse"] == pytest.approx(mse) and mse == pytest.approx(0.0037400, abs=5e-7)
    assert top["jsd"] == pytest.approx(0.005059, abs=5e-7)
    assert top["cueness"] == pytest.approx(mse / math.exp(top["jsd"]))
    assert top["cue_label"] == "contradiction"
    # the paper's numbers (distance from 1/3), kept as published
    assert top["mse_published"] == pytest.approx(0.035556, abs=5e-7)
    assert top["cueness_published"] == pytest.approx(0.035376, abs=5e-7)
    assert (top["n_reference"], top["n_test"]) == (50, 24)
    assert top["reference_dist"] == pytest.approx({"contradiction": 0.6, "entailment": 0.2, "neutral": 0.2})
    assert top["test_dist"] == pytest.approx({"contradiction": 0.5, "entailment": 0.25, "neutral": 0.25})
    assert set(top) >= {"feature", "value", "cueness", "mse", "jsd", "n_reference", "n_test",
                        "reference_dist", "test_dist", "reference_counts", "test_counts",
                        "cueness_published", "mse_published", "prior", "cue_label"}
    # ranking: cueness desc, then count in R desc, then key
    keys = [(-c["cueness"], -c["n_reference"], c["feature"] + "\t" + c["value"]) for c in cues]
    assert keys == sorted(keys)
    assert all(c["n_reference"] >= 11 and c["n_test"] >= 11 for c in cues)


def test_min_count_applies_to_both_splits_and_top_k_cuts():
    reference = balanced_split("r", ["contradiction"] * 11)
    test = balanced_split("t", ["contradiction"] * 10)  # 10 < 11 in S
    values = {c["value"] for c in icq.discover_cues(reference, test, kind=icq.CLASSIFICATION,
                                                    feature_types=["word"], top_k=None)}
    assert "never" not in values and "sleep" in values
    test = balanced_split("t", ["contradiction"] * 11)
    cues = icq.discover_cues(reference, test, kind=icq.CLASSIFICATION, feature_types=["word"], top_k=None)
    assert "never" in {c["value"] for c in cues}
    assert len(icq.discover_cues(reference, test, kind=icq.CLASSIFICATION, feature_types=["word"], top_k=2)) == 2


def test_ties_break_on_reference_count_then_key():
    # "alpha", "beta" and "delta" have identical distributions; "beta" is more frequent in R
    reference = ([nli(f"a{i}", "alpha", "x") for i in range(12)] + [nli(f"b{i}", "beta", "x") for i in range(14)]
                 + [nli(f"c{i}", "gamma", "y") for i in range(12)] + [nli(f"d{i}", "delta", "x") for i in range(12)])
    test = [nli(f"a{i}", "alpha", "x") for i in range(12)] + [nli(f"b{i}", "beta", "x") for i in range(12)] + \
        [nli(f"c{i}", "gamma", "y") for i in range(12)] + [nli(f"d{i}", "delta", "x") for i in range(12)]
    cues = icq.discover_cues(reference, test, kind=icq.CLASSIFICATION, feature_types=["word"])
    # The prior is x 38/50, y 12/50: "gamma" (all y) is 0.76 away from it, the others 0.24, so it
    # leads; the paper's formula gave all four 0.25 and put "gamma" last on the key.
    assert [c["value"] for c in cues] == ["gamma", "beta", "alpha", "delta"]
    assert cues[0]["mse"] == pytest.approx(0.76 ** 2) and cues[1]["mse"] == pytest.approx(0.24 ** 2)
    assert {c["cueness_published"] for c in cues} == {0.25}


# --------------------------------------------------------------------------- multi-choice

def mc(ident, options, gold, premise="Where did Tom go?"):
    return Instance(str(ident), premise, options, gold)


def test_feature_attaches_to_a_question_only_when_it_fires_in_some_but_not_all_options():
    questions = [
        mc("all", ["Tom never ran.", "Tom never swam.", "Tom never sang."], 0),       # never in all: no
        mc("some", ["Tom ran.", "Tom never swam.", "Tom never sang.", "Tom sat."], 3),  # 2 of 4: yes
        mc("none", ["Tom ran.", "Tom swam."], 1),
    ]
    index = icq.build_index(questions, kind=icq.MULTICHOICE, feature_types=["word", "negation"])
    assert "word\tnever" not in index.attached[0]
    assert "word\tnever" in index.attached[1] and "negation\tnegation" in index.attached[1]
    assert "word\ttom" not in index.attached[1]  # fires in every option
    assert "word\tsit" in index.attached[1]
    n_f, by_label = index.counts()
    assert n_f["word\tnever"] == 1  # one question
    # label counts over option rows of the attached question: two wrong rows, no right row
    assert by_label["wrong"]["word\tnever"] == 2 and by_label["right"]["word\tnever"] == 0
    assert by_label["right"]["word\tsit"] == 1 and by_label["wrong"]["word\tsit"] == 0
    assert index.members("word\tnever") == [1]
    assert "word\ttom" not in n_f


def test_question_correctness_is_predicted_option_equals_gold():
    questions = [mc("q0", ["a", "b", "c"], 2), mc("q1", ["a", "b"], 0), mc("q2", ["a", "b", "c"], 1),
                 mc("q3", ["a", "b", "c", "d"], 3), mc("q4", ["a", "b"], 1)]
    index = icq.build_index(questions, kind=icq.MULTICHOICE, feature_types=["word"])
    predictions = {"q0": 2, "q1": 1, "q2": "B", "q3": 7, "q4": True}  # q4: a boolean is no option
    assert icq.correctness(index, predictions) == [True, False, True, False, False]


def mc_split(prefix, n_cue, n_plain, cue_right_every=0, wrong_every=0):
    """Questions whose option 1 says "never" (n_cue of them), and plain questions."""
    out = []
    for i in range(n_cue):
        gold = 1 if cue_right_every and i % cue_right_every == 0 else 0
        out.append(mc(f"{prefix}c{i}", ["He went home.", "He never went home.", "He went out."], gold))
    for i in range(n_plain):
        out.append(mc(f"{prefix}p{i}", ["He ran home.", "He ran out.", "He ran away."], i % 3))
    return out


def test_accuracy_test_delta_by_hand():
    test = mc_split("t", 12, 15)
    # correct on 9 of 12 cue questions and on 5 of 15 plain ones
    predictions = {f"tc{i}": (0 if i < 9 else 1) for i in range(12)}
    predictions.update({f"tp{i}": (i % 3 if i < 5 else (i + 1) % 3) for i in range(15)})
    cue = {"feature": "word", "value": "never"}
    rows = icq.accuracy_test(test, predictions, [cue], kind=icq.MULTICHOICE)
    # Fisher's exact test on [[9, 3], [5, 10]]: 14 right answers among 27, 12 of them drawn for S_f
    pmf = {x: math.comb(14, x) * math.comb(13, 12 - x) / math.comb(27, 12) for x in range(0, 13)}
    p_value = sum(p for p in pmf.values() if p <= pmf[9] * (1 + 1e-7))
    assert p_value == pytest.approx(0.0542379, abs=1e-7)
    assert rows == [{"feature": "word", "value": "never", "n_with": 12, "n_without": 15,
                     "acc_with": 0.75, "acc_without": pytest.approx(1 / 3),
                     "delta": pytest.approx(0.75 - 1 / 3), "p_value": pytest.approx(p_value),
                     "p_holm": pytest.approx(p_value)}]  # one cue tested: Holm changes nothing


def test_accuracy_test_needs_min_count_on_both_sides_and_counts_missing_predictions_wrong():
    cue = {"feature": "word", "value": "never"}
    assert icq.accuracy_test(mc_split("t", 10, 15), {}, [cue], kind=icq.MULTICHOICE) == []
    assert icq.accuracy_test(mc_split("t", 12, 10), {}, [cue], kind=icq.MULTICHOICE) == []
    rows = icq.accuracy_test(mc_split("t", 11, 11), {f"tc{i}": 0 for i in range(11)}, [cue], kind=icq.MULTICHOICE)
    assert (rows[0]["acc_with"], rows[0]["acc_without"], rows[0]["delta"]) == (1.0, 0.0, 1.0)


def test_accuracy_test_classification_and_without_reference():
    test = balanced_split("t", ["contradiction"] * 12, n_plain=15)
    predictions = {inst.id: ("contradiction" if "never" in inst.hypotheses[0] else "neutral") for inst in test}
    rows = icq.accuracy_test(test, predictions, [{"feature": "word", "value": "never"}], kind=icq.CLASSIFICATION)
    assert rows[0]["acc_with"] == 1.0 and rows[0]["acc_without"] == pytest.approx(5 / 15)
    # cues=None: every feature of S with both sides >= 11, largest delta first
    rows = icq.accuracy_test(test, predictions, None, kind=icq.CLASSIFICATION)
    assert rows[0]["value"] in ("never", "negation")
    assert [r["delta"] for r in rows] == sorted((r["delta"] for r in rows), reverse=True)
    # Holm counts every feature tested, including those cut by top_k
    tested = icq.accuracy_test(test, predictions, None, kind=icq.CLASSIFICATION, top_k=10_000)
    top = icq.accuracy_test(test, predictions, None, kind=icq.CLASSIFICATION, top_k=1)
    assert len(tested) > 1 and top == tested[:1]
    assert top[0]["p_holm"] == pytest.approx(min(1.0, len(tested) * top[0]["p_value"]))


# --------------------------------------------------------------------------- distribution test

def test_flatten_is_deterministic_and_balanced():
    items = [((f"i{k}",), label, None) for k, label in enumerate(["a"] * 9 + ["b"] * 5 + ["c"] * 7)]
    flat = icq.flatten(items, ["a", "b", "c"], seed=3, key="word\tx")
    assert Counter(item[1] for item in flat) == {"a": 5, "b": 5, "c": 5}
    assert flat == icq.flatten(list(reversed(items)), ["a", "b", "c"], seed=3, key="word\tx")  # order-free
    assert {item[0] for item in flat if item[1] == "b"} == {item[0] for item in items if item[1] == "b"}
    others = [icq.flatten(items, ["a", "b", "c"], seed=s, key="word\tx") for s in range(4, 12)]
    assert any(other != flat for other in others)  # the seed matters
    assert icq.flatten(items[:9] + items[14:], ["a", "b", "c"], seed=0, key="k") == []  # no "b": m = 0
    four_each = items[:4] + items[9:13] + items[14:18]
    assert len(icq.flatten(four_each, ["a", "b", "c"], seed=0, key="k")) == 12  # 3 * 4 >= 11
    assert icq.flatten(four_each, ["a", "b", "c"], seed=0, key="k", min_count=13) == []
    small = [(("x",), "a", None), (("y",), "b", None)] * 3
    assert icq.flatten(small, ["a", "b"], seed=0, key="k") == []  # |L|*m = 6 < 11


def biased_nli(prefix, n_cue_by_label, n_plain=30):
    rows = []
    for label, count in n_cue_by_label.items():
        rows += [nli(f"{prefix}{label[0]}{i}", f"The cat never sleeps {i}.", label) for i in range(count)]
    rows += [nli(f"{prefix}p{i}", f"The cat sleeps {i}.", LABELS3[i % 3]) for i in range(n_plain)]
    return rows


def test_distribution_test_flags_a_predictor_that_follows_the_cue():
    reference = biased_nli("r", {"contradiction": 40, "entailment": 5, "neutral": 5})
    test = biased_nli("t", {"contradiction": 12, "entailment": 6, "neutral": 5})
    cues = icq.discover_cues(reference, test, kind=icq.CLASSIFICATION, feature_types=["word"])
    never = [c for c in cues if c["value"] == "never"]
    biased = {inst.id: ("contradiction" if "never" in inst.hypotheses[0] else inst.label) for inst in test}
    row = icq.distribution_test(test, biased, never, kind=icq.CLASSIFICATION, seed=0)[0]
    assert row["n_flat"] == 15  # 5 per label
    assert row["predicted_dist"] == {"contradiction": 1.0, "entailment": 0.0, "neutral": 0.0}
    assert row["uniform"] == pytest.approx({label: 1 / 3 for label in LABELS3})
    assert row["reference_dist"] == pytest.approx(never[0]["reference_dist"])
    assert row["jsd_reference"] == pytest.approx(icq.jsd([1, 0, 0], [0.8, 0.1, 0.1]))
    assert row["jsd_uniform"] == pytest.approx(icq.jsd([1, 0, 0], [1 / 3] * 3))
    assert row["follows_cue_published"] is True
    # The null: the model's own rates per gold label over S. It says "contradiction" for all 22
    # contradiction instances, for 6 of 16 entailment ones (the "never" ones) and 5 of 15 neutral
    # ones; the flattened set has 5 of each, all predicted "contradiction".
    assert row["cue_label"] == "contradiction" and row["n_cue_label"] == 15
    assert row["expected_cue_label"] == pytest.approx(5 + 5 * 6 / 16 + 5 * 5 / 15)
    assert row["p_value"] == pytest.approx((6 / 16) ** 5 * (5 / 15) ** 5)
    assert row["p_holm"] == pytest.approx(row["p_value"])  # one cue
    assert row["null_dist"] == pytest.approx({"contradiction": (5 + 5 * 6 / 16 + 5 / 3) / 15,
                                              "entailment": 5 * 10 / 16 / 15, "neutral": 5 * 10 / 15 / 15})
    assert row["model_accuracy"] == pytest.approx(1 - 11 / 53)
    assert row["follows_cue"] is True
    oracle = {inst.id: inst.label for inst in test}
    row = icq.distribution_test(test, oracle, never, kind=icq.CLASSIFICATION, seed=0)[0]
    assert row["predicted_dist"] == pytest.approx({label: 1 / 3 for label in LABELS3})
    assert row["p_value"] == 1.0 and row["follows_cue"] is False
    assert row["follows_cue_published"] is False
    # same seed, same rows; deterministic across calls
    assert icq.distribution_test(test, biased, never, kind=icq.CLASSIFICATION, seed=1) == \
        icq.distribution_test(test, biased, never, kind=icq.CLASSIFICATION, seed=1)


def test_distribution_test_multichoice_flattens_option_rows():
    reference = mc_split("r", 20, 12)  # the "never" option is always wrong in R
    test = mc_split("t", 24, 12, cue_right_every=2)  # ... and right in half of S's questions
    cues = [c for c in icq.discover_cues(reference, test, kind=icq.MULTICHOICE, feature_types=["word"])
            if c["value"] == "never"]
    assert cues[0]["reference_dist"] == {"right": 0.0, "wrong": 1.0}
    assert cues[0]["test_dist"] == {"right": 0.5, "wrong": 0.5}
    assert cues[0]["prior"] == {"right": pytest.approx(1 / 3), "wrong": pytest.approx(2 / 3)}
    assert cues[0]["cue_label"] == "wrong"
    avoids_never = {inst.id: 0 for inst in test}  # never picks the "never" option (index 1)
    row = icq.distribution_test(test, avoids_never, cues, kind=icq.MULTICHOICE)[0]
    assert row["n_flat"] == 24 and row["predicted_dist"] == {"right": 0.0, "wrong": 1.0}
    # Null: the gold option with the entry's accuracy 16/36, each of the 2 wrong options with
    # (20/36)/2. No flattened row was picked: p = P(none of the 12 gold and 12 wrong rows is).
    a, e = 16 / 36, 20 / 36
    assert row["model_accuracy"] == pytest.approx(a)
    assert row["null_dist"] == pytest.approx({"right": (a + e / 2) / 2, "wrong": 1 - (a + e / 2) / 2})
    assert row["p_value"] == pytest.approx((1 - a) ** 12 * (1 - e / 2) ** 12)
    assert row["follows_cue"] is True and row["follows_cue_published"] is True
    # a model that answers at random, ignoring the feature, is not flagged
    rng = random.Random(0)
    guesser = {inst.id: rng.randrange(3) for inst in test}
    row = icq.distribution_test(test, guesser, cues, kind=icq.MULTICHOICE)[0]
    assert row["p_value"] > 0.05 and row["follows_cue"] is False


def test_a_general_label_bias_is_not_following_a_cue():
    """A classifier that says "contradiction" for half of everything, cue or no cue: the paper's
    reading calls it a cue follower (its predictions lean to R_f's label), the null does not."""
    reference = biased_nli("r", {"contradiction": 40, "entailment": 5, "neutral": 5})
    test = biased_nli("t", {"contradiction": 12, "entailment": 12, "neutral": 12}, n_plain=36)
    cues = [c for c in icq.discover_cues(reference, test, kind=icq.CLASSIFICATION, feature_types=["word"])
            if c["value"] == "never"]
    leaning = {inst.id: ("contradiction" if k % 2 else inst.label) for k, inst in enumerate(test)}
    row = icq.distribution_test(test, leaning, cues, kind=icq.CLASSIFICATION)[0]
    assert row["predicted_dist"]["contradiction"] > 0.5
    assert row["follows_cue_published"] is True
    assert row["p_value"] > 0.2 and row["follows_cue"] is False


def test_holm_runs_over_the_cues_of_one_call_and_old_cue_tables_still_work():
    reference = mc_split("r", 20, 12)
    test = mc_split("t", 24, 12, cue_right_every=2)
    cues = icq.discover_cues(reference, test, kind=icq.MULTICHOICE, feature_types=["word"], top_k=None)
    avoids_never = {inst.id: 0 for inst in test}
    rows = icq.distribution_test(test, avoids_never, cues, kind=icq.MULTICHOICE)
    assert len(rows) > 1
    assert [r["p_holm"] for r in rows] == pytest.approx(icq.holm([r["p_value"] for r in rows]))
    assert all(r["follows_cue"] == (r["p_holm"] < 0.05) for r in rows)
    # a cue table stored before the prior existed: the cue's label is read against S's prior
    old = [{key: c[key] for key in ("feature", "value", "cueness", "reference_dist", "test_dist")} for c in cues]
    assert icq.distribution_test(test, avoids_never, old, kind=icq.MULTICHOICE) == rows


# --------------------------------------------------------------------------- profile and input

def test_profile_reuses_one_index_and_omits_tests_without_predictions():
    reference = biased_nli("r", {"contradiction": 40, "entailment": 5, "neutral": 5})
    test = biased_nli("t", {"contradiction": 12, "entailment": 6, "neutral": 5})
    index = icq.build_index(test, kind=icq.CLASSIFICATION)
    result = icq.profile(reference, index, kind=icq.CLASSIFICATION)
    assert result["accuracy_test"] == [] and result["distribution_test"] == []
    assert result["cues"] == icq.discover_cues(reference, test, kind=icq.CLASSIFICATION)
    predictions = {inst.id: "contradiction" for inst in test}
    full = icq.profile(reference, test, predictions, kind=icq.CLASSIFICATION)
    assert full["accuracy_test"] == icq.accuracy_test(index, predictions, full["cues"], kind=icq.CLASSIFICATION)
    no_reference = icq.profile(None, test, predictions, kind=icq.CLASSIFICATION)
    assert no_reference["cues"] == [] and no_reference["distribution_test"] == []
    assert no_reference["accuracy_test"]
    json.dumps(full)  # JSON-ready


def test_load_instances_validates_rows_and_names_the_field():
    good = icq.load_instances([{"id": "a", "premise": "p", "hypothesis": "h", "label": "yes"},
                               {"id": 2, "premise": "p", "hypothesis": "h", "label": 1}], icq.CLASSIFICATION)
    assert good == [Instance("a", "p", ["h"], "yes"), Instance("2", "p", ["h"], "1")]
    mc_rows = icq.load_instances([{"id": "q", "premise": "p", "options": ["x", "y"], "label": 1}], icq.MULTICHOICE)
    assert mc_rows == [Instance("q", "p", ["x", "y"], 1)]
    cases = [
        ([{"premise": "p", "hypothesis": "h", "label": "x"}], icq.CLASSIFICATION, "row 1: field 'id' is missing"),
        ([{"id": "a", "premise": 3, "hypothesis": "h", "label": "x"}], icq.CLASSIFICATION, "row 1: field 'premise'"),
        ([{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}, "text"], icq.CLASSIFICATION, "row 2"),
        ([{"id": "a", "premise": "p", "hypothesis": "h", "label": None}], icq.CLASSIFICATION, "field 'label'"),
        ([{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}] * 2, icq.CLASSIFICATION, "row 2: field 'id'"),
        ([{"id": "a", "premise": "p", "options": ["x"], "label": 0}], icq.MULTICHOICE, "at least 2 options"),
        ([{"id": "a", "premise": "p", "options": ["x", 5], "label": 0}], icq.MULTICHOICE, "field 'options[1]'"),
        ([{"id": "a", "premise": "p", "options": ["x", "y"], "label": 2}], icq.MULTICHOICE, "field 'label'"),
        ([{"id": "a", "premise": "p", "options": ["x", "y"], "label": "A"}], icq.MULTICHOICE, "field 'label'"),
        ([{"id": "a", "premise": "p", "options": ["x", "y"], "label": 0}], icq.CLASSIFICATION, "field 'options'"),
    ]
    for rows, kind, fragment in cases:
        with pytest.raises(icq.InvalidICQInput) as error:
            icq.load_instances(rows, kind)
        assert fragment in str(error.value)
    assert len(icq.load_instances([{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}] * 2,
                                  icq.CLASSIFICATION, unique_ids=False)) == 2
    with pytest.raises(ValueError):
        icq.load_instances([], "span")


def test_test_split_needs_unique_ids_but_the_reference_does_not():
    reference = balanced_split("r", ["contradiction"] * 12) * 2  # repeated ids, as in C3's training data
    test = balanced_split("t", ["contradiction"] * 12)
    assert icq.discover_cues(reference, test, kind=icq.CLASSIFICATION, feature_types=["word"])
    with pytest.raises(icq.InvalidICQInput, match="unique"):
        icq.accuracy_test(test + test[:1], {}, [{"feature": "word", "value": "never"}], kind=icq.CLASSIFICATION)


def test_expmrc_gold_becomes_one_instance_per_question():
    gold = json.loads((REPO / "tests" / "fixtures" / "expmrc" / "mc_gold.json").read_text(encoding="utf-8"))
    instances = icq.expmrc_multichoice_instances(gold)
    passage = gold["data"][0]
    first = instances[0]
    assert first.id == passage["id"] + "-0"
    assert first.premise == passage["article"] + "\n" + passage["questions"][0]
    assert first.hypotheses == passage["options"][0]
    assert first.label == "ABCD".index(passage["answers"][0])
    assert len(instances) == sum(len(p["questions"]) for p in gold["data"])
    broken = {"data": [dict(passage, answers=["Z"] * len(passage["answers"]))]}
    with pytest.raises(icq.InvalidICQInput, match=r"data\[0\]\.answers\[0\]"):
        icq.expmrc_multichoice_instances(broken)
    with pytest.raises(icq.InvalidICQInput, match="data"):
        icq.expmrc_multichoice_instances({"version": "x"})


# --------------------------------------------------------------------------- real data

@pytest.mark.skipif(not (EXPMRC / "pseudo_training_data" / "train-pseudo-c3.zip").is_file(),
                    reason=f"ExpMRC C3 data not found under {EXPMRC}")
def test_end_to_end_c3_dev_against_pseudo_training_data():
    dev = json.loads((EXPMRC / "expmrc-c3-dev.json").read_text(encoding="utf-8"))
    with zipfile.ZipFile(EXPMRC / "pseudo_training_data" / "train-pseudo-c3.zip") as archive:
        train = json.loads(archive.read("train-pseudo-c3.json"))
    submission = json.loads((EXPMRC / "sample_submission" / "c3.json").read_text(encoding="utf-8"))
    predictions = {key: value["answer"] for key, value in submission.items()}  # letters are accepted
    test, reference = icq.expmrc_multichoice_instances(dev), icq.expmrc_multichoice_instances(train)
    assert (len(test), len(reference)) == (505, 11869)
    test_index = icq.build_index(test, kind=icq.MULTICHOICE, language="zh")
    result = icq.profile(reference, test_index, predictions, kind=icq.MULTICHOICE, language="zh")
    cues = result["cues"]
    assert len(cues) == 20
    assert [c["cueness"] for c in cues] == sorted((c["cueness"] for c in cues), reverse=True)
    for cue in cues:
        assert cue["n_reference"] >= 11 and cue["n_test"] >= 11
        assert cue["feature"] in ("word", "negation", "overlap")
        assert set(cue["reference_dist"]) == {"right", "wrong"}
        assert sum(cue["reference_dist"].values()) == pytest.approx(1.0)
        assert cue["cueness"] == pytest.approx(cue["mse"] / math.exp(cue["jsd"]))
        assert cue["prior"] == {"right": 0.25, "wrong": 0.75}  # every C3 question has four options
        assert cue["cue_label"] == ("right" if cue["reference_dist"]["right"] > 0.25 else "wrong")
    # The published formula ranged 0.061-0.133 over its top 20, every one leaning
    # "wrong" only because p(right) sits near 1/4. Against the prior the table is small numbers,
    # and it names right-cues as well (the comma, overlap with the passage).
    assert max(c["cueness"] for c in cues) < 0.03
    assert {c["cue_label"] for c in cues} == {"right", "wrong"}
    assert ("overlap", "overlap") in {(c["feature"], c["value"]) for c in cues}
    # A model that ignores every feature (accuracy 0.60-0.75) follows no cue; the paper's reading
    # said it did for several.
    for accuracy in (0.6, 0.75):
        rng = random.Random(f"cue-free {accuracy}")
        cue_free = {inst.id: (inst.label if rng.random() < accuracy else rng.choice(
            [j for j in range(len(inst.hypotheses)) if j != inst.label])) for inst in test}
        rows = icq.distribution_test(test_index, cue_free, cues, kind=icq.MULTICHOICE, language="zh")
        assert rows and not any(row["follows_cue"] for row in rows)
        assert any(row["follows_cue_published"] for row in rows)
    # the sample submission's answer accuracy is 75.248% (the official scorer's ANS_F1)
    correct = icq.correctness(icq.build_index(test, kind=icq.MULTICHOICE, language="zh", feature_types=["word"]),
                              predictions)
    assert sum(correct) / len(correct) == pytest.approx(0.75248, abs=1e-5)
    for row in result["accuracy_test"]:
        assert row["n_with"] >= 11 and row["n_without"] >= 11
        assert row["n_with"] + row["n_without"] == 505
        assert 0.0 <= row["p_value"] <= row["p_holm"] <= 1.0
    for row in result["distribution_test"]:
        assert row["n_flat"] >= 11 and row["n_flat"] % 2 == 0
