"""What a task kind declares about itself, in one class.

A task kind (span extraction, multiple choice, classification, QUACKIE interpretation,
CheckList...) is a subclass of :class:`TaskKind` registered in ``benchmark.kinds``. Everything
the product needs to know about a kind is an attribute or a method here: its scorer and the
version label its scores carry, its columns and primary metric, what pages say about it, what a
researcher may upload and how, which diagnostics apply, which importer makes its test sets and
how its examples are given to a submitted model. Code outside ``benchmark/kinds`` asks the
task's kind (``task.kind_definition``) instead of comparing ``task.kind`` with a name
(``tests/test_architecture.py`` checks it), so a new kind is one module and one registration.

Kinds hold no database state and import no model: they work on what a stored test set holds
(``gold``, ``key_spec``, ``public_inputs``), so the catalogue's models can ask them.
"""
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from django.utils.translation import gettext_noop

from scoring.model_bundles import examples
from scoring.withdrawn import drop_withdrawn


class StoredSplit(Protocol):
    """What a kind reads of a stored test set (``benchmark.models.TestSet``)."""

    gold: Any
    key_spec: Any


@dataclass
class ScoredRun:
    scores: dict  # metric key -> official 0-100 value
    item_rows: list  # per gold item: values in metric-column order, 0-1
    total: int
    unanswered: int
    details: dict = field(default_factory=dict)  # kind-specific aggregates (never per-item gold)


@dataclass(frozen=True)
class Wording:
    """The words a board of this kind says about itself (docs/metrics.md has the definitions)."""

    family: str  # the benchmark family the kind comes from, as readers know it
    metric: str  # what the primary metric is, one sentence
    ranking: str  # how rows are ordered and which rows carry no rank
    footnote: str  # under the board: where reported rows come from, how the intervals are made
    guide: tuple[tuple[str, str], ...]  # "How to read this board": (term, meaning)
    cue_note: str = ""  # under the ICQ cue table: how a feature counts for an item of this kind


# Entries of the "How to read this board" guide that every kind shares. The words a page shows
# are marked with gettext_noop: they stay English here (forms, the admin and API messages use
# them) and pages translate them when they render (leaderboards/wording.py). "xgettext:" comments
# keep a literal "%" from being read as a format directive.
CI_BAR = (gettext_noop("CI bar"),
          gettext_noop(  # xgettext:no-python-format
              "the 95% confidence interval of the primary metric drawn on a 0–100 axis (wider when a score "
              "leaves it): the bar is the interval, the tick the score. Two entries whose bars overlap may not "
              "really differ: the tier says whether they do."))
TIER = (gettext_noop("Tier"), gettext_noop("entries in one tier are not significantly worse than the tier's first "
                                           "entry (paired test, α = 0.05). Read the rank inside a tier as a tie."))
REPORTED = (gettext_noop("reported"),
            gettext_noop("a number published by the dataset or method authors, not scored on this server: it has "
                         "no per-item data, so no interval and no tier."))

PREDICTIONS, SKILLS, CODE, MODEL = "predictions", "skills", "code", "model"
MODEL_UPLOAD = (MODEL, gettext_noop("A model (a .zip with predict.py), run here on the test inputs"))


