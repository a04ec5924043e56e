"""QUACKIE on extreme but finite scores: every per-sample metric and aggregate is a finite
number or None, and the CLI prints strict JSON (no NaN / Infinity literal, no traceback)."""
import json
import math

import numpy as np
import pytest

from scoring.cli import main
from scoring.metrics.quackie import sample_metrics, score, summary, summary_line

GT_FIRST = [[1, 0, 0]]


def one_hot(n, index):
    return [[int(i == index) for i in range(n)]]


def test_snr_whose_float_std_underflows_to_zero_is_undefined():
    # rest [0, 1e-170]: not constant, but its population std is 0.0 in doubles (the squared
    # deviations underflow); the official "noise == 0" check gives NaN here. The old
    # s**2 / noise**2 gave inf.
    assert np.std([0.0, 1e-170]) == 0.0
    result = sample_metrics([1, 0, 1e-170], GT_FIRST)
    assert result["snr_raw"] is None and result["fail"] is False
    assert result["iou"] == 1 and result["hpd_rank"] == 1


def test_snr_whose_square_overflows_is_undefined():
    # noise 1e-160 is not 0, but (signal / noise)^2 = 1e320 is past the double limit: the
    # official formula gives +inf, which would make the whole mean inf; we call it undefined.
    noise = np.std([0.0, 2e-160])
    with np.errstate(over="ignore"):
        assert noise > 0 and math.isinf(1.0 / noise ** 2)
    assert sample_metrics([1, 0, 2e-160], GT_FIRST)["snr_raw"] is None


def test_a_huge_but_finite_snr_is_kept():
    value = sample_metrics([1, 0, 2e-154], GT_FIRST)["snr_raw"]  # ((1 - 1e-154) / 1e-154)^2
    assert math.isfinite(value) and value == pytest.approx(1e308, rel=1e-9)


def test_huge_scores_do_not_overflow_the_means_inside_the_snr():
    # The rest's sum (2.2e308) overflows a double; SNR is scale-free, so it must equal the
    # SNR of the same scores divided by 1e308.
    huge = sample_metrics([1e308, -1e308, 1.5e308, 1.7e308], one_hot(4, 0))["snr_raw"]
    small = sample_metrics([1, -1, 1.5, 1.7], one_hot(4, 0))["snr_raw"]
    assert huge is not None and huge == pytest.approx(small, rel=1e-12)


def test_the_official_snr_on_the_binarised_vector_is_unchanged():
    # Closed forms (docs/metrics.md#quackie): hit with T = 2 of n = 5 gives (n-T)/(T-1) = 3,
    # a tie-free miss on n = 5 gives 1/(n-2).
    assert sample_metrics([9, 9, 1, 2, 3], one_hot(5, 0))["snr"] == pytest.approx(3, abs=1e-12)
    assert sample_metrics([1, 9, 3, 2, 0], one_hot(5, 0))["snr"] == pytest.approx(1 / 3, abs=1e-12)


def test_aggregates_of_huge_snrs_stay_finite():
    gold = {"a": {"gt_candidates": GT_FIRST}, "b": {"gt_candidates": GT_FIRST}}
    result = score(gold, {"a": [1, 0, 2e-154], "b": [1, 0, 2e-154]})
    # two values of ~1e308: their plain sum overflows, their mean does not
    assert result["SNR_raw"] == pytest.approx(1e308, rel=1e-9)
    assert all(value is None or math.isfinite(value) for value in summary(result).values())


def test_summary_line_maps_every_non_finite_number_to_null():
    result = {key: 0.5 for key in ("IoU", "HPD", "SNR", "IoU_std", "HPD_std", "SNR_std", "HPD_rank")}
    result.update({"SNR_raw": float("inf"), "SNR_std": float("-inf"), "HPD_rank": float("nan"),
                   "fails": 0, "no_snr": 0, "n": 1})
    line = json.loads(summary_line(result))
    assert (line["SNR_raw"], line["SNR_std"], line["HPD_rank"], line["IoU"]) == (None, None, None, 0.5)


def write(path, document):
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.parametrize("scores, snr_raw", [
    ({"a": [1, 0, 1e-170]}, None),  # the audit's example: once a traceback
    ({"a": [1, 0, 2e-160]}, None),
    ({"a": [1, 0, 2e-154], "b": [1, 0, 2e-154]}, 1e308),
])
def test_cli_prints_strict_json_for_extreme_scores(tmp_path, capsys, scores, snr_raw):
    sentences = ["One.", "Two.", "Three."]
    gold = write(tmp_path / "gold.json", {key: {"sentences": sentences, "gt_candidates": GT_FIRST}
                                          for key in ("a", "b")})
    code = main(["quackie", str(gold), str(write(tmp_path / "scores.json", scores))])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert out.count("\n") == 1 and "Infinity" not in out and "NaN" not in out
    line = json.loads(out)
    assert line["IoU"] == 1.0
    if snr_raw is None:
        assert line["SNR_raw"] is None
    else:
        assert line["SNR_raw"] == pytest.approx(snr_raw, rel=1e-9)
