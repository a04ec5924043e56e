"""ExpMRC scoring: official figures, tokenization quirks (docs/metrics.md#expmrc), aggregation."""
import json
from pathlib import Path

import nltk
import pytest

from scoring.metrics import expmrc
from scoring.metrics.expmrc import (
    MULTICHOICE,
    SPAN,
    f1_against_references,
    key_spec,
    mixed_segmentation,
    normalize_tokens,
    parse_predictions,
    score_predictions,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "expmrc"
OFFICIAL_DATA = REPO.parent / "shared" / "data" / "expmrc"
# A few dozen dev questions with the official figures of the sample predictions for them: parity
# is checked in every clone (the folder's README says how the figures were produced).
OFFICIAL_FIXTURE = REPO / "tests" / "fixtures" / "expmrc_official"
FIXTURE_FIGURES = json.loads((OFFICIAL_FIXTURE / "figures.json").read_text(encoding="utf-8"))


def load_fixture(name):
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def tokens(text):
    return normalize_tokens(mixed_segmentation(text))


# ----------------------------------------------------------------- official figures

OFFICIAL_FIGURES = {  # ALL / ANS / EVI, TOTAL, from the official script with nltk 3.9.2
    "squad": ("71.690", "92.875", "76.760", 501),
    "cmrc2018": ("53.090", "83.379", "62.612", 515),
    "race": ("32.612", "68.984", "44.115", 561),
    "c3": ("49.970", "75.248", "63.302", 505),
}


@pytest.mark.skipif(not OFFICIAL_DATA.is_dir(), reason=f"official ExpMRC dev data not found at {OFFICIAL_DATA}")
@pytest.mark.parametrize("subset", OFFICIAL_FIGURES)
def test_official_sample_submissions_reproduce_official_figures(subset):
    gold = json.loads((OFFICIAL_DATA / f"expmrc-{subset}-dev.json").read_bytes())
    raw = (OFFICIAL_DATA / "sample_submission" / f"{subset}.json").read_bytes()
    predictions = parse_predictions(raw, key_spec(gold))  # the official samples pass validation
    expmrc.clear_token_cache()
    cold = score_predictions(gold, predictions)
    warm = score_predictions(gold, predictions)
    all_f1, ans_f1, evi_f1, total = OFFICIAL_FIGURES[subset]
    assert cold.official_dict("x.json") == {
        "ALL_F1": all_f1, "ANS_F1": ans_f1, "EVI_F1": evi_f1, "TOTAL": total, "SKIP": 0,
        "VERSION": f"expmrc-{subset}-dev", "FILE": "x.json",
    }
    assert warm == cold  # the token cache changes nothing, to the last bit


@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_the_official_figure_fixture_is_reproduced_to_the_printed_digit(subset):
    gold = json.loads((OFFICIAL_FIXTURE / f"{subset}-gold.json").read_bytes())
    raw = (OFFICIAL_FIXTURE / f"{subset}-predictions.json").read_bytes()
    predictions = parse_predictions(raw, key_spec(gold))  # the official samples pass validation
    expmrc.clear_token_cache()
    score = score_predictions(gold, predictions)
    assert score.official_dict("x.json") == {**FIXTURE_FIGURES[subset], "FILE": "x.json"}
    assert score.total == len(predictions) >= 12 and score.unanswered == 0


def test_missing_predictions_count_as_skip_and_stay_in_denominator_on_the_official_fixture():
    gold = json.loads((OFFICIAL_FIXTURE / "race-gold.json").read_bytes())
    predictions = json.loads((OFFICIAL_FIXTURE / "race-predictions.json").read_bytes())
    kept = dict(list(predictions.items())[:5])
    score = score_predictions(gold, kept)
    full = score_predictions(gold, predictions)
    assert (score.total, score.unanswered) == (13, 8)
    assert score.official_dict("x.json")["SKIP"] == 8
    assert score.overall == pytest.approx(100 * sum(q["overall"] for q in full.per_question[:5]) / 13)


@pytest.mark.skipif(not OFFICIAL_DATA.is_dir(), reason=f"official ExpMRC dev data not found at {OFFICIAL_DATA}")
@pytest.mark.parametrize("subset", ["squad", "cmrc2018", "race", "c3"])
def test_the_official_figure_fixture_is_taken_unmodified_from_the_dev_data(subset):
    gold = json.loads((OFFICIAL_DATA / f"expmrc-{subset}-dev.json").read_bytes())
    sample = json.loads((OFFICIAL_DATA / "sample_submission" / f"{subset}.json").read_bytes())
    kept = json.loads((OFFICIAL_FIXTURE / f"{subset}-gold.json").read_bytes())
    predictions = json.loads((OFFICIAL_FIXTURE / f"{subset}-predictions.json").read_bytes())
    assert kept["version"] == gold["version"]
    assert predictions == {key: sample[key] for key in predictions}
    if subset in ("race", "c3"):  # whole passages, the first ones
        assert kept["data"] == gold["data"][:len(kept["data"])]
    else:  # the first questions, each as in the dev set
        dev_questions = [qa for article in gold["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
        kept_questions = [qa for article in kept["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
        assert kept_questions == dev_questions[:len(kept_questions)]
        contexts = {paragraph["context"] for article in gold["data"] for paragraph in article["paragraphs"]}
        assert all(paragraph["context"] in contexts for article in kept["data"] for paragraph in article["paragraphs"])


@pytest.mark.skipif(not OFFICIAL_DATA.is_dir(), reason=f"official ExpMRC dev data not found at {OFFICIAL_DATA}")
def test_missing_predictions_count_as_skip_and_stay_in_denominator_on_official_data():
    gold = json.loads((OFFICIAL_DATA / "expmrc-race-dev.json").read_bytes())
    predictions = json.loads((OFFICIAL_DATA / "sample_submission" / "race.json").read_bytes())
    kept = dict(list(predictions.items())[:100])
    score = score_predictions(gold, kept)
    full = score_predictions(gold, predictions)
    assert (score.total, score.unanswered) == (561, 461)
    first_100 = sum(q["overall"] for q in full.per_question[:100])
    assert score.overall == pytest.approx(100 * first_100 / 561)


# ----------------------------------------------------------------- NLTK model

def test_vendored_punkt_model_is_first_on_nltk_path_and_used():
    assert Path(nltk.data.path[0]) == REPO / "scoring" / "resources" / "nltk_data"
    # Punkt's English abbreviation list keeps "Mr." and "St." whole (an untrained model would not).
    assert mixed_segmentation("Mr. Smith went to St. Louis.") == ["Mr.", "Smith", "went", "to", "St.", "Louis", "."]


# ----------------------------------------------------------------- segmentation quirks

def test_each_cjk_character_is_one_token_and_latin_runs_go_through_nltk():
    assert mixed_segmentation("中文abc def中") == ["中", "文", "abc", "def", "中"]


def test_cjk_range_edges():
    assert mixed_segmentation("\u4e00\u9fa5") == ["\u4e00", "\u9fa5"]  # both ends are inside
    assert mixed_segmentation("\u9fa6\u9fa6") == ["\u9fa6\u9fa6"]  # U+9FA6 is outside: one NLTK token
    assert mixed_segmentation("\u4dff\u4dff") == ["\u4dff\u4dff"]  # just below U+4E00 (Extension A end)
    assert mixed_segmentation("〇〇") == ["〇〇"]  # ideographic zero is not in the range


def test_full_width_latin_is_not_split_per_character():
    assert mixed_segmentation("Ｆｕｌｌ１２３") == ["Ｆｕｌｌ１２３"]


def test_special_characters_split_english_before_nltk():
    assert mixed_segmentation("well-known") == ["well", "-", "known"]
    assert mixed_segmentation("3:30") == ["3", ":", "30"]
    assert mixed_segmentation("a_b*c^d/e\\f~g`h+i=j") == list("a_b*c^d/e\\f~g`h+i=j")
    assert tokens("well-known at 3:30") == ["well", "known", "at", "3", "30"]


def test_leading_and_trailing_whitespace_is_stripped_and_blank_is_empty():
    assert mixed_segmentation("  hello  ") == ["hello"]
    assert mixed_segmentation(" \t\n") == []
    assert mixed_segmentation("中 文") == ["中", "文"]


def test_non_strings_are_str_ed_like_the_official_script():
    assert mixed_segmentation(None) == ["None"]
    assert mixed_segmentation(1858) == ["1858"]


# ----------------------------------------------------------------- normalization quirks

def test_article_drop_is_exact_and_case_sensitive_before_lower_casing():
    assert normalize_tokens(["The", "the", "A", "a", "an", "An", "THE", "Beatles"]) == ["the", "a", "an", "the", "beatles"]
    assert f1_against_references(["Melbourne"], "The Melbourne") == pytest.approx(2 / 3)
    assert f1_against_references(["Melbourne"], "the Melbourne") == 1.0
    assert tokens("THE BEATLES") == ["the", "beatles"]


def test_only_single_character_punctuation_is_dropped():
    assert tokens('say "hi", ok.') == ["say", "``", "hi", "''", "ok"]  # NLTK's quote tokens stay
    assert tokens("wait ... no") == ["wait", "...", "no"]
    # "--" never reaches NLTK: "-" is a special character, split off and dropped first.
    assert tokens("no -- yes") == ["no", "yes"]
    assert tokens("好……") == ["好", "……"]  # the two-character special item is a token
    assert tokens("好——") == ["好", "——"]
    assert tokens("wait …") == ["wait"]  # a lone "…" is one of the punctuation characters
    assert tokens("，。：？！“”；’《》·、「」（）－～『』") == []


def test_lenticular_brackets_are_kept():
    assert tokens("【村雨城】") == ["【", "村", "雨", "城", "】"]
    assert f1_against_references(["村雨城"], "【村雨城】") == pytest.approx(0.75)


def test_left_single_quote_is_kept_while_right_single_quote_is_dropped():
    assert mixed_segmentation("‘x’") == ["‘", "x", "’"]
    assert tokens("‘x’") == ["‘", "x"]


# ----------------------------------------------------------------- NLTK 3.9.2 tokenization
# Reference §6: nltk 3.9.3+ splits dashes inside words and 3.10.1+ splits a leading apostrophe
# off; the official figures are those of nltk <= 3.9.2, so these pins fail on a silent upgrade.

def test_nltk_is_the_pinned_release():
    assert nltk.__version__ == "3.9.2"


def test_a_leading_apostrophe_stays_on_its_word():
    assert mixed_segmentation("'The cat") == ["'The", "cat"]
    assert tokens("he said 'The end'") == ["he", "said", "'the", "end"]  # "'The" is no article
    assert f1_against_references(["Melbourne"], "'The Melbourne") == pytest.approx(2 / 3)


def test_a_str_ed_list_keeps_the_apostrophe_on_the_word():
    # §7.8: a span answer ["Melbourne"] is scored as "['Melbourne']"
    assert mixed_segmentation(["Melbourne"]) == ["[", "'Melbourne", "'", "]"]
    assert f1_against_references(["Melbourne"], ["Melbourne"]) == 0.0


@pytest.mark.parametrize("dash", ["\u2012", "\u2013", "\u2014", "\u2015"])
def test_a_dash_between_words_is_not_split(dash):
    assert mixed_segmentation(f"1869{dash}1909") == [f"1869{dash}1909"]
    assert f1_against_references([f"1869{dash}1909"], f"1869 {dash} 1909") == 0.0


def test_spaced_dashes_and_angle_brackets_are_kept_as_tokens():
    # §7.3: "—" and "〈〉" are neither special items nor ASCII punctuation
    assert tokens("x \u2014 y") == ["x", "\u2014", "y"]
    assert tokens("x \u2013 y") == ["x", "\u2013", "y"]
    assert tokens("〈世界〉") == ["〈", "世", "界", "〉"]
    assert tokens("《世界》") == ["世", "界"]  # the book-title marks are special items, dropped
    assert mixed_segmentation("〈x〉") == ["〈x〉"]  # next to Latin text, NLTK keeps them on the word
    assert f1_against_references(["世界"], "〈世界〉") == pytest.approx(2 / 3)


def test_contractions_and_possessives_are_kept_as_multi_character_tokens():
    assert mixed_segmentation("isn't it") == ["is", "n't", "it"]
    assert tokens("John's car") == ["john", "'s", "car"]
    assert f1_against_references(["John car"], "John's car") == pytest.approx(0.8)


# ----------------------------------------------------------------- F1

def test_f1_is_a_bag_of_tokens_score():
    assert f1_against_references(["Saint Bernadette Soubirous"], "Bernadette Soubirous, a saint") == 1.0
    assert f1_against_references(["x x y"], "x y y") == pytest.approx(2 / 3)  # multiset intersection


def test_f1_takes_the_maximum_over_references_and_duplicates_change_nothing():
    assert f1_against_references(["cat", "black cat"], "black cat") == 1.0
    assert f1_against_references(["cat", "cat", "cat"], "black cat") == f1_against_references(["cat"], "black cat")


def test_empty_side_rule():
    assert f1_against_references([","], "。") == 1.0  # both sides normalize to nothing
    assert f1_against_references([","], "cat") == 0.0
    assert f1_against_references(["cat"], "the") == 0.0
    assert f1_against_references(["cat"], "") == 0.0
    assert f1_against_references(["dog"], "cat") == 0.0  # no overlap


def test_f1_needs_a_reference():
    with pytest.raises(ValueError):
        f1_against_references([], "cat")


def test_chinese_f1_is_character_level():
    gold = "此模式是任天堂游戏谜之村雨城改编的新增模式。"  # 21 characters once "。" is dropped
    assert f1_against_references([gold], "任天堂游戏谜之村雨城改编的新增模式") == pytest.approx(2 * 17 / 38)


def test_multichoice_answer_is_raw_letter_equality():
    assert expmrc.choice_score("C", "C") == 1.0
    for wrong in ("c", "C ", " C", 2, ["C"], "B"):
        assert expmrc.choice_score("C", wrong) == 0.0


# ----------------------------------------------------------------- dispatch, keys, aggregation

@pytest.mark.parametrize("version, kind", [
    ("expmrc-squad-dev", SPAN), ("expmrc-cmrc2018-test", SPAN),
    ("expmrc-race-dev", MULTICHOICE), ("expmrc-c3-test", MULTICHOICE),
])
def test_task_kind_dispatches_on_version_substring(version, kind):
    assert expmrc.task_kind({"version": version, "data": []}) == kind


def test_multichoice_keys_are_passage_id_dash_index_even_when_ids_contain_dashes():
    spec = key_spec(load_fixture("mc_gold.json"))
    assert spec.keys == ("m6-80-0", "m6-80-1", "m6-0", "5-21-0")
    assert spec.option_letters == "ABCD"


def test_span_keys_in_file_order():
    spec = key_spec(load_fixture("span_gold.json"))
    assert spec == expmrc.KeySpec(SPAN, ("en-1", "en-2", "DEV_7_QUERY_0", "en-3"), "")


def test_span_fixture_scores_and_per_question_rows():
    score = score_predictions(load_fixture("span_gold.json"), load_fixture("span_pred.json"))
    rows = {row["key"]: row for row in score.per_question}
    assert [row["key"] for row in score.per_question] == ["en-1", "en-2", "DEV_7_QUERY_0", "en-3"]
    assert rows["en-1"]["answer"] == rows["en-1"]["evidence"] == 1.0
    assert rows["en-2"]["answer"] == pytest.approx(2 / 3) and rows["en-2"]["evidence"] == pytest.approx(0.8)
    assert rows["DEV_7_QUERY_0"]["answer"] == pytest.approx(0.75)
    assert rows["en-3"] == {"key": "en-3", "answer": 0.0, "evidence": 0.0, "overall": 0.0, "answered": False}
    assert (score.kind, score.total, score.unanswered) == (SPAN, 4, 1)
    assert score.official_dict("p.json") == {
        "ALL_F1": "55.110", "ANS_F1": "60.417", "EVI_F1": "67.368", "TOTAL": 4, "SKIP": 1,
        "VERSION": "expmrc-squad-fixture", "FILE": "p.json",
    }
    assert list(score.official_dict("p.json")) == ["ALL_F1", "ANS_F1", "EVI_F1", "TOTAL", "SKIP", "VERSION", "FILE"]


def test_overall_is_the_mean_of_products_not_the_product_of_means():
    score = score_predictions(load_fixture("mc_gold.json"), load_fixture("mc_pred.json"))
    assert (score.answer, score.evidence, score.overall) == (25.0, 68.75, 25.0)
    assert score.answer * score.evidence / 100 != pytest.approx(score.overall)


def test_letter_beyond_the_questions_own_options_is_accepted_and_scores_zero():
    gold = load_fixture("mc_gold.json")
    predictions = parse_predictions(b'{"m6-0": {"answer": "D", "evidence": "The cat sat."}}', key_spec(gold))
    row = score_predictions(gold, predictions).per_question[2]
    assert row["key"] == "m6-0" and row["answer"] == 0.0 and row["evidence"] == pytest.approx(0.75)


def test_missing_keys_score_zero_in_the_denominator_and_empty_file_scores_zero():
    gold = load_fixture("span_gold.json")
    score = score_predictions(gold, parse_predictions(b"{}", key_spec(gold)))
    assert score.official_dict("f")["ALL_F1"] == "0.000"
    assert (score.answer, score.evidence, score.overall, score.total, score.unanswered) == (0.0, 0.0, 0.0, 4, 4)
    assert all(row["answered"] is False for row in score.per_question)


def test_span_predictions_that_are_not_strings_are_str_ed_like_the_official_script():
    score = score_predictions(load_fixture("span_gold.json"), {"en-3": {"answer": 1858, "evidence": None}})
    assert score.per_question[3]["answer"] == 1.0 and score.per_question[3]["evidence"] == 0.0


def test_score_rejects_an_entry_without_fields_instead_of_crashing():
    with pytest.raises(expmrc.InvalidPredictions, match='"en-1"'):
        score_predictions(load_fixture("span_gold.json"), {"en-1": "Melbourne"})


# ----------------------------------------------------------------- public inputs

@pytest.mark.parametrize("subset", ["squad", "cmrc2018"])
def test_public_inputs_of_a_span_set_keep_passages_and_questions_only(subset):
    gold = json.loads((OFFICIAL_FIXTURE / f"{subset}-gold.json").read_bytes())
    gold["data"][0]["paragraphs"][0]["qas"][0]["secret"] = "an unexpected gold field"
    del gold["data"][-1]["title"]
    public = expmrc.public_inputs(gold)
    assert set(public) == {"version", "data"} and public["version"] == gold["version"]
    assert [article["title"] for article in public["data"]] == [a.get("title", "") for a in gold["data"]]
    assert public["data"][-1]["title"] == ""
    for article, source in zip(public["data"], gold["data"], strict=True):
        assert set(article) == {"title", "paragraphs"}
        for paragraph, original in zip(article["paragraphs"], source["paragraphs"], strict=True):
            assert set(paragraph) == ({"id", "context", "qas"} if subset == "cmrc2018" else {"context", "qas"})
            assert paragraph["context"] == original["context"] and paragraph.get("id") == original.get("id")
            assert paragraph["qas"] == [{"id": qa["id"], "question": qa["question"]} for qa in original["qas"]]


def test_public_inputs_of_a_multichoice_set_keep_passages_questions_and_options_only():
    gold = json.loads((OFFICIAL_FIXTURE / "race-gold.json").read_bytes())
    public = expmrc.public_inputs(gold)
    assert set(public) == {"version", "data"} and public["version"] == "expmrc-race-dev"
    assert public["data"] == [{"id": p["id"], "article": p["article"], "questions": p["questions"],
                               "options": p["options"]} for p in gold["data"]]
    assert "answers" not in json.dumps(public) and "evidences" not in json.dumps(public)
