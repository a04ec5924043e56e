"""Which pure scorer a submission uses, behind one small interface.

``parse(raw, test_set, max_bytes=..., stored=False)`` validates an upload (InvalidPredictions with a
precise, gold-free message); ``score(task, test_set, predictions)`` returns a ScoredRun whose
per-item rows follow the task's metric columns (0-1 scale), so CIs, tiers and diagnostics
work the same for every kind.
"""
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchmark.models import SkillVariant, Task, TestSet
from scoring.analysis import skills
from scoring.metrics import checklist, classification, expmrc, quackie
from scoring.strict_json import InvalidPredictions, parse_id_to_string, show

__all__ = ["InvalidPredictions", "ScoredRun", "scorer_for"]


@dataclass
class ScoredRun:
    scores: dict  # metric key -> official 0-100 value
    item_rows: list  # per gold item: values in metric-column order, 0-1
    total: int
    unanswered: int
    details: dict = field(default_factory=dict)  # kind-specific aggregates (never per-item gold)


class Scorer(Protocol):
    """What every scorer offers: its version label, ``parse`` and ``score``."""

    version: str

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int, stored: bool = False) -> Any: ...

    def score(self, task: Task, test_set: TestSet, predictions: Any) -> ScoredRun: ...


class ExpmrcScorer:
    version = "expmrc-1/nltk-3.9.2"

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int, stored: bool = False) -> dict[str, dict]:
        return expmrc.parse_predictions(raw, expmrc.KeySpec.from_dict(test_set.key_spec), max_bytes=max_bytes)

    def score(self, task: Task, test_set: TestSet, predictions: dict[str, dict]) -> ScoredRun:
        result = expmrc.score_predictions(test_set.gold, predictions)
        return ScoredRun(
            scores={task.answer_metric: result.answer, "evidence_f1": result.evidence, "overall_f1": result.overall},
            item_rows=[[q["answer"], q["evidence"], q["overall"]] for q in result.per_question],
            total=result.total,
            unanswered=result.unanswered,
        )


class ClassificationScorer:
    version = "classification-1"

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int, stored: bool = False) -> dict[str, str]:
        spec = classification.LabelSpec.from_dict(test_set.key_spec)
        return classification.parse_predictions(raw, spec, max_bytes=max_bytes)

    def score(self, task: Task, test_set: TestSet, predictions: dict[str, str]) -> ScoredRun:
        result = classification.score_predictions(test_set.gold["rows"], predictions)
        return ScoredRun(scores={"accuracy": result.accuracy}, item_rows=[[v] for v in result.per_item],
                         total=result.total, unanswered=result.unanswered)


class SkillsScorer:
    """A skill submission: {"original": {...}, "s1": {...}, ...}, each an ExpMRC prediction
    object for the original hidden set or one reconstructed variant (InDepth-Eva-MRC, Wu et al., 2022). A variant
    that is absent is "not submitted", not zero. The score is the original's; the per-skill
    F1 gaps with paired bootstrap CIs go to ``details``."""

    version = "skills-2/expmrc-1"

    def variants(self, test_set: TestSet) -> dict[str, SkillVariant]:
        return {v.skill: v for v in test_set.skill_variants.filter(status="ok")}

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int,
              stored: bool = False) -> dict[str, dict[str, dict]]:
        document = skills.read_sections(raw, max_bytes=max_bytes)
        variants = self.variants(test_set)
        names = [name for name, _ in document]
        refused = [name for name in names if name != "original" and name not in variants]
        refused_set = set(refused)  # looked up per section: a set keeps a file of many sections linear
        if refused and not stored:
            raise InvalidPredictions(self.refusal(refused, test_set, variants))
        if "original" not in names:
            raise InvalidPredictions(skills.MISSING_ORIGINAL)
        parsed: dict[str, Any] = {}
        for name, section in document:
            if name in refused_set:
                # A stored, accepted file whose section's variant is no longer built (re-scoring
                # after an upgrade made it not applicable): kept out of the scores, reported.
                parsed[name] = None
                continue
            spec = test_set.key_spec if name == "original" else variants[name].key_spec
            parsed[name] = skills.parse_section(name, section, expmrc.KeySpec.from_dict(spec), max_bytes=max_bytes)
        return parsed

    def refusal(self, refused: list[str], test_set: TestSet, variants: dict[str, SkillVariant]) -> str:
        """Why sections cannot be scored: a skill not defined for the task's language, not
        configured (s6) or without a variant is named as such, anything else is unknown."""
        task = test_set.task
        languages = dict(type(task).LANGUAGE_CHOICES)
        stored = dict(test_set.skill_variants.values_list("skill", "status"))
        reasons = []
        for name in refused[:5]:
            if name not in skills.SKILLS:
                reasons.append(f"{show(name)} is not a skill section")
            elif task.language not in skills.SKILLS[name]["languages"]:
                defined_for = " and ".join(languages.get(code, code)
                                           for code in sorted(skills.SKILLS[name]["languages"]))
                reasons.append(f"{show(name)} is not applicable to this task's language "
                               f"({task.get_language_display()}): {name} is defined for {defined_for} passages only")
            elif stored.get(name) == skills.NOT_CONFIGURED:
                reasons.append(f"{show(name)} is not configured on this server, so it has no variant to score")
            elif name in stored:
                reasons.append(f"{show(name)} has no scorable variant for this test set ({stored[name]})")
            else:
                reasons.append(f"{show(name)} has not been built yet for this test set")
        allowed = ", ".join(["original", *sorted(variants, key=_skill_order)])
        return f"section {'; section '.join(reasons)}; sections this task accepts: {allowed}"

    def score(self, task: Task, test_set: TestSet, predictions: dict[str, dict[str, dict]]) -> ScoredRun:
        original = expmrc.score_predictions(test_set.gold, predictions["original"])
        variants = self.variants(test_set)
        variant_f1 = {}
        no_longer_built = []
        for name, preds in predictions.items():
            if name == "original":
                continue
            if name not in variants:
                # Re-scoring a stored file whose section's variant is no longer built (e.g. s3,
                # now not applicable): reported, not scored.
                no_longer_built.append(name)
                continue
            # Masks never earn credit: answers are compared by position against the original
            # text (docs/diagnostics.md#skill-based-reconstructed-sets). An "ok" variant has its gold.
            result = skills.score_variant(variants[name].gold, preds)  # type: ignore[arg-type]
            variant_f1[name] = {q["key"]: q["answer"] for q in result.per_question}
        gaps = skills.skill_gaps({q["key"]: q["answer"] for q in original.per_question}, variant_f1, seed=0)
        not_submitted = sorted(set(variants) - set(variant_f1), key=_skill_order)
        return ScoredRun(
            scores={task.answer_metric: original.answer, "evidence_f1": original.evidence,
                    "overall_f1": original.overall},
            item_rows=[[q["answer"], q["evidence"], q["overall"]] for q in original.per_question],
            total=original.total,
            unanswered=original.unanswered,
            details={"skills": gaps, "not_submitted": not_submitted,
                     "not_scored": sorted(no_longer_built, key=_skill_order)},
        )


