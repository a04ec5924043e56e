"""QUACKIE scorer: ground truth (findanswer with its whitespace drift), the official metrics on the
binarised vector (every row of the closed-form table in docs/metrics.md#quackie), the extended
metrics on raw scores, aggregation and score-file validation."""
import copy
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from scoring.metrics.quackie import (
    InvalidPredictions,
    InvalidQuackieGold,
    binarise_top1,
    bootstrap_intervals,
    build_sample,
    find_answer_sentence,
    official_percent,
    parse_scores,
    sample_metrics,
    score,
    split_sentences,
    squad_samples,
    summary,
    validate_gold,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "quackie"
SQUAD = json.loads((FIXTURES / "squad_v2_small.json").read_text(encoding="utf-8"))
GOLD = json.loads((FIXTURES / "gold.json").read_text(encoding="utf-8"))
SCORES = json.loads((FIXTURES / "scores.json").read_text(encoding="utf-8"))
NAN = float("nan")


def one_hot(n, i):
    return [int(j == i) for j in range(n)]


def true_sentence(context, sentences, offset):
    """The sentence whose real character span holds ``offset`` (what findanswer approximates)."""
    position = 0
    for index, sentence in enumerate(sentences):
        start = context.index(sentence, position)
        if offset < start + len(sentence):
            return index
        position = start + len(sentence)
    return len(sentences) - 1


# --------------------------------------------------------------------------- ground truth

def test_split_sentences_uses_the_vendored_english_punkt_model():
    assert split_sentences("Mr. Smith went to Washington. He met Dr. Jones there.") == [
        "Mr. Smith went to Washington.", "He met Dr. Jones there."]
    assert split_sentences("") == []


def test_findanswer_character_arithmetic():
    sentences = ["ab", "cd", "ef"]  # "ab cd ef": one separator each
    assert [find_answer_sentence(sentences, start) for start in range(10)] == [0, 0, 1, 1, 1, 2, 2, 2, 2, 2]
    assert find_answer_sentence(sentences, 2) == 1  # the separator belongs to the next sentence
    assert find_answer_sentence(sentences, 10_000) == 2  # never stops: last sentence
    assert find_answer_sentence(["only"], 0) == 0
    with pytest.raises(ValueError):
        find_answer_sentence([], 0)


def test_findanswer_matches_the_real_spans_when_sentences_are_one_space_apart():
    context = "The cat sat on the mat. It was a sunny day. Birds sang loudly."
    sentences = split_sentences(context)
    assert len(sentences) == 3
    for offset, char in enumerate(context):
        if char != " ":
            assert find_answer_sentence(sentences, offset) == true_sentence(context, sentences, offset)


@pytest.mark.parametrize("gap", ["  ", "\n\n", " \n \n "])
def test_findanswer_whitespace_drift_moves_answers_near_a_sentence_end_to_the_next_sentence(gap):
    context = f"Paris is large.{gap}It hosts the Louvre. Many visit Paris."
    sentences = split_sentences(context)
    assert sentences == ["Paris is large.", "It hosts the Louvre.", "Many visit Paris."]
    drift = len(gap) - 1
    second = context.index("It hosts")
    end = second + len(sentences[1])
    for offset in range(second, end):
        expected = 1 if offset < end - drift else 2  # the last `drift` characters drift forward
        assert find_answer_sentence(sentences, offset) == expected
        assert true_sentence(context, sentences, offset) == 1
    # Answers early in the second sentence and anywhere in the third are unaffected.
    assert find_answer_sentence(sentences, context.index("hosts")) == 1
    assert find_answer_sentence(sentences, context.index("Many")) == 2


def test_findanswer_drift_on_a_real_word_with_a_long_gap():
    context = "Paris is large." + " " * 8 + "It hosts the Louvre. Many visit Paris."
    sentences = split_sentences(context)
    louvre = context.index("Louvre")
    assert true_sentence(context, sentences, louvre) == 1
    assert find_answer_sentence(sentences, louvre) == 2  # the official GT is the next sentence


def test_build_sample_keeps_one_candidate_per_answer_start_including_duplicates():
    context = "The cat sat on the mat. It was a sunny day. Birds sang loudly."
    mat, birds = context.index("the mat"), context.index("Birds")
    sample = build_sample("q1", "Where?", context, [mat, mat, birds])
    assert sample == {
        "id": "q1", "question": "Where?", "context": context,
        "sentences": ["The cat sat on the mat.", "It was a sunny day.", "Birds sang loudly."],
        "gt_candidates": [[1, 0, 0], [1, 0, 0], [0, 0, 1]],
    }
    with pytest.raises(InvalidQuackieGold, match="no answer"):
        build_sample("q2", "Where?", context, [])
    with pytest.raises(InvalidQuackieGold, match="no sentences"):
        build_sample("q3", "Where?", "   ", [0])


def test_squad_samples_from_a_v2_file_skips_and_counts_unanswerable_questions():
    samples, counts = squad_samples(SQUAD)
    assert counts == {"questions": 6, "unanswerable": 1, "kept": 5}
    assert [sample["id"] for sample in samples] == ["q-mat", "q-birds", "q-louvre", "q-hosts", "q-visit"]
    by_id = {sample["id"]: sample for sample in samples}
    assert by_id["q-mat"]["gt_candidates"] == [[1, 0, 0], [1, 0, 0], [0, 0, 1]]  # duplicates kept
    assert by_id["q-birds"]["gt_candidates"] == [[0, 0, 1]]
    assert by_id["q-louvre"]["gt_candidates"] == [[0, 0, 1]]  # whitespace drift, as officially
    assert by_id["q-hosts"]["gt_candidates"] == [[0, 1, 0]]
    assert by_id["q-visit"]["gt_candidates"] == [[0, 0, 1]]
    assert by_id["q-louvre"]["sentences"] == ["Paris is large.", "It hosts the Louvre.", "Many visit Paris."]
    assert by_id["q-louvre"]["question"] == "What does Paris host?"
    assert by_id["q-louvre"]["context"] == SQUAD["data"][1]["paragraphs"][0]["context"]
    # The answers of the fixture really are where answer_start says.
    for article in SQUAD["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                for answer in qa["answers"]:
                    start = answer["answer_start"]
                    assert paragraph["context"][start:start + len(answer["text"])] == answer["text"]
    # The samples are valid gold as they are (extra fields are allowed).
    assert set(validate_gold({sample["id"]: sample for sample in samples})) == set(by_id)


def test_squad_samples_from_a_v1_file():
    v1 = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{
        "context": "One. Two.", "qas": [{"id": "a", "question": "q?", "answers": [{"text": "Two", "answer_start": 5}]}]}]}]}
    samples, counts = squad_samples(v1)
    assert counts == {"questions": 1, "unanswerable": 0, "kept": 1}
    assert samples[0]["sentences"] == ["One.", "Two."] and samples[0]["gt_candidates"] == [[0, 1]]