class TaskKind:
    """One kind of task. Subclasses set the class attributes and implement the scoring pair
    ``parse_predictions``/``score``; the defaults describe a kind with one upload kind (a
    prediction file), a hidden test split, three decimals and no kind-specific diagnostics."""

    name: ClassVar[str]  # stored in Task.kind; never change it once tasks use it
    label: ClassVar[str]  # how forms and the admin name it
    wording: ClassVar[Wording]
    metric_columns: ClassVar[tuple[tuple[str, str], ...]]  # (key, label) in display order
    primary_metric: ClassVar[str] = ""  # the ranking column; "" = the last column
    answer_metric: ClassVar[str] = ""  # the column per-question answer outcomes go to (diagnostics)
    metric_decimals: ClassVar[int] = 3
    item_noun: ClassVar[str] = gettext_noop("items")  # what one scored unit is called on pages
    total_noun: ClassVar[str] = ""  # what an entry's total counts, when not ``item_noun``
    # The line under an entry's scores: its total, and what was unanswered or failed.
    totals_template: ClassVar[str] = "kinds/unanswered_totals.html"
    scored_split: ClassVar[str] = "test"  # the split submissions are scored on ("dev" when items are public)
    scorer_version: ClassVar[str]

    # Uploads: (submission kind, form label) this kind accepts, and the file field's help.
    upload_kinds: ClassVar[tuple[tuple[str, str], ...]] = (
        (PREDICTIONS, gettext_noop("Predictions for the hidden test set")),)
    file_help: ClassVar[str] = gettext_noop("One JSON object {\"<item id>\": <prediction>}.")
    # The submit page's "Format" box (a template under templates/kinds/).
    upload_format_template: ClassVar[str] = "kinds/generic_format.html"

    # Catalogue: the importer that makes its test sets (benchmark.importers.IMPORTERS), or ""
    # when test sets come from elsewhere (QUACKIE tracks).
    importer: ClassVar[str] = ""
    # Diagnostics: ICQ cue discovery and tests (the kind's ``icq_format``), the span diagnostics
    # (question types, linguistic bias), skill-based reconstructed sets.
    icq_format: ClassVar[str] = ""
    span_diagnostics: ClassVar[bool] = False
    builds_skill_sets: ClassVar[bool] = False
    # Boards: tasks with a QUACKIE track (set x hosted model); the share of failed samples above
    # which an entry is listed without a rank (None: every scored entry ranks).
    has_tracks: ClassVar[bool] = False
    max_fail_share: ClassVar[float | None] = None
    # The average board: what its columns are called, and the published board whose averaging
    # rule a benchmark made only of kinds with the same source follows ("" = none).
    average_unit: ClassVar[str] = gettext_noop("subsets")
    average_source: ClassVar[str] = ""
    average_source_subsets: ClassVar[str] = ""  # what the published average covers, e.g. "four subsets (...)"
    # Model submissions (docs/model_submissions.md): the format of the examples a bundle's
    # ``predict`` receives and of what it returns ("" = this kind takes no models).
    model_format: ClassVar[str] = ""
    model_example_fields: ClassVar[str] = ""  # the fields of one example, as the submit page shows them

    def __repr__(self) -> str:
        return f"<task kind {self.name}>"

    @property
    def ranking_metric(self) -> str:
        return self.primary_metric or self.metric_columns[-1][0]

    @property
    def has_entry_diagnostics(self) -> bool:
        """Whether a scored entry of this kind gets per-entry diagnostics (a background job)."""
        return self.span_diagnostics or bool(self.icq_format)

    @property
    def counts_failed_samples(self) -> bool:
        """Whether boards show a "failed samples" column (and rank by the failure share)."""
        return self.max_fail_share is not None

    @property
    def entry_total_noun(self) -> str:
        return self.total_noun or self.item_noun

    def unranked_reason(self, details: dict[str, Any]) -> str:
        """Why a scored entry with these score ``details`` is listed without a rank ("" when it
        is ranked)."""
        return ""

    def accepts(self, submission_kind: str) -> bool:
        return submission_kind in dict(self.upload_kinds)

    def parse_predictions(self, raw: bytes, split: StoredSplit, *, max_bytes: int) -> Any:
        """Validate an uploaded prediction file against the split's public key spec; raises
        ``scoring.strict_json.InvalidPredictions`` with a gold-free message."""
        raise NotImplementedError

    def parse_stored_predictions(self, raw: bytes, split: StoredSplit, *, max_bytes: int) -> tuple[Any, list[str]]:
        """A stored file, parsed to be scored again (possibly on a later version of its test set):
        predictions for questions the split no longer holds are dropped and returned, in file
        order (``scoring.withdrawn``); the rest is validated as strictly as an upload."""
        kept, withdrawn = drop_withdrawn(raw, frozenset(split.key_spec["keys"]), max_bytes=max_bytes,
                                         expected='{"<id>": <prediction>}')
        return self.parse_predictions(kept, split, max_bytes=max_bytes), withdrawn

    def score(self, split: StoredSplit, predictions: Any) -> ScoredRun:
        """Score parsed predictions against the split's gold: per-item rows follow
        ``metric_columns`` (0-1), scores are on the official 0-100 scale."""
        raise NotImplementedError

    def split_strata(self, gold: Any) -> list[str] | None:
        """Per item (in score-row order), the stratum a public/private split keeps its share in
        (None: no strata)."""
        return None

    # ICQ (only kinds with an ``icq_format``).
    def icq_instances(self, gold: Any) -> list:
        raise NotImplementedError(f"{self.name} tasks have no ICQ instances")

    def predicted_labels(self, predictions: Any, split: StoredSplit) -> dict[str, Any]:
        """Parsed predictions as the labels ICQ compares with its cues."""
        raise NotImplementedError(f"{self.name} tasks have no ICQ labels")

    # Hidden inputs: the flat records a submitted model's ``predict`` receives, read from a
    # test set's stored public inputs (scoring.model_bundles.examples).
    def model_examples(self, public_inputs: Any) -> list[dict[str, Any]]:
        if not self.model_format:
            raise LookupError(f"{self.label} tasks take no model submissions")
        return examples.model_examples(public_inputs, self.model_format)

    @property
    def takes_models(self) -> bool:
        """Whether a model bundle can be run for this kind (and so its inputs can be hidden)."""
        return bool(self.model_format)
