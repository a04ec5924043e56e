"""What the ExpMRC scorer refuses and with which words (gold files, prediction files, stored key
specs), where its limits lie, and what each per-question row says."""
import copy
import json
import re
from pathlib import Path

import pytest

from scoring.metrics import expmrc
from scoring.metrics.expmrc import InvalidGold, KeySpec, parse_predictions
from scoring.strict_json import InvalidPredictions

OFFICIAL_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "expmrc_official"
PASSAGE = {"id": "p", "article": "a b c", "questions": ["q"], "options": [["x", "y"]], "answers": ["A"],
           "evidences": [["a b"]]}


def exactly(error, message):
    return pytest.raises(error, match=f"^{re.escape(message)}$")


def multichoice(**changes):
    return {"version": "expmrc-race-dev", "data": [{**copy.deepcopy(PASSAGE), **changes}]}


def test_gold_refusals_name_the_place_and_the_problem():
    with exactly(InvalidGold, "top level must be a JSON object, found an array"):
        expmrc.task_kind([])
    with exactly(InvalidGold, "version must be a string, found a number"):
        expmrc.task_kind({"version": 3, "data": []})
    with exactly(InvalidGold, "data holds no questions"):
        expmrc.check_gold({"version": "expmrc-race-dev", "data": []})
    with exactly(InvalidGold, "data[0].questions[0] must be a string, found a number"):
        expmrc.check_gold(multichoice(questions=[3]))
    with exactly(InvalidGold, "data[0].options[0] must be an array, found a string"):
        expmrc.check_gold(multichoice(options=["xy"]))
    with exactly(InvalidGold, "data[0].options[0] has 27 options, more than 26"):
        expmrc.check_gold(multichoice(options=[[str(i) for i in range(27)]]))
    expmrc.check_gold(multichoice(options=[[str(i) for i in range(26)]]))  # one option per letter: fine
    expmrc.check_gold(multichoice(questions=[""]))  # a cloze question may be empty
    with exactly(ValueError, "f1_against_references needs at least one reference"):
        expmrc.f1_against_references([], "x")


def test_a_stored_key_spec_is_read_back_or_refused_by_name():
    spec = KeySpec(expmrc.SPAN, ["b", "a"], "")
    assert spec.keys == ("b", "a")  # kept as a tuple, whatever it was given as
    assert KeySpec.from_dict(spec.to_dict()) == spec
    for stored, message in [({"kind": "x", "keys": []}, "KeySpec kind must be 'span' or 'multichoice'"),
                            ({"kind": "span", "keys": "ab"}, "KeySpec keys must be a list of strings"),
                            ({"kind": "span", "keys": [1]}, "KeySpec keys must be a list of strings"),
                            ({"kind": "span", "keys": ["a"], "option_letters": 5},
                             "KeySpec option_letters must be a string")]:
        with exactly(ValueError, message):
            KeySpec.from_dict(stored)


SPEC = KeySpec(expmrc.SPAN, ("q1",), "")


def test_prediction_files_are_refused_for_duplicates_unknown_keys_and_overlong_fields():
    with exactly(InvalidPredictions, 'duplicated keys: line 1: "q1": field "evidence" appears more than once'):
        parse_predictions(b'{"q1": {"answer": "a", "evidence": "x", "evidence": "y"}}', SPEC)
    with exactly(InvalidPredictions, 'keys not in the test set: line 1: "zz"'):
        parse_predictions(b'{"q1": {"answer": "a", "evidence": "x"}, "zz": {"answer": "a", "evidence": "x"}}', SPEC)
    with exactly(InvalidPredictions, 'invalid entries: line 1: "q1": field "answer" has 10,001 characters; an '
                                     'answer or evidence is a span of its passage, at most 10,000 characters'):
        parse_predictions(json.dumps({"q1": {"answer": "a" * 10_001, "evidence": "x"}}).encode(), SPEC)
    longest = parse_predictions(json.dumps({"q1": {"answer": "a" * 10_000, "evidence": "x"}}).encode(), SPEC)
    assert len(longest["q1"]["answer"]) == 10_000


def test_each_per_question_row_says_whether_it_was_answered():
    gold = json.loads((OFFICIAL_FIXTURE / "squad-gold.json").read_bytes())
    predictions = json.loads((OFFICIAL_FIXTURE / "squad-predictions.json").read_bytes())
    kept = dict(list(predictions.items())[:2])
    rows = expmrc.score_predictions(gold, kept).per_question
    assert [row["answered"] for row in rows] == [True, True] + [False] * (len(rows) - 2)
    assert rows[0]["key"] == next(iter(kept))