def _squad_with(change):
    squad = copy.deepcopy(SQUAD)
    change(squad)
    return squad


@pytest.mark.parametrize("change, message", [
    (lambda s: s.pop("data"), "data is missing"),
    (lambda s: s.__setitem__("data", {}), "data must be an array, found an object"),
    (lambda s: s["data"][0].pop("paragraphs"), "data[0].paragraphs is missing"),
    (lambda s: s["data"][1]["paragraphs"][0].__setitem__("context", None),
     "data[1].paragraphs[0].context must be a string, found null"),
    (lambda s: s["data"][0]["paragraphs"][0]["qas"][1].pop("question"), "data[0].paragraphs[0].qas[1].question is missing"),
    (lambda s: s["data"][0]["paragraphs"][0]["qas"][1]["answers"][0].__setitem__("answer_start", "44"),
     "data[0].paragraphs[0].qas[1].answers[0].answer_start must be an integer, found a string"),
    (lambda s: s["data"][0]["paragraphs"][0]["qas"][1]["answers"][0].__setitem__("answer_start", True),
     "answer_start must be an integer, found a boolean"),
    (lambda s: s["data"][0]["paragraphs"][0]["qas"][1]["answers"][0].__setitem__("answer_start", -1),
     "data[0].paragraphs[0].qas[1].answers[0].answer_start must not be negative"),
    (lambda s: s["data"][0]["paragraphs"][0]["qas"][1].__setitem__("answers", [["Birds"]]),
     "data[0].paragraphs[0].qas[1].answers[0] must be an object, found an array"),
    (lambda s: s["data"][0]["paragraphs"][0]["qas"][2].__setitem__("is_impossible", "yes"),
     "qas[2].is_impossible must be a boolean, found a string"),
    (lambda s: s["data"][1]["paragraphs"][0]["qas"][0].__setitem__("id", "q-mat"),
     'data[1].paragraphs[0].qas[0].id: duplicate question id "q-mat" (first at data[0].paragraphs[0].qas[0])'),
    (lambda s: s["data"][1]["paragraphs"][0].__setitem__("context", " \n "), "data[1].paragraphs[0].context has no sentences"),
])
def test_squad_samples_rejects_bad_shapes_naming_the_path_and_no_gold_text(change, message):
    with pytest.raises(InvalidQuackieGold) as error:
        squad_samples(_squad_with(change))
    assert message in str(error.value)
    for word in ("The cat", "Louvre", "Birds", "Paris", "sunny", "the mat"):
        assert word not in str(error.value)


