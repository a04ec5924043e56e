"""What the diagnostics can and cannot see: false-alarm rates and power, measured by seeded
simulations with known truth (docs/diagnostics.md#what-a-reading-can-and-cannot-say).

A p-value above the threshold says little unless the reader knows how often the test would have
noticed an effect of a stated size. The pages print the figures of ``FIGURES`` beside the
readings; each one comes from a function here, and tests/scoring/test_reading_limits.py re-runs
that function with the same seed and replicates and checks the constant, so a change of a method
that moves a figure fails a test instead of leaving a page wrong.

The layouts are those of the data the pages mostly show: the 501 questions of the ExpMRC SQuAD
dev set by first interrogative word (what 288, how 74, who 50, which 32, where 23, when 18,
why 9, whom 4, other 2, whose 1), subsets of about 500 questions for the linguistic analysis,
and ICQ boards of 800 reference and 400 test questions with 20 features unrelated to the answer.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import icq, linguistic, permutation
from .question_types import pool_small_groups

ALPHA = 0.05
# The question-type report's Bonferroni threshold over its three categorical tests.
QUESTION_TYPE_THRESHOLD = ALPHA / 3
SQUAD_QUESTION_TYPES = {"what": 288, "how": 74, "who": 50, "which": 32, "where": 23, "when": 18,
                        "why": 9, "whom": 4, "other": 2, "whose": 1}
# On a hidden split whom and whose count as who, and groups under the disclosure minimum are pooled.
HIDDEN_MIN_GROUP_SIZE = 5
_FOLDED = {"whom": "who", "whose": "who"}
PLANTED_TYPE = "how"
PLANTED_GAP = 0.20
BASE_ACCURACIES = (0.6, 0.8)
# Linguistic bias: subsets as uneven as answer length on SQuAD (the last three are under the
# minimum subset size and left out); one subset of 50 to 148 questions answered 10 points worse.
BIAS_SUBSETS = (148, 148, 88, 50, 30, 15, 12, 5, 3, 1)
BIAS_WORSE_SUBSETS = (0, 2, 3)
BIAS_GAP = 0.10
BIAS_ACCURACY = 0.7
BIAS_PERMUTATIONS = 200
# ICQ: cue-free models (right with a fixed probability whatever the features).
ICQ_OPTIONS = (4, 2)
ICQ_ACCURACIES = (0.6, 0.75)
ICQ_FEATURES = 20
ICQ_FEATURE_RATE = 0.15


def _labels(sizes: dict[str, int]) -> list[str]:
    return [name for name, size in sizes.items() for _ in range(size)]


def hidden_layout() -> dict[str, int]:
    """The question-type groups the test compares on a hidden split of the SQuAD layout."""
    folded = [_FOLDED.get(label, label) for label in _labels(SQUAD_QUESTION_TYPES)]
    pooled, _, _ = pool_small_groups(folded, HIDDEN_MIN_GROUP_SIZE)
    sizes: dict[str, int] = {}
    for label in pooled:
        sizes[str(label)] = sizes.get(str(label), 0) + 1
    return sizes


def _flag_rates(sizes: dict[str, int], accuracy: dict[str, float], replicates: int,
                rng: np.random.Generator) -> dict[str, float]:
    """Share of ``replicates`` tables (each question right with its type's ``accuracy``,
    independently) that each statistic flags at the report's threshold."""
    labels = _labels(sizes)
    chance = np.array([accuracy.get(label, accuracy["*"]) for label in labels])
    flags = {"weighted": 0, "published": 0, "chi_square": 0}
    for replicate in range(replicates):
        correct = rng.random(len(labels)) < chance
        result = permutation.categorical_test(labels, correct.tolist(), n_permutations=2_000, seed=replicate,
                                              threshold=QUESTION_TYPE_THRESHOLD)
        flags["weighted"] += result["p_value"] < QUESTION_TYPE_THRESHOLD
        flags["published"] += result["p_value_published"] < QUESTION_TYPE_THRESHOLD
        flags["chi_square"] += result["p_value_chi_square"] < QUESTION_TYPE_THRESHOLD
    return {name: round(count / replicates, 3) for name, count in flags.items()}


def question_type_rates(replicates: int = 400, seed: int = 0) -> dict[str, Any]:
    """False-alarm rate (no type harder) and power (``PLANTED_TYPE`` answered ``PLANTED_GAP``
    worse than the rest) of the question-type test, by statistic, for the SQuAD layout and its
    pooled hidden-split layout, at each of ``BASE_ACCURACIES``."""
    rng = np.random.default_rng(seed)
    layouts = {"all types": SQUAD_QUESTION_TYPES, "hidden split": hidden_layout()}
    rates: dict[str, Any] = {}
    for name, sizes in layouts.items():
        rates[name] = {
            "null": [_flag_rates(sizes, {"*": base}, replicates, rng) for base in BASE_ACCURACIES],
            "planted": [_flag_rates(sizes, {"*": base, PLANTED_TYPE: base - PLANTED_GAP}, replicates, rng)
                        for base in BASE_ACCURACIES],
        }
    return rates


