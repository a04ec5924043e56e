"""Upload validation (docs/metrics.md#expmrc) and gold-file validation: every rule, with its message."""
import codecs
import copy
import json
from pathlib import Path

import pytest

from scoring.metrics.expmrc import (
    DEFAULT_MAX_BYTES,
    MULTICHOICE,
    SPAN,
    InvalidGold,
    InvalidPredictions,
    KeySpec,
    check_gold,
    key_spec,
    parse_predictions,
    task_kind,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "expmrc"
SPAN_GOLD = json.loads((FIXTURES / "span_gold.json").read_text(encoding="utf-8"))
MC_GOLD = json.loads((FIXTURES / "mc_gold.json").read_text(encoding="utf-8"))
SPAN_SPEC, MC_SPEC = key_spec(SPAN_GOLD), key_spec(MC_GOLD)


def gold_texts(gold):
    """Every gold string that is not an id, version or letter: none may appear in a message."""
    texts = []
    for article in gold["data"]:
        if "paragraphs" in article:
            for paragraph in article["paragraphs"]:
                texts.append(paragraph["context"])
                for qa in paragraph["qas"]:
                    texts += [qa["question"], *qa["evidences"], *(answer["text"] for answer in qa["answers"])]
        else:
            texts += [article["article"], *article["questions"]]
            texts += [text for group in article["options"] + article["evidences"] for text in group]
    return texts


def rejected(raw, spec=SPAN_SPEC, **kwargs) -> str:
    with pytest.raises(InvalidPredictions) as info:
        parse_predictions(raw, spec, **kwargs)
    message = str(info.value)
    assert "\n" not in message and len(message.splitlines()) == 1
    gold = SPAN_GOLD if spec is SPAN_SPEC else MC_GOLD
    for text in gold_texts(gold):
        assert text not in message
    return message


def entry(answer="x", evidence="y"):
    return {"answer": answer, "evidence": evidence}


def encode(document) -> bytes:
    return json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")


# ----------------------------------------------------------------- accepted input

def test_valid_file_round_trips_and_drops_extra_fields():
    raw = encode({"en-1": {"answer": "a", "evidence": "b", "confidence": 0.9}, "en-2": entry()})
    assert parse_predictions(raw, SPAN_SPEC) == {"en-1": entry("a", "b"), "en-2": entry()}


def test_empty_object_is_valid_and_missing_keys_are_fine():
    assert parse_predictions(b"{}", SPAN_SPEC) == {}
    assert parse_predictions(b' \n{ }\n', MC_SPEC) == {}


def test_utf8_bom_is_accepted_and_stripped():
    raw = codecs.BOM_UTF8 + encode({"DEV_7_QUERY_0": entry("村雨城", "模式")})
    assert parse_predictions(raw, SPAN_SPEC) == {"DEV_7_QUERY_0": entry("村雨城", "模式")}


def test_span_answers_are_free_text():
    assert parse_predictions(encode({"en-1": entry("", "")}), SPAN_SPEC) == {"en-1": entry("", "")}


def test_key_spec_round_trips_through_a_plain_dict():
    assert KeySpec.from_dict(json.loads(json.dumps(MC_SPEC.to_dict()))) == MC_SPEC
    assert MC_SPEC.to_dict() == {"kind": MULTICHOICE, "keys": ["m6-80-0", "m6-80-1", "m6-0", "5-21-0"],
                                 "option_letters": "ABCD"}
    with pytest.raises(ValueError):
        KeySpec.from_dict({"kind": "other", "keys": [], "option_letters": ""})


# ----------------------------------------------------------------- rejections, in the order of docs/metrics.md#expmrc

def test_file_over_the_size_limit():
    assert DEFAULT_MAX_BYTES == 50 * 1024 * 1024
    message = rejected(b"{}" + b" " * 99, max_bytes=100)
    assert "101 bytes" in message and "limit of 100 bytes" in message


def test_size_is_checked_before_anything_else():
    assert "limit" in rejected(b"\xff" * 20, max_bytes=10)


def test_not_utf8_names_line_and_byte():
    message = rejected(b'{\n"en-1": {"answer": "caf\xe9", "evidence": "y"}}')
    assert "not UTF-8" in message and "0xe9" in message and "line 2" in message


def test_utf16_is_rejected_with_a_hint():
    message = rejected(json.dumps({"en-1": entry()}).encode("utf-16"))
    assert "not UTF-8" in message and "UTF-16" in message


def test_not_json_names_line_and_column():
    message = rejected(b'{"en-1": {"answer": "x", "evidence": "y"},\n  "en-2" }')
    assert "not valid JSON" in message and "line 2, column 10" in message


def test_absurdly_deep_nesting_is_rejected_not_crashing():
    assert "nested too deeply" in rejected(b"[" * 100_000 + b"]" * 100_000)


@pytest.mark.parametrize("number", ["9" * 5000, "-" + "1" * 4301])
def test_integer_over_the_conversion_limit_is_rejected_not_crashing(number):
    # int() refuses over 4300 digits with a plain ValueError, which is not a JSONDecodeError
    raw = '{"en-1": {"answer": %s, "evidence": "y"}}' % number
    assert rejected(raw) == "not valid JSON: a number has more than 4300 digits"


def test_long_fractions_are_not_limited():
    raw = '{"en-1": {"answer": %s, "evidence": "y"}}' % ("0." + "1" * 5000)
    assert 'field "answer"' in rejected(raw)


@pytest.mark.parametrize("raw, found", [
    (b"[]", "an array"), (b'"en-1"', "a string"), (b"null", "null"), (b"3", "a number"), (b"true", "a boolean"),
])
def test_top_level_must_be_an_object(raw, found):
    message = rejected(raw)
    assert "top level must be a JSON object" in message and f"found {found}" in message


def test_duplicated_key_names_key_and_both_lines():
    raw = b'{\n"en-1": {"answer": "x", "evidence": "y"},\n"en-2": {"answer": "x", "evidence": "y"},\n' \
          b'"en-1": {"answer": "z", "evidence": "y"}\n}'
    message = rejected(raw)
    assert message.startswith("duplicated keys") and '"en-1"' in message
    assert "line 4" in message and "first at line 2" in message


def test_duplicated_field_inside_an_entry():
    message = rejected(b'{"en-1": {"answer": "x", "answer": "z", "evidence": "y"}}')
    assert '"en-1"' in message and 'field "answer" appears more than once' in message


def test_duplicates_are_reported_before_unknown_keys():
    assert rejected(b'{"nope": {"answer": "x", "evidence": "y"}, "nope": 1}').startswith("duplicated keys")


@pytest.mark.parametrize("value, found", [
    ("Melbourne", "a string"), (["x", "y"], "an array"), (None, "null"), (7, "a number"),
])
def test_entry_that_is_not_an_object(value, found):
    message = rejected(encode({"en-1": entry(), "en-2": value}))
    assert '"en-2": entry is ' + found in message and "line 6" in message


@pytest.mark.parametrize("missing", ["answer", "evidence"])
def test_entry_lacking_a_field(missing):
    value = entry()
    del value[missing]
    message = rejected(encode({"en-2": value}))
    assert f'"en-2": field "{missing}" is missing' in message


@pytest.mark.parametrize("value, found", [
    (1858, "a number"), (None, "null"), (["x"], "an array"), ({"t": "x"}, "an object"), (False, "a boolean"),
])
def test_field_value_that_is_not_a_string(value, found):
    message = rejected(encode({"en-1": entry(), "en-3": entry(evidence=value)}))
    assert f'"en-3": field "evidence" is {found}, expected a string' in message


def test_unpaired_surrogate_escape_is_rejected():
    assert "surrogate" in rejected(b'{"en-1": {"answer": "\\ud800", "evidence": "y"}}')


def test_entry_problems_name_at_most_five_and_count_the_rest():
    keys = [f"en-{i}" for i in range(8)]
    message = rejected(encode({key: i for i, key in enumerate(keys)}), KeySpec(SPAN, tuple(keys), ""))
    assert message.count("entry is a number") == 5 and message.endswith("and 3 more")
    assert '"en-0"' in message and '"en-5"' not in message


@pytest.mark.parametrize("answer", ["a", "E", "AB", " A", "A ", "", "Ａ", "1"])
def test_multichoice_answer_must_be_an_uppercase_option_letter(answer):
    message = rejected(encode({"m6-80-0": entry(answer)}), MC_SPEC)
    assert "A, B, C, D" in message and '"m6-80-0"' in message and "line 2" in message


def test_multichoice_letter_check_uses_the_largest_option_count_of_the_set():
    # m6-0 has three options; "D" is allowed by validation (and scores 0, as officially).
    assert parse_predictions(encode({"m6-0": entry("D")}), MC_SPEC) == {"m6-0": entry("D")}
    three = KeySpec(MULTICHOICE, ("p-0",), "ABC")
    assert "A, B, C)" in rejected(encode({"p-0": entry("D")}), three)


def test_multichoice_keys_with_dashes_are_matched_whole():
    assert parse_predictions(encode({"5-21-0": entry("C"), "m6-80-1": entry("B")}), MC_SPEC)
    message = rejected(encode({"m6-80": entry("C"), "5-21-1": entry("C")}), MC_SPEC)
    assert '"m6-80"' in message and '"5-21-1"' in message


def test_unknown_keys_name_up_to_five_with_lines_and_count_the_rest():
    document = {"en-1": entry(), **{f"bogus-{i}": entry() for i in range(7)}}
    message = rejected(encode(document))
    assert message.startswith("keys not in the test set")
    assert all(f'"bogus-{i}"' in message for i in range(5)) and '"bogus-5"' not in message
    assert message.endswith("and 2 more") and "line 6" in message


def test_long_keys_are_shortened_in_messages():
    message = rejected(encode({"k" * 5000: entry()}))
    assert len(message) < 200


# ----------------------------------------------------------------- gold files

def broken(gold, mutate):
    """The InvalidGold message for a mutated copy of ``gold``; it must not quote gold text."""
    copied = copy.deepcopy(gold)
    mutate(copied)
    with pytest.raises(InvalidGold) as info:
        check_gold(copied)
    message = str(info.value)
    for text in gold_texts(gold):
        assert text not in message
    return message


def test_dev_like_fixtures_are_valid_gold_including_answer_start_minus_one():
    check_gold(SPAN_GOLD)
    check_gold(MC_GOLD)
    assert SPAN_GOLD["data"][1]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] == -1


