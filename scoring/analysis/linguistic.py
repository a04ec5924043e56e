"""Linguistic-bias analysis: the "Linguistic Bias Analysis" of InDepth-Eva-MRC (Wu et al., 2022),
as defined in docs/diagnostics.md#linguistic-bias.

The test set is split into subsets by five properties of the items, with the original platform's
default bins; a model's F1 is computed per subset and its bias score
is the variance of those subset F1s (population variance over the non-empty subsets): the
larger, the more the model's quality depends on surface properties of the input.

Choices Wu et al. (2022) leave open (documented here and in each property's ``note``):
- words: runs of letters/digits/underscore, keeping inner apostrophes and hyphens
  ("Victoria's", "centre-left" are one word); punctuation is not a word;
- Chinese ("zh"): lengths count characters other than white space and punctuation;
  Flesch-Kincaid grade and word frequency are English measures and are "not applicable";
- syllables: a vowel-group heuristic (see ``count_syllables``), sentences: NLTK Punkt
  (vendored model, no download);
- word frequency: no frequency list is available offline, so the corpus is the evaluated test
  set itself: the distinct passages, counted once each. A passage's value is the mean, over its
  running words, of each word's frequency per million words of that corpus (the passage's own
  words included). Per million keeps the original bin width of 500 meaningful whatever the
  test-set size: SQuAD passages come out between ~4,500 and ~19,000, the order of magnitude of
  the original plots (~1,000-10,000 raw counts from an unnamed list). The wordfreq package
  (an external list) was not used, to add no dependency and no downloaded data.
- passage length: bins of 50 up to an open last bin "600+" (``PASSAGE_LENGTH_CAP``, the
  "600->+inf" of the original), for words (English) and characters (Chinese) alike;
- hidden test sets (``min_group_size``): subsets smaller than that are pooled into one
  "other (small groups)" bin, itself shown only when big enough (``pool_small_groups``), and
  the bias score is the variance over the subsets shown on their own: the variance over all
  subsets, next to the shown ones, would give away the F1 of a lone hidden subset.
F1 values are taken on the 0..1 scale, so the bias is in (0..1 F1) squared units (multiply
by 10,000 for F1 on a 0..100 scale).

The raw score ``bias`` (Wu et al., 2022) is kept, but it is no measure of bias on its own: with
small subsets the subset means vary by chance, and its expectation for a model whose F1 does not
depend on the property at all is large (about sigma^2 times the mean of 1/n_k over the subsets).
Next to it each property carries a noise-corrected score with a permutation test
(``between_bin_test``; exact definitions in docs/diagnostics.md#linguistic-bias):
- only subsets shown on their own with at least ``min_bin_size`` items enter it (the others are
  dropped and named in ``bins_left_out``);
- ``between_bin_variance`` = sum_k w_k (m_k - m)^2, bins weighted by their share of items
  w_k = n_k / N, m the mean F1 of those N items;
- ``null_expectation`` = (1/N) sum_k (1 - w_k) s_k^2 with s_k^2 the within-bin sample variance:
  unbiased for the expectation of ``between_bin_variance`` when items are independent and each
  bin's F1 values have any mean and spread, and exactly the mean of ``between_bin_variance``
  over all shuffles of the F1 values;
- ``bias_corrected`` = between_bin_variance - null_expectation: unbiased for
  sum_k w_k (mu_k - mu)^2 (the true bin means), 0 in expectation under no bias, may be negative;
- ``p_value``: the F1 values shuffled across the analysed items (bin sizes kept),
  p = (1 + #{bias_corrected(shuffle) >= observed}) / (1 + n_permutations), seeded per property.
"""
from __future__ import annotations

import math
import re
import unicodedata
import zlib
from collections import Counter
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..disclosure import coarsen_groups
from ..tokenization import sent_tokenize  # the vendored Punkt model, NLTK's tokenizers only
from .question_types import (
    OTHER,
    SMALL_GROUPS,
    bin_sort_key,
    length_bin,
    question_type,
    value_bin,
)

