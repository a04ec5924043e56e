"""Which pure scorer a submission uses, behind one small interface.

``parse(raw, test_set, max_bytes=...)`` validates an upload (InvalidPredictions with a
precise, gold-free message); ``score(task, test_set, predictions)`` returns a ScoredRun whose
per-item rows follow the task's metric columns (0-1 scale), so CIs, tiers and diagnostics
work the same for every kind.
"""
import json
from dataclasses import dataclass, field

from scoring import classification, expmrc
from scoring.uploads import InvalidPredictions, load_json_object, show

__all__ = ["InvalidPredictions", "ScoredRun", "scorer_for"]


@dataclass
class ScoredRun:
    scores: dict  # metric key -> official 0-100 value
    item_rows: list  # per gold item: values in metric-column order, 0-1
    total: int
    unanswered: int
    details: dict = field(default_factory=dict)  # kind-specific aggregates (never per-item gold)


class ExpmrcScorer:
    version = "expmrc-1/nltk-3.9.2"

    def parse(self, raw, test_set, *, max_bytes):
        return expmrc.parse_predictions(raw, expmrc.KeySpec.from_dict(test_set.key_spec), max_bytes=max_bytes)

    def score(self, task, test_set, predictions):
        result = expmrc.score_predictions(test_set.gold, predictions)
        return ScoredRun(
            scores={task.answer_metric: result.answer, "evidence_f1": result.evidence, "overall_f1": result.overall},
            item_rows=[[q["answer"], q["evidence"], q["overall"]] for q in result.per_question],
            total=result.total,
            unanswered=result.unanswered,
        )


class ClassificationScorer:
    version = "classification-1"

    def parse(self, raw, test_set, *, max_bytes):
        spec = classification.LabelSpec.from_dict(test_set.key_spec)
        return classification.parse_predictions(raw, spec, max_bytes=max_bytes)

    def score(self, task, test_set, predictions):
        result = classification.score_predictions(test_set.gold["rows"], predictions)
        return ScoredRun(scores={"accuracy": result.accuracy}, item_rows=[[v] for v in result.per_item],
                         total=result.total, unanswered=result.unanswered)


class SkillsScorer:
    """A skill submission: {"original": {...}, "s1": {...}, ...}, each an ExpMRC prediction
    object for the original hidden set or one reconstructed variant (seed 000). A variant
    that is absent is "not submitted", not zero. The score is the original's; the per-skill
    F1 gaps with paired bootstrap CIs go to ``details``."""

    version = "skills-1/expmrc-1"

    def variants(self, test_set):
        return {v.skill: v for v in test_set.skill_variants.filter(status="ok")}

    def parse(self, raw, test_set, *, max_bytes):
        text, document = load_json_object(raw, max_bytes=max_bytes,
                                           expected='{"original": {<predictions>}, "s1": {<predictions>}, ...}')
        variants = self.variants(test_set)
        names = [name for name, _ in document]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise InvalidPredictions(f"duplicated sections: {', '.join(show(n) for n in repeated)}")
        unknown = [name for name in names if name != "original" and name not in variants]
        if unknown:
            raise InvalidPredictions(
                f"unknown sections {', '.join(show(n) for n in unknown[:5])}; allowed: original, "
                + ", ".join(sorted(variants, key=_skill_order)))
        if "original" not in names:
            raise InvalidPredictions('section "original" is missing: the gaps are measured against it')
        parsed = {}
        for name, section in document:
            spec = test_set.key_spec if name == "original" else variants[name].key_spec
            try:
                parsed[name] = expmrc.parse_predictions(json.dumps(_plain(section)), expmrc.KeySpec.from_dict(spec),
                                                        max_bytes=max_bytes)
            except InvalidPredictions as exc:
                raise InvalidPredictions(f"section {show(name)}: {exc}") from None
        return parsed

    def score(self, task, test_set, predictions):
        from scoring import skills

        original = expmrc.score_predictions(test_set.gold, predictions["original"])
        variants = self.variants(test_set)
        variant_f1 = {}
        for name, preds in predictions.items():
            if name != "original":
                result = expmrc.score_predictions(variants[name].gold, preds)
                variant_f1[name] = {q["key"]: q["answer"] for q in result.per_question}
        gaps = skills.skill_gaps({q["key"]: q["answer"] for q in original.per_question}, variant_f1, seed=0)
        not_submitted = sorted(set(variants) - set(variant_f1), key=_skill_order)
        return ScoredRun(
            scores={task.answer_metric: original.answer, "evidence_f1": original.evidence,
                    "overall_f1": original.overall},
            item_rows=[[q["answer"], q["evidence"], q["overall"]] for q in original.per_question],
            total=original.total,
            unanswered=original.unanswered,
            details={"skills": gaps, "not_submitted": not_submitted},
        )


