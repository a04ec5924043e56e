"""CheckList SQuAD suite (Ribeiro et al., 2020): the "External Skill-based Analysis" of
InDepth-Eva-MRC (Wu et al., 2022). Definitions: docs/metrics.md#checklist.

Pure functions over plain data (no Django). The suite is the JSON export
``checklist_squad_suite.json.gz`` of the released suite (decoded without running its pickle):
``{"tests": [{"name", "type": "MFT"|"INV", "capability", "expect", "agg_fn", "n_cases",
"cases": [{"items": [{"context", "question", "label"?}], "meta"?}]}]}``.

* Items are flattened in CheckList order (tests → cases → items) with stable ids
  ``t{test}-c{case}-i{item}`` (0-based; for INV tests item 0 is the original input).
  :func:`suite_items` never carries the expected answers; only the scorer reads them.
* Predictions: ``{item_id: answer string}``.
* Pass rules (CheckList's ``squad`` notebook semantics):
  - MFT ``eq``: prediction == label, exactly;
  - MFT ``expect_squad`` ("squad-clean"): clean(prediction) == clean(label), where clean strips,
    from the left, every character of the *set* ``[a,the,an,in,at] `` (CheckList's
    ``str.lstrip('[a,the,an,in,at] ')`` quirk, so "agent" becomes "gent" — on both sides) and
    then trailing dots;
  - INV ``inv``: every prediction on items 1..n equals the prediction on item 0;
  - INV ``inv_same_after_replacement`` (NER name/location tests): item i's prediction equals
    item 0's prediction with the case's ``meta[i] = [old, new]`` applied as a whole-word
    replacement (``\\bold\\b`` → new).
  A case passes when the expectation holds for all its items (INV: items 1..n).
* A case with any item missing from the predictions is "not answered": it never passes.
  ``n_failed`` counts answered cases that fail, ``n_missing`` the not-answered ones, and
  ``failure_rate`` (percent, like the BERT reference rates) = (n_failed + n_missing) / n_cases, so
  leaving cases out can never lower a failure rate; ``answered_failure_rate`` is n_failed over the
  answered cases only. :func:`case_outcomes` gives the per-case verdicts.
* BERT-base reference rates: the CheckList paper's figures (:data:`BERT_FAILURE_RATES`);
  :func:`predictions_from_stored` turns the predictions stored with the released suite into
  ``{item_id: answer}``, and scoring them reproduces every stored per-case pass flag.
"""
from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from ..strict_json import loads_json

MFT, INV = "MFT", "INV"
EXPECT_EQ, EXPECT_SQUAD = "eq", "expect_squad"
EXPECT_INV, EXPECT_INV_REPLACED = "inv", "inv_same_after_replacement"
_KNOWN_EXPECT = {MFT: {EXPECT_EQ, EXPECT_SQUAD}, INV: {EXPECT_INV, EXPECT_INV_REPLACED}}

# BERT-base failure rates (percent) of the CheckList paper (Ribeiro et al., ACL 2020, Table 3),
# also recomputed from the pass flags stored in the released suite (docs/metrics.md#checklist).
BERT_FAILURE_RATES = {
    "A is COMP than B. Who is more / less COMP?": 20.0,
    "Intensifiers (very, super, extremely) and reducers (somewhat, kinda, etc)?": 91.3,
    "size, shape, age, color": 82.4,
    "Profession vs nationality": 49.4,
    "Animal vs Vehicle": 25.6,
    "Animal vs Vehicle v2": 26.2,
    "Synonyms": 0.0,
    "A is COMP than B. Who is antonym(COMP)? B": 67.3,
    "A is more X than B. Who is more antonym(X)? B. Who is less X? B. Who is more X? A. Who is less antonym(X)? A.":
        100.0,
    "Question typo": 11.6,
    "Question contractions": 3.4,
    "Add random sentence to context": 9.8,
    "Change name everywhere": 5.8,
    "Change location everywhere": 10.6,
    "There was a change in profession": 41.5,
    "Understanding before / after -> first / last.": 82.9,
    "Negation in context, may or may not be in question": 67.5,
    "Negation in question only.": 100.0,
    "M/F failure rates should be similar for different professions": 46.2,
    "Basic coref, he / she": 100.0,
    "Basic coref, his / her": 91.8,
    "Former / Latter": 100.0,
    "Agent / object distinction": 60.8,
    "Agent / object distinction with 3 agents": 95.7,
}


class InvalidSuite(ValueError):
    """The suite file is malformed."""


def _read_json(path) -> dict:
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return loads_json(raw.decode("utf-8"))


