"""Model bundles without the sandbox (docs/model_submissions.md): the examples per format, the
bundle check, the in-process run with every bad input's category, the reference bundle and the
command line. The sandboxed runs are in test_model_sandbox.py."""
import json
import re
import zipfile
from pathlib import Path

import pytest

from scoring import cli
from scoring.metrics import expmrc
from scoring.model_bundles import examples as model_examples
from scoring.model_bundles.build import build_reference_bundle
from scoring.model_bundles.pipeline import run_model
from scoring.sandbox import check_submission_code
from scoring.sandbox.bundle_check import BundleRefused, check_bundle, extract_bundle
from scoring.sandbox.model_contract import MODEL_FAILURES
from tests.scoring.model_bundle_fixtures import (
    BAD_BUNDLES,
    CLASSIFICATION_INPUTS,
    GOOD,
    MULTICHOICE_INPUTS,
    SECRET,
    SPAN_INPUTS,
    make_zip,
    write_bundle,
)

SHARED_EXPMRC = Path(__file__).resolve().parents[3] / "shared" / "data" / "expmrc"


# --------------------------------------------------------------------------- examples

def test_each_format_gives_flat_records_with_only_public_fields():
    assert model_examples.model_examples(SPAN_INPUTS)[1] == {
        "id": "q2", "question": "When was the Eiffel Tower built?",
        "context": SPAN_INPUTS["data"][0]["paragraphs"][0]["context"]}
    choice = model_examples.model_examples(MULTICHOICE_INPUTS)
    assert [example["id"] for example in choice] == ["p-1-0", "p-1-1"]  # the scorer's keys
    assert set(choice[0]) == {"id", "question", "article", "options"}
    assert choice[1]["options"] == ["apples", "pears", "milk"]
    nli = model_examples.model_examples(CLASSIFICATION_INPUTS)
    assert nli[0] == {"id": "n1", "premise": "A man is playing a guitar on stage.",
                      "hypothesis": "A man is playing a guitar.", "labels": ["contradiction", "entailment", "neutral"]}


def test_examples_come_from_the_stored_public_inputs_never_from_gold():
    gold = {"version": "expmrc-squad-test", "data": [{"title": "t", "paragraphs": [{
        "context": "Ann met Bob.", "qas": [{"id": "x", "question": "Who met Bob?", "answers": [{"text": SECRET}],
                                            "evidences": [SECRET]}]}]}]}
    examples = model_examples.model_examples(expmrc.public_inputs(gold))
    assert SECRET not in json.dumps(examples)
    assert examples == [{"id": "x", "question": "Who met Bob?", "context": "Ann met Bob."}]


@pytest.mark.parametrize("inputs, message", [
    ({"version": "expmrc-squad-test", "data": [{"paragraphs": [{"context": 3, "qas": []}]}]},
     "data[0].paragraphs[0].context must be a string"),
    ({"version": "other"}, "Unsupported version"),
    ({"rows": []}, "cannot tell the format"),
    ({"version": "expmrc-race-test", "data": [{"id": "p", "article": "a", "questions": ["q"], "options": []}]},
     "options has 0 items"),
])
def test_inputs_of_the_wrong_layout_are_refused_by_place(inputs, message):
    with pytest.raises(model_examples.InvalidInputs, match=re.escape(message)):
        model_examples.model_examples(inputs)


# --------------------------------------------------------------------------- the bundle check

def test_the_bundle_check_reuses_the_upload_checks_and_streams_members(tmp_path):
    bundle = write_bundle(tmp_path, {"model/predict.py": GOOD, "model/weights.bin": b"\x00" * 5000,
                                     "model/lib/helper.py": "X = 1\n"})
    manifest = extract_bundle(bundle, tmp_path / "out")  # one wrapping folder is stripped
    assert manifest.files == {"predict.py": len(GOOD), "weights.bin": 5000, "lib/helper.py": 6}
    assert (tmp_path / "out" / "weights.bin").read_bytes() == b"\x00" * 5000
    assert (tmp_path / "out" / "predict.py").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("files, category, message", [
    ({"model.py": GOOD}, "no_predict_py", "no predict.py at the root of the zip (top-level .py files found: model.py)"),
    ({"predict.py": "def helper(x):\n    return x\n"}, "no_predict", "no top-level `def predict(examples)`"),
    ({"predict.py": "async def predict(examples):\n    return {}\n"}, "no_predict", "not `async def`"),
    ({"predict.py": GOOD, "/etc/evil.py": "x = 1\n"}, "invalid_bundle", "unsafe path"),
    ({"predict.py": GOOD, "json.py": "x = 1\n"}, "invalid_bundle", "standard-library module"),
    ({"predict.py": GOOD, "helper.pyc": b"\x00"}, "invalid_bundle", "bytecode"),
    ({"predict.py": GOOD, "fast.so": b"\x7fELF"}, "invalid_bundle", "native code"),
])
def test_the_bundle_check_names_the_category(tmp_path, files, category, message):
    with pytest.raises(BundleRefused) as refused:
        check_bundle(write_bundle(tmp_path, files))
    assert refused.value.category == category
    assert message in str(refused.value)