class ChecklistScorer:
    """CheckList SQuAD suite (public items): predictions {item_id: answer}; a case passes when
    the test's expectation holds for all its items; a case with a missing item is "not
    answered" and counts as failed. Per-item rows are per-case pass/fail."""

    version = "checklist-1"

    def parse(self, raw, test_set, *, max_bytes):
        from scoring.uploads import parse_id_to_string

        return parse_id_to_string(raw, test_set.key_spec["keys"], max_bytes=max_bytes,
                                  expected='{"<item id>": "<answer>"}')

    def score(self, task, test_set, predictions):
        from scoring import checklist

        suite = test_set.gold
        passed = [outcome == "pass" for test in checklist.case_outcomes(suite, predictions) for outcome in test]
        details = checklist.score_checklist(suite, predictions)
        return ScoredRun(
            scores={"pass_rate": 100.0 * sum(passed) / len(passed) if passed else 0.0},
            item_rows=[[1.0 if p else 0.0] for p in passed],
            total=len(passed),
            unanswered=details["overall"].get("n_missing", 0),
            details={"checklist": details},
        )


class InterpretationScorer:
    """QUACKIE score files {sample_id: [one float per frozen sentence]} (SPEC §6): official
    IoU/HPD/SNR on the binarised top-1 vector plus the extended raw-score columns; a sample
    whose list has the wrong length, holds NaN or is missing is a counted fail."""

    version = "quackie-1"
    METRICS = ("iou", "hpd", "snr", "hpd_rank", "snr_raw")

    def parse(self, raw, test_set, *, max_bytes):
        from scoring import quackie

        return quackie.parse_scores(raw, test_set.key_spec["keys"], max_bytes=max_bytes)

    def score(self, task, test_set, predictions):
        from scoring import quackie

        result = quackie.score(test_set.gold, predictions)
        summary = {"IoU": "iou", "HPD": "hpd", "SNR": "snr", "HPD_rank": "hpd_rank", "SNR_raw": "snr_raw"}
        scores = {key: (100.0 * result[name] if result[name] is not None else None) for name, key in summary.items()}
        rows = [[sample.get(metric) for metric in self.METRICS] for sample in result["per_sample"]]
        return ScoredRun(
            scores=scores, item_rows=rows, total=result["n"], unanswered=sum(
                1 for sample_id in test_set.gold if sample_id not in predictions),
            details={"quackie": {key: result[key] for key in ("fails", "no_snr", "n", "IoU_std", "HPD_std", "SNR_std")}},
        )


def _plain(pairs):
    """A JsonObject (list of pairs, duplicates kept) back to plain JSON values."""
    from scoring.uploads import JsonObject

    if isinstance(pairs, JsonObject):
        return {key: _plain(value) for key, value in pairs}
    if isinstance(pairs, list):
        return [_plain(value) for value in pairs]
    return pairs


def _skill_order(name):
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 0, name)


_BY_TASK_KIND = {"span": ExpmrcScorer(), "multichoice": ExpmrcScorer(), "classification": ClassificationScorer(),
                 "checklist": ChecklistScorer(), "interpretation": InterpretationScorer()}
_SKILLS = SkillsScorer()


def scorer_for(task, kind="predictions"):
    if kind == "skills":
        if task.kind != "span":
            raise LookupError("skill submissions are for span-extraction tasks")
        return _SKILLS
    try:
        return _BY_TASK_KIND[task.kind]
    except KeyError:
        raise LookupError(f"no prediction-file scorer for {task.kind} tasks") from None
