"""``python -m scoring expmrc`` run as a subprocess, as a maintainer or researcher would."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = "tests/fixtures/expmrc"
OFFICIAL_DATA = REPO.parent / "shared" / "data" / "expmrc"


def run(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "scoring", "expmrc", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0]


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
