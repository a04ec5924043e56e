"""The QUACKIE command line (``python -m scoring quackie``, scoring/cli.py): one JSON line of fractions on
stdout and exit 0, or one ``error: ...`` line on stderr and exit 2, never a traceback."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.cli import main

REPO = Path(__file__).resolve().parents[2]
FIXTURES = "tests/fixtures/quackie"
GOLD, SCORES = f"{FIXTURES}/gold.json", f"{FIXTURES}/scores.json"
KEYS = ["IoU", "HPD", "SNR", "IoU_std", "HPD_std", "SNR_std", "fails", "no_snr", "n", "HPD_rank", "SNR_raw"]


def run_process(*args):
    return subprocess.run([sys.executable, "-m", "scoring", "quackie", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=False)


def run(capsys, *args):
    try:
        code = main(["quackie", *map(str, args)])
    except SystemExit as exit_:  # argparse refused the arguments
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(capsys, args, *fragments):
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


def test_subprocess_prints_one_json_line_of_fractions():
    result = run_process(GOLD, SCORES)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1
    line = json.loads(result.stdout)
    assert list(line) == KEYS
    assert line["IoU"] == pytest.approx(0.5)
    assert line["HPD"] == pytest.approx(1.75 / 3)
    assert line["SNR"] == pytest.approx(2.0)
    assert (line["fails"], line["no_snr"], line["n"]) == (2, 3, 5)
    assert line["HPD_rank"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 3)
    assert line["SNR_raw"] == pytest.approx((49 + 100 / 128 + 25 / 14) / 3)


def test_subprocess_invalid_input_is_one_stderr_line_and_exit_2(tmp_path):
    bad = tmp_path / "scores.json"
    bad.write_text('{"s-hit": [1, NaN, 3]}', encoding="utf-8")
    result = run_process(GOLD, bad)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f'error: invalid score file {bad}: invalid scores: line 1: "s-hit"[1] is NaN, '
                             "expected a finite number\n")


def test_missing_file_argument_is_one_stderr_line_and_exit_2():
    result = run_process(GOLD)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("error: python -m scoring quackie: the following arguments are required: SCORES.json "
                             "(see python -m scoring quackie --help)\n")


def test_in_process_output(capsys):
    code, out, err = run(capsys, REPO / GOLD, REPO / SCORES)
    assert code == 0 and err == ""
    assert out.count("\n") == 1 and list(json.loads(out)) == KEYS
    assert json.loads(out)["HPD"] == pytest.approx(1.75 / 3)


def test_scoring_does_not_load_nltk():
    runner = "import sys; from scoring.cli import main; main(['quackie', *sys.argv[1:]]); print('nltk' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", runner, GOLD, SCORES],
                            cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.splitlines()[-1] == "False"


def test_means_over_no_sample_are_null(tmp_path, capsys):
    scores = tmp_path / "scores.json"
    scores.write_text("{}", encoding="utf-8")
    code, out, _ = run(capsys, REPO / GOLD, scores)
    assert code == 0
    assert out == ('{"IoU": null, "HPD": null, "SNR": null, "IoU_std": null, "HPD_std": null, "SNR_std": null, '
                   '"fails": 5, "no_snr": 5, "n": 5, "HPD_rank": null, "SNR_raw": null}\n')


def test_undefined_snr_alone_is_null(tmp_path, capsys):
    scores = tmp_path / "scores.json"
    scores.write_text('{"s-hit": [0, 1, 0.5], "s-missing": [7]}', encoding="utf-8")
    code, out, _ = run(capsys, REPO / GOLD, scores)
    line = json.loads(out)
    assert code == 0
    assert (line["IoU"], line["HPD"], line["SNR"], line["SNR_std"]) == (1.0, 1.0, None, None)
    assert (line["fails"], line["no_snr"], line["n"]) == (3, 5, 5)
    assert line["SNR_raw"] == pytest.approx(1 / (0.25 ** 2) * (1 - 0.25) ** 2)  # rest [0, .5]: (1-.25)^2/.0625 = 9


def test_wrong_lengths_and_empty_arrays_are_fails_not_errors(tmp_path, capsys):
    scores = tmp_path / "scores.json"
    scores.write_text('{"s-hit": [], "s-miss": [1, 2], "s-missing": [1, 2]}', encoding="utf-8")
    code, out, _ = run(capsys, REPO / GOLD, scores)
    assert code == 0 and json.loads(out)["fails"] == 5


def test_gold_as_built_from_squad_samples_is_accepted(tmp_path, capsys):
    from scoring.metrics.quackie import squad_samples

    samples, _ = squad_samples(json.loads((REPO / FIXTURES / "squad_v2_small.json").read_text(encoding="utf-8")))
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({sample["id"]: sample for sample in samples}), encoding="utf-8")
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({sample["id"]: [1, 0, 0] for sample in samples}), encoding="utf-8")
    code, out, _ = run(capsys, gold, scores)
    line = json.loads(out)
    assert code == 0 and line["n"] == 5 and line["fails"] == 0
    assert line["IoU"] == pytest.approx(1 / 5)  # only q-mat's GT is sentence 0


@pytest.mark.parametrize("gold_text, fragment", [
    ("[1]", "top level must be a JSON object"),
    ('{"a": {"sentences": ["x"]}}', '["a"].gt_candidates is missing'),
    ('{"a": {"sentences": ["x", "y"], "gt_candidates": [[1, 1]]}}', "must be one-hot"),
    ('{"a": {"sentences": ["x"], "gt_candidates": [[1]]}, "a": {"sentences": ["x"], "gt_candidates": [[1]]}}',
     'duplicate key "a"'),
])
def test_invalid_gold(tmp_path, capsys, gold_text, fragment):
    gold = tmp_path / "gold.json"
    gold.write_text(gold_text, encoding="utf-8")
    line = assert_one_line_error(capsys, [gold, REPO / SCORES], f"invalid gold file {gold}: ", fragment)
    assert '"x"' not in line


def test_gold_that_is_not_json(tmp_path, capsys):
    gold = tmp_path / "gold.json"
    gold.write_text('{"a": ', encoding="utf-8")
    assert_one_line_error(capsys, [gold, REPO / SCORES], f"gold file {gold} is not valid JSON")
    gold.write_bytes(b'{"a\xff": 1}')
    assert_one_line_error(capsys, [gold, REPO / SCORES], f"gold file {gold} is not valid JSON")
    gold.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert_one_line_error(capsys, [gold, REPO / SCORES], "nested too deeply")


@pytest.mark.parametrize("scores_text, fragment", [
    ("not json", "not valid JSON"),
    ("[]", "top level must be a JSON object"),
    ('{"s-hit": [1, "2", 3]}', '"s-hit"[1] is a string, expected a finite number'),
    ('{"s-hit": [Infinity, 2, 3]}', '"s-hit"[0] is Infinity'),
    ('{"s-hit": [[1], 2, 3]}', '"s-hit"[0] is an array'),
    ('{"s-hit": {"0": 1}}', '"s-hit" is an object, expected an array of numbers'),
    ('{"s-hit": [1, 2, 3],\n "s-hit": [1, 2, 3]}', 'duplicated sample ids: line 2: "s-hit" (first at line 1)'),
    ('{"s-hit": [1, 2, 3], "nope": [1]}', 'sample ids not in the track\'s inputs: line 1: "nope"'),
])
def test_invalid_scores(tmp_path, capsys, scores_text, fragment):
    scores = tmp_path / "scores.json"
    scores.write_text(scores_text, encoding="utf-8")
    assert_one_line_error(capsys, [REPO / GOLD, scores], f"invalid score file {scores}: ", fragment)


def test_unreadable_files(tmp_path, capsys):
    assert_one_line_error(capsys, [tmp_path / "none.json", REPO / SCORES], "cannot read gold file",
                          "No such file or directory")
    assert_one_line_error(capsys, [REPO / GOLD, tmp_path], "cannot read score file")


def test_max_bytes_option(capsys):
    assert_one_line_error(capsys, [REPO / GOLD, REPO / SCORES, "--max-bytes", "10"], "over the limit of 10 bytes")
    code, _, _ = run(capsys, REPO / GOLD, REPO / SCORES, "--max-bytes=100000")
    assert code == 0
    assert_one_line_error(capsys, [REPO / GOLD, REPO / SCORES, "--max-bytes", "ten"], "--max-bytes: invalid int value")


@pytest.mark.parametrize("args", [[], [GOLD], [GOLD, SCORES, SCORES], [GOLD, SCORES, "--verbose"]])
def test_bad_arguments(capsys, args):
    assert_one_line_error(capsys, args, "error: python -m scoring", "--help)")


def test_registered_as_python_m_scoring_quackie(tmp_path):
    import json as _json
    import subprocess
    import sys
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "quackie"
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "scoring", "quackie", str(fixtures / "gold.json"),
                           str(fixtures / "scores.json")], cwd=repo, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert list(_json.loads(line)) == ["IoU", "HPD", "SNR", "IoU_std", "HPD_std", "SNR_std", "fails", "no_snr", "n",
                                       "HPD_rank", "SNR_raw"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"unknown-sample": [1, 2]}')
    refused = subprocess.run([sys.executable, "-m", "scoring", "quackie", str(fixtures / "gold.json"), str(bad)],
                             cwd=repo, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and refused.stderr.startswith("error:") and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