def test_squad_samples_rejects_a_non_object():
    with pytest.raises(InvalidQuackieGold, match="top level must be a JSON object, found an array"):
        squad_samples([])


# --------------------------------------------------------------------------- binarisation

def test_binarise_top1():
    assert binarise_top1([0.1, 0.9, 0.3]).tolist() == [False, True, False]
    assert binarise_top1([2, 5, 5, 1]).tolist() == [False, True, True, False]  # all ties at the max
    assert binarise_top1([4, 4, 4]).tolist() == [True, True, True]
    assert binarise_top1([-3.0]).tolist() == [True]  # length <= 1: all ones
    assert binarise_top1([NAN]).tolist() == [True]
    assert binarise_top1([]).tolist() == []
    assert binarise_top1([0.3, NAN, 0.9]).tolist() == [False, False, False]  # NaN: nothing selected
    assert binarise_top1([1, float("inf"), float("inf")]).tolist() == [False, True, True]


# --------------------------------------------------------------------------- the closed-form table

def metrics(scores, *candidates):
    return sample_metrics(scores, [list(candidate) for candidate in candidates])


def assert_metrics(result, iou, hpd, snr):
    assert result["fail"] is False
    assert result["iou"] == pytest.approx(iou, rel=1e-12)
    assert result["hpd"] == pytest.approx(hpd, rel=1e-12)
    if snr is None:
        assert result["snr"] is None
    else:
        assert result["snr"] == pytest.approx(snr, rel=1e-12)


def test_hit_without_ties():  # IoU = HPD = 1/T = 1, SNR NaN (T = 1)
    assert_metrics(metrics([0.1, 0.9, 0.3, 0.2], one_hot(4, 1)), 1, 1, None)


def test_hit_with_ties_inside_the_selection():  # T = 2 of n = 5: IoU = HPD = 1/2, SNR = (n-T)/(T-1) = 3
    assert_metrics(metrics([0.7, 0.7, 0.1, 0.2, 0.3], one_hot(5, 0)), 1 / 2, 1 / 2, 3)
    assert_metrics(metrics([0.7, 0.7, 0.7, 0.2, 0.3], one_hot(5, 2)), 1 / 3, 1 / 3, 1)  # T = 3: 2/2