def _synthetic_questions(rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """Questions of the SQuAD layout's types, of random lengths, and passages of random lengths."""
    questions = [f"{kind} " + "x" * int(rng.integers(10, 90)) for kind in _labels(SQUAD_QUESTION_TYPES)
                 if kind != "other"] + ["In the year " + "x" * int(rng.integers(10, 90)) for _ in range(2)]
    contexts = ["y" * int(rng.integers(300, 1500)) for _ in questions]
    return questions, contexts


def question_type_family_error(replicates: int = 150, seed: int = 0) -> dict[str, float]:
    """Family-wise false-alarm rates of the whole question-type report (its three categorical
    tests; its one-vs-rest tests) for entries whose correctness depends on nothing."""
    rng = np.random.default_rng(seed)
    any_categorical = any_one_vs_rest = 0
    for replicate in range(replicates):
        questions, contexts = _synthetic_questions(rng)
        correct = (rng.random(len(questions)) < 0.7).tolist()
        report = permutation.question_type_report(questions, contexts, correct, n_permutations=2_000,
                                                  seed=replicate)
        any_categorical += any(test["significant"] for test in report["categorical"]["tests"])
        any_one_vs_rest += any(test["significant"] for test in report["one_vs_rest"]["tests"])
    return {"categorical": round(any_categorical / replicates, 3),
            "one_vs_rest": round(any_one_vs_rest / replicates, 3)}


def bias_power(replicates: int = 300, seed: int = 0) -> dict[str, Any]:
    """Share of runs in which the linguistic-bias test of one property finds one subset
    answered ``BIAS_GAP`` worse (per subset of ``BIAS_WORSE_SUBSETS``), at p < 0.05 and
    p < 0.01, and with no subset worse (the false-alarm rate)."""
    rng = np.random.default_rng(seed)
    cuts = np.cumsum(BIAS_SUBSETS)[:-1]

    def rejections(worse: int | None) -> dict[str, float]:
        chance = np.repeat([BIAS_ACCURACY - (BIAS_GAP if k == worse else 0.0) for k in range(len(BIAS_SUBSETS))],
                           BIAS_SUBSETS)
        p_values = []
        for replicate in range(replicates):
            values = (rng.random(chance.size) < chance).astype(float)
            groups = {f"subset {k}": part.tolist() for k, part in enumerate(np.split(values, cuts))}
            p_values.append(linguistic.between_bin_test(groups, n_permutations=BIAS_PERMUTATIONS,
                                                        seed=replicate)["p_value"])
        p = np.array(p_values)
        return {"0.05": round(float(np.mean(p < 0.05)), 3), "0.01": round(float(np.mean(p < 0.01)), 3)}

    return {"null": rejections(None),
            "planted": {str(BIAS_SUBSETS[k]): rejections(k) for k in BIAS_WORSE_SUBSETS}}


def _cue_free_board(rng: np.random.Generator, prefix: str, n: int, options: int) -> icq.FeatureIndex:
    """``n`` questions with a uniformly drawn gold option; every option carries each of the
    features independently of the answer."""
    carries = rng.random((n, options, ICQ_FEATURES)) < ICQ_FEATURE_RATE
    gold = rng.integers(0, options, n)
    instances = [icq.Instance(f"{prefix}{q}", "", [""] * options, int(gold[q])) for q in range(n)]
    features = [[{f"word\tf{j}" for j in np.flatnonzero(carries[q, o])} for o in range(options)]
                for q in range(n)]
    return icq.FeatureIndex(instances, kind=icq.MULTICHOICE, feature_types=["word"], features=features)


def icq_cue_free_flags(boards: int = 12, seed: int = 0) -> dict[str, Any]:
    """Share of cues on which a cue-free model is flagged: by the paper's reading
    (``follows_cue_published``) and by the test the pages decide with (``follows_cue``), per
    number of options and accuracy."""
    rng = np.random.default_rng(seed)
    rates: dict[str, Any] = {}
    for options in ICQ_OPTIONS:
        for accuracy in ICQ_ACCURACIES:
            tested = published = flagged = 0
            for _ in range(boards):
                reference = _cue_free_board(rng, "r", 800, options)
                test = _cue_free_board(rng, "s", 400, options)
                cues = icq.discover_cues(reference, test, kind=icq.MULTICHOICE, feature_types=["word"])
                gold = [instance.label for instance in test.instances]
                right = rng.random(len(gold)) < accuracy
                wrong = (np.asarray(gold) + rng.integers(1, options, len(gold))) % options
                predictions = {instance.id: int(gold[i] if right[i] else wrong[i])
                               for i, instance in enumerate(test.instances)}
                rows = icq.distribution_test(test, predictions, cues, kind=icq.MULTICHOICE)
                tested += len(rows)
                published += sum(bool(row["follows_cue_published"]) for row in rows)
                flagged += sum(bool(row["follows_cue"]) for row in rows)
            rates[f"{options} options, accuracy {accuracy}"] = {
                "cues": tested, "published": round(published / max(tested, 1), 3),
                "flagged": round(flagged / max(tested, 1), 3)}
    return rates


def _span(values: list[float]) -> str:
    """"23–40%" (or "23%" when both ends round alike) of shares in 0..1."""
    low, high = round(100 * min(values)), round(100 * max(values))
    return f"{low}%" if low == high else f"{low}–{high}%"


# The measured figures, as the functions above return them with their default arguments (the
# test re-runs them). Question types, at the report's threshold 0.05 / 3, base accuracy 0.6 and 0.8:
QUESTION_TYPE_RATES: dict[str, Any] = {
    "all types": {
        "null": [{"weighted": 0.02, "published": 0.018, "chi_square": 0.01},
                 {"weighted": 0.01, "published": 0.02, "chi_square": 0.01}],
        "planted": [{"weighted": 0.522, "published": 0.052, "chi_square": 0.425},
                    {"weighted": 0.642, "published": 0.03, "chi_square": 0.6}]},
    "hidden split": {
        "null": [{"weighted": 0.013, "published": 0.015, "chi_square": 0.007},
                 {"weighted": 0.02, "published": 0.033, "chi_square": 0.03}],
        "planted": [{"weighted": 0.415, "published": 0.107, "chi_square": 0.445},
                    {"weighted": 0.64, "published": 0.142, "chi_square": 0.652}]},
}
QUESTION_TYPE_FAMILY_ERROR: dict[str, float] = {"categorical": 0.04, "one_vs_rest": 0.013}
BIAS_POWER: dict[str, Any] = {
    "null": {"0.05": 0.063, "0.01": 0.007},
    "planted": {"148": {"0.05": 0.313, "0.01": 0.123}, "88": {"0.05": 0.237, "0.01": 0.087},
                "50": {"0.05": 0.157, "0.01": 0.057}},
}
ICQ_CUE_FREE_FLAGS: dict[str, Any] = {
    "4 options, accuracy 0.6": {"cues": 240, "published": 0.537, "flagged": 0.004},
    "4 options, accuracy 0.75": {"cues": 240, "published": 0.104, "flagged": 0.0},
    "2 options, accuracy 0.6": {"cues": 240, "published": 0.371, "flagged": 0.021},
    "2 options, accuracy 0.75": {"cues": 240, "published": 0.346, "flagged": 0.0},
}


def figures(question_types: dict[str, Any], family: dict[str, float], bias: dict[str, Any],
            cue_free: dict[str, Any]) -> dict[str, str]:
    """The phrases the pages print, from the measured figures."""
    all_types, hidden = question_types["all types"], question_types["hidden split"]
    four = [v["published"] for k, v in cue_free.items() if k.startswith("4 ")]
    two = [v["published"] for k, v in cue_free.items() if k.startswith("2 ")]
    return {
        "qt_power": _span([r["weighted"] for r in all_types["planted"] + hidden["planted"]]),
        "qt_power_published": _span([r["published"] for r in all_types["planted"]]),
        "qt_power_published_hidden": _span([r["published"] for r in hidden["planted"]]),
        "qt_null": _span([r[k] for r in all_types["null"] + hidden["null"] for k in ("weighted", "published")]),
        "qt_family": _span([family["categorical"]]),
        "qt_one_vs_rest_family": _span([family["one_vs_rest"]]),
        "bias_power_05": _span([r["0.05"] for r in bias["planted"].values()]),
        "bias_power_01": _span([r["0.01"] for r in bias["planted"].values()]),
        "bias_null_05": _span([bias["null"]["0.05"]]),
        "icq_published_four": _span(four),
        "icq_published_two": _span(two),
        "icq_flagged": _span([v["flagged"] for v in cue_free.values()]),
    }


FIGURES: dict[str, str] = figures(QUESTION_TYPE_RATES, QUESTION_TYPE_FAMILY_ERROR, BIAS_POWER, ICQ_CUE_FREE_FLAGS)
