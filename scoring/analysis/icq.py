"""ICQ ("I-See-Cue") statistical cue profiling (Huang & Zhu, Findings of EMNLP 2023), as defined
in docs/diagnostics.md#icq-cue-profiling, with cueness measured against the label prior and
the two model probes given a null hypothesis and p-values. Pure Python (and numpy), no Django.

Vocabulary
    R  the reference split (training data, or a public dev split) with gold labels;
    S  the test split the leaderboard scores on;
    f  a feature key ``"<type>\\t<value>"`` from :mod:`scoring.analysis.features`.

Instances
    classification  one premise, one hypothesis, a label string; R_f / S_f = the instances whose
                    hypothesis has f; label counts over instances.
    multichoice     one premise (passage + question), the options as hypotheses, the gold option
                    index as label. f is attached to a *question* when it fires in some but not
                    all of its options; n_f counts such questions, while label counts run over
                    the option rows carrying f in those questions (labels ``right``/``wrong``).

Cue discovery (per pair of splits; min_count = 11 occurrences in both R and S)
    pi  = the label prior: label proportions over the whole of R (every instance; for
          multichoice every option row, so right = 1/k on k-option questions);
    p_f = label proportions of R_f, q_f = those of S_f (gold labels), no smoothing;
    mse(f)     = mean over labels l of (p_f[l] - pi[l])^2;  jsd(f) = JSD(p_f, q_f), natural log;
    cueness(f) = mse(f) / exp(jsd(f)); ranked by cueness desc, then n_reference desc, then key.
    A feature whose labels follow the prior scores ~0 whatever the number of options, and a
    feature that moves a label's share by +d or -d from the prior scores alike (with two labels
    mse = d^2). The paper measures the distance from 1/|L| instead of pi; that number is kept as
    ``cueness_published`` (= ``mse_published`` / exp(jsd)). Both agree when pi is uniform (two
    options, balanced classes); on k-option data the published one is (1/2 - 1/k)^2 for a
    feature without any cue value (0.0625 for four options). ``cue_label`` is the label f
    pushes up: argmax over l of p_f[l] - pi[l].

Model probing (per submission)
    accuracy test      delta(f) = acc(S_f) - acc(S_nf), only when both sides have >= min_count
                       questions; MC correctness = predicted option == gold option. p_value:
                       Fisher's exact test (two-sided) of "correctness is independent of f";
                       p_holm: Holm-adjusted over every feature tested.
    distribution test  S_f flattened by seeded down-sampling of every label to the minority
                       label's count m (skipped when m == 0 or |L|*m < min_count). Null: a cue-free
                       model whose prediction depends on the gold label only, at the model's own
                       rates over the whole of S (multichoice: the gold option with the model's
                       accuracy, otherwise a wrong option drawn uniformly, or none as often as the
                       model leaves a question unanswered). X = the flattened items predicted as
                       the cue's label; p_value = P(X >= observed) under the null, exact (a sum of
                       independent Bernoulli variables, one per item or per question); follows_cue
                       = Holm-adjusted p < alpha (0.05) over the cues tested for the entry. The
                       paper's reading (most predicted label = p_f's, and nearer to p_f than to
                       uniform) is kept as ``follows_cue_published``.

Feature extraction runs once per instance: pass a :class:`FeatureIndex` (from
:func:`build_index`) instead of a list of instances to reuse it, and per-text results are
memoised in :mod:`scoring.analysis.features` as well.

Why this module is long: it is one statistical pipeline whose parts share the same vocabulary
(instances, the feature index, label sets and the label prior, the MIN_COUNT rule): input rows,
the index, the exact tests it needs (Poisson-binomial tails, Fisher, Holm), cue discovery and the
two model probes. Kept together, every definition of docs/diagnostics.md#icq-cue-profiling can
be checked against the code in one place; the feature extractors, the other large part, already
live in :mod:`scoring.analysis.features`.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import math
import random
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import attrgetter
from typing import Any, TypeGuard

import numpy as np

from .. import disclosure
from . import features as _features

CLASSIFICATION, MULTICHOICE = "classification", "multichoice"
KINDS = (CLASSIFICATION, MULTICHOICE)
RIGHT, WRONG = "right", "wrong"
MIN_COUNT = 11
TOP_K = 20
ALPHA = 0.05
LETTERS = string.ascii_uppercase


class InvalidICQInput(ValueError):
    """Input rows of the wrong shape; the message names the row (or line) and the field."""


@dataclass
class Instance:
    """classification: one hypothesis, label a string; multichoice: options as hypotheses,
    label = gold option index."""
    id: str
    premise: str
    hypotheses: list[str]
    label: int | str


# --------------------------------------------------------------------------- input

def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")


def infer_kind(row: Any, where: str = "row 1") -> str:
    """``multichoice`` for a row with ``options``, ``classification`` for one with ``hypothesis``."""
    if not isinstance(row, dict):
        raise InvalidICQInput(f"{where}: must be a JSON object, found {_type_name(row)}")
    has_options, has_hypothesis = "options" in row, "hypothesis" in row
    if has_options and has_hypothesis:
        raise InvalidICQInput(f"{where}: has both 'options' (multi-choice) and 'hypothesis' (classification)")
    if has_options:
        return MULTICHOICE
    if has_hypothesis:
        return CLASSIFICATION
    raise InvalidICQInput(f"{where}: field 'hypothesis' (classification) or 'options' (multi-choice) is missing")


def instance_from_row(row: Any, kind: str, where: str) -> Instance:
    """One validated :class:`Instance` from a CLI/API row; errors name ``where`` and the field."""
    _check_kind(kind)
    if not isinstance(row, dict):
        raise InvalidICQInput(f"{where}: must be a JSON object, found {_type_name(row)}")
    other = "hypothesis" if kind == MULTICHOICE else "options"
    if other in row:
        raise InvalidICQInput(f"{where}: field '{other}' does not belong in a {kind} file "
                              "(multi-choice and classification rows cannot be mixed)")

    def field(name: str, check, expected: str):
        if name not in row:
            raise InvalidICQInput(f"{where}: field '{name}' is missing")
        value = row[name]
        if not check(value):
            raise InvalidICQInput(f"{where}: field '{name}' must be {expected}, found {_type_name(value)}")
        return value

    ident = field("id", lambda v: isinstance(v, str) and v != "" or _is_int(v), "a non-empty string or an integer")
    premise = field("premise", lambda v: isinstance(v, str), "a string")
    if kind == CLASSIFICATION:
        hypothesis = field("hypothesis", lambda v: isinstance(v, str), "a string")
        label = field("label", lambda v: isinstance(v, str) and v != "" or _is_int(v),
                      "a non-empty string or an integer")
        return Instance(str(ident), premise, [hypothesis], str(label))
    options = field("options", lambda v: isinstance(v, list), "an array of strings")
    if len(options) < 2:
        raise InvalidICQInput(f"{where}: field 'options' must hold at least 2 options, found {len(options)}")
    for j, option in enumerate(options):
        if not isinstance(option, str):
            raise InvalidICQInput(f"{where}: field 'options[{j}]' must be a string, found {_type_name(option)}")
    label = field("label", _is_int, "an integer (the 0-based index of the correct option)")
    if not 0 <= label < len(options):
        raise InvalidICQInput(f"{where}: field 'label' must be an option index 0..{len(options) - 1}, found {label}")
    return Instance(str(ident), premise, list(options), label)


def load_instances(rows: Iterable[dict], kind: str, *, unique_ids: bool = True) -> list[Instance]:
    """Validated instances from rows ``{"id", "premise", "hypothesis", "label"}`` (classification)
    or ``{"id", "premise", "options": [...], "label": int}`` (multichoice); ids must be unique
    unless ``unique_ids`` is False (fine for a reference split, which is never predicted)."""
    _check_kind(kind)
    instances: list[Instance] = []
    seen: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        where = f"row {number}"
        instance = instance_from_row(row, kind, where)
        if unique_ids and instance.id in seen:
            raise InvalidICQInput(f"{where}: field 'id' repeats the id of row {seen[instance.id]}")
        seen.setdefault(instance.id, number)
        instances.append(instance)
    return instances


def expmrc_multichoice_instances(gold: dict) -> list[Instance]:
    """ExpMRC RACE+/C3 gold -> one instance per question: id ``<passage id>-<j>``, premise
    ``article + "\\n" + question``, the options as hypotheses, label = index of the gold letter."""
    if not isinstance(gold, dict) or not isinstance(gold.get("data"), list):
        raise InvalidICQInput("gold: field 'data' must be an array of passages")
    instances: list[Instance] = []
    for p, passage in enumerate(gold["data"]):
        where = f"data[{p}]"
        if not isinstance(passage, dict):
            raise InvalidICQInput(f"{where}: must be an object, found {_type_name(passage)}")
        for name, expected in (("id", str), ("article", str), ("questions", list), ("options", list),
                               ("answers", list)):
            if not isinstance(passage.get(name), expected):
                raise InvalidICQInput(f"{where}: field '{name}' must be "
                                      f"{'a string' if expected is str else 'an array'}, "
                                      f"found {_type_name(passage.get(name))}")
        questions, options, answers = passage["questions"], passage["options"], passage["answers"]
        if not len(questions) == len(options) == len(answers):
            raise InvalidICQInput(f"{where}: questions, options and answers differ in length "
                                  f"({len(questions)}, {len(options)}, {len(answers)})")
        for j, (question, choices, letter) in enumerate(zip(questions, options, answers, strict=True)):
            if not isinstance(question, str):
                raise InvalidICQInput(f"{where}.questions[{j}]: must be a string, found {_type_name(question)}")
            if not (isinstance(choices, list) and len(choices) >= 2 and all(isinstance(c, str) for c in choices)):
                raise InvalidICQInput(f"{where}.options[{j}]: must be an array of at least 2 strings")
            if not (isinstance(letter, str) and len(letter) == 1 and letter in LETTERS[: len(choices)]):
                raise InvalidICQInput(f"{where}.answers[{j}]: must be one of the option letters "
                                      f"{', '.join(LETTERS[: len(choices)])}")
            instances.append(Instance(f"{passage['id']}-{j}", passage["article"] + "\n" + question,
                                      list(choices), LETTERS.index(letter)))
    return instances


# --------------------------------------------------------------------------- features

class FeatureIndex:
    """The features of every instance of one split, extracted once.

    ``rows[i]`` holds the feature set of each hypothesis of instance i; ``attached[i]`` the
    features the instance (question) carries: the hypothesis's own for classification, those
    firing in some but not all options for multichoice.

    ``features`` skips extraction: ``features[i][j]`` = the feature keys of hypothesis j of
    instance i, computed elsewhere (simulations with planted features, another extractor).
    """

    def __init__(self, instances: Sequence[Instance], *, kind: str, language: str = "en",
                 feature_types: Iterable[str] | None = None,
                 features: Sequence[Sequence[Iterable[str]]] | None = None):
        _check_kind(kind)
        self.kind = kind
        self.language = language
        self.types = _features.resolve_types(language, feature_types)
        self.instances = list(instances)
        self.rows: list[list[frozenset[str]]] = []
        self.attached: list[frozenset[str]] = []
        # multichoice: the features every option of a question has (not attached to it)
        self.common: list[frozenset[str]] = []
        if features is not None and len(features) != len(self.instances):
            raise ValueError(f"features holds {len(features)} entries for {len(self.instances)} instances")
        with _gc_paused():
            self._extract(language, features)
        self._counts: tuple[Counter, dict[str, Counter]] | None = None
        self._members: dict[str, list[int]] | None = None
        self._labels: list[str] | None = None

    def _extract(self, language: str, given: Sequence[Sequence[Iterable[str]]] | None) -> None:
        extract, kind, types = _features.extract, self.kind, self.types
        for number, instance in enumerate(self.instances, start=1):
            _check_instance(instance, kind, number)
            if given is None:
                row_sets = extract(instance.premise, instance.hypotheses, language=language, types=types)
            else:
                row_sets = [frozenset(keys) for keys in given[number - 1]]
                if len(row_sets) != len(instance.hypotheses):
                    raise ValueError(f"features[{number - 1}] holds {len(row_sets)} feature sets for "
                                     f"{len(instance.hypotheses)} hypotheses")
            self.rows.append(row_sets)
            if kind == CLASSIFICATION:
                self.attached.append(row_sets[0])
            else:
                common = row_sets[0].intersection(*row_sets[1:])
                self.common.append(common)
                self.attached.append(frozenset().union(*row_sets) - common)

    def __len__(self) -> int:
        return len(self.instances)

    def labels(self) -> list[str]:
        """The gold label set: right/wrong for multichoice, the sorted label strings otherwise."""
        if self.kind == MULTICHOICE:
            return [RIGHT, WRONG]
        if self._labels is None:  # asked for several times per analysis; the instances stay as they are
            self._labels = sorted({str(instance.label) for instance in self.instances})
        return list(self._labels)

    def label_counts(self) -> Counter:
        """Gold labels over the whole split: instances (classification) or option rows
        (multichoice: one ``right`` and k - 1 ``wrong`` per k-option question)."""
        if self.kind == CLASSIFICATION:
            return Counter(str(instance.label) for instance in self.instances)
        n_rows = sum(map(len, self.rows))  # one feature set per hypothesis
        return Counter({RIGHT: len(self.instances), WRONG: n_rows - len(self.instances)})

    def counts(self, keys: frozenset[str] | None = None) -> tuple[Counter, dict[str, Counter]]:
        """(n_f: instances/questions carrying f, {label: Counter of f over labelled rows}).

        With ``keys``, only those features are counted (unless every count is known already):
        cue discovery asks the larger split only for the features the smaller one has often
        enough to qualify. Such partial counts are not kept."""
        if self._counts is not None:
            return self._counts
        if keys is not None:
            return self._count(keys)
        self._counts = self._count(None)
        return self._counts

    def _count(self, keys: frozenset[str] | None) -> tuple[Counter, dict[str, Counter]]:
        if self.kind == MULTICHOICE:
            if keys is not None:
                return self._multichoice_counts_of(keys)
            return Counter(chain.from_iterable(self.attached)), self._multichoice_label_counts()
        # One Counter built from one chained stream per label, not one update per instance:
        # the counting runs in C (100,000 instances, every English feature type: 1.7 times faster).
        carried: dict[str, list[frozenset[str]]] = {label: [] for label in self.labels()}
        for instance, attached in zip(self.instances, self.attached, strict=True):
            carried[str(instance.label)].append(attached)
        by_label = {label: Counter(chain.from_iterable(sets) if keys is None
                                   else filter(keys.__contains__, chain.from_iterable(sets)))
                    for label, sets in carried.items()}
        n_f: Counter = Counter()
        for counts in by_label.values():  # an instance has one label: n_f is their sum
            n_f.update(counts)
        return n_f, by_label

    def _options_and_gold_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The number of options of each question, and per option row (in the order of
        ``chain.from_iterable(self.rows)``) whether it is the gold one."""
        options = np.fromiter(map(len, self.rows), dtype=np.int64, count=len(self.rows))
        golds = np.fromiter(map(int, map(attrgetter("label"), self.instances)), dtype=np.int64, count=len(self.rows))
        gold = np.zeros(int(options.sum()), dtype=bool)
        gold[np.cumsum(options) - options + golds] = True
        return options, gold

    def _multichoice_label_counts(self) -> dict[str, Counter]:
        """Per label, how many option rows carry each feature where it is attached to the question.

        An option row's attached features are its own minus those common to every option of the
        question. So the counts are those of whole option rows (right: the gold option's; wrong:
        the others') minus, per question, its common features once (right) or k - 1 times
        (wrong, k options): counts of the sets extraction made, in C, with no loop in Python.
        Intersecting every option row with its question's attached set instead built four new
        sets per question in a Python loop, which made C3's counting slower than a pandas
        version of it (English classification data has no such step)."""
        _, gold = self._options_and_gold_rows()
        right = Counter(chain.from_iterable(compress(chain.from_iterable(self.rows), gold.tolist())))
        wrong = Counter(chain.from_iterable(compress(chain.from_iterable(self.rows), (~gold).tolist())))
        sizes = set(map(len, self.rows))
        commons_by_size: dict[int, list[frozenset[str]]] = {sizes.pop(): self.common} if len(sizes) == 1 else {}
        if not commons_by_size:
            for rows, common in zip(self.rows, self.common, strict=True):
                commons_by_size.setdefault(len(rows), []).append(common)
        common_right: dict[str, int] = {}
        common_wrong: dict[str, int] = {}
        for size, commons in commons_by_size.items():
            for key, count in Counter(chain.from_iterable(commons)).items():
                common_right[key] = common_right.get(key, 0) + count
                common_wrong[key] = common_wrong.get(key, 0) + (size - 1) * count
        right_counts = Counter({key: count - common_right.get(key, 0) for key, count in right.items()
                                if count > common_right.get(key, 0)})
        wrong_counts = Counter({key: count - common_wrong.get(key, 0) for key, count in wrong.items()
                                if count > common_wrong.get(key, 0)})
        return {RIGHT: right_counts, WRONG: wrong_counts}

    def _multichoice_counts_of(self, keys: frozenset[str]) -> tuple[Counter, dict[str, Counter]]:
        """``counts()`` of ``keys`` alone in one pass over the option rows: every item is looked up
        in a table of the keys' codes (in C), then numpy counts, per (question, key), the options
        carrying the key: attached where 0 < count < k, as in ``_extract``. The question's
        attached and common sets are not needed, so they are not walked either."""
        ordered = sorted(keys)
        code = {key: number for number, key in enumerate(ordered)}
        other = len(ordered)  # the code of every item that is not one of the keys
        options, gold = self._options_and_gold_rows()
        row_sizes = np.fromiter(map(len, chain.from_iterable(self.rows)), dtype=np.int64, count=len(gold))
        items = np.fromiter(map(code.get, chain.from_iterable(chain.from_iterable(self.rows)), repeat(other)),
                            dtype=np.int64, count=int(row_sizes.sum()))
        question = np.repeat(np.repeat(np.arange(len(self.rows), dtype=np.int64), options), row_sizes)
        in_gold = np.repeat(gold, row_sizes)
        wanted = items != other
        cell = question[wanted] * (other + 1) + items[wanted]  # one cell per (question, key)
        cells, carrying = np.unique(cell, return_counts=True)
        gold_cells, gold_carrying = np.unique(cell[in_gold[wanted]], return_counts=True)
        carrying_gold = np.zeros(len(cells), dtype=np.int64)
        carrying_gold[np.searchsorted(cells, gold_cells)] = gold_carrying
        cell_question, cell_key = np.divmod(cells, other + 1)
        attached = carrying < options[cell_question]
        key_of = cell_key[attached]

        def counter(values: np.ndarray) -> Counter:
            totals = np.bincount(key_of, weights=values, minlength=other).astype(np.int64)
            return Counter({ordered[i]: int(totals[i]) for i in np.flatnonzero(totals)})

        return (counter(np.ones(len(key_of))),
                {RIGHT: counter(carrying_gold[attached]), WRONG: counter((carrying - carrying_gold)[attached])})

    def members(self, key: str) -> list[int]:
        """Positions of the instances (questions) carrying ``key`` (all features are listed in one
        pass on the first call: the accuracy test without a reference split asks for every one)."""
        if self._members is None:
            members: dict[str, list[int]] = {}
            for i, attached in enumerate(self.attached):
                for feature in attached:
                    members.setdefault(feature, []).append(i)
            self._members = members
        return self._members.get(key, [])

    def require_unique_ids(self) -> None:
        """Predictions are keyed by id, so a split probed with them needs unique ids (a reference
        split need not have them: C3's training data repeats passage ids)."""
        seen: dict[str, int] = {}
        for number, instance in enumerate(self.instances, start=1):
            if instance.id in seen:
                raise InvalidICQInput(f"instance {number}: id {instance.id!r} repeats instance {seen[instance.id]}; "
                                      "test instances need unique ids")
            seen[instance.id] = number


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while building many small acyclic objects (token
    tuples, feature sets): its repeated full passes over them would double the run time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_instance(instance: Any, kind: str, number: int) -> None:
    if (type(instance) is Instance and type(instance.premise) is str and type(instance.hypotheses) is list
            and (len(instance.hypotheses) == 1 and type(instance.label) is str and type(instance.hypotheses[0]) is str
                 if kind == CLASSIFICATION else False)):
        return  # the common classification case, checked quickly
    where = f"instance {number}"
    if not isinstance(instance, Instance):
        raise InvalidICQInput(f"{where}: expected an Instance, found {_type_name(instance)}")
    if not isinstance(instance.premise, str) or not isinstance(instance.hypotheses, list) or not all(
            isinstance(h, str) for h in instance.hypotheses):
        raise InvalidICQInput(f"{where} ({instance.id}): premise must be a string and hypotheses a list of strings")
    if kind == CLASSIFICATION:
        if len(instance.hypotheses) != 1:
            raise InvalidICQInput(f"{where} ({instance.id}): a classification instance has exactly one hypothesis")
        if not (isinstance(instance.label, str) or _is_int(instance.label)):
            raise InvalidICQInput(f"{where} ({instance.id}): label must be a string")
    else:
        if len(instance.hypotheses) < 2:
            raise InvalidICQInput(f"{where} ({instance.id}): a multi-choice instance has at least 2 options")
        if not (_is_int(instance.label) and 0 <= instance.label < len(instance.hypotheses)):
            raise InvalidICQInput(f"{where} ({instance.id}): label must be the index of the gold option")