@pytest.mark.parametrize("gold, message", [
    ([], "top level must be a JSON object"),
    ({"data": []}, "version must be a string"),
    ({"version": "1.0", "data": []}, "Unsupported version: '1.0'"),
])
def test_gold_top_level(gold, message):
    with pytest.raises(InvalidGold, match=message):
        task_kind(gold)


def test_task_kind_values():
    assert task_kind(SPAN_GOLD) == SPAN and task_kind(MC_GOLD) == MULTICHOICE


def test_gold_data_must_be_a_list():
    assert broken(SPAN_GOLD, lambda g: g.update(data={})) == "data must be an array, found an object"
    assert broken(SPAN_GOLD, lambda g: g.pop("data")) == "data is missing"


def test_gold_without_questions():
    assert "no questions" in broken(SPAN_GOLD, lambda g: g.update(data=[]))


@pytest.mark.parametrize("mutate, message", [
    (lambda g: g["data"][1]["paragraphs"][1]["qas"][0].update(evidences=[]),
     "data[1].paragraphs[1].qas[0].evidences must not be empty"),
    (lambda g: g["data"][0]["paragraphs"][0]["qas"][1].pop("evidences"),
     "data[0].paragraphs[0].qas[1].evidences is missing"),
    (lambda g: g["data"][0]["paragraphs"][0]["qas"][1]["evidences"].append(3),
     "data[0].paragraphs[0].qas[1].evidences[1] must be a string, found a number"),
    (lambda g: g["data"][0]["paragraphs"][0]["qas"][0].update(answers=[]),
     "data[0].paragraphs[0].qas[0].answers must not be empty"),
    (lambda g: g["data"][0]["paragraphs"][0]["qas"][0]["answers"][1].pop("text"),
     "data[0].paragraphs[0].qas[0].answers[1].text is missing"),
    (lambda g: g["data"][0]["paragraphs"][0]["qas"][0].update(id=5),
     "data[0].paragraphs[0].qas[0].id must be a string, found a number"),
    (lambda g: g["data"][0]["paragraphs"][0]["qas"][0].pop("question"),
     "data[0].paragraphs[0].qas[0].question is missing"),
    (lambda g: g["data"][0]["paragraphs"][0].pop("context"), "data[0].paragraphs[0].context is missing"),
    (lambda g: g["data"][0]["paragraphs"][0].update(qas=None), "data[0].paragraphs[0].qas must be an array, found null"),
    (lambda g: g["data"][1].update(paragraphs=["x"]), "data[1].paragraphs[0] must be an object, found a string"),
])
def test_span_gold_structure_names_the_path(mutate, message):
    assert broken(SPAN_GOLD, mutate) == message


