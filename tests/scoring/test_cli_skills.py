"""``python -m scoring skills build|score`` run as a subprocess, as a researcher who owns a gold
file would: variants written to a folder, a skills submission scored as the server scores it."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.analysis.skills import OK, SKILLS, UNK, build_all, score_variant, skill_gaps
from scoring.metrics import expmrc
from tests.scoring.cli_errors import assert_one_line_error

REPO = Path(__file__).resolve().parents[2]
SQUAD = REPO / "benchmark" / "fixtures" / "expmrc" / "expmrc-squad-dev.json"
CMRC = REPO / "benchmark" / "fixtures" / "expmrc" / "expmrc-cmrc2018-dev.json"
RACE = REPO / "benchmark" / "fixtures" / "expmrc" / "expmrc-race-dev.json"


def run(*args):
    return subprocess.run([sys.executable, "-m", "scoring", "skills", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)




def questions(gold):
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def first_answers(gold):
    return {qa["id"]: {"answer": qa["answers"][0]["text"], "evidence": qa["evidences"][0]} for qa in questions(gold)}


def test_build_writes_inputs_and_gold_of_every_variant(tmp_path):
    result = run("build", SQUAD, "--out", tmp_path / "out")
    assert result.returncode == 0 and result.stderr == ""
    summary = json.loads(result.stdout)
    assert (summary["language"], summary["seed"], list(summary["skills"])) == ("en", 0, list(SKILLS))
    gold = json.loads(SQUAD.read_text(encoding="utf-8"))
    ids = sorted(qa["id"] for qa in questions(gold))
    for skill, entry in summary["skills"].items():
        if skill in ("s3", "s6"):
            assert entry["status"] in ("not applicable", "not configured") and entry["inputs"] is None
            assert entry["note"]
            continue
        assert entry["status"] == OK, skill
        inputs = json.loads(Path(entry["inputs"]).read_text(encoding="utf-8"))
        assert inputs["skill"] == skill and sorted(qa["id"] for qa in questions(inputs)) == ids
        assert '"answers"' not in json.dumps(inputs) and '"masks"' not in json.dumps(inputs)
        variant = json.loads(Path(entry["gold"]).read_text(encoding="utf-8"))
        expmrc.check_gold(variant)
        assert len(list(questions(variant))) == entry["n_items"]
    assert summary["skills"]["s1"]["method"].startswith("rule-based fallback (no POS tagger)")


def test_chinese_gold_gets_the_chinese_skills(tmp_path):
    summary = json.loads(run("build", CMRC, "--out", tmp_path).stdout)
    assert summary["language"] == "zh"
    assert {s for s, e in summary["skills"].items() if e["status"] == OK} <= {"s4", "s5", "s8", "s13", "s14"}


def test_score_matches_the_server_computation(tmp_path):
    gold = json.loads(SQUAD.read_text(encoding="utf-8"))
    variants = build_all(gold, seed=0)
    original = first_answers(gold)
    submission = {"original": original,
                  "s2": first_answers(variants["s2"]["gold"]),
                  "s8": {key: {"answer": f"{UNK} {UNK}", "evidence": ""} for key in original},
                  "s13": original}
    path = tmp_path / "skills.json"
    path.write_text(json.dumps(submission), encoding="utf-8")
    result = run("score", SQUAD, path)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["original"]["f1"] == pytest.approx(100.0)
    variant_f1 = {name: {q["key"]: q["answer"] for q in score_variant(variants[name]["gold"], preds).per_question}
                  for name, preds in submission.items() if name != "original"}
    expected = skill_gaps({key: 1.0 for key in original}, variant_f1, seed=0)
    for name in ("s2", "s8", "s13"):
        got = document["skills"][name]
        assert (got["f1"], got["gap"], got["ci"], got["n"]) == (
            expected[name]["variant_f1"], expected[name]["gap"], [expected[name]["ci_low"], expected[name]["ci_high"]],
            expected[name]["n"])
    assert document["skills"]["s2"]["gap"] == 0.0  # the masked gold spans themselves: no gap
    assert document["skills"]["s8"]["f1"] == 0.0  # a constant mask earns nothing
    assert document["skills"]["s3"]["f1"] is None and document["skills"]["s3"]["status"] == "not applicable"
    assert document["skills"]["s1"] == {"f1": None, "gap": None, "ci": None, "n": variants["s1"]["n_items"],
                                        "status": "not submitted"}


@pytest.mark.parametrize("submission, fragments", [
    ({"s2": {}}, ['section "original" is missing']),
    ({"original": {}, "s3": {}}, ['section "s3": s3 has no variant for this gold (not applicable)']),
    ({"original": {}, "s99": {}}, ['section "s99" is not a skill section']),
    ({"original": {"nope": {"answer": "x", "evidence": "y"}}}, ['section "original"']),
    ([], ["top level must be a JSON object"]),
])
def test_bad_submissions_end_with_one_error_line(tmp_path, submission, fragments):
    path = tmp_path / "skills.json"
    path.write_text(json.dumps(submission), encoding="utf-8")
    assert_one_line_error(run("score", SQUAD, path), "invalid skills file", *fragments)


def test_bad_gold_and_arguments_end_with_one_error_line(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json", encoding="utf-8")
    assert_one_line_error(run("build", tmp_path / "missing.json", "--out", tmp_path), "cannot read gold file")
    assert_one_line_error(run("build", broken, "--out", tmp_path), "is not valid JSON")
    assert_one_line_error(run("build", RACE, "--out", tmp_path), "span-extraction gold")
    assert_one_line_error(run("score", SQUAD, tmp_path / "missing.json"), "cannot read skills file")
    assert_one_line_error(run("build", SQUAD), "--out")
    assert_one_line_error(run("build", SQUAD, "--out", tmp_path, "--language", "fr"), "--language")
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    assert_one_line_error(run("build", SQUAD, "--out", blocker / "sub"), "cannot write to")