def _check_suite(suite) -> None:
    if not isinstance(suite, dict) or not isinstance(suite.get("tests"), list) or not suite["tests"]:
        raise InvalidSuite('the suite must be an object with a non-empty "tests" array')
    for t, test in enumerate(suite["tests"]):
        where = f"tests[{t}]"
        if not isinstance(test, dict):
            raise InvalidSuite(f"{where} must be an object")
        for key in ("name", "type", "capability", "expect"):
            if not isinstance(test.get(key), str):
                raise InvalidSuite(f"{where}.{key} must be a string")
        if test["expect"] not in _KNOWN_EXPECT.get(test["type"], ()):
            raise InvalidSuite(f"{where}: unknown expectation {test['expect']!r} for a {test['type']} test")
        cases = test.get("cases")
        if not isinstance(cases, list) or not cases:
            raise InvalidSuite(f"{where}.cases must be a non-empty array")
        for c, case in enumerate(cases):
            items = case.get("items") if isinstance(case, dict) else None
            if not isinstance(items, list) or not items:
                raise InvalidSuite(f"{where}.cases[{c}].items must be a non-empty array")
            for i, item in enumerate(items):
                if not (isinstance(item, dict) and isinstance(item.get("context"), str)
                        and isinstance(item.get("question"), str)):
                    raise InvalidSuite(f"{where}.cases[{c}].items[{i}] needs string context and question")
                if test["type"] == MFT and not isinstance(item.get("label"), str):
                    raise InvalidSuite(f"{where}.cases[{c}].items[{i}] (MFT) needs a string label")
            if test["type"] == INV and len(items) < 2:
                raise InvalidSuite(f"{where}.cases[{c}] (INV) needs the original and at least one perturbation")
            if test["expect"] == EXPECT_INV_REPLACED:
                meta = case.get("meta")
                if not (isinstance(meta, list) and len(meta) == len(items)
                        and all(isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m)
                                for m in meta[1:])):
                    raise InvalidSuite(f"{where}.cases[{c}].meta must give [old, new] for items 1..n")


def load_suite(path) -> dict:
    """Read a suite file (JSON, gzip or not) and check its shape."""
    suite = _read_json(path)
    _check_suite(suite)
    return suite


def item_id(test: int, case: int, item: int) -> str:
    return f"t{test}-c{case}-i{item}"


def suite_items(suite: dict) -> list[dict]:
    """Every (context, question) item in CheckList order, without expected answers."""
    out = []
    for t, test in enumerate(suite["tests"]):
        for c, case in enumerate(test["cases"]):
            for i, item in enumerate(case["items"]):
                out.append({"id": item_id(t, c, i), "test": test["name"], "capability": test["capability"],
                            "type": test["type"], "context": item["context"], "question": item["question"]})
    return out


_ID = re.compile(r"t(0|[1-9][0-9]*)-c(0|[1-9][0-9]*)-i(0|[1-9][0-9]*)")


def _is_item_id(suite: dict, key) -> bool:
    match = _ID.fullmatch(key) if isinstance(key, str) else None
    if not match:
        return False
    t, c, i = (int(g) for g in match.groups())
    tests = suite["tests"]
    return t < len(tests) and c < len(tests[t]["cases"]) and i < len(tests[t]["cases"][c]["items"])


def _clean(text: str) -> str:
    # A character-set strip on purpose: CheckList's notebook does exactly this.
    return text.lstrip("[a,the,an,in,at] ").rstrip(".")  # noqa: B005, PLE1310


