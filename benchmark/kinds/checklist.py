"""The CheckList SQuAD suite (Ribeiro et al., 2020): behavioural tests whose items are public,
scored per case (a case passes when all its items do)."""

from django.utils.translation import gettext_noop

from scoring.metrics import checklist
from scoring.strict_json import parse_id_to_string

from .base import CI_BAR, REPORTED, TIER, ScoredRun, StoredSplit, TaskKind, Wording


class ChecklistKind(TaskKind):
    name = "checklist"
    label = "CheckList"
    metric_columns = (("pass_rate", "Cases passed (%)"),)
    scorer_version = "checklist-1"
    importer = "checklist"
    item_noun = gettext_noop("items")
    # Its items test behaviour and are public: submissions are scored on the public split.
    scored_split = "dev"
    file_help = gettext_noop('One JSON object {"<item id>": "<answer span>"}.')
    upload_format_template = "kinds/checklist_format.html"
    wording = Wording(
        family="CheckList",
        metric=gettext_noop(  # xgettext:no-python-format
            "Cases passed (%): the share of the suite's test cases in which every item gets the expected answer "
            "(100 − the overall failure rate); a case with a missing prediction fails."),
        ranking=gettext_noop(  # xgettext:no-python-format
            "Ranked by Cases passed (%), highest first; equal scores share a rank."),
        footnote=gettext_noop(  # xgettext:no-python-format
            "Behavioural tests of the CheckList SQuAD suite (Ribeiro et al., 2020); its items are public, so this "
            "board measures behaviour, not a hidden test set. The BERT-base row scores the predictions released "
            "with the suite. 95% intervals: Wilson interval over cases."),
        guide=(("Cases passed (%)", gettext_noop("a case passes when all its items do: an MFT item must give the "
                                                 "expected answer, an INV item the same answer as the case's "
                                                 "original input. The ranking column.")),
               (gettext_noop("Failure rates"), gettext_noop("each entry's page breaks the failures down by capability "
                                                            "(vocabulary, negation, coreference…) and by test, next "
                                                            "to BERT-base's.")),
               CI_BAR, TIER, REPORTED),
    )
    # What an entry's total counts: cases, not items.
    total_noun = gettext_noop("cases")

    def parse_predictions(self, raw: bytes, split: StoredSplit, *, max_bytes: int) -> dict[str, str]:
        return parse_id_to_string(raw, split.key_spec["keys"], max_bytes=max_bytes,
                                  expected='{"<item id>": "<answer>"}')

    def score(self, split: StoredSplit, predictions: dict[str, str]) -> ScoredRun:
        suite = split.gold
        passed = [outcome == "pass" for test in checklist.case_outcomes(suite, predictions) for outcome in test]
        details = checklist.score_checklist(suite, predictions)
        return ScoredRun(
            scores={"pass_rate": 100.0 * sum(passed) / len(passed) if passed else 0.0},
            item_rows=[[1.0 if p else 0.0] for p in passed],
            total=len(passed),
            unanswered=details["overall"].get("n_missing", 0),
            details={"checklist": details},
        )