def test_hit_with_every_sentence_tied_is_the_constant_vector():  # T = n: 1/n, 1/n, NaN
    assert_metrics(metrics([0.5] * 4, one_hot(4, 2)), 1 / 4, 1 / 4, None)
    assert_metrics(metrics([0, 0], one_hot(2, 0)), 1 / 2, 1 / 2, None)


def test_miss_without_ties():  # IoU 0, HPD 1/n, SNR = 1/(n-2)
    assert_metrics(metrics([0.1, 0.9, 0.3, 0.2], one_hot(4, 0)), 0, 1 / 4, 1 / 2)
    assert_metrics(metrics([5, 1, 2, 3, 4, 0], one_hot(6, 1)), 0, 1 / 6, 1 / 4)


def test_miss_with_ties_outside_the_gt():  # T = 2, n = 5: IoU 0, HPD 1/5, SNR = T/(n-1-T) = 1
    assert_metrics(metrics([0.9, 0.9, 0.1, 0.2, 0.3], one_hot(5, 4)), 0, 1 / 5, 1)


def test_miss_with_everything_but_the_gt_tied():  # T = n-1: SNR NaN
    assert_metrics(metrics([0.9, 0.9, 0.9, 0.1], one_hot(4, 3)), 0, 1 / 4, None)


def test_miss_on_two_sentences():  # n = 2, T = 1 = n-1: SNR NaN
    assert_metrics(metrics([0.1, 0.9], one_hot(2, 0)), 0, 1 / 2, None)


def test_single_sentence():  # IoU = HPD = 1, SNR NaN, whatever the (finite) score
    for value in (-7.0, 0.0, 3.5):
        assert_metrics(metrics([value], [1]), 1, 1, None)


def test_nan_scores_are_a_fail():  # docs/metrics.md#quackie (the official code would select nothing instead)
    for scores, gt in (([0.2, NAN, 0.9, 0.1], one_hot(4, 2)), ([NAN], [1])):
        result = metrics(scores, gt)
        assert result["fail"] is True
        assert all(result[k] is None for k in ("iou", "hpd", "snr", "hpd_rank", "snr_raw"))


def test_several_candidates_the_best_jaccard_wins():
    result = metrics([0.1, 0.9, 0.3], one_hot(3, 0), one_hot(3, 1), one_hot(3, 2))
    assert result["candidate"] == 1
    assert_metrics(result, 1, 1, None)


def test_several_candidates_in_the_tied_selection_take_the_first():
    result = metrics([0.2, 0.7, 0.7, 0.1, 0.3], one_hot(5, 0), one_hot(5, 2), one_hot(5, 1))
    assert result["candidate"] == 1  # candidates 1 and 2 both have IoU 1/2: the first one
    assert_metrics(result, 1 / 2, 1 / 2, 3)
    # Its extended metrics use that candidate (sentence 2), not sentence 1.
    assert result["hpd_rank"] == pytest.approx(1 / 2)


def test_all_candidates_missed_take_the_first():
    result = metrics([0.9, 0.1, 0.2, 0.3], one_hot(4, 2), one_hot(4, 3))
    assert result["candidate"] == 0
    assert_metrics(result, 0, 1 / 4, 1 / 2)
    assert result["hpd_rank"] == pytest.approx(1 / 3)  # sentence 2 ranks third, not sentence 3 (second)


def test_duplicate_candidates_change_nothing():
    single = metrics([0.1, 0.9, 0.9, 0.2], one_hot(4, 2))
    duplicated = metrics([0.1, 0.9, 0.9, 0.2], one_hot(4, 2), one_hot(4, 2), one_hot(4, 0))
    assert single == duplicated
    assert_metrics(duplicated, 1 / 2, 1 / 2, 2)