DEFAULT_BIN_WIDTHS = {
    "passage_length": 50,
    "answer_length": 1,
    "flesch_kincaid_grade": 2,
    "word_frequency": 500,
}
# The original platform's passage-length bins: "0->50, 50->100, ..., 600->+inf".
PASSAGE_LENGTH_CAP = 600
# The subsets of the original platform, in its display order.
ENGLISH_QUESTION_WORDS = ("which", "where", "what", "who", "how", "when", "why", OTHER)
# The original has no "whom"/"whose" subset; both are forms of "who". Public: the question-type
# tests of a hidden set use the same groups (see submissions.diagnostics).
FOLDED_WH_WORDS = {"whom": "who", "whose": "who"}

# The noise-corrected score and its permutation test (``between_bin_test``).
DEFAULT_PERMUTATIONS = 2000
# Smallest bin that enters the corrected score and the test (a within-bin variance needs 2 items;
# 10 matches the smallest group of the one-vs-rest question-type tests).
DEFAULT_MIN_BIN_SIZE = 10
# Shuffled F1 rows are made in blocks of about this many numbers (8 MB of float64).
_BLOCK_ELEMENTS = 1 << 20
# A shuffled score equal to the observed one up to rounding (same values per bin, another
# summation order) counts as "at least as large"; real differences are orders of magnitude larger.
_TIE_TOLERANCE = 1e-12

_WORD = re.compile(r"\w+(?:['’\-]\w+)*")
_VOWEL_GROUP = re.compile(r"[aeiouy]+")
_NOT_LETTER = re.compile(r"[^a-z]")


def words(text: str) -> list[str]:
    """Word tokens of English text (punctuation dropped, contractions and hyphenations kept)."""
    return _WORD.findall(text)


def character_length(text: str) -> int:
    """Length of Chinese text: characters that are neither white space nor punctuation."""
    return sum(1 for char in text if not char.isspace() and not unicodedata.category(char).startswith("P"))


def count_syllables(word: str) -> int:
    """Approximate English syllable count: groups of consecutive vowels (a e i o u y), minus a
    silent final "e" ("make" 1, but "table" 2 and "free" 1) and a silent "-ed" ("jumped" 1, but
    "wanted" 2), at least 1. Words without letters (numbers) count 1. Good to about one
    syllable on long or foreign words, which is enough for a readability grade averaged over a
    passage."""
    letters = _NOT_LETTER.sub("", word.lower())
    if not letters:
        return 1
    count = len(_VOWEL_GROUP.findall(letters))
    if count > 1:
        if letters.endswith("e") and not letters.endswith(("le", "ee", "ye")) and letters[-2] not in "aeiouy":
            count -= 1
        elif letters.endswith("ed") and len(letters) > 3 and letters[-3] not in "aeiouytd":
            count -= 1
    return max(1, count)


def flesch_kincaid_grade(text: str) -> float | None:
    """0.39 * words/sentences + 11.8 * syllables/words - 15.59; None for a text with no words."""
    tokens = words(text)
    if not tokens:
        return None
    sentences = max(1, len(sent_tokenize(text, language="english")))
    syllables = sum(count_syllables(token) for token in tokens)
    return 0.39 * len(tokens) / sentences + 11.8 * syllables / len(tokens) - 15.59


def word_frequencies(passages: Iterable[str]) -> dict[str, float]:
    """Frequency per million words of every (lower-cased) word over the distinct passages."""
    counts: Counter[str] = Counter()
    for passage in dict.fromkeys(passages):  # distinct, first-seen order
        counts.update(token.lower() for token in words(passage))
    total = sum(counts.values())
    return {word: count * 1e6 / total for word, count in counts.items()} if total else {}