def test_a_zip_bomb_is_refused_from_its_headers_before_inflating(tmp_path):
    bundle = write_bundle(tmp_path, {"predict.py": GOOD, "zeros.bin": b"\x00" * (40 * 2**20)})
    assert bundle.stat().st_size < 100_000
    with pytest.raises(BundleRefused, match="expands to more than 16777216 bytes") as refused:
        extract_bundle(bundle, tmp_path / "out")
    assert refused.value.category == "invalid_bundle"
    assert not (tmp_path / "out").exists()


def test_bundle_size_limit_and_garbage(tmp_path):
    bundle = write_bundle(tmp_path, {"predict.py": GOOD})
    with pytest.raises(BundleRefused, match="the limit is 100 bytes"):
        check_bundle(bundle, max_bytes=100)
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"not a zip")
    with pytest.raises(BundleRefused, match="not a valid zip file"):
        check_bundle(garbage)


def test_the_model_child_names_are_reserved_for_code_submissions_too():
    with pytest.raises(Exception, match="reserved"):
        check_submission_code(make_zip({"sandbox_model_child.py": "def interpret(m, q, c):\n  return []\n"}),
                              "x.zip")


# --------------------------------------------------------------------------- in-process runs

@pytest.mark.parametrize("name", sorted(BAD_BUNDLES))
def test_every_bad_input_has_its_category_in_process(tmp_path, name):
    files, category = BAD_BUNDLES[name]
    result = run_model(write_bundle(tmp_path, files), SPAN_INPUTS, in_process=True)
    assert (result.status, result.failure) == ("failed", category), result.message
    assert result.predictions_json is None and result.predictions is None
    assert result.hidden_message == MODEL_FAILURES[category]
    assert result.message and result.message != result.hidden_message


@pytest.mark.parametrize("inputs, predict, message", [
    (MULTICHOICE_INPUTS, "{e['id']: {'answer': 'E', 'evidence': ''} for e in examples}",
     'multi-choice "answer" must be one uppercase option letter (A, B, C, D)'),
    (CLASSIFICATION_INPUTS, "{e['id']: 'maybe' for e in examples}", 'label "maybe" is not one of'),
    (SPAN_INPUTS, "{e['id']: {'answer': 'a'} for e in examples}", 'field "evidence" is missing'),
])
def test_a_prediction_of_the_wrong_shape_gets_the_parsers_own_message(tmp_path, inputs, predict, message):
    bundle = write_bundle(tmp_path, {"predict.py": f"def predict(examples):\n    return {predict}\n"})
    result = run_model(bundle, inputs, in_process=True)
    assert result.failure == "bad_prediction"
    assert message in result.message


def test_the_examples_reach_predict_in_batches_with_the_device(tmp_path):
    bundle = write_bundle(tmp_path, {"predict.py": (
        "import os\nCALLS = []\n\ndef predict(examples):\n    CALLS.append(len(examples))\n"
        "    return {e['id']: {'answer': os.environ['EXPBENCH_DEVICE'], 'evidence': str(CALLS)} for e in examples}\n")})
    result = run_model(bundle, SPAN_INPUTS, in_process=True, batch_size=2)
    assert result.ok and result.batches == 2 and len(result.batch_seconds) == 2
    assert result.predictions == {"q1": {"answer": "cpu", "evidence": "[2]"}, "q2": {"answer": "cpu", "evidence": "[2]"},
                                  "q3": {"answer": "cpu", "evidence": "[2, 1]"}}
    assert json.loads(result.predictions_json) == result.predictions
    assert list(json.loads(result.predictions_json)) == ["q1", "q2", "q3"]  # the examples' order


def test_hidden_feedback_never_carries_what_the_bundle_printed_or_raised(tmp_path, capsys):
    for source in (f"print('{SECRET}')\nraise RuntimeError('{SECRET}')\n\ndef predict(examples):\n    return {{}}\n",
                   f"def predict(examples):\n    print('{SECRET}')\n    raise KeyError(examples[0]['question'] + '{SECRET}')\n",
                   f"def predict(examples):\n    return {{'{SECRET}': 1}}\n"):
        result = run_model(write_bundle(tmp_path, {"predict.py": source}), SPAN_INPUTS, in_process=True)
        assert not result.ok
        assert SECRET in result.message  # the full level shows it (a smoke run)
        hidden = json.dumps(result.feedback(hidden=True))
        assert SECRET not in hidden and "capital of France" not in hidden
        assert json.loads(hidden)["message"] == MODEL_FAILURES[result.failure]
    assert SECRET in capsys.readouterr().err  # prints go to stderr, as in the sandbox