class ChecklistScorer:
    """CheckList SQuAD suite (public items): predictions {item_id: answer}; a case passes when
    the test's expectation holds for all its items; a case with a missing item is "not
    answered" and counts as failed. Per-item rows are per-case pass/fail."""

    version = "checklist-1"

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int, stored: bool = False) -> dict[str, str]:
        return parse_id_to_string(raw, test_set.key_spec["keys"], max_bytes=max_bytes,
                                  expected='{"<item id>": "<answer>"}')

    def score(self, task: Task, test_set: TestSet, predictions: dict[str, str]) -> ScoredRun:
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
    """QUACKIE score files {sample_id: [one float per frozen sentence]} (docs/metrics.md#quackie): official
    IoU/HPD/SNR on the binarised top-1 vector plus the extended raw-score columns; a sample
    whose list has the wrong length, holds NaN or is missing is a counted fail.

    Everything stored is a finite number or None (PostgreSQL's jsonb refuses NaN and
    Infinity). The scorer's values are finite, but an ``snr_raw`` near the double limit (noise
    ~1e-150 of the signal) would overflow once scaled x100 or summed by the CI bootstrap, so
    such an item value is stored as undefined and the column's score is the mean of the
    remaining items."""

    version = "quackie-1"
    METRICS = ("iou", "hpd", "snr", "hpd_rank", "snr_raw")
    COLUMNS = {"iou": "IoU", "hpd": "HPD", "snr": "SNR", "hpd_rank": "HPD_rank", "snr_raw": "SNR_raw"}

    def parse(self, raw: bytes, test_set: TestSet, *, max_bytes: int, stored: bool = False) -> dict[str, list[float]]:
        return quackie.parse_scores(raw, test_set.key_spec["keys"], max_bytes=max_bytes)

    def score(self, task: Task, test_set: TestSet, predictions: dict[str, list[float]]) -> ScoredRun:
        result = quackie.score(test_set.gold, predictions)
        # Largest item value whose x100 sum over every item stays a finite double.
        limit = sys.float_info.max / (100.0 * max(result["n"], 1))
        rows, scores = [], {}
        for sample in result["per_sample"]:
            rows.append([_finite_or_none(sample[metric], limit) for metric in self.METRICS])
        for column, metric in enumerate(self.METRICS):
            mean = result[self.COLUMNS[metric]]
            kept = [row[column] for row in rows if row[column] is not None]
            if len(kept) != sum(sample[metric] is not None for sample in result["per_sample"]):
                mean = math.fsum(kept) / len(kept) if kept else None  # some items were too large
            scores[metric] = _finite_or_none(None if mean is None else 100.0 * mean)
        details = {key: result[key] for key in ("fails", "no_snr", "n")}
        details.update({key: _finite_or_none(result[key]) for key in ("IoU_std", "HPD_std", "SNR_std")})
        return ScoredRun(
            scores=scores, item_rows=rows, total=result["n"], unanswered=sum(
                1 for sample_id in test_set.gold if sample_id not in predictions),
            details={"quackie": details},
        )


def _finite_or_none(value, limit=sys.float_info.max):
    """``float(value)`` if it is a number of magnitude at most ``limit``, else None."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) and abs(value) <= limit else None


def _skill_order(name):
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 0, name)


_BY_TASK_KIND: dict[str, Scorer] = {
    "span": ExpmrcScorer(), "multichoice": ExpmrcScorer(), "classification": ClassificationScorer(),
    "checklist": ChecklistScorer(), "interpretation": InterpretationScorer()}
_SKILLS = SkillsScorer()


def scorer_for(task: Task, kind: str = "predictions") -> Scorer:
    if kind == "skills":
        if task.kind != "span":
            raise LookupError("skill submissions are for span-extraction tasks")
        return _SKILLS
    try:
        return _BY_TASK_KIND[task.kind]
    except KeyError:
        raise LookupError(f"no prediction-file scorer for {task.kind} tasks") from None


# Interpreter code: the sandbox runner's protocol version, then the score file's scorer.
CODE_RUNNER_VERSION = "sandbox-1"


def current_scorer_version(task: Task, kind: str = "predictions") -> str:
    """The version label a score computed now would carry. An entry scored under another label
    is stale until re-scored (``submissions.rescoring``)."""
    if kind == "code":
        return f"{CODE_RUNNER_VERSION}/{scorer_for(task).version}"
    return scorer_for(task, kind).version
