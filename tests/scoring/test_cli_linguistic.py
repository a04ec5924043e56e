"""``python -m scoring linguistic`` run as a subprocess, as a researcher would on a public dev set."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.analysis.linguistic import expmrc_span_items, linguistic_bias
from scoring.metrics import expmrc
from tests.scoring.cli_errors import assert_one_line_error

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "benchmark" / "fixtures" / "expmrc"
SQUAD = FIXTURES / "expmrc-squad-dev.json"
CMRC = FIXTURES / "expmrc-cmrc2018-dev.json"
OFFICIAL_DATA = REPO.parent / "shared" / "data" / "expmrc"
PROPERTIES = ["question_words", "passage_length", "answer_length", "flesch_kincaid_grade", "word_frequency"]


def run(*args):
    return subprocess.run([sys.executable, "-m", "scoring", "linguistic", *map(str, args)],
                          cwd=REPO, capture_output=True, timeout=120)


def document(result):
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode("utf-8")
    assert text.endswith("\n") and text.count("\n") == 1  # one JSON document, one line
    return json.loads(text)




def in_process(gold_path, predictions_path, **options):
    """What the server's span diagnostics compute on a public split: answer F1 per question from
    the ExpMRC scorer, the items in file order, no pooling."""
    gold = json.loads(Path(gold_path).read_text(encoding="utf-8"))
    spec = expmrc.key_spec(gold)
    score = expmrc.score_predictions(gold, expmrc.parse_predictions(Path(predictions_path).read_bytes(), spec))
    items = [{**item, "f1": row["answer"]} for item, row in zip(expmrc_span_items(gold), score.per_question, strict=True)]
    return linguistic_bias(items, **options)


def write_predictions(tmp_path, answers):
    path = tmp_path / "pred.json"
    path.write_text(json.dumps({key: {"answer": answer, "evidence": ""} for key, answer in answers.items()},
                               ensure_ascii=False), encoding="utf-8")
    return path


def test_squad_fixture(tmp_path):
    # "a lantern" against "an electric lantern": F1 2/3 (articles dropped); fx-squad-3 unanswered.
    pred = write_predictions(tmp_path, {"fx-squad-1": "1874", "fx-squad-2": "a lantern"})
    result = run(SQUAD, pred, "--permutations", 50)
    out = document(result)
    assert result.stderr == b"unanswered: 1\n"
    assert (out["version"], out["file"], out["total"], out["unanswered"]) == ("expmrc-squad-fixture", str(pred), 3, 1)
    bias = out["linguistic_bias"]
    assert (bias["language"], bias["n_items"], bias["min_group_size"], bias["n_permutations"]) == ("en", 3, None, 50)
    assert [p["name"] for p in bias["properties"]] == PROPERTIES
    words = bias["properties"][0]
    assert {b["label"]: b["f1"] for b in words["bins"]} == {"what": pytest.approx(2 / 3), "who": 0.0, "when": 1.0}
    # Three questions: every subset is below the minimum bin size, so there is no corrected score.
    assert words["bins_left_out"] == ["what", "who", "when"]
    assert words["bias_corrected"] is None and words["p_value"] is None
    assert bias == in_process(SQUAD, pred, n_permutations=50)


def test_chinese_set_is_read_as_chinese_unless_told(tmp_path):
    pred = write_predictions(tmp_path, {"FX_0_QUERY_0": "一八七四年", "FX_0_QUERY_1": "布拉斯克"})
    bias = document(run(CMRC, pred, "--min-bin-size", 2))["linguistic_bias"]
    assert bias["language"] == "zh" and bias["min_bin_size"] == 2
    props = {p["name"]: p for p in bias["properties"]}
    assert not props["flesch_kincaid_grade"]["applicable"] and not props["word_frequency"]["applicable"]
    assert props["passage_length"]["bins"] == [{"label": "0-49", "n": 2, "f1": 1.0}]
    assert bias == in_process(CMRC, pred, language="zh", min_bin_size=2)
    assert document(run(CMRC, pred, "--language", "en"))["linguistic_bias"]["language"] == "en"


@pytest.mark.skipif(not OFFICIAL_DATA.is_dir(), reason=f"official ExpMRC dev data not found at {OFFICIAL_DATA}")
def test_official_squad_sample_submission():
    gold, pred = OFFICIAL_DATA / "expmrc-squad-dev.json", OFFICIAL_DATA / "sample_submission" / "squad.json"
    result = run(gold, pred, "--permutations", 500)
    out = document(result)
    assert result.stderr == b""
    assert (out["total"], out["unanswered"], round(out["answer_f1"], 3)) == (501, 0, 92.875)
    bias = out["linguistic_bias"]
    assert bias == in_process(gold, pred, n_permutations=500)
    for prop in bias["properties"]:
        assert prop["n_analysed"] >= 450 and 0 < prop["p_value"] <= 1
        assert prop["bias_corrected"] == pytest.approx(prop["between_bin_variance"] - prop["null_expectation"])
        # The raw score is far above what is left once the noise is taken out.
        assert prop["bias"] > prop["bias_corrected"] + 5e-4


def test_multiple_choice_gold_is_refused(tmp_path):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"fx-race-1-0": {"answer": "A", "evidence": ""}}))
    assert_one_line_error(run(FIXTURES / "expmrc-race-dev.json", pred), "multiple-choice", "span answers")


def test_bad_predictions(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"fx-squad-1": {"answer": "x", "evidence": "y"}\n,,}')
    assert_one_line_error(run(SQUAD, bad), "invalid prediction file", "not valid JSON")
    unknown = write_predictions(tmp_path, {"zz-9": "x"})
    assert_one_line_error(run(SQUAD, unknown), "keys not in the test set", '"zz-9"')
    assert_one_line_error(run(SQUAD, tmp_path / "missing.json"), "cannot read prediction file")


def test_bad_gold_and_options(tmp_path):
    gold = tmp_path / "gold.json"
    gold.write_text('{"version": "expmrc-squad-x", "data": []}')
    pred = write_predictions(tmp_path, {"fx-squad-1": "1874"})
    assert_one_line_error(run(gold, pred), "invalid gold file", "no questions")
    assert_one_line_error(run(tmp_path / "none.json", pred), "cannot read gold file")
    assert_one_line_error(run(SQUAD, pred, "--permutations", 0), "--permutations must be at least 1")
    assert_one_line_error(run(SQUAD, pred, "--min-bin-size", 1), "--min-bin-size must be at least 2")
    assert_one_line_error(run(SQUAD, pred, "--language", "fr"), "invalid choice")
