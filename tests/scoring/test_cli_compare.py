"""``python -m scoring compare`` run as a subprocess: ExpMRC prediction files ranked as a board."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring import stats
from scoring.metrics import expmrc
from tests.factories import perfect_predictions
from tests.scoring.cli_errors import assert_one_line_error

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "benchmark" / "fixtures" / "expmrc"
SQUAD = FIXTURES / "expmrc-squad-dev.json"
RACE = FIXTURES / "expmrc-race-dev.json"


def run(*args):
    return subprocess.run([sys.executable, "-m", "scoring", "compare", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def spoil(predictions, keys, answer="zzz", evidence="zzz"):
    out = dict(predictions)
    for key in keys:
        out[key] = {"answer": answer, "evidence": evidence}
    return out


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
    return path




def server_view(gold, predictions_in_rank_order):
    """What the server computes for the same entries (submissions/runs.py, leaderboards/boards.py)."""
    scores = [expmrc.score_predictions(gold, p) for p in predictions_in_rank_order]
    cis = [stats.bootstrap_cis({key: [100 * q[field] for q in s.per_question]
                                for key, field in (("answer_f1", "answer"), ("evidence_f1", "evidence"),
                                                   ("overall_f1", "overall"))},
                               n_resamples=1000, seed=0) for s in scores]
    overall = [[q["overall"] for q in s.per_question] for s in scores]
    return scores, cis, overall, stats.significance_tiers(overall, alpha=0.05, n_resamples=10_000, seed=0)


def test_one_json_document_ranked_like_a_board_with_the_server_numbers(tmp_path):
    gold = load(SQUAD)
    best = perfect_predictions(gold)
    keys = list(best)
    files = {  # given out of order; two files tie
        "weak.json": spoil(best, keys[:2]),
        "best.json": best,
        "tie_a.json": spoil(best, keys[:1]),
        "tie_b.json": spoil(best, keys[1:2]),
    }
    paths = [write(tmp_path, name, content) for name, content in files.items()]
    result = run(SQUAD, *paths)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert result.stdout.count("\n") == 1  # one document, one line
    assert set(document) == {"systems", "paired", "procedure"}
    assert document["procedure"] == stats.TIER_PROCEDURE

    systems = document["systems"]
    assert [Path(s["file"]).name for s in systems] == ["best.json", "tie_a.json", "tie_b.json", "weak.json"]
    assert [s["rank"] for s in systems] == [1, 2, 2, 4]  # ties share a rank, the given order stays
    assert all(s["file"] == str(tmp_path / Path(s["file"]).name) for s in systems)  # the path as given

    scores, cis, overall, tiers = server_view(gold, [files[Path(s["file"]).name] for s in systems])
    for system, score, ci, tier in zip(systems, scores, cis, tiers, strict=True):
        assert system["scores"] == {"answer_f1": score.answer, "evidence_f1": score.evidence,
                                    "overall_f1": score.overall}
        assert system["ci"] == {key: list(bounds) for key, bounds in ci.items()}
        assert {key: system[key] for key in tier} == tier
        assert (system["total"], system["unanswered"]) == (3, 0)
    # The official script's figures (the expmrc sub-command) for the same file.
    assert f"{systems[3]['scores']['overall_f1']:.3f}" == json.loads(subprocess.run(
        [sys.executable, "-m", "scoring", "expmrc", str(SQUAD), str(tmp_path / "weak.json")],
        cwd=REPO, capture_output=True, text=True, timeout=120).stdout)["ALL_F1"]

    pairs = [(Path(p["a"]).name, Path(p["b"]).name) for p in document["paired"]]
    assert pairs == [("best.json", "tie_a.json"), ("best.json", "tie_b.json"), ("best.json", "weak.json"),
                     ("tie_a.json", "tie_b.json"), ("tie_a.json", "weak.json"), ("tie_b.json", "weak.json")]
    assert document["paired"][2]["p_value"] == stats.paired_test(overall[0], overall[3], n_resamples=10_000, seed=0)


def test_tiers_split_a_clearly_worse_file_on_a_larger_set(tmp_path):
    # 20 copies of the SQuAD fixture's paragraph under new ids: 60 questions.
    fixture = load(SQUAD)
    gold = {"version": "expmrc-squad-fixture-x20", "data": []}
    for copy_number in range(20):
        article = copy.deepcopy(fixture["data"][0])
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["id"] = f"{qa['id']}-{copy_number}"
        gold["data"].append(article)
    gold_path = write(tmp_path, "gold.json", gold)
    best = perfect_predictions(gold)
    keys = list(best)
    paths = [write(tmp_path, "best.json", best),
             write(tmp_path, "almost.json", spoil(best, keys[:1])),
             write(tmp_path, "half.json", spoil(best, keys[::2]))]
    result = run(gold_path, *paths, "--tier-resamples", 2000, "--bootstrap-resamples", 200)
    assert result.returncode == 0, result.stderr
    systems = json.loads(result.stdout)["systems"]
    assert [(Path(s["file"]).stem, s["rank"], s["tier"]) for s in systems] == [
        ("best", 1, 1), ("almost", 2, 1), ("half", 3, 2)]
    assert systems[1]["p_vs_leader"] >= 0.05 and systems[2]["p_vs_above"] < 0.001
    low, high = systems[2]["ci"]["overall_f1"]
    assert low < systems[2]["scores"]["overall_f1"] < high


def test_multiple_choice_uses_the_servers_answer_accuracy_key(tmp_path):
    gold = load(RACE)
    best = perfect_predictions(gold)
    wrong_letter = {key: {"answer": "D" if value["answer"] != "D" else "A", "evidence": value["evidence"]}
                    for key, value in best.items()}
    missing = dict(list(best.items())[1:])  # one question unanswered: scores 0, stays in the total
    result = run(RACE, write(tmp_path, "wrong.json", wrong_letter), write(tmp_path, "best.json", best),
                 write(tmp_path, "missing.json", missing))
    assert result.returncode == 0, result.stderr
    systems = json.loads(result.stdout)["systems"]
    assert [Path(s["file"]).stem for s in systems] == ["best", "missing", "wrong"]
    assert set(systems[0]["scores"]) == set(systems[0]["ci"]) == {"answer_acc", "evidence_f1", "overall_f1"}
    assert systems[2]["scores"]["answer_acc"] == 0.0 and systems[2]["scores"]["overall_f1"] == 0.0
    assert systems[1]["unanswered"] == 1
    # Binary answer accuracy gets a Wilson interval, never a zero-width one at 100.
    low, high = systems[0]["ci"]["answer_acc"]
    assert high == 100.0 and low < 100.0


@pytest.mark.parametrize("problem", ["one file", "same file twice", "missing file", "bad json", "unknown key",
                                     "bad gold", "bad option"])
def test_bad_input_is_one_error_line_and_exit_2(tmp_path, problem):
    gold = load(SQUAD)
    good = write(tmp_path, "good.json", perfect_predictions(gold))
    if problem == "one file":
        assert_one_line_error(run(SQUAD, good), "at least two prediction files")
    elif problem == "same file twice":
        assert_one_line_error(run(SQUAD, good, good), "given twice")
    elif problem == "missing file":
        assert_one_line_error(run(SQUAD, good, tmp_path / "nope.json"), "cannot read prediction file", "nope.json")
    elif problem == "bad json":
        bad = tmp_path / "bad.json"
        bad.write_text('{"fx-squad-1": {"answer": "x", "evidence": "y"}\n,,}')
        assert_one_line_error(run(SQUAD, good, bad), "invalid prediction file", "bad.json", "line 2")
    elif problem == "unknown key":
        bad = write(tmp_path, "bad.json", {"zz-9": {"answer": "x", "evidence": "y"}})
        assert_one_line_error(run(SQUAD, good, bad), "invalid prediction file", '"zz-9"')
    elif problem == "bad gold":
        broken = copy.deepcopy(gold)
        broken["data"][0]["paragraphs"][0]["qas"][0]["evidences"] = []
        assert_one_line_error(run(write(tmp_path, "gold.json", broken), good, good.with_name("x.json")),
                              "invalid gold file")
    else:
        assert_one_line_error(run(SQUAD, good, good.with_name("other.json"), "--tier-resamples", "0"),
                              "--tier-resamples must be at least 1")
