"""Which pure scorer a task uses, behind one small interface.

Every scorer turns (gold, validated predictions) into a ScoredRun whose per-item rows follow
the task's metric columns (0-1 scale), so CIs, tiers and diagnostics work the same for all.
"""
from dataclasses import dataclass

from scoring import classification, expmrc
from scoring.uploads import InvalidPredictions

__all__ = ["InvalidPredictions", "ScoredRun", "scorer_for"]


@dataclass
class ScoredRun:
    scores: dict  # metric key -> official 0-100 value
    item_rows: list  # per gold item: values in metric-column order, 0-1
    total: int
    unanswered: int


class ExpmrcScorer:
    version = "expmrc-1/nltk-3.9.2"

    def parse(self, raw, key_spec, *, max_bytes):
        return expmrc.parse_predictions(raw, expmrc.KeySpec.from_dict(key_spec), max_bytes=max_bytes)

    def score(self, task, gold, predictions):
        result = expmrc.score_predictions(gold, predictions)
        return ScoredRun(
            scores={task.answer_metric: result.answer, "evidence_f1": result.evidence, "overall_f1": result.overall},
            item_rows=[[q["answer"], q["evidence"], q["overall"]] for q in result.per_question],
            total=result.total,
            unanswered=result.unanswered,
        )


class ClassificationScorer:
    version = "classification-1"

    def parse(self, raw, key_spec, *, max_bytes):
        return classification.parse_predictions(raw, classification.LabelSpec.from_dict(key_spec), max_bytes=max_bytes)

    def score(self, task, gold, predictions):
        result = classification.score_predictions(gold["rows"], predictions)
        return ScoredRun(scores={"accuracy": result.accuracy}, item_rows=[[v] for v in result.per_item],
                         total=result.total, unanswered=result.unanswered)


_SCORERS = {"span": ExpmrcScorer(), "multichoice": ExpmrcScorer(), "classification": ClassificationScorer()}


def scorer_for(task):
    try:
        return _SCORERS[task.kind]
    except KeyError:
        raise LookupError(f"no prediction-file scorer for {task.kind} tasks") from None