def _literally(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement for ``re.sub`` that inserts ``text`` as it is (no backslash escapes)."""
    return lambda _match: text


def _case_passes(test: dict, case: dict, predictions: list[str]) -> bool:
    expect = test["expect"]
    items = case["items"]
    if expect == EXPECT_EQ:
        return all(p == item["label"] for p, item in zip(predictions, items, strict=True))
    if expect == EXPECT_SQUAD:
        return all(_clean(p) == _clean(item["label"]) for p, item in zip(predictions, items, strict=True))
    original = predictions[0]
    if expect == EXPECT_INV:
        return all(p == original for p in predictions[1:])
    meta = case["meta"]
    for k in range(1, len(predictions)):
        old, new = meta[k]
        expected = re.sub(rf"\b{re.escape(old)}\b", _literally(new), original)
        if predictions[k] != expected:
            return False
    return True


def _rate(failed: int, total: int):
    return 100.0 * failed / total if total else None


PASS, FAIL, MISSING = "pass", "fail", "not answered"


def _check_predictions(predictions: Mapping[str, str]) -> None:
    for key, value in predictions.items():
        if not isinstance(value, str):
            raise ValueError(f"prediction for {str(key)[:60]!r} must be a string")


def case_outcomes(suite: dict, predictions: Mapping[str, str]) -> list[list[str]]:
    """Per test, per case: "pass", "fail" or "not answered" (any item without a prediction)."""
    _check_predictions(predictions)
    out = []
    for t, test in enumerate(suite["tests"]):
        outcomes = []
        for c, case in enumerate(test["cases"]):
            answers = [predictions.get(item_id(t, c, i)) for i in range(len(case["items"]))]
            given = [answer for answer in answers if answer is not None]
            if len(given) < len(answers):
                outcomes.append(MISSING)
            else:
                outcomes.append(PASS if _case_passes(test, case, given) else FAIL)
        out.append(outcomes)
    return out


def score_checklist(suite: dict, predictions: Mapping[str, str]) -> dict:
    """Failure rates per test, per capability and overall (percent), with BERT's beside."""
    outcomes = case_outcomes(suite, predictions)
    reference = bert_reference_rates(suite)
    tests = []
    n_items = 0
    capabilities: dict[str, dict] = {}
    for t, test in enumerate(suite["tests"]):
        n_items += sum(len(case["items"]) for case in test["cases"])
        n_failed = outcomes[t].count(FAIL)
        n_missing = outcomes[t].count(MISSING)
        n_cases = len(test["cases"])
        answered = n_cases - n_missing
        tests.append({
            "name": test["name"], "capability": test["capability"], "type": test["type"],
            "expect": test["expect"], "n_cases": n_cases, "n_failed": n_failed, "n_missing": n_missing,
            "failure_rate": _rate(n_failed + n_missing, n_cases),
            "answered_failure_rate": _rate(n_failed, answered),
            "bert_failure_rate": reference.get(test["name"]),
        })
        group = capabilities.setdefault(test["capability"], {"capability": test["capability"], "n_tests": 0,
                                                             "n_cases": 0, "n_failed": 0, "n_missing": 0})
        group["n_tests"] += 1
        group["n_cases"] += n_cases
        group["n_failed"] += n_failed
        group["n_missing"] += n_missing
    for group in capabilities.values():
        group["failure_rate"] = _rate(group["n_failed"] + group["n_missing"], group["n_cases"])
        # BERT's, pooled from its per-test rates (rounded to 0.1, so within 0.05 of the exact figure)
        members = [t for t in tests if t["capability"] == group["capability"]]
        if all(t["bert_failure_rate"] is not None for t in members):
            group["bert_failure_rate"] = sum(t["bert_failure_rate"] * t["n_cases"] for t in members) / group["n_cases"]
        else:
            group["bert_failure_rate"] = None
    n_cases = sum(t["n_cases"] for t in tests)
    n_failed = sum(t["n_failed"] for t in tests)
    n_missing = sum(t["n_missing"] for t in tests)
    rates = [t["failure_rate"] for t in tests]
    known = sum(1 for key in predictions if _is_item_id(suite, key))
    overall = {
        "n_tests": len(tests), "n_cases": n_cases, "n_failed": n_failed, "n_missing": n_missing,
        "n_items": n_items, "n_predictions_used": known, "n_unknown_ids": len(predictions) - known,
        "failure_rate": _rate(n_failed + n_missing, n_cases),  # pooled over cases
        "mean_test_failure_rate": sum(rates) / len(rates) if rates else None,  # each test counts once
    }
    return {"tests": tests, "capabilities": list(capabilities.values()), "overall": overall}


def bert_reference_rates(suite_or_path) -> dict[str, float | None]:
    """BERT-base failure rate (percent) of each test of the suite, by test name (None if the
    test is not one of the CheckList SQuAD suite's 24)."""
    suite = suite_or_path if isinstance(suite_or_path, dict) else _read_json(suite_or_path)
    return {test["name"]: BERT_FAILURE_RATES.get(test["name"]) for test in suite["tests"]}


def predictions_from_stored(stored: dict, suite: dict) -> dict[str, str]:
    """Convert the predictions stored with the released suite
    (``checklist_squad_suite_bert_preds.json.gz``: per test, one list of answers per case, or a
    plain string for single-item cases) to ``{item_id: answer}``."""
    by_name = {test["name"]: test for test in stored["tests"]}
    out = {}
    for t, test in enumerate(suite["tests"]):
        preds = by_name[test["name"]]["preds"]
        if len(preds) != len(test["cases"]):
            raise ValueError(f"stored predictions for test {t} have {len(preds)} cases, the suite {len(test['cases'])}")
        for c, (case, answers) in enumerate(zip(test["cases"], preds, strict=True)):
            if isinstance(answers, str):
                answers = [answers]
            if len(answers) != len(case["items"]):
                raise ValueError(f"stored predictions for t{t}-c{c} do not match its items")
            for i, answer in enumerate(answers):
                out[item_id(t, c, i)] = answer
    return out