@pytest.mark.parametrize("scores", [[0.1, 0.9], [0.1, 0.9, 0.3, 0.4], [], [[0.1, 0.9, 0.3]], ["a", "b", "c"],
                                    [[0.1], [0.2], [0.3]]])
def test_wrong_length_or_shape_is_a_fail(scores):
    assert sample_metrics(scores, [one_hot(3, 1)]) == {
        "fail": True, "candidate": None, "iou": None, "hpd": None, "snr": None, "hpd_rank": None, "snr_raw": None}


def test_missing_sample_is_a_fail():
    gold = {"a": GOLD["s-hit"], "b": GOLD["s-miss"]}
    result = score(gold, {"a": [1, 9, 3]})
    assert result["fails"] == 1 and result["n"] == 2
    assert result["per_sample"][1] == {"id": "b", "iou": None, "hpd": None, "snr": None, "hpd_rank": None,
                                       "snr_raw": None, "fail": True}
    assert result["IoU"] == 1 and result["HPD"] == 1  # the fail is excluded from the means


def closed_form(n, tied, gt):
    t, hit = len(tied), gt in tied
    if hit:
        return 1 / t, 1 / t, None if t in (1, n) else (n - t) / (t - 1)
    return 0.0, 1 / n, None if t == n - 1 else t / (n - 1 - t)


def test_closed_forms_hold_for_every_tie_pattern_up_to_eight_sentences():
    rng = np.random.default_rng(0)
    checked = 0
    for n in range(2, 9):
        for t in range(1, n + 1):
            for tied in itertools.combinations(range(n), t):
                scores = rng.uniform(0, 1, size=n)  # below the max of 2
                scores[list(tied)] = 2.0
                for gt in range(n):
                    result = sample_metrics(scores, [one_hot(n, gt)])
                    assert_metrics(result, *closed_form(n, tied, gt))
                    checked += 1
    assert checked == sum((2 ** n - 1) * n for n in range(2, 9))


def test_scale_sign_and_offset_of_scores_do_not_matter_for_the_official_metrics():
    base = metrics([0.1, 0.9, 0.9, 0.2, 0.4], one_hot(5, 4))
    shifted = metrics([-100 + 3 * x for x in [0.1, 0.9, 0.9, 0.2, 0.4]], one_hot(5, 4))
    assert {k: base[k] for k in ("iou", "hpd", "snr")} == {k: shifted[k] for k in ("iou", "hpd", "snr")}


# --------------------------------------------------------------------------- extended metrics

def test_hpd_rank_is_one_over_the_pessimistic_rank_of_the_gt():
    assert metrics([0.1, 0.9, 0.3, 0.2], one_hot(4, 2))["hpd_rank"] == pytest.approx(1 / 2)
    assert metrics([0.1, 0.9, 0.3, 0.2], one_hot(4, 0))["hpd_rank"] == pytest.approx(1 / 4)
    assert metrics([0.1, 0.9, 0.3, 0.2], one_hot(4, 1))["hpd_rank"] == 1
    # Ties count against the GT: three sentences score >= 5.
    assert metrics([5, 5, 5, 1], one_hot(4, 0))["hpd_rank"] == pytest.approx(1 / 3)
    assert metrics([5, 5, 5, 1], one_hot(4, 2))["hpd_rank"] == pytest.approx(1 / 3)
    # On a miss the official HPD is 1/n, the rank-based one is not.
    result = metrics([0.1, 0.9, 0.3, 0.2, 0.0], one_hot(5, 2))
    assert result["hpd"] == pytest.approx(1 / 5) and result["hpd_rank"] == pytest.approx(1 / 2)
    assert metrics([1, float("inf"), 3], one_hot(3, 1))["hpd_rank"] == 1


