"""Classification (NLI style: premise, hypothesis, label), ranked by accuracy and profiled
against the test set's statistical cues (ICQ; Huang & Zhu, 2023)."""
from typing import Any

from django.utils.translation import gettext_noop

from scoring.analysis import icq
from scoring.metrics import classification
from scoring.model_bundles import examples

from .base import CI_BAR, REPORTED, TIER, ScoredRun, StoredSplit, TaskKind, Wording


class ClassificationKind(TaskKind):
    name = "classification"
    label = gettext_noop("Classification")
    model_format = examples.CLASSIFICATION
    model_example_fields = '{"id", "premise", "hypothesis", "labels"}'
    metric_columns = (("accuracy", "Accuracy"),)
    scorer_version = "classification-1"
    importer = "classification"
    icq_format = icq.CLASSIFICATION
    file_help = gettext_noop('One JSON object {"<item id>": "<label>"}.')
    upload_format_template = "kinds/classification_format.html"
    wording = Wording(
        family=gettext_noop("Classification"),
        metric=gettext_noop("Accuracy: the share of items whose predicted label is the gold label (×100); an item "
                            "without a prediction counts as wrong."),
        ranking=gettext_noop("Ranked by accuracy, highest first; equal scores share a rank."),
        footnote=gettext_noop(  # xgettext:no-python-format
            "95% intervals: Wilson interval over items. Each entry's page profiles it against the statistical cues "
            "of the test set (ICQ; Huang & Zhu, 2023)."),
        guide=(("Accuracy", gettext_noop("share of items labelled correctly. The ranking column.")),
               CI_BAR, TIER, REPORTED),
    )

    def parse_predictions(self, raw: bytes, split: StoredSplit, *, max_bytes: int) -> dict[str, str]:
        spec = classification.LabelSpec.from_dict(split.key_spec)
        return classification.parse_predictions(raw, spec, max_bytes=max_bytes)

    def score(self, split: StoredSplit, predictions: dict[str, str]) -> ScoredRun:
        result = classification.score_predictions(split.gold["rows"], predictions)
        return ScoredRun(scores={"accuracy": result.accuracy}, item_rows=[[v] for v in result.per_item],
                         total=result.total, unanswered=result.unanswered)

    def split_strata(self, gold: Any) -> list[str] | None:
        return [str(row["label"]) for row in gold["rows"]]  # each label keeps the private share

    def icq_instances(self, gold: Any) -> list:
        return icq.load_instances(gold["rows"], icq.CLASSIFICATION)

    def predicted_labels(self, predictions: dict[str, str], split: StoredSplit) -> dict[str, Any]:
        return predictions
