"""CheckList SQuAD suite: items, pass rules, and the BERT failure rates reproduced."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.metrics.checklist import (
    BERT_FAILURE_RATES,
    InvalidSuite,
    bert_reference_rates,
    case_outcomes,
    load_suite,
    predictions_from_stored,
    score_checklist,
    suite_items,
)

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data" / "skills"
SUITE = DATA / "checklist_squad_suite.json.gz"
needs_data = pytest.mark.skipif(not SUITE.is_file(), reason=f"CheckList suite not found at {SUITE}")


def mft(name, expect, cases, capability="Vocabulary"):
    return {"name": name, "type": "MFT", "capability": capability, "expect": expect, "agg_fn": "all",
            "n_cases": len(cases),
            "cases": [{"items": [{"context": "C", "question": f"Q{i}", "label": label} for i, label in enumerate(labels)]}
                      for labels in cases]}


def inv(name, expect, cases, metas=None, capability="Robustness"):
    test = {"name": name, "type": "INV", "capability": capability, "expect": expect, "agg_fn": "all_except_first",
            "n_cases": len(cases), "cases": []}
    for k, n_items in enumerate(cases):
        case = {"items": [{"context": f"C{i}", "question": "Q"} for i in range(n_items)]}
        if metas is not None:
            case["meta"] = metas[k]
        test["cases"].append(case)
    return test


def answers(test_index, per_case):
    return {f"t{test_index}-c{c}-i{i}": a for c, case in enumerate(per_case) for i, a in enumerate(case)}


# ----------------------------------------------------------------- pass rules

def test_eq_is_exact_string_equality():
    suite = {"tests": [mft("eq test", "eq", [["Anna", "Bob"], ["Anna"], ["Anna"], ["Anna"]])]}
    preds = answers(0, [["Anna", "Bob"], ["anna"], ["Anna "], ["the Anna"]])
    assert case_outcomes(suite, preds) == [["pass", "fail", "fail", "fail"]]
    result = score_checklist(suite, preds)["tests"][0]
    assert (result["n_cases"], result["n_failed"], result["failure_rate"]) == (4, 3, 75.0)


def test_squad_clean_strips_a_character_set_on_the_left_and_dots_on_the_right():
    labels = [["Broncos"], ["agent"], ["Anna"], ["Tina"], ["ant"], ["Broncos"]]
    preds = [["the Broncos."], ["an agent"], ["at Anna.."], ["Tina"], ["tan"], ["Broncos fans"]]
    suite = {"tests": [mft("clean", "expect_squad", labels)]}
    # "an agent" and "agent" both clean to "gent"; "ant" and "tan" both clean to "" (the quirk);
    # capitals are not in the set, so "at Anna.." -> "Anna".
    assert case_outcomes(suite, answers(0, preds)) == [["pass", "pass", "pass", "pass", "pass", "fail"]]


def test_mft_case_fails_when_any_item_fails():
    suite = {"tests": [mft("all items", "eq", [["A", "B", "C"]])]}
    assert case_outcomes(suite, answers(0, [["A", "B", "X"]])) == [["fail"]]


def test_inv_compares_items_to_the_first_prediction():
    suite = {"tests": [inv("typo", "inv", [2, 3, 3])]}
    preds = answers(0, [["males", "males"], ["x", "x", "y"], ["wrong", "wrong", "wrong"]])
    # INV does not care whether the original answer is right, only that it does not change.
    assert case_outcomes(suite, preds) == [["pass", "fail", "pass"]]


def test_inv_with_whole_word_name_replacement():
    metas = [[{}, ["Luther", "James"], ["Luther", "Shawn"]]] * 3
    suite = {"tests": [inv("Change name everywhere", "inv_same_after_replacement", [3, 3, 3], metas, "NER")]}
    preds = answers(0, [
        ["Luther and Lutherans", "James and Lutherans", "Shawn and Lutherans"],  # whole word only
        ["Luther", "Luther", "Shawn"],  # the name should have changed with the input
        ["a gift", "a gift", "a gift"],  # no name in the answer: plain equality
    ])
    assert case_outcomes(suite, preds) == [["pass", "fail", "pass"]]


def test_replacement_text_is_literal():
    metas = [[{}, ["Kenya", r"Sri \1 Lanka"]]]
    suite = {"tests": [inv("Change location everywhere", "inv_same_after_replacement", [2], metas, "NER")]}
    assert case_outcomes(suite, answers(0, [["in Kenya", r"in Sri \1 Lanka"]])) == [["pass"]]


def test_missing_predictions_make_a_case_not_answered_and_never_a_pass():
    suite = {"tests": [mft("m1", "eq", [["A"], ["B"], ["C", "D"]]), inv("i1", "inv", [2], capability="Vocabulary")]}
    preds = {"t0-c0-i0": "A", "t0-c2-i0": "C", "t1-c0-i0": "x", "t1-c0-i1": "x", "t9-c0-i0": "?", "junk": "?"}
    result = score_checklist(suite, preds)
    assert case_outcomes(suite, preds) == [["pass", "not answered", "not answered"], ["pass"]]
    m1 = result["tests"][0]
    assert (m1["n_cases"], m1["n_failed"], m1["n_missing"]) == (3, 0, 2)
    assert m1["failure_rate"] == pytest.approx(200 / 3) and m1["answered_failure_rate"] == 0.0
    assert result["capabilities"] == [{"capability": "Vocabulary", "n_tests": 2, "n_cases": 4, "n_failed": 0,
                                       "n_missing": 2, "failure_rate": 50.0, "bert_failure_rate": None}]
    overall = result["overall"]
    assert (overall["n_items"], overall["n_predictions_used"], overall["n_unknown_ids"]) == (6, 4, 2)
    assert overall["failure_rate"] == 50.0 and overall["mean_test_failure_rate"] == pytest.approx(100 / 3)


def test_non_string_prediction_is_rejected():
    suite = {"tests": [mft("m", "eq", [["A"]])]}
    with pytest.raises(ValueError, match="t0-c0-i0"):
        score_checklist(suite, {"t0-c0-i0": 3})


def test_items_are_flat_in_checklist_order_without_labels():
    suite = {"tests": [mft("m", "eq", [["A", "B"], ["C"]]), inv("i", "inv", [2])]}
    items = suite_items(suite)
    assert [i["id"] for i in items] == ["t0-c0-i0", "t0-c0-i1", "t0-c1-i0", "t1-c0-i0", "t1-c0-i1"]
    assert items[0] == {"id": "t0-c0-i0", "test": "m", "capability": "Vocabulary", "type": "MFT",
                        "context": "C", "question": "Q0"}
    assert not any("label" in i for i in items)


def test_load_suite_reads_plain_and_gzipped_json_and_checks_shape(tmp_path):
    suite = {"tests": [mft("A is COMP than B. Who is more / less COMP?", "eq", [["A"]])]}
    plain, packed = tmp_path / "s.json", tmp_path / "s.json.gz"
    plain.write_text(json.dumps(suite))
    packed.write_bytes(gzip.compress(json.dumps(suite).encode()))
    assert load_suite(plain) == load_suite(packed) == suite
    assert bert_reference_rates(plain) == {"A is COMP than B. Who is more / less COMP?": 20.0}
    assert score_checklist(suite, {"t0-c0-i0": "A"})["tests"][0]["bert_failure_rate"] == 20.0
    bad = [
        {"tests": []},
        {"tests": [dict(mft("m", "eq", [["A"]]), expect="inv")]},
        {"tests": [inv("i", "inv", [1])]},
        {"tests": [inv("i", "inv_same_after_replacement", [2], [[{}]])]},
        {"tests": [{**mft("m", "eq", [["A"]]), "cases": [{"items": [{"context": "c", "question": "q"}]}]}]},
    ]
    for k, broken in enumerate(bad):
        path = tmp_path / f"bad{k}.json"
        path.write_text(json.dumps(broken))
        with pytest.raises(InvalidSuite):
            load_suite(path)


# ----------------------------------------------------------------- the released suite

@pytest.fixture(scope="module")
def released():
    suite = load_suite(SUITE)
    stored = json.loads(gzip.decompress((DATA / "checklist_squad_suite_bert_preds.json.gz").read_bytes()))
    index = json.loads((DATA / "checklist_squad_suite_index.json").read_text())
    return suite, stored, index


@needs_data
def test_released_suite_items(released):
    suite, _, index = released
    items = suite_items(suite)
    assert len(suite["tests"]) == 24 and len(items) == 71293
    assert sum(len(t["cases"]) for t in suite["tests"]) == 13311
    assert len({i["id"] for i in items}) == len(items)
    assert [t["n_items"] for t in index["tests"]] == [sum(len(c["items"]) for c in t["cases"]) for t in suite["tests"]]


@needs_data
def test_bert_predictions_reproduce_the_reference_failure_rates(released):
    suite, stored, index = released
    predictions = predictions_from_stored(stored, suite)
    assert len(predictions) == 71293
    # Every case's pass/fail equals the flag CheckList stored beside BERT's predictions.
    outcomes = case_outcomes(suite, predictions)
    for t, test in enumerate(stored["tests"]):
        assert outcomes[t] == ["pass" if p else "fail" for p in test["passed"]], test["name"]
    result = score_checklist(suite, predictions)
    reference = {t["name"]: t["bert_base_failure_rate_pct"] for t in index["tests"]}
    assert reference == BERT_FAILURE_RATES == bert_reference_rates(suite)
    differences = {t["name"]: abs(t["failure_rate"] - reference[t["name"]]) for t in result["tests"]}
    assert len(differences) == 24
    print("max |reproduced - reference| =", max(differences.values()))
    assert max(differences.values()) <= 0.05 + 1e-9  # the reference is rounded to 0.1
    assert all(round(t["failure_rate"], 1) == pytest.approx(t["bert_failure_rate"], abs=0.1) for t in result["tests"])
    assert result["overall"]["n_missing"] == 0 and result["overall"]["n_unknown_ids"] == 0
    assert {c["capability"] for c in result["capabilities"]} == {
        "Vocabulary", "Taxonomy", "Robustness", "NER", "Temporal", "Negation", "Fairness", "Coref", "SRL"}
    for capability in result["capabilities"]:
        assert capability["failure_rate"] == pytest.approx(capability["bert_failure_rate"], abs=0.05)


@needs_data
def test_stored_predictions_must_match_the_suite(released):
    suite, stored, _ = released
    broken = json.loads(json.dumps(stored))
    broken["tests"][0]["preds"] = broken["tests"][0]["preds"][:-1]
    with pytest.raises(ValueError):
        predictions_from_stored(broken, suite)


def test_scoring_modules_import_without_django():
    code = ("import sys; import scoring.metrics.checklist, scoring.analysis.skills; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