def test_snr_raw_by_hand():
    # GT 9, rest [1, 3]: mean 2, population variance 1: (9 - 2)^2 / 1 = 49.
    assert metrics([1, 9, 3], one_hot(3, 1))["snr_raw"] == pytest.approx(49)
    # GT 3, rest [9, 9, 1]: mean 19/3, variance 128/9: (3 - 19/3)^2 / (128/9) = (100/9) / (128/9).
    assert metrics([9, 9, 3, 1], one_hot(4, 2))["snr_raw"] == pytest.approx(100 / 128)
    # Sign-blind: the GT scoring lowest gives the same as the mirror image.
    assert metrics([-1, -9, -3], one_hot(3, 1))["snr_raw"] == pytest.approx(49)
    # GT 3, rest [3, 1, 0]: mean 4/3, variance 14/9: (5/3)^2 / (14/9) = 25/14.
    assert metrics([3, 3, 1, 0], one_hot(4, 0))["snr_raw"] == pytest.approx(25 / 14)


def test_snr_raw_is_undefined_without_noise():
    assert metrics([1, 2, 2], one_hot(3, 0))["snr_raw"] is None  # constant rest
    # 0.1 three times has a population std of ~1.4e-17 in floating point: still no noise.
    assert np.std([0.1, 0.1, 0.1]) != 0
    assert metrics([0.5, 0.1, 0.1, 0.1], one_hot(4, 0))["snr_raw"] is None
    assert metrics([0.5], [1])["snr_raw"] is None  # no rest at all
    assert metrics([1, float("inf"), 3], one_hot(3, 1))["snr_raw"] is None  # not finite


# --------------------------------------------------------------------------- aggregation

def test_score_of_the_fixture_by_hand():
    gold = validate_gold(GOLD)
    result = score(gold, {key: [float(x) for x in value] for key, value in SCORES.items()})
    # s-hit: hit T=1 (1, 1, NaN); s-miss: miss T=2 n=4 (0, 1/4, 2); s-tie: hit T=2 n=4 (1/2, 1/2, 2);
    # s-short: wrong length; s-missing: missing.
    assert [row["id"] for row in result["per_sample"]] == ["s-hit", "s-miss", "s-tie", "s-short", "s-missing"]
    assert [row["fail"] for row in result["per_sample"]] == [False, False, False, True, True]
    assert result["IoU"] == pytest.approx(1.5 / 3)
    assert result["HPD"] == pytest.approx(1.75 / 3)
    assert result["SNR"] == pytest.approx(2)
    assert result["IoU_std"] == pytest.approx(np.std([1, 0, 0.5]))
    assert result["HPD_std"] == pytest.approx(np.std([1, 0.25, 0.5]))
    assert result["SNR_std"] == pytest.approx(0, abs=1e-12)
    assert (result["fails"], result["no_snr"], result["n"]) == (2, 3, 5)  # no_snr counts fails, as officially
    assert result["HPD_rank"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 3)
    assert result["SNR_raw"] == pytest.approx((49 + 100 / 128 + 25 / 14) / 3)
    assert list(summary(result)) == ["IoU", "HPD", "SNR", "IoU_std", "HPD_std", "SNR_std", "fails", "no_snr",
                                     "n", "HPD_rank", "SNR_raw"]
    assert all(isinstance(value, (float, int)) and not isinstance(value, np.generic) for value in summary(result).values())


def test_score_ignores_ids_not_in_gold_and_gives_none_for_means_over_no_sample():
    result = score({"a": GOLD["s-hit"]}, {"zzz": [1, 2, 3]})
    assert summary(result) == {"IoU": None, "HPD": None, "SNR": None, "IoU_std": None, "HPD_std": None,
                               "SNR_std": None, "fails": 1, "no_snr": 1, "n": 1, "HPD_rank": None, "SNR_raw": None}
    empty = score({}, {})
    assert empty["n"] == 0 and empty["IoU"] is None


def test_tie_free_hits_only_leave_snr_undefined():
    result = score({"a": GOLD["s-hit"], "b": GOLD["s-tie"]}, {"a": [1, 9, 3], "b": [9, 1, 3, 0]})
    assert result["IoU"] == 1 and result["SNR"] is None and result["SNR_std"] is None
    assert result["no_snr"] == 2 and result["fails"] == 0