def build_index(instances: Sequence[Instance] | FeatureIndex, *, kind: str, language: str = "en",
                feature_types: Iterable[str] | None = None) -> FeatureIndex:
    """A :class:`FeatureIndex` for ``instances`` (returned as is when already one of the same kind
    and language extracting at least ``feature_types``)."""
    if isinstance(instances, FeatureIndex):
        if instances.kind != kind or instances.language != language:
            raise ValueError(f"the FeatureIndex is for {instances.kind}/{instances.language}, "
                             f"not {kind}/{language}")
        if feature_types is None:
            return instances
        wanted = _features.resolve_types(language, feature_types)
        if not wanted <= instances.types:
            raise ValueError(f"the FeatureIndex lacks feature type(s) {', '.join(sorted(wanted - instances.types))}")
        return instances
    return FeatureIndex(instances, kind=kind, language=language, feature_types=feature_types)


# --------------------------------------------------------------------------- statistics

def proportions(counts: Sequence[float]) -> list[float]:
    total = sum(counts)
    if total <= 0:
        raise ValueError("proportions of an empty count vector")
    return [c / total for c in counts]


def mse(p: Sequence[float], prior: Sequence[float] | None = None) -> float:
    """Mean over labels of (p[l] - prior[l])^2 for proportion vectors ``p`` and ``prior`` (same
    label order); ``prior=None`` is the uniform 1/|L| of the published formula."""
    k = len(p)
    if prior is None:
        prior = [1.0 / k] * k
    elif len(prior) != k:
        raise ValueError(f"p has {k} labels but the prior has {len(prior)}")
    return sum((x - y) ** 2 for x, y in zip(p, prior, strict=True)) / k