def _mean_frequency(passage: str, frequencies: dict[str, float]) -> float | None:
    tokens = words(passage)
    if not tokens:
        return None
    return sum(frequencies[token.lower()] for token in tokens) / len(tokens)


def expmrc_span_items(gold: dict) -> list[dict]:
    """``{"question", "context", "answers"}`` per question of a (validated) ExpMRC span test set
    (SQuAD / CMRC 2018 layout), in the scorer's file order: the items the diagnostics analyse
    (``submissions.diagnostics.span_items`` builds the same), to be given each question's answer F1."""
    return [
        {"question": qa["question"], "context": paragraph["context"], "answers": [a["text"] for a in qa["answers"]]}
        for article in gold["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def _validated_items(items: Sequence[dict]) -> list[tuple[str, str, list[str], float]]:
    rows = []
    for index, item in enumerate(items):
        try:
            question, context, answers, f1 = item["question"], item["context"], item["answers"], item["f1"]
        except (KeyError, TypeError):
            raise ValueError(f'item {index} must be an object with "question", "context", "answers" and "f1"') from None
        if not isinstance(question, str) or not isinstance(context, str):
            raise ValueError(f"item {index}: question and context must be strings")
        if isinstance(answers, str) or not all(isinstance(answer, str) for answer in answers):
            raise ValueError(f"item {index}: answers must be a list of strings")
        if isinstance(f1, bool) or not isinstance(f1, (int, float)) or not 0.0 <= f1 <= 1.0:
            raise ValueError(f"item {index}: f1 must be a number between 0 and 1")
        rows.append((question, context, list(answers), float(f1)))
    return rows


def _subsets(labels: Sequence[str | None], f1: Sequence[float], order: Sequence[str] | None = None,
             min_group_size: int | None = None, protect_outcomes: bool = False) -> dict:
    """Bins (non-empty only) with their item count and mean F1; items labelled None are left
    out. Categorical bins follow ``order``, numeric ones their numeric order. With
    ``min_group_size``, small bins are pooled (``pool_small_groups``): the pool comes last,
    listing the bins it holds under ``pooled``, and is left out when itself too small; with
    ``protect_outcomes`` bins are pooled further until none gives its items' F1 away
    (``scoring.disclosure.coarsen_groups``), those listed under ``pooled_for_outcomes``.
    Returns ``{"bins", "pooled_groups", "hidden_items", "groups"}`` (``hidden_items``: items in
    no bin shown; ``groups``: the F1 values of each bin shown on its own, the pool excluded)."""
    pooled_names: list[str] = []
    pool_published = True
    for_outcomes: list[str] = []
    if min_group_size is not None:
        coarsening = coarsen_groups(labels, f1, min_group_size, protect_outcomes=protect_outcomes)
        labels, pooled_names, pool_published = coarsening.labels, coarsening.pooled, coarsening.pool_published
        for_outcomes = coarsening.pooled_for_outcomes
    groups: dict[str, list[float]] = {}
    for label, value in zip(labels, f1, strict=True):
        if label is not None:
            groups.setdefault(label, []).append(value)
    if order is not None:
        names = [name for name in order if name in groups]
    else:
        names = sorted((name for name in groups if name != SMALL_GROUPS), key=bin_sort_key)
    bins = [{"label": name, "n": len(groups[name]), "f1": float(np.mean(groups[name]))} for name in names]
    hidden_items = 0
    if SMALL_GROUPS in groups:
        pool = groups[SMALL_GROUPS]
        if pool_published:
            bins.append({"label": SMALL_GROUPS, "n": len(pool), "f1": float(np.mean(pool)), "pooled": pooled_names})
        else:
            hidden_items = len(pool)
    return {"bins": bins, "pooled_groups": pooled_names, "hidden_items": hidden_items,
            "pooled_for_outcomes": for_outcomes, "groups": {name: groups[name] for name in names}}


def _positive_int(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")
    return int(value)


def _between_and_null(rows: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of F1 values (items sorted by bin, bin k holding ``sizes[k]`` items, values
    centred on their mean): the size-weighted between-bin variance sum_k w_k (m_k - m)^2 and
    its expectation under no bias (1/N) sum_k (1 - w_k) s_k^2."""
    total = int(sizes.sum())
    weights = sizes / total
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    sums = np.add.reduceat(rows, starts, axis=1)
    squares = np.add.reduceat(rows * rows, starts, axis=1)
    means = sums / sizes
    # The overall mean is the same in every row (a shuffle keeps the values): 0 after centring.
    overall = sums.sum(axis=1, keepdims=True) / total
    between = (weights * (means - overall) ** 2).sum(axis=1)
    within = np.maximum(squares - sums * means, 0.0) / (sizes - 1)  # sample variance per bin
    return between, ((1.0 - weights) * within).sum(axis=1) / total


def between_bin_test(groups: Mapping[str, Sequence[float]], *, n_permutations: int = DEFAULT_PERMUTATIONS,
                     seed: int = 0, stream: str = "", min_bin_size: int = DEFAULT_MIN_BIN_SIZE) -> dict:
    """Noise-corrected between-bin variance of F1 and its permutation p-value, for one property.

    ``groups``: F1 values (0..1) per bin, in display order. Bins with fewer than ``min_bin_size``
    values are left out; over the N values of the K bins kept (sizes n_k, weights w_k = n_k / N,
    means m_k, sample variances s_k^2, overall mean m):

    - ``between_bin_variance`` V = sum_k w_k (m_k - m)^2;
    - ``null_expectation`` E = (1/N) sum_k (1 - w_k) s_k^2. With independent items and bin k's
      values of mean mu_k and variance sigma_k^2, E[V] = sum_k w_k (mu_k - mu)^2 + (1/N) sum_k
      (1 - w_k) sigma_k^2 and E[s_k^2] = sigma_k^2; over all shuffles of the values, the mean
      of V equals the mean of E (both (K - 1) S^2 / N, S^2 the sample variance of all N values);
    - ``bias_corrected`` = V - E, unbiased for sum_k w_k (mu_k - mu)^2: 0 in expectation when
      F1 does not depend on the bin, negative by chance;
    - ``p_value`` = (1 + #{shuffles with bias_corrected >= observed}) / (1 + n_permutations),
      the values shuffled across the N items with the bin sizes kept; the generator is seeded
      with (``seed``, CRC-32 of ``stream``), so each property has its own reproducible stream.

    With fewer than two bins kept, the four numbers are None.
    """
    n_permutations = _positive_int(n_permutations, "n_permutations", 1)
    min_bin_size = _positive_int(min_bin_size, "min_bin_size", 2)
    kept = {label: values for label, values in groups.items() if len(values) >= min_bin_size}
    result = {
        "min_bin_size": min_bin_size,
        "bins_left_out": [label for label, values in groups.items() if len(values) < min_bin_size],
        "n_analysed": int(sum(len(values) for values in kept.values())),
        "n_permutations": n_permutations,
        "between_bin_variance": None, "null_expectation": None, "bias_corrected": None, "p_value": None,
    }
    if len(kept) < 2:
        return result
    values = np.concatenate([np.asarray(v, dtype=float) for v in kept.values()])
    if not np.isfinite(values).all():
        raise ValueError("F1 values must be finite numbers")
    values = values - values.mean()  # centred: smaller sums, less cancellation
    sizes = np.array([len(v) for v in kept.values()], dtype=np.int64)
    between, null = _between_and_null(values[None, :], sizes)
    observed = float(between[0] - null[0])
    rng = np.random.default_rng([seed, zlib.crc32(stream.encode("utf-8"))])
    rows_per_block = max(1, _BLOCK_ELEMENTS // values.size)
    at_least = 0
    for start in range(0, n_permutations, rows_per_block):
        shuffled = rng.permuted(np.tile(values, (min(rows_per_block, n_permutations - start), 1)), axis=1)
        permuted_between, permuted_null = _between_and_null(shuffled, sizes)
        at_least += int(np.count_nonzero(permuted_between - permuted_null >= observed - _TIE_TOLERANCE))
    result.update(between_bin_variance=float(between[0]), null_expectation=float(null[0]),
                  bias_corrected=observed, p_value=(1 + at_least) / (1 + n_permutations))
    return result


def _bias(bins: list[dict]) -> float | None:
    """Population variance of the subset F1s, the pool of small subsets not counted (it is no
    subset of the original analysis); None without any subset."""
    values = [subset["f1"] for subset in bins if "pooled" not in subset]
    if not values:
        return None
    return float(np.var(values))


def _property(name: str, subsets: dict, test: dict, *, width, unit: str, note: str) -> dict:
    return {"name": name, "applicable": True, "bin_width": width, "unit": unit,
            "bins": subsets["bins"], "bias": _bias(subsets["bins"]), **test, "note": note,
            "pooled_groups": subsets["pooled_groups"], "hidden_items": subsets["hidden_items"],
            "pooled_for_outcomes": subsets["pooled_for_outcomes"]}


def _not_applicable(name: str, note: str, test: dict) -> dict:
    return {"name": name, "applicable": False, "bin_width": None, "unit": None, "bins": [], "bias": None,
            **test, "note": note, "pooled_groups": [], "hidden_items": 0, "pooled_for_outcomes": []}


def _bin_widths(overrides: dict | None) -> dict:
    widths = dict(DEFAULT_BIN_WIDTHS)
    for name, width in (overrides or {}).items():
        if name not in widths:
            raise ValueError(f"unknown property {name!r} in bin_widths (known: {', '.join(widths)})")
        if isinstance(width, bool) or not isinstance(width, (int, float)) or not width > 0 or not math.isfinite(width):
            raise ValueError(f"bin width of {name} must be a positive number")
        if name in ("passage_length", "answer_length") and int(width) != width:
            raise ValueError(f"bin width of {name} must be a whole number (it bins counts)")
        widths[name] = width
    return widths


def linguistic_bias(items: Sequence[dict], *, language: str = "en", bin_widths: dict | None = None,
                    min_group_size: int | None = None, n_permutations: int = DEFAULT_PERMUTATIONS,
                    min_bin_size: int = DEFAULT_MIN_BIN_SIZE, seed: int = 0,
                    protect_outcomes: bool = False) -> dict:
    """Subset F1, raw bias score (Wu et al., 2022), noise-corrected score and its permutation
    p-value for the five linguistic properties.

    ``items``: ``{"question", "context", "answers": [gold answer texts], "f1": 0..1}``.
    ``bin_widths`` overrides the defaults ``DEFAULT_BIN_WIDTHS`` per property.
    ``min_group_size`` (hidden test sets): no subset smaller than this is shown on its own;
    with ``protect_outcomes`` neither is one whose F1 would pin down its items' F1.
    ``n_permutations``, ``min_bin_size``, ``seed``: the corrected score and its test
    (``between_bin_test``, run on the subsets shown on their own, the pool left out; each
    property's shuffles are seeded with ``seed`` and its name).
    Returns ``{"language", "n_items", "min_group_size", "min_bin_size", "n_permutations", "seed",
    "properties": [{"name", "applicable", "bin_width", "unit", "bins": [{"label", "n", "f1"}],
    "bias", "min_bin_size", "bins_left_out", "n_analysed", "n_permutations",
    "between_bin_variance", "null_expectation", "bias_corrected", "p_value", "note",
    "pooled_groups", "hidden_items"}]}``; ``bias`` is the raw score (population variance of the
    subset F1s); properties in the order question_words, passage_length, answer_length,
    flesch_kincaid_grade, word_frequency.
    """
    if language not in ("en", "zh"):
        raise ValueError(f"unsupported language {language!r} (expected 'en' or 'zh')")
    widths = _bin_widths(bin_widths)
    n_permutations = _positive_int(n_permutations, "n_permutations", 1)
    min_bin_size = _positive_int(min_bin_size, "min_bin_size", 2)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    rows = _validated_items(items)
    f1 = [row[3] for row in rows]
    questions = [row[0] for row in rows]
    passages = [row[1] for row in rows]
    first_answers = [row[2][0] if row[2] else "" for row in rows]
    english = language == "en"
    length = (lambda text: len(words(text))) if english else character_length
    unit = "words" if english else "characters"

    def test(name, groups):
        return between_bin_test(groups, n_permutations=n_permutations, seed=seed, stream=name,
                                min_bin_size=min_bin_size)

    def analysed(name, labels, order=None, **described):
        subsets = _subsets(labels, f1, order, min_group_size, protect_outcomes)
        return _property(name, subsets, test(name, subsets["groups"]), **described)

    def not_applicable(name, note):
        return _not_applicable(name, note, test(name, {}))

    types = [question_type(question, language) for question in questions]
    if english:
        types = [FOLDED_WH_WORDS.get(kind, kind) for kind in types]
        order = list(ENGLISH_QUESTION_WORDS)
        note = "first wh-word of the question (whom and whose count as who), other when there is none"
    else:
        order = sorted(set(types) - {OTHER}) + [OTHER]
        note = "first Chinese interrogative of the question (longest at the earliest position), other when none"
    question_words = analysed("question_words", types, order, width=None, unit="category", note=note)

    passage_width, answer_width = int(widths["passage_length"]), int(widths["answer_length"])
    properties = [
        question_words,
        analysed("passage_length", [length_bin(length(p), passage_width, cap=PASSAGE_LENGTH_CAP) for p in passages],
                 width=passage_width, unit=unit,
                 note=f"passage length in {unit}, {PASSAGE_LENGTH_CAP} and more in one bin"),
        analysed("answer_length", [length_bin(length(a), answer_width) for a in first_answers],
                 width=answer_width, unit=unit, note=f"length of the first gold answer in {unit}"),
    ]
    if english:
        grade_width = widths["flesch_kincaid_grade"]
        grades = {passage: flesch_kincaid_grade(passage) for passage in dict.fromkeys(passages)}
        grade_labels = [None if (grade := grades[p]) is None else value_bin(grade, grade_width) for p in passages]
        properties.append(analysed(
            "flesch_kincaid_grade", grade_labels, width=grade_width, unit="grade",
            note=("0.39 words/sentences + 11.8 syllables/words - 15.59 of the passage; sentences by NLTK "
                  "Punkt, syllables by a vowel-group heuristic; passages without words are left out")))
        frequency_width = widths["word_frequency"]
        frequencies = word_frequencies(passages)
        means = {passage: _mean_frequency(passage, frequencies) for passage in dict.fromkeys(passages)}
        frequency_labels = [None if (mean := means[p]) is None else value_bin(mean, frequency_width) for p in passages]
        properties.append(analysed(
            "word_frequency", frequency_labels, width=frequency_width, unit="per million words",
            note=("mean frequency of the passage's words, per million words of this test set's distinct "
                  "passages (no external frequency list is used); higher means more common vocabulary")))
    else:
        properties.append(not_applicable(
            "flesch_kincaid_grade", "Flesch-Kincaid grade is defined for English text only"))
        properties.append(not_applicable(
            "word_frequency", "passage word frequency needs English word tokens; not computed for Chinese"))
    return {"language": language, "n_items": len(rows), "min_group_size": min_group_size,
            "outcomes_protected": bool(protect_outcomes and min_group_size is not None),
            "min_bin_size": min_bin_size, "n_permutations": n_permutations, "seed": int(seed),
            "properties": properties}