def test_the_same_bundle_twice_gives_identical_predictions_and_a_recorded_run(tmp_path):
    bundle = build_reference_bundle(tmp_path / "reference.zip")
    first = run_model(bundle, SPAN_INPUTS, in_process=True)
    second = run_model(bundle, SPAN_INPUTS, in_process=True)
    assert first.ok and first.predictions_json == second.predictions_json
    record = first.record()
    assert record["bundle_sha256"] == second.bundle_sha256 and len(record["bundle_sha256"]) == 64
    assert record["environment"]["python"] and "numpy" in record["environment"]["packages"]
    assert record["hardware"]["cpu"] and record["device"] == "cpu"


def test_the_reference_bundle_answers_every_format(tmp_path):
    bundle = build_reference_bundle(tmp_path / "reference.zip")
    assert bundle.read_bytes() == build_reference_bundle(tmp_path / "again.zip").read_bytes()  # reproducible
    span = run_model(bundle, SPAN_INPUTS, in_process=True)
    assert span.predictions["q1"] == {"answer": "Paris", "evidence": "Paris is the capital of France."}
    assert span.predictions["q2"]["evidence"] == "The Eiffel Tower was built in 1889 for a fair."
    choice = run_model(bundle, MULTICHOICE_INPUTS, in_process=True)
    assert choice.predictions["p-1-0"]["answer"] == "A" and choice.predictions["p-1-1"]["answer"] == "B"
    nli = run_model(bundle, CLASSIFICATION_INPUTS, in_process=True)
    assert nli.predictions == {"n1": "entailment", "n2": "contradiction"}


@pytest.mark.skipif(not SHARED_EXPMRC.is_dir(), reason="the ExpMRC dev sets (../shared/data/expmrc) are not here")
@pytest.mark.parametrize("subset", ["squad", "race"])
def test_the_reference_bundle_scores_above_zero_on_the_expmrc_dev_sets(tmp_path, subset):
    gold = json.loads((SHARED_EXPMRC / f"expmrc-{subset}-dev.json").read_text(encoding="utf-8"))
    result = run_model(build_reference_bundle(tmp_path / "reference.zip"), expmrc.public_inputs(gold), in_process=True)
    score = expmrc.score_predictions(gold, result.predictions)
    assert score.unanswered == 0
    assert score.answer > 10 and score.evidence > 40 and score.overall > 10


# --------------------------------------------------------------------------- command line

def test_run_model_prints_predictions_or_the_category(tmp_path, capsys):
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps(SPAN_INPUTS), encoding="utf-8")
    bundle = build_reference_bundle(tmp_path / "reference.zip")
    assert cli.main(["run-model", str(bundle), str(inputs), "--out", str(tmp_path / "pred.json")]) == 0
    assert json.loads((tmp_path / "pred.json").read_text())["q1"]["answer"] == "Paris"
    assert "predicted 3 examples" in capsys.readouterr().err
    bad = write_bundle(tmp_path, BAD_BUNDLES["missing ids"][0], "bad.zip")
    assert cli.main(["run-model", str(bad), str(inputs)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("error: missing_ids: batch 0: predict returned no prediction for 1 of")
    assert cli.main(["run-model", str(bad), str(inputs), "--hidden"]) == 1
    assert capsys.readouterr().err == f"error: missing_ids: {MODEL_FAILURES['missing_ids']}\n"
    assert cli.main(["run-model", str(bundle), str(tmp_path / "absent.json")]) == 2
    assert "cannot read inputs file" in capsys.readouterr().err


def test_build_bundle_zips_a_folder_with_predict_at_the_root(tmp_path, capsys):
    folder = tmp_path / "mine"
    (folder / "__pycache__").mkdir(parents=True)
    (folder / "predict.py").write_text(GOOD)
    (folder / "__pycache__" / "predict.cpython-311.pyc").write_bytes(b"\x00")
    assert cli.main(["build-bundle", str(folder), "--out", str(tmp_path / "b.zip")]) == 0
    assert "1 files, sha256 " in capsys.readouterr().out
    assert zipfile.ZipFile(tmp_path / "b.zip").namelist() == ["predict.py"]
    assert cli.main(["build-bundle", str(tmp_path), "--out", str(tmp_path / "c.zip")]) == 2
