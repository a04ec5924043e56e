"""QUACKIE interpretability tracks (Rychener et al., 2020): sentence-score files or interpreter
code, scored against the sentence that holds the answer."""
import math
import sys
from typing import Any

from django.utils.translation import gettext_noop

from scoring.metrics import quackie

from .base import CI_BAR, CODE, PREDICTIONS, REPORTED, TIER, ScoredRun, StoredSplit, TaskKind, Wording


class InterpretationKind(TaskKind):
    """Score files {sample_id: [one float per frozen sentence]} (docs/metrics.md#quackie): official
    IoU/HPD/SNR on the binarised top-1 vector plus the extended raw-score columns; a sample
    whose list has the wrong length, holds NaN or is missing is a counted fail.

    Everything stored is a finite number or None (PostgreSQL's jsonb refuses NaN and
    Infinity). The scorer's values are finite, but an ``snr_raw`` near the double limit (noise
    ~1e-150 of the signal) would overflow once scaled x100 or summed by the CI bootstrap, so
    such an item value is stored as undefined and the column's score is the mean of the
    remaining items."""

    name = "interpretation"
    label = gettext_noop("Interpretation")
    # Official IoU/HPD/SNR on the binarised top-1 vector, then the extended columns computed on
    # the raw scores (what the paper's text describes).
    metric_columns = (("iou", "IoU"), ("hpd", "HPD"), ("snr", "SNR"), ("hpd_rank", "HPD (rank)"),
                      ("snr_raw", "SNR (raw)"))
    primary_metric = "iou"
    metric_decimals = 2  # as on QUACKIE's official board
    item_noun = gettext_noop("samples")
    total_noun = gettext_noop("samples")
    totals_template = "kinds/interpretation_totals.html"
    scorer_version = "quackie-1"
    has_tracks = True
    max_fail_share = 0.5
    average_unit = gettext_noop("tracks")
    upload_kinds = ((PREDICTIONS, gettext_noop("Sentence-score file {sample_id: [floats]}")),
                    (CODE, gettext_noop("Interpreter code (.py, or .zip with one entry module), run in the sandbox")))
    file_help = gettext_noop('A score file {"<sample id>": [one number per sentence]}, or interpreter code: a .py '
                             'file (or a .zip) defining interpret(model, question, context).')
    upload_format_template = "kinds/interpretation_format.html"
    wording = Wording(
        family="QUACKIE",
        metric=gettext_noop("IoU: per sample, the overlap between the sentences an interpreter scores highest and "
                            "the sentence that holds the answer, averaged over the samples that did not fail (×100)."),
        ranking=gettext_noop("Ranked by IoU, highest first. A sample whose scores failed (missing, wrong length, not "
                             "finite) is left out of the means, so an entry whose scores failed on more than half of "
                             "the samples is listed without a rank or a tier, last, with the reason; so is an entry "
                             "whose IoU is undefined."),
        footnote=gettext_noop(  # xgettext:no-python-format
            "IoU, HPD and SNR are the official QUACKIE metrics (Rychener et al., 2020) on the top-1 selection (×100, "
            "2 decimals); HPD (rank) and SNR (raw) are computed on the raw scores. \"reported\" rows are the "
            "official QUACKIE leaderboard's published numbers. 95% intervals: BCa bootstrap over the samples where "
            "the metric is defined (1000 resamples)."),
        guide=(("IoU", gettext_noop("intersection over union of the selected sentences (every sentence tied at the "
                                    "top score) and the answer sentence: 100 when exactly the answer sentence is "
                                    "selected. The ranking column.")),
               ("HPD", gettext_noop("highest precision for detection: 1 ÷ the number of sentences that must be read, "
                                    "top scores first, to reach the answer sentence.")),
               ("SNR", gettext_noop("signal-to-noise ratio: how far the answer sentence's score stands out from the "
                                    "others (squared difference of means ÷ variance of the others); undefined when "
                                    "the others all score alike.")),
               ("HPD (rank), SNR (raw)", gettext_noop("the same two measures on the raw scores instead of the top-1 "
                                                      "selection, as the QUACKIE paper describes them; they do not "
                                                      "match the published numbers.")),
               (gettext_noop("Fails / no SNR"), gettext_noop("samples whose scores failed (left out of every mean) / "
                                                             "samples without an SNR (fails included).")),
               CI_BAR, TIER, REPORTED),
    )
    METRICS = ("iou", "hpd", "snr", "hpd_rank", "snr_raw")
    COLUMNS = {"iou": "IoU", "hpd": "HPD", "snr": "SNR", "hpd_rank": "HPD_rank", "snr_raw": "SNR_raw"}

    def parse_predictions(self, raw: bytes, split: StoredSplit, *, max_bytes: int) -> dict[str, list[float]]:
        return quackie.parse_scores(raw, split.key_spec["keys"], max_bytes=max_bytes)

    def score(self, split: StoredSplit, predictions: dict[str, list[float]]) -> ScoredRun:
        result = quackie.score(split.gold, predictions)
        # Largest item value whose x100 sum over every item stays a finite double.
        limit = sys.float_info.max / (100.0 * max(result["n"], 1))
        rows, scores = [], {}
        for sample in result["per_sample"]:
            rows.append([_finite_or_none(sample[metric], limit) for metric in self.METRICS])
        for column, metric in enumerate(self.METRICS):
            mean = result[self.COLUMNS[metric]]
            kept = [value for row in rows if (value := row[column]) is not None]
            if len(kept) != sum(sample[metric] is not None for sample in result["per_sample"]):
                mean = math.fsum(kept) / len(kept) if kept else None  # some items were too large
            scores[metric] = _finite_or_none(None if mean is None else 100.0 * mean)
        details = {key: result[key] for key in ("fails", "no_snr", "n")}
        details.update({key: _finite_or_none(result[key]) for key in ("IoU_std", "HPD_std", "SNR_std")})
        return ScoredRun(
            scores=scores, item_rows=rows, total=result["n"], unanswered=sum(
                1 for sample_id in split.gold if sample_id not in predictions),
            details={"quackie": details},
        )

    def unranked_reason(self, details: dict[str, Any]) -> str:
        """Why a scored entry is listed without a rank ("" when it is ranked): more than
        ``max_fail_share`` of its samples failed."""
        quackie_details = details.get("quackie") or {}
        fails, n = quackie_details.get("fails"), quackie_details.get("n")
        if fails and n and self.max_fail_share is not None and fails > self.max_fail_share * n:
            return f"not ranked: {fails} of {n} samples failed (more than half)"
        return ""


def _finite_or_none(value: Any, limit: float = sys.float_info.max) -> float | None:
    """``float(value)`` if it is a number of magnitude at most ``limit``, else None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) and abs(value) <= limit else None