def test_nan_scores_in_aggregation_are_counted_fails():
    result = score({"a": GOLD["s-miss"], "b": GOLD["s-miss"]}, {"a": [1, NAN, 3, 4], "b": [4, 3, 2, 1]})
    assert result["fails"] == 1 and result["n"] == 2
    assert result["IoU"] == metrics([4, 3, 2, 1], GOLD["s-miss"]["gt_candidates"][0])["iou"]


def test_official_percent_formatting():
    assert official_percent({"IoU": 0.911249, "HPD": 0.930051, "SNR": None}) == {"IoU": 91.12, "HPD": 93.01,
                                                                                   "SNR": None}
    assert official_percent({"IoU": 0.2464, "HPD": 0.4028, "SNR": 0.3504}) == {"IoU": 24.64, "HPD": 40.28,
                                                                               "SNR": 35.04}
    result = score(validate_gold(GOLD), SCORES)
    assert official_percent(result) == {"IoU": 50.0, "HPD": 58.33, "SNR": 200.0}
    assert official_percent(result, ["HPD_rank"]) == {"HPD_rank": 61.11}


def test_bootstrap_intervals_cover_the_means():
    result = score(validate_gold(GOLD), SCORES)
    intervals = bootstrap_intervals(result, n_resamples=200)
    assert set(intervals) == {"IoU", "HPD", "SNR", "HPD_rank", "SNR_raw"}
    for key, (low, high) in intervals.items():
        assert low - 1e-9 <= result[key] <= high + 1e-9
    assert bootstrap_intervals(score({"a": GOLD["s-hit"]}, {}))["IoU"] is None


# --------------------------------------------------------------------------- gold validation

@pytest.mark.parametrize("gold, message", [
    ([], "top level must be a JSON object"),
    ({"a": []}, '["a"] must be an object, found an array'),
    ({"a": {"gt_candidates": [[1]]}}, '["a"].sentences is missing'),
    ({"a": {"sentences": [], "gt_candidates": [[1]]}}, '["a"].sentences must not be empty'),
    ({"a": {"sentences": ["x", 3], "gt_candidates": [[1, 0]]}}, '["a"].sentences[1] must be a string, found a number'),
    ({"a": {"sentences": ["x"], "gt_candidates": []}}, '["a"].gt_candidates must not be empty'),
    ({"a": {"sentences": ["x"], "gt_candidates": [1]}}, '["a"].gt_candidates[0] must be an array, found a number'),
    ({"a": {"sentences": ["x", "y"], "gt_candidates": [[1]]}},
     '["a"].gt_candidates[0] has 1 items but ["a"].sentences has 2'),
    ({"a": {"sentences": ["x", "y"], "gt_candidates": [[1, 0], [0, 2]]}},
     '["a"].gt_candidates[1] must hold only the integers 0 and 1'),
    ({"a": {"sentences": ["x", "y"], "gt_candidates": [[True, False]]}}, "must hold only the integers 0 and 1"),
    ({"a": {"sentences": ["x", "y"], "gt_candidates": [[1, 1]]}}, "must be one-hot (exactly one 1), found 2 ones"),
    ({"a": {"sentences": ["x", "y"], "gt_candidates": [[0, 0]]}}, "must be one-hot (exactly one 1), found 0 ones"),
])
def test_validate_gold_messages(gold, message):
    with pytest.raises(InvalidQuackieGold) as error:
        validate_gold(gold)
    assert message in str(error.value)
    assert '"x"' not in str(error.value) and '"y"' not in str(error.value)


# --------------------------------------------------------------------------- score files

IDS = ["a", "b", "c"]


def parse(text, ids=IDS, **kwargs):
    return parse_scores(text, ids, max_bytes=kwargs.pop("max_bytes", 10_000), **kwargs)