def test_span_gold_duplicate_question_id_names_both_paths():
    message = broken(SPAN_GOLD, lambda g: g["data"][1]["paragraphs"][1]["qas"][0].update(id="en-1"))
    assert message == ("data[1].paragraphs[1].qas[0].id: duplicate question key 'en-1' "
                       "(first at data[0].paragraphs[0].qas[0].id)")


@pytest.mark.parametrize("mutate, message", [
    (lambda g: g["data"][0]["evidences"].pop(), "data[0].evidences has 1 items but data[0].questions has 2"),
    (lambda g: g["data"][0]["answers"].append("A"), "data[0].answers has 3 items but data[0].questions has 2"),
    (lambda g: g["data"][0]["evidences"][1].clear(), "data[0].evidences[1] must not be empty"),
    (lambda g: g["data"][0]["evidences"].__setitem__(1, "text"), "data[0].evidences[1] must be an array, found a string"),
    (lambda g: g["data"][0]["options"][0].clear(), "data[0].options[0] must not be empty"),
    (lambda g: g["data"][1]["answers"].__setitem__(0, "D"),
     "data[1].answers[0] must be one of the question's option letters A, B, C"),
    (lambda g: g["data"][2]["answers"].__setitem__(0, "c"),
     "data[2].answers[0] must be one of the question's option letters A, B, C, D"),
    (lambda g: g["data"][2].pop("article"), "data[2].article is missing"),
    (lambda g: g["data"][2].update(id=["5-21"]), "data[2].id must be a string, found an array"),
])
def test_multichoice_gold_structure_names_the_path(mutate, message):
    assert broken(MC_GOLD, mutate) == message


def test_multichoice_gold_duplicate_composed_key():
    message = broken(MC_GOLD, lambda g: g["data"][2].update(id="m6"))
    assert message == "data[2] question 0: duplicate question key 'm6-0' (first at data[1] question 0)"
