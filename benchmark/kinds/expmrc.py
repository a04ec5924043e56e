"""ExpMRC (Cui et al., 2022): answer + evidence, scored exactly like the official
``eval_expmrc.py``. Two kinds share the scorer: span extraction (SQuAD, CMRC 2018) and
multiple choice (RACE+, C3)."""
from typing import Any, ClassVar

from django.utils.translation import gettext_noop

from scoring.analysis import icq
from scoring.metrics import expmrc
from scoring.model_bundles import examples

from .base import CI_BAR, PREDICTIONS, REPORTED, SKILLS, TIER, ScoredRun, StoredSplit, TaskKind, Wording


class ExpmrcKind(TaskKind):
    """What the two ExpMRC kinds share: the scorer, its columns after the answer column, the
    importer and the averaging rule of the official ExpMRC leaderboard."""

    answer_label: ClassVar[str]
    item_noun = gettext_noop("questions")
    scorer_version = "expmrc-1/nltk-3.9.2"
    importer = "expmrc"
    average_source = gettext_noop("the official ExpMRC leaderboard")
    average_source_subsets = gettext_noop("four subsets (SQuAD, CMRC 2018, RACE+ and C3)")

    @property
    def metric_columns(self) -> tuple[tuple[str, str], ...]:  # type: ignore[override]
        return ((self.answer_metric, self.answer_label), ("evidence_f1", "Evidence F1"), ("overall_f1", "Overall F1"))

    def parse_predictions(self, raw: bytes, split: StoredSplit, *, max_bytes: int) -> dict[str, dict]:
        return expmrc.parse_predictions(raw, expmrc.KeySpec.from_dict(split.key_spec), max_bytes=max_bytes)

    def score(self, split: StoredSplit, predictions: dict[str, dict]) -> ScoredRun:
        result = expmrc.score_predictions(split.gold, predictions)
        return ScoredRun(
            scores={self.answer_metric: result.answer, "evidence_f1": result.evidence, "overall_f1": result.overall},
            item_rows=[[q["answer"], q["evidence"], q["overall"]] for q in result.per_question],
            total=result.total,
            unanswered=result.unanswered,
        )


EXPMRC_RANKING = gettext_noop("Ranked by Overall F1, highest first; equal scores share a rank. The human row is "
                              "pinned on top and not ranked.")


class SpanKind(ExpmrcKind):
    name = "span"
    label = gettext_noop("Span extraction")
    model_format = examples.SPAN
    model_example_fields = '{"id", "question", "context"}'
    answer_metric = "answer_f1"
    answer_label = "Answer F1"
    span_diagnostics = True
    builds_skill_sets = True
    upload_kinds = ((PREDICTIONS, gettext_noop("Predictions for the hidden test set")),
                    (SKILLS, gettext_noop("Skill predictions: original + reconstructed sets (s1–s14)")))
    file_help = gettext_noop('One JSON object {"<question id>": {"answer": "...", "evidence": "..."}}.')
    upload_format_template = "kinds/span_format.html"
    wording = Wording(
        family="ExpMRC",
        metric=gettext_noop("Overall F1: for each question, answer F1 × evidence F1, averaged over all questions "
                            "of the test set (×100); a question without a prediction scores 0."),
        ranking=EXPMRC_RANKING,
        footnote=gettext_noop(  # xgettext:no-python-format
            "Scores equal the official ExpMRC evaluation script's (Cui et al., 2022). \"reported\" rows are the "
            "ExpMRC authors' published numbers. 95% intervals: BCa bootstrap over questions (1000 resamples)."),
        guide=(("Answer F1", gettext_noop("token overlap (F1) between the predicted answer and the closest reference "
                                          "answer; Chinese text is compared character by character.")),
               ("Evidence F1", gettext_noop("the same overlap between the predicted evidence text and the closest "
                                            "reference evidence sentence.")),
               ("Overall F1", gettext_noop("answer F1 × evidence F1 per question, then averaged: an answer only "
                                           "counts as much as the evidence that supports it. This is the ranking "
                                           "column.")),
               CI_BAR, TIER, REPORTED),
    )


class MultichoiceKind(ExpmrcKind):
    name = "multichoice"
    label = gettext_noop("Multiple choice")
    model_format = examples.MULTICHOICE
    model_example_fields = '{"id", "question", "article", "options"}'
    answer_metric = "answer_acc"
    answer_label = "Answer Acc"
    icq_format = icq.MULTICHOICE
    file_help = gettext_noop('One JSON object {"<passage id>-<question index>": {"answer": "<option letter>", '
                             '"evidence": "..."}}.')
    upload_format_template = "kinds/multichoice_format.html"
    wording = Wording(
        family="ExpMRC",
        metric=gettext_noop("Overall F1: for each question, answer accuracy (1 for the right option letter, else "
                            "0) × evidence F1, averaged over all questions (×100); a question without a prediction "
                            "scores 0."),
        ranking=EXPMRC_RANKING,
        footnote=gettext_noop(  # xgettext:no-python-format
            "Scores equal the official ExpMRC evaluation script's (Cui et al., 2022). \"reported\" rows are the "
            "ExpMRC authors' published numbers. 95% intervals: Wilson interval for answer accuracy, BCa bootstrap "
            "over questions (1000 resamples) for the F1 columns."),
        guide=(("Answer Acc", gettext_noop("share of questions whose predicted option letter is the right one.")),
               ("Evidence F1", gettext_noop("token overlap (F1) between the predicted evidence text and the closest "
                                            "reference evidence sentence; Chinese text is compared character by "
                                            "character.")),
               ("Overall F1", gettext_noop("answer (right = 1, wrong = 0) × evidence F1 per question, then "
                                           "averaged: a right option without supporting evidence earns nothing. "
                                           "This is the ranking column.")),
               CI_BAR, TIER, REPORTED),
        cue_note=gettext_noop("A feature counts for a question when it appears in some but not all of its options; "
                              "labels are option rows (right/wrong)."),
    )

    def icq_instances(self, gold: Any) -> list:
        return icq.expmrc_multichoice_instances(gold)

    def predicted_labels(self, predictions: dict[str, dict], split: StoredSplit) -> dict[str, Any]:
        """The predicted option index per question key."""
        letters = expmrc.KeySpec.from_dict(split.key_spec).option_letters
        return {key: letters.index(entry["answer"]) for key, entry in predictions.items()}