def rejected(text, ids=IDS, **kwargs):
    with pytest.raises(InvalidPredictions) as error:
        parse(text, ids, **kwargs)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_parse_scores_accepts_numbers_missing_ids_wrong_lengths_and_empty_arrays():
    assert parse('{"a": [1, 2.5, -3e-2], "b": []}') == {"a": [1.0, 2.5, -0.03], "b": []}
    assert parse(b'\xef\xbb\xbf{"c": [0]}') == {"c": [0.0]}  # UTF-8 BOM
    assert parse("{}") == {}
    assert all(type(x) is float for x in parse('{"a": [1, 2]}')["a"])
    assert parse('{"a": [1]}', ids=iter(IDS)) == {"a": [1.0]}  # any iterable of ids


def test_parse_scores_rejects_non_finite_numbers():
    text = '{\n"a": [1, NaN, 2],\n"b": [Infinity],\n"c": [0, -Infinity, NaN]\n}'
    assert rejected(text) == ('invalid scores: line 2: "a"[1] is NaN, expected a finite number; '
                              'line 3: "b"[0] is Infinity, expected a finite number; '
                              'line 4: "c"[1] is -Infinity, expected a finite number (and 1 more in this array)')
    assert rejected('{"a": [1e400]}') == 'invalid scores: line 1: "a"[0] is Infinity, expected a finite number'
    assert "a number too large for a double" in rejected('{"a": [1' + "0" * 400 + "]}")


def test_parse_scores_rejects_strings_booleans_nulls_and_nesting():
    text = '{"a": [1, "2"], "b": [true], "c": [[0.5]]}'
    assert rejected(text) == ('invalid scores: line 1: "a"[1] is a string, expected a finite number; '
                              'line 1: "b"[0] is a boolean, expected a finite number; '
                              'line 1: "c"[0] is an array, expected a finite number')
    assert rejected('{"a": [null]}') == 'invalid scores: line 1: "a"[0] is null, expected a finite number'
    assert rejected('{"a": [{"x": 1}]}') == 'invalid scores: line 1: "a"[0] is an object, expected a finite number'
    assert rejected('{"a": {"0": 1}}') == 'invalid scores: line 1: "a" is an object, expected an array of numbers'
    assert rejected('{"a": 0.5}') == 'invalid scores: line 1: "a" is a number, expected an array of numbers'
    assert rejected('{"a": "1 2"}') == 'invalid scores: line 1: "a" is a string, expected an array of numbers'


def test_parse_scores_rejects_duplicates_and_unknown_ids():
    assert rejected('{\n"a": [1],\n"b": [2],\n"a": [3]\n}') == 'duplicated sample ids: line 4: "a" (first at line 2)'
    text = "{\n" + ",\n".join(f'"x{i}": [1]' for i in range(7)) + ',\n"a": [1]\n}'
    assert rejected(text) == ('sample ids not in the track\'s inputs: line 2: "x0"; line 3: "x1"; line 4: "x2"; '
                              'line 5: "x3"; line 6: "x4"; and 2 more')


def test_parse_scores_rejects_non_objects_bad_json_and_oversized_files():
    assert rejected("[1, 2]").startswith('top level must be a JSON object {"<sample id>": [<score>, ...]}, found an array')
    assert rejected('{"a": [1,]}').startswith("not valid JSON: ")
    assert "not UTF-8" in rejected(b'{"a": [1], "\xff": [2]}')
    assert "over the limit of 10 bytes" in rejected('{"a": [1, 2, 3]}', max_bytes=10)
    assert "nested too deeply" in rejected('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", max_bytes=10**6)


def test_parse_scores_errors_never_carry_gold_text():
    # parse_scores only ever sees the ids, so its messages can only name the submitter's own strings.
    message = rejected('{"s-hit": ["x"]}', ids=list(GOLD))
    assert message == 'invalid scores: line 1: "s-hit"[0] is a string, expected a finite number'
