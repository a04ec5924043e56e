"""``python -m scoring expmrc`` run as a subprocess, as a maintainer or researcher would."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scoring.cli_errors import assert_one_line_error

REPO = Path(__file__).resolve().parents[2]
FIXTURES = "tests/fixtures/expmrc"
OFFICIAL_DATA = REPO.parent / "shared" / "data" / "expmrc"


def run(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "scoring", "expmrc", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=60)




def test_prints_exactly_the_official_line_with_the_path_as_given():
    result = run(f"{FIXTURES}/span_gold.json", f"{FIXTURES}/span_pred.json")
    assert result.returncode == 0
    assert result.stdout == (
        '{"ALL_F1": "55.110", "ANS_F1": "60.417", "EVI_F1": "67.368", "TOTAL": 4, "SKIP": 1, '
        f'"VERSION": "expmrc-squad-fixture", "FILE": "{FIXTURES}/span_pred.json"}}\n'
    )
    assert result.stderr == "unanswered: 1\n"


def test_per_question_output(tmp_path):
    out = tmp_path / "per_question.json"
    result = run(f"{FIXTURES}/mc_gold.json", f"{FIXTURES}/mc_pred.json", "--per-question", out)
    assert result.returncode == 0
    assert json.loads(result.stdout)["ALL_F1"] == "25.000"
    written = json.loads(out.read_text(encoding="utf-8"))
    assert (written["kind"], written["total"], written["unanswered"], written["overall"]) == ("multichoice", 4, 1, 25.0)
    assert [row["key"] for row in written["per_question"]] == ["m6-80-0", "m6-80-1", "m6-0", "5-21-0"]
    assert written["per_question"][1] == {"key": "m6-80-1", "answer": 0.0, "evidence": 1.0, "overall": 0.0,
                                          "answered": True}
    assert written["per_question"][3]["answered"] is False


@pytest.mark.skipif(not OFFICIAL_DATA.is_dir(), reason=f"official ExpMRC dev data not found at {OFFICIAL_DATA}")
def test_official_sample_submission_on_the_command_line():
    result = run(OFFICIAL_DATA / "expmrc-c3-dev.json", OFFICIAL_DATA / "sample_submission" / "c3.json")
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads(result.stdout) == {
        "ALL_F1": "49.970", "ANS_F1": "75.248", "EVI_F1": "63.302", "TOTAL": 505, "SKIP": 0,
        "VERSION": "expmrc-c3-dev", "FILE": str(OFFICIAL_DATA / "sample_submission" / "c3.json"),
    }


def test_the_official_figure_fixture_on_the_command_line():
    fixture = "tests/fixtures/expmrc_official"
    figures = json.loads((REPO / fixture / "figures.json").read_text(encoding="utf-8"))
    for subset in ("squad", "c3"):
        result = run(f"{fixture}/{subset}-gold.json", f"{fixture}/{subset}-predictions.json")
        assert result.returncode == 0 and result.stderr == ""
        assert json.loads(result.stdout) == {**figures[subset], "FILE": f"{fixture}/{subset}-predictions.json"}


def test_bad_prediction_json(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"en-1": {"answer": "x", "evidence": "y"}\n,,}')
    assert_one_line_error(run(f"{FIXTURES}/span_gold.json", bad), "not valid JSON", "line 2")


def test_unknown_ids(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"en-1": {"answer": "x", "evidence": "y"}, "zz-9": {"answer": "x", "evidence": "y"}}))
    assert_one_line_error(run(f"{FIXTURES}/span_gold.json", pred), "keys not in the test set", '"zz-9"')


def test_bad_gold(tmp_path):
    gold = json.loads((REPO / FIXTURES / "mc_gold.json").read_text(encoding="utf-8"))
    gold["data"][0]["evidences"][0] = []
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(gold))
    result = run(path, f"{FIXTURES}/mc_pred.json")
    assert_one_line_error(result, "invalid gold file", "data[0].evidences[0] must not be empty")
    assert "人际关系" not in result.stderr


def test_unsupported_gold_version(tmp_path):
    path = tmp_path / "gold.json"
    path.write_text('{"version": "1.0", "data": []}')
    assert_one_line_error(run(path, f"{FIXTURES}/mc_pred.json"), "Unsupported version")


def test_unreadable_files(tmp_path):
    assert_one_line_error(run(tmp_path / "missing.json", f"{FIXTURES}/mc_pred.json"), "cannot read gold file")
    assert_one_line_error(run(f"{FIXTURES}/mc_gold.json", tmp_path), "cannot read prediction file")


def test_size_limit_option(tmp_path):
    assert_one_line_error(run(f"{FIXTURES}/mc_gold.json", f"{FIXTURES}/mc_pred.json", "--max-bytes", "10"), "limit")


def test_prediction_integer_over_the_conversion_limit(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text('{"en-1": {"answer": ' + "9" * 5000 + ', "evidence": "y"}}')
    assert_one_line_error(run(f"{FIXTURES}/span_gold.json", pred), "invalid prediction file",
                          "more than 4300 digits")


@pytest.mark.parametrize("text, fragment", [
    ('{"version": "expmrc-squad-x", "data": [' + "7" * 5000 + "]}", "more than 4300 digits"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_gold_that_json_loads_refuses_without_a_decode_error(tmp_path, text, fragment):
    gold = tmp_path / "gold.json"
    gold.write_text(text)
    assert_one_line_error(run(gold, f"{FIXTURES}/span_pred.json"), f"gold file {gold} is not valid JSON", fragment)


def run_module(*args):
    return subprocess.run([sys.executable, "-m", "scoring", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def test_icq_jsonl_line_with_an_integer_over_the_conversion_limit(tmp_path):
    test = tmp_path / "test.jsonl"
    test.write_text('{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}\n{"id": ' + "1" * 5000 + "}\n")
    result = run_module("icq", "--reference", "tests/fixtures/icq/nli_reference.jsonl", "--test", test)
    assert_one_line_error(result, f"test file {test} line 2: not valid JSON: a number has more than 4300 digits")


@pytest.mark.parametrize("args, fragments", [
    ((), ["python -m scoring:", "required: SCORER"]),
    (("nope",), ["invalid choice: 'nope'"]),
    (("expmrc",), ["python -m scoring expmrc:", "required: GOLD.json, PRED.json"]),
    (("expmrc", "g.json", "p.json", "extra.json"), ["unrecognized arguments: extra.json"]),
    (("expmrc", "g.json", "p.json", "--max-bytes", "lots"), ["--max-bytes: invalid int value: 'lots'"]),
    (("icq", "--test", "s.jsonl"), ["python -m scoring icq:", "required: --reference"]),
    (("icq", "--reference", "r.jsonl", "--test", "s.jsonl", "--language", "fr"), ["--language: invalid choice"]),
    (("quackie", "gold.json"), ["python -m scoring quackie:", "required: SCORES.json"]),
])
def test_bad_arguments_are_one_error_line_not_a_usage_block(args, fragments):
    result = run_module(*args)
    assert_one_line_error(result, *fragments, "--help")
    assert "usage:" not in result.stderr


def test_help_still_prints_the_usage():
    result = run_module("expmrc", "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: python -m scoring expmrc")


def test_quackie_gold_with_an_integer_over_the_conversion_limit(tmp_path):
    gold = tmp_path / "gold.json"
    gold.write_text('{"s-1": {"sentences": ["a"], "gt_candidates": [[' + "1" * 5000 + "]]}}")
    result = run_module("quackie", gold, "tests/fixtures/quackie/scores.json")
    assert_one_line_error(result, f"gold file {gold} is not valid JSON: a number has more than 4300 digits")
