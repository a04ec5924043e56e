"""``python -m scoring icq`` run as a subprocess: output shape on the fixtures, and invalid input
ending in one ``error:`` line naming file, line and field, exit status 2, no traceback."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scoring.cli_errors import assert_one_line_error

REPO = Path(__file__).resolve().parents[2]
FIXTURES = "tests/fixtures/icq"


def run(*args):
    return subprocess.run([sys.executable, "-m", "scoring", "icq", *map(str, args)],
                          cwd=REPO, capture_output=True, timeout=120, check=False)


def ok(result):
    assert result.returncode == 0, result.stderr.decode()
    assert b"Traceback" not in result.stderr
    return json.loads(result.stdout.decode("utf-8"))




def test_classification_profile_with_predictions():
    out = ok(run("--reference", f"{FIXTURES}/nli_reference.jsonl", "--test", f"{FIXTURES}/nli_test.jsonl",
                 "--predictions", f"{FIXTURES}/nli_predictions.jsonl"))
    assert set(out) == {"cues", "accuracy_test", "distribution_test"}
    top = out["cues"][0]
    assert {(c["feature"], c["value"]) for c in out["cues"][:2]} == {("word", "never"), ("negation", "negation")}
    # "never": R 10 contradiction / 1 entailment / 1 neutral, S 6 / 4 / 4; R's prior is 1/2, 1/4, 1/4
    assert top["prior"] == {"contradiction": 0.5, "entailment": 0.25, "neutral": 0.25}
    assert top["mse"] == pytest.approx(((10 / 12 - 1 / 2) ** 2 + 2 * (1 / 12 - 1 / 4) ** 2) / 3)  # 1/18
    assert top["mse_published"] == pytest.approx(0.125)  # distance from 1/3, as in the paper
    assert top["cue_label"] == "contradiction"
    assert (top["n_reference"], top["n_test"]) == (12, 14)
    assert top["reference_dist"] == pytest.approx({"contradiction": 10 / 12, "entailment": 1 / 12, "neutral": 1 / 12})
    assert top["test_dist"] == pytest.approx({"contradiction": 6 / 14, "entailment": 4 / 14, "neutral": 4 / 14})
    for key in ("feature", "value", "cueness", "mse", "jsd", "n_reference", "n_test", "reference_dist", "test_dist",
                "cueness_published", "mse_published", "prior", "cue_label"):
        assert key in top
    never = next(row for row in out["accuracy_test"] if row["value"] == "never")
    # the biased model says "contradiction" for every "never": 6/14 right there, 15/15 elsewhere
    assert {key: never[key] for key in ("feature", "value", "n_with", "n_without", "acc_with", "acc_without",
                                        "delta")} == {"feature": "word", "value": "never", "n_with": 14, "n_without": 15,
                                                      "acc_with": pytest.approx(6 / 14), "acc_without": 1.0,
                                                      "delta": pytest.approx(6 / 14 - 1)}
    assert never["p_value"] < 0.001 <= never["p_holm"] < 0.01  # Fisher on [[6, 8], [15, 0]], Holm over the cues
    flat = next(row for row in out["distribution_test"] if row["value"] == "never")
    assert flat["n_flat"] == 12 and flat["follows_cue"] is True
    assert flat["predicted_dist"] == {"contradiction": 1.0, "entailment": 0.0, "neutral": 0.0}
    # a cue-free model with this model's rates per gold label (contradiction: 11/11, entailment
    # and neutral: 4/9) would say "contradiction" for all 12 flattened items with probability (4/9)^8
    assert flat["cue_label"] == "contradiction" and flat["p_value"] == pytest.approx((4 / 9) ** 8)
    n_tested = len(out["distribution_test"])
    assert flat["p_holm"] == pytest.approx(min(1.0, n_tested * (4 / 9) ** 8))
    assert [row["value"] for row in out["distribution_test"] if row["follows_cue"]] in (["never"], ["negation", "never"])


def test_without_predictions_the_tests_are_empty_and_top_k_applies():
    out = ok(run("--reference", f"{FIXTURES}/nli_reference.jsonl", "--test", f"{FIXTURES}/nli_test.jsonl",
                 "--top-k", "2"))
    assert len(out["cues"]) == 2 and out["accuracy_test"] == [] and out["distribution_test"] == []


def test_multichoice_profile():
    out = ok(run("--reference", f"{FIXTURES}/mc_reference.jsonl", "--test", f"{FIXTURES}/mc_test.jsonl",
                 "--predictions", f"{FIXTURES}/mc_predictions.jsonl"))
    cues = {(c["feature"], c["value"]): c for c in out["cues"]}
    never = cues[("word", "never")]
    # the "never" option is wrong in all 14 reference questions and right in 2 of 14 test ones
    assert never["reference_dist"] == {"right": 0.0, "wrong": 1.0}
    assert (never["n_reference"], never["n_test"]) == (14, 14)
    assert never["test_dist"] == pytest.approx({"right": 2 / 14, "wrong": 12 / 14})
    # three options per question: the prior is 1/3 right, so "never" (0 right) is a wrong-cue
    assert never["prior"] == pytest.approx({"right": 1 / 3, "wrong": 2 / 3})
    assert never["cue_label"] == "wrong" and never["mse"] == pytest.approx(1 / 9)
    # "never" has 2 right rows in S: too few to flatten (2 * 2 < 11), so it is not in the distribution test
    assert out["distribution_test"] and ("word", "never") not in {(r["feature"], r["value"])
                                                                   for r in out["distribution_test"]}
    assert all(0.0 <= r["p_value"] <= r["p_holm"] <= 1.0 for r in out["distribution_test"])
    assert ("word", "visit") not in cues  # fires in every option of the plain questions
    row = next(r for r in out["accuracy_test"] if r["value"] == "never")
    assert (row["n_with"], row["n_without"]) == (14, 12)
    assert row["acc_with"] == pytest.approx(12 / 14) and row["acc_without"] == pytest.approx(9 / 12)


def test_chinese_multichoice():
    out = ok(run("--language", "zh", "--reference", f"{FIXTURES}/zh_mc_reference.jsonl",
                 "--test", f"{FIXTURES}/zh_mc_test.jsonl"))
    cues = {(c["feature"], c["value"]): c for c in out["cues"]}
    assert cues[("negation", "negation")]["reference_dist"] == {"right": 0.0, "wrong": 1.0}
    assert ("word", "不想") in cues


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_invalid_json_line(tmp_path):
    bad = write(tmp_path / "test.jsonl", ['{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}', "{oops"])
    assert_one_line_error(run("--reference", f"{FIXTURES}/nli_reference.jsonl", "--test", bad),
                          "test file", str(bad), "line 2", "not valid JSON")


def test_missing_field_names_file_line_and_field(tmp_path):
    bad = write(tmp_path / "ref.jsonl", ['{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}', "",
                                         '{"id": "b", "premise": "p", "hypothesis": "h"}'])
    assert_one_line_error(run("--reference", bad, "--test", f"{FIXTURES}/nli_test.jsonl"),
                          "reference file", "line 3", "field 'label' is missing")


def test_mixing_kinds_is_an_error(tmp_path):
    bad = write(tmp_path / "test.jsonl", ['{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}',
                                          '{"id": "b", "premise": "p", "options": ["x", "y"], "label": 0}'])
    assert_one_line_error(run("--reference", f"{FIXTURES}/nli_reference.jsonl", "--test", bad),
                          "line 2", "'options'", "mixed")
    assert_one_line_error(run("--reference", f"{FIXTURES}/mc_reference.jsonl", "--test", f"{FIXTURES}/nli_test.jsonl"),
                          "multichoice", "classification")


def test_bad_multichoice_label(tmp_path):
    bad = write(tmp_path / "test.jsonl", ['{"id": "a", "premise": "p", "options": ["x", "y"], "label": 5}'])
    assert_one_line_error(run("--reference", f"{FIXTURES}/mc_reference.jsonl", "--test", bad),
                          "line 1", "field 'label'")


def test_duplicate_test_ids(tmp_path):
    row = '{"id": "a", "premise": "p", "hypothesis": "h", "label": "x"}'
    assert_one_line_error(run("--reference", f"{FIXTURES}/nli_reference.jsonl",
                              "--test", write(tmp_path / "t.jsonl", [row, row])), "line 2", "field 'id'")


def test_prediction_errors(tmp_path):
    args = ("--reference", f"{FIXTURES}/mc_reference.jsonl", "--test", f"{FIXTURES}/mc_test.jsonl", "--predictions")
    unknown = write(tmp_path / "p1.jsonl", ['{"id": "nope", "label": 0}'])
    assert_one_line_error(run(*args, unknown), "prediction file", "line 1", "field 'id'")
    out_of_range = write(tmp_path / "p2.jsonl", ['{"id": "t2", "label": 0}', '{"id": "t3", "label": 3}'])
    assert_one_line_error(run(*args, out_of_range), "line 2", "field 'label'", "0..2")
    missing = write(tmp_path / "p3.jsonl", ['{"id": "t2"}'])
    assert_one_line_error(run(*args, missing), "line 1", "field 'label' is missing")
    repeated = write(tmp_path / "p4.jsonl", ['{"id": "t2", "label": 0}', '{"id": "t2", "label": 1}'])
    assert_one_line_error(run(*args, repeated), "line 2", "repeats")


def test_partial_predictions_are_reported_on_stderr(tmp_path):
    some = write(tmp_path / "p.jsonl", ['{"id": "t2", "label": 1}'])
    result = run("--reference", f"{FIXTURES}/mc_reference.jsonl", "--test", f"{FIXTURES}/mc_test.jsonl",
                 "--predictions", some)
    assert ok(result)["accuracy_test"]
    assert result.stderr.decode() == "unpredicted: 25\n"


def test_missing_and_empty_files(tmp_path):
    assert_one_line_error(run("--reference", tmp_path / "none.jsonl", "--test", f"{FIXTURES}/nli_test.jsonl"),
                          "cannot read reference file")
    empty = write(tmp_path / "empty.jsonl", [""])
    assert_one_line_error(run("--reference", f"{FIXTURES}/nli_reference.jsonl", "--test", empty), "no rows")
    not_object = write(tmp_path / "list.jsonl", ["[1, 2]"])
    assert_one_line_error(run("--reference", f"{FIXTURES}/nli_reference.jsonl", "--test", not_object),
                          "line 1", "JSON object")
    assert_one_line_error(run("--reference", f"{FIXTURES}/nli_reference.jsonl", "--test",
                              f"{FIXTURES}/nli_test.jsonl", "--top-k", "0"), "--top-k")