def jsd(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence (natural log, 0 log 0 = 0) of two proportion vectors."""
    total = 0.0
    for a, b in zip(p, q, strict=True):
        m = (a + b) / 2
        if a > 0:
            total += 0.5 * a * math.log(a / m)
        if b > 0:
            total += 0.5 * b * math.log(b / m)
    return max(total, 0.0)


def cueness(reference_counts: Sequence[float], test_counts: Sequence[float],
            prior: Sequence[float] | None = None) -> tuple[float, float, float]:
    """(cueness, mse, jsd) from per-label counts of R_f and S_f (same label order): mse of R_f's
    proportions around ``prior`` (the label prior of R; None = uniform, the published formula)."""
    p, q = proportions(reference_counts), proportions(test_counts)
    m, d = mse(p, prior), jsd(p, q)
    return m / math.exp(d), m, d


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm, 1979), in input order: rejecting where the
    adjusted value is < alpha keeps the family-wise error rate <= alpha under any dependence
    between the tests (the cues of one entry share items)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


@functools.lru_cache(maxsize=16)
def _log_factorials(n: int) -> np.ndarray:
    """log(i!) for i = 0..n (cached: one accuracy test asks for the same n once per feature; never
    written to)."""
    table = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=float)))))
    table.flags.writeable = False
    return table


def binomial_pmf(n: int, p: float) -> np.ndarray:
    """P(X = x), x = 0..n, for X ~ Binomial(n, p)."""
    out = np.zeros(n + 1)
    if p <= 0.0:
        out[0] = 1.0
    elif p >= 1.0:
        out[n] = 1.0
    else:
        x = np.arange(n + 1)
        log_fact = _log_factorials(n)
        out = np.exp(log_fact[n] - log_fact[x] - log_fact[n - x] + x * math.log(p) + (n - x) * math.log1p(-p))
    return out


def poisson_binomial_pmf(probabilities: Iterable[float]) -> np.ndarray:
    """P(X = x), x = 0..n, for X a sum of independent Bernoulli(p_i), exactly: equal p_i form one
    binomial, and the binomials are convolved (the probabilities here take few distinct values)."""
    pmf = np.ones(1)
    for p, n in sorted(Counter(min(1.0, max(0.0, float(p))) for p in probabilities).items()):
        pmf = np.convolve(pmf, binomial_pmf(n, p))
    return pmf


def _upper_tail(pmf: np.ndarray, x: int) -> float:
    """P(X >= x)."""
    return float(min(1.0, max(0.0, pmf[max(x, 0):].sum())))


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p-value of Fisher's exact test for the 2x2 table [[a, b], [c, d]]: the sum of the
    hypergeometric probabilities (margins fixed) not above the observed table's (relative
    tolerance 1e-7, as is usual)."""
    n1, k, total = a + b, a + c, a + b + c + d
    if min(a, b, c, d) < 0:
        raise ValueError("a 2x2 table of counts cannot hold negative numbers")
    log_fact = _log_factorials(total)
    x = np.arange(max(0, n1 + k - total), min(n1, k) + 1)
    log_pmf = (log_fact[k] - log_fact[x] - log_fact[k - x] + log_fact[total - k] - log_fact[n1 - x]
               - log_fact[total - k - n1 + x] - log_fact[total] + log_fact[n1] + log_fact[total - n1])
    pmf = np.exp(log_pmf)
    observed = pmf[a - x[0]]
    return float(min(1.0, pmf[pmf <= observed * (1 + 1e-7)].sum()))


def _lean(p: Sequence[float], prior: Sequence[float], labels: Sequence[str]) -> str:
    """The label whose share rises most above the prior (ties: the first in label order)."""
    rise = [x - y for x, y in zip(p, prior, strict=True)]
    return labels[rise.index(max(rise))]


def _cue_key(cue: Mapping) -> str:
    try:
        return _features.make_key(cue["feature"], cue["value"])
    except (KeyError, TypeError):
        raise ValueError("a cue must be a mapping with 'feature' and 'value'") from None


# --------------------------------------------------------------------------- cue discovery

def _paired_counts(ref_index: FeatureIndex, test_index: FeatureIndex, min_count: int
                   ) -> tuple[tuple[Counter, dict[str, Counter]], tuple[Counter, dict[str, Counter]]]:
    """The counts of both splits, the larger one's only for the features that can qualify when
    they are few: a cue needs ``min_count`` questions in both splits, so only the features the
    smaller split has that often matter in the larger one. C3 (505 dev questions against 11,869
    pseudo-training ones): 57 of the dev split's features, and counting the training split's
    option rows for those alone skips most of the work; where most features qualify (two large
    splits) everything is counted, as a filter would only add work."""
    small, large = (ref_index, test_index) if len(ref_index) <= len(test_index) else (test_index, ref_index)
    small_counts = small.counts()
    candidates = frozenset(key for key, n in small_counts[0].items() if n >= min_count)
    large_counts = large.counts(candidates if 4 * len(candidates) < len(small_counts[0]) else None)
    return (small_counts, large_counts) if small is ref_index else (large_counts, small_counts)


def discover_cues(reference: Sequence[Instance] | FeatureIndex, test: Sequence[Instance] | FeatureIndex, *,
                  kind: str, language: str = "en", top_k: int | None = TOP_K, min_count: int = MIN_COUNT,
                  feature_types: Iterable[str] | None = None) -> list[dict]:
    """The top ``top_k`` cues of ``test`` w.r.t. ``reference`` (all qualifying ones when None).

    cueness = mse / exp(jsd), where mse is the mean over labels of (p_f[l] - prior[l])^2, p_f the
    label proportions of R_f and prior those of the whole reference split (its base rate), and jsd
    = JSD(p_f, q_f) with q_f the label proportions of S_f. A feature with no cue value scores ~0
    whatever the number of options; moving a label's share by +d or -d from the prior scores the
    same. ``cueness_published`` / ``mse_published`` are the paper's numbers (distance from the
    uniform 1/|L|), identical when the prior is uniform. Each cue also names its ``cue_label``
    (the label f pushes above the prior) and the ``prior``.
    """
    ref_index = build_index(reference, kind=kind, language=language, feature_types=feature_types)
    test_index = build_index(test, kind=kind, language=language, feature_types=feature_types)
    types = _features.resolve_types(language, feature_types)
    labels = sorted(set(ref_index.labels()) | set(test_index.labels()))
    ref_labels = ref_index.label_counts()
    prior = proportions([ref_labels.get(label, 0) for label in labels])
    (ref_n, ref_by_label), (test_n, test_by_label) = _paired_counts(ref_index, test_index, min_count)
    found = []
    for key, n_reference in ref_n.items():
        n_test = test_n.get(key, 0)
        if n_reference < min_count or n_test < min_count:
            continue
        feature, value = _features.split_key(key)
        if feature not in types:
            continue
        r_counts = [ref_by_label.get(label, {}).get(key, 0) for label in labels]
        s_counts = [test_by_label.get(label, {}).get(key, 0) for label in labels]
        score, m, d = cueness(r_counts, s_counts, prior)
        p_f = proportions(r_counts)
        published = mse(p_f)
        found.append((-score, -n_reference, key, {
            "feature": feature,
            "value": value,
            "cueness": score,
            "mse": m,
            "jsd": d,
            "cueness_published": published / math.exp(d),
            "mse_published": published,
            "cue_label": _lean(p_f, prior, labels),
            "prior": dict(zip(labels, prior, strict=True)),
            "n_reference": n_reference,
            "n_test": n_test,
            "reference_dist": dict(zip(labels, p_f, strict=True)),
            "test_dist": dict(zip(labels, proportions(s_counts), strict=True)),
            "reference_counts": dict(zip(labels, r_counts, strict=True)),
            "test_counts": dict(zip(labels, s_counts, strict=True)),
        }))
    found.sort(key=lambda item: item[:3])
    if top_k is not None:
        found = found[:top_k]
    return [item[3] for item in found]


# --------------------------------------------------------------------------- model probing

def predicted_option(value: Any, n_options: int) -> int | None:
    """An MC prediction as an option index: an int, or a letter "A".. (None if unusable)."""
    if _is_int(value):
        return value if 0 <= value < n_options else None
    if isinstance(value, str) and len(value) == 1 and value in LETTERS[:n_options]:
        return LETTERS.index(value)
    return None


def predicted_label(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (str, int)):
        return str(value)
    return None


def correctness(index: FeatureIndex, predictions: Mapping[str, Any]) -> list[bool]:
    """Per-instance correctness; a missing or unusable prediction counts as wrong."""
    index.require_unique_ids()
    out = []
    for instance in index.instances:
        predicted = predictions.get(instance.id)
        if index.kind == MULTICHOICE:
            out.append(predicted_option(predicted, len(instance.hypotheses)) == instance.label)
        else:
            out.append(predicted_label(predicted) == str(instance.label))
    return out


def _cue_types(cues: Sequence[Mapping] | None, language: str) -> frozenset[str] | None:
    if cues is None:
        return None
    types = {_features.split_key(_cue_key(cue))[0] for cue in cues}
    return _features.resolve_types(language, types) if types else None


def accuracy_test(test: Sequence[Instance] | FeatureIndex, predictions: Mapping[str, Any],
                  cues: Sequence[Mapping] | None, *, kind: str, language: str = "en",
                  min_count: int = MIN_COUNT, top_k: int = TOP_K, protect_outcomes: bool = False) -> list[dict]:
    """ΔAcc = acc(S_f) - acc(S_nf) for each cue (in the cues' order) whose S_f and S_nf both
    hold >= ``min_count`` instances/questions.

    ``p_value``: Fisher's exact test (two-sided) of "the entry's correctness is independent of
    f" on the 2x2 table with/without f x right/wrong; ``p_holm``: Holm-adjusted over every
    feature tested in this call. A small p says the accuracy differs with f, which may come
    from f marking harder or easier questions as well as from the model using f.

    ``cues=None`` (no reference split) tests every feature of ``test`` instead and keeps the
    ``top_k`` largest deltas, as the ICQ code does (Holm still counts every feature tested).

    ``protect_outcomes`` (hidden splits): when S_f or S_nf is all right or all wrong, its
    accuracy would give away each of its questions' outcomes (the total is public, so either
    gives the other), so the row keeps its counts only and ``withheld`` is True; Holm counts it
    as a test with p = 1 (``disclosure.withheld_holm``). Without cues such rows are not ranked.
    """
    if cues is not None and not cues:
        return []
    index = build_index(test, kind=kind, language=language, feature_types=_cue_types(cues, language))
    correct = correctness(index, predictions)
    total, total_correct = len(correct), sum(correct)
    if cues is None:
        n_f, _ = index.counts()
        keys = sorted(n_f)
    else:
        keys = [_cue_key(cue) for cue in cues]
    rows: list[dict[str, Any]] = []
    for key in keys:
        members = index.members(key)
        n_with = len(members)
        n_without = total - n_with
        if n_with < min_count or n_without < min_count:
            continue
        correct_with = sum(correct[i] for i in members)
        correct_without = total_correct - correct_with
        acc_with = correct_with / n_with
        acc_without = correct_without / n_without
        feature, value = _features.split_key(key)
        if protect_outcomes and not (disclosure.disclosable(correct_with, n_with)
                                     and disclosure.disclosable(correct_without, n_without)):
            rows.append({"feature": feature, "value": value, "n_with": n_with, "n_without": n_without,
                         "acc_with": None, "acc_without": None, "delta": None, "p_value": None, "withheld": True})
            continue
        rows.append({"feature": feature, "value": value, "n_with": n_with, "n_without": n_without,
                     "acc_with": acc_with, "acc_without": acc_without, "delta": acc_with - acc_without,
                     "p_value": fisher_exact(correct_with, n_with - correct_with,
                                             correct_without, n_without - correct_without)})
    for row, adjusted in zip(rows, disclosure.withheld_holm([row["p_value"] for row in rows], holm), strict=True):
        row["p_holm"] = adjusted
    if cues is None:
        rows = [row for row in rows if not row.get("withheld")]
        rows.sort(key=lambda row: (-row["delta"], row["feature"], row["value"]))
        rows = rows[:top_k]
    return rows


def flatten(items: Sequence[tuple[Any, str, Any]], labels: Sequence[str], *, seed: int, key: str,
            min_count: int = MIN_COUNT) -> list[tuple[Any, str, Any]]:
    """Down-sample ``items`` = [(sort key, gold label, payload)] to m per label, m = the
    minority label's count; [] when m == 0 or |labels|*m < min_count.

    Deterministic: items are ordered by sort key, then each label's m items are drawn with
    ``random.Random(f"{seed}\\t{key}")`` (string seeds are hashed with SHA-512, stable across runs).
    """
    groups: dict[str, list] = {label: [] for label in labels}
    for item in items:
        if item[1] in groups:
            groups[item[1]].append(item)
    m = min((len(group) for group in groups.values()), default=0)
    if m == 0 or len(labels) * m < min_count:
        return []
    rng = random.Random(f"{seed}\t{key}")
    flat = []
    for label in labels:
        group = sorted(groups[label], key=lambda item: item[0])
        flat.extend(rng.sample(group, m))
    return flat


def _argmax(dist: Mapping[str, float]) -> str:
    best = max(dist.values())
    return next(label for label in sorted(dist) if dist[label] == best)


class CueFreeModel:
    """The null of the distribution test: a model with the entry's own prediction rates over the
    whole of S, whose prediction depends on the gold label only (never on a feature).

    multichoice     the gold option with probability ``right`` (the entry's accuracy), each wrong
                    option with ``wrong / (k - 1)`` (``wrong`` = the share of questions answered
                    with a wrong option: errors spread uniformly), no option otherwise. Option
                    rows of one question are not independent (one pick at most), so the number
                    of flattened rows predicted ``right`` is a sum of one Bernoulli per question.
    classification  P(label l | gold g) = the entry's share of l among S's instances of gold g
                    (its confusion matrix, an unusable prediction being one more outcome): this
                    keeps the entry's general label bias out of the cue's verdict. One Bernoulli
                    per instance.
    """

    def __init__(self, index: FeatureIndex, predictions: Mapping[str, Any]):
        self.kind = index.kind
        self.options = {instance.id: len(instance.hypotheses) for instance in index.instances}
        correct = correctness(index, predictions)
        self.accuracy = sum(correct) / len(correct) if correct else 0.0
        if self.kind == MULTICHOICE:
            answered_wrong = sum(1 for instance, ok in zip(index.instances, correct, strict=True)
                                 if not ok and predicted_option(predictions.get(instance.id),
                                                                len(instance.hypotheses)) is not None)
            self.right = self.accuracy
            self.wrong = answered_wrong / len(correct) if correct else 0.0
            return
        outcomes: dict[str, Counter] = {}
        for instance in index.instances:
            outcomes.setdefault(str(instance.label), Counter())[predicted_label(predictions.get(instance.id))] += 1
        self.rates = {gold: {label: n / sum(counter.values()) for label, n in counter.items()}
                      for gold, counter in outcomes.items()}

    def probabilities(self, flat: Sequence[tuple[Any, str, Any]], label: str) -> list[float]:
        """One success probability per independent unit (question or instance) of ``flat``: that
        the unit contributes an item predicted ``label``. For multichoice ``label`` is ``right``
        (``wrong`` is its complement, row by row)."""
        if self.kind == CLASSIFICATION:
            return [self.rates.get(gold, {}).get(label, 0.0) for _, gold, _ in flat]
        per_question: dict[str, float] = {}
        for (ident, _), gold, _ in flat:
            share = self.right if gold == RIGHT else self.wrong / (self.options[ident] - 1)
            per_question[ident] = per_question.get(ident, 0.0) + share
        return list(per_question.values())

    def expected_dist(self, flat: Sequence[tuple[Any, str, Any]], keys: Sequence[str]) -> dict[str, float]:
        """The expected predicted-label distribution on ``flat``, read like ``predicted_dist``
        (classification: among usable predictions; multichoice: a row not picked is ``wrong``)."""
        if self.kind == MULTICHOICE:
            share = sum(self.probabilities(flat, RIGHT)) / len(flat)
            return {label: share if label == RIGHT else 1.0 - share if label == WRONG else 0.0 for label in keys}
        expected = {label: sum(self.rates.get(gold, {}).get(label, 0.0) for _, gold, _ in flat) for label in keys}
        total = sum(expected.values())
        return {label: (value / total if total > 0 else 0.0) for label, value in expected.items()}

    def p_value(self, flat: Sequence[tuple[Any, str, Any]], label: str) -> tuple[float, int, float]:
        """(P(X >= observed), observed, E[X]) for X = the items of ``flat`` predicted ``label``."""
        observed = sum(1 for item in flat if item[2] == label)
        if self.kind == MULTICHOICE and label == WRONG:
            probabilities = self.probabilities(flat, RIGHT)  # X = n - (rows predicted right)
            pmf = poisson_binomial_pmf(probabilities)
            right = len(flat) - observed
            return float(min(1.0, pmf[: right + 1].sum())), observed, len(flat) - sum(probabilities)
        probabilities = self.probabilities(flat, label)
        return _upper_tail(poisson_binomial_pmf(probabilities), observed), observed, sum(probabilities)


def distribution_test(test: Sequence[Instance] | FeatureIndex, predictions: Mapping[str, Any],
                      cues: Sequence[Mapping], *, kind: str, language: str = "en", seed: int = 0,
                      min_count: int = MIN_COUNT, alpha: float = ALPHA, protect_outcomes: bool = False) -> list[dict]:
    """Per cue (from :func:`discover_cues`): the entry's predicted-label distribution on the
    flattened S_f against what a cue-free model of the same accuracy would predict there.

    ``p_value`` = P(X >= observed) under :class:`CueFreeModel`, X = the flattened items predicted
    as the cue's label (``cue_label``: the label f pushes above the reference prior), computed
    exactly; ``p_holm`` = Holm-adjusted over the cues of this call; ``follows_cue`` = p_holm <
    ``alpha``. ``null_dist`` is the cue-free model's expected predicted distribution on the same
    items. The paper's visual reading is kept: ``predicted_dist`` against ``reference_dist``
    (R_f) and ``uniform`` (JSD, natural log), ``follows_cue_published`` = the most predicted
    label is R_f's most frequent one and the prediction is closer to R_f than to uniform.

    Multichoice flattens option rows (right/wrong) carrying f in the questions f is attached
    to; a row is predicted ``right`` when the predicted option is that row. A classification
    instance without a usable prediction is left out of the predicted distribution (and counts
    as not predicting the cue's label). Cues stored without ``prior`` (tables computed before the
    label prior existed) are read against the label prior of ``test``.

    ``protect_outcomes`` (hidden splits): the flattened set is drawn by gold label, so a count
    of its items predicted as some label at an end of what the entry's predictions allow
    (``_flat_reveals``) says which of them are gold; such a row keeps the cue's public side only,
    ``withheld`` is True, and Holm counts it as a test with p = 1.
    """
    if not cues:
        return []
    index = build_index(test, kind=kind, language=language, feature_types=_cue_types(cues, language))
    index.require_unique_ids()
    null = CueFreeModel(index, predictions)
    test_labels = index.label_counts()
    rows: list[dict[str, Any]] = []
    for cue in cues:
        key = _cue_key(cue)
        reference_dist = cue.get("reference_dist")
        if not isinstance(reference_dist, Mapping) or not reference_dist:
            raise ValueError(f"cue {key!r} has no reference_dist (pass cues from discover_cues)")
        labels = sorted(reference_dist)
        items: list[tuple[tuple[str | int, ...], str, str | None]] = []
        for i in index.members(key):
            instance = index.instances[i]
            predicted = predictions.get(instance.id)
            if kind == CLASSIFICATION:
                items.append(((instance.id,), str(instance.label), predicted_label(predicted)))
                continue
            option = predicted_option(predicted, len(instance.hypotheses))
            for j, option_features in enumerate(index.rows[i]):
                if key in option_features:
                    items.append(((instance.id, j), RIGHT if j == instance.label else WRONG,
                                  RIGHT if option == j else WRONG))
        flat = flatten(items, labels, seed=seed, key=key, min_count=min_count)
        predicted_counts = Counter(item[2] for item in flat if item[2] is not None)
        total = sum(predicted_counts.values())
        if not flat or total == 0:
            continue
        keys = sorted(set(labels) | set(predicted_counts))
        predicted_dist = {label: predicted_counts.get(label, 0) / total for label in keys}
        reference = {label: float(reference_dist.get(label, 0.0)) for label in keys}
        uniform = {label: (1.0 / len(labels) if label in reference_dist else 0.0) for label in keys}
        pred_vector = [predicted_dist[label] for label in keys]
        jsd_reference = jsd(pred_vector, [reference[label] for label in keys])
        jsd_uniform = jsd(pred_vector, [uniform[label] for label in keys])
        cue_label = _cue_label(cue, labels, test_labels)
        p_value, observed, expected = null.p_value(flat, cue_label)
        feature, value = _features.split_key(key)
        if protect_outcomes and _flat_reveals(items, flat, labels):
            rows.append({"feature": feature, "value": value, "n_flat": None, "reference_dist": reference,
                         "cue_label": cue_label, "p_value": None, "p_holm": None, "follows_cue": None,
                         "follows_cue_published": None, "withheld": True})
            continue
        rows.append({
            "feature": feature,
            "value": value,
            "n_flat": len(flat),
            "predicted_dist": predicted_dist,
            "reference_dist": reference,
            "uniform": uniform,
            "jsd_reference": jsd_reference,
            "jsd_uniform": jsd_uniform,
            "follows_cue": False,
            "cue_label": cue_label,
            "null_dist": null.expected_dist(flat, keys),
            "model_accuracy": null.accuracy,
            "n_cue_label": observed,
            "expected_cue_label": expected,
            "p_value": p_value,
            "p_holm": 1.0,
            "follows_cue_published": _argmax(predicted_dist) == _argmax(reference) and jsd_reference < jsd_uniform,
        })
    for row, adjusted in zip(rows, disclosure.withheld_holm([row["p_value"] for row in rows], holm), strict=True):
        row["p_holm"] = adjusted
        row["follows_cue"] = None if adjusted is None else adjusted < alpha
    return rows


def _flat_reveals(items: Sequence[tuple[Any, str, Any]], flat: Sequence[tuple[Any, str, Any]],
                  labels: Sequence[str]) -> bool:
    """Whether a label's count among the flattened items sits at an end of what the public side
    allows. Whoever knows the predictions knows, for every item of S_f, whether it was predicted
    as the label (``predicted``), but not which items were drawn into the flattened set (that
    depends on the gold labels): of n drawn items, between max(0, n - items not predicted so)
    and min(n, predicted) can be predicted so. A count at either end ties the drawn items to the
    predictions (e.g. none drawn predicted as "right": no picked option carrying f is correct,
    when the right rows are the minority and all drawn) and is withheld (disclosure.reveals_members)."""
    drawn = len(flat)
    for label in labels:
        predicted = sum(1 for item in items if item[2] == label)
        count = sum(1 for item in flat if item[2] == label)
        if disclosure.reveals_members(count, max(0, drawn - (len(items) - predicted)), min(drawn, predicted)):
            return True
    return False


def _cue_label(cue: Mapping, labels: Sequence[str], test_labels: Counter) -> str:
    """The cue's ``cue_label``, or (older cue tables) the label R_f pushes most above the prior:
    the cue's stored ``prior``, else the label prior of the test split."""
    stored = cue.get("cue_label")
    if stored in labels:
        return str(stored)
    prior = cue.get("prior")
    if not isinstance(prior, Mapping) or not prior:
        prior = test_labels
    prior_vector = proportions([float(prior.get(label, 0.0)) for label in labels])
    return _lean([float(cue["reference_dist"].get(label, 0.0)) for label in labels], prior_vector, labels)


def profile(reference: Sequence[Instance] | FeatureIndex | None, test: Sequence[Instance] | FeatureIndex,
            predictions: Mapping[str, Any] | None = None, *, kind: str, language: str = "en",
            top_k: int = TOP_K, seed: int = 0, min_count: int = MIN_COUNT,
            feature_types: Iterable[str] | None = None, alpha: float = ALPHA) -> dict:
    """{"cues", "accuracy_test", "distribution_test"}; the tests are [] without predictions.

    Without a reference split (``reference=None``) there are no cues and no distribution test;
    the accuracy test then covers every feature of ``test`` (top ``top_k`` deltas).
    """
    test_index = build_index(test, kind=kind, language=language, feature_types=feature_types)
    if reference is None:
        cues: list[dict] = []
    else:
        cues = discover_cues(reference, test_index, kind=kind, language=language, top_k=top_k,
                             min_count=min_count, feature_types=feature_types)
    result = {"cues": cues, "accuracy_test": [], "distribution_test": []}
    if predictions is not None:
        result["accuracy_test"] = accuracy_test(test_index, predictions, None if reference is None else cues,
                                                kind=kind, language=language, min_count=min_count, top_k=top_k)
        if reference is not None:
            result["distribution_test"] = distribution_test(test_index, predictions, cues, kind=kind,
                                                            language=language, seed=seed, min_count=min_count,
                                                            alpha=alpha)
    return result


def clear_caches() -> None:
    """Forget memoised per-text features (e.g. before timing a cold run)."""
    _features.clear_caches()
