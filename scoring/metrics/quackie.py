"""QUACKIE scorer: ground truth construction and the official interpretability metrics.

Pure functions over plain Python / numpy values (no Django). Behaviour follows the official
QUACKIE code (Rychener et al., 2020) exactly; the definitions are in docs/metrics.md#quackie:

- sentences come from NLTK Punkt English ``sent_tokenize`` (the vendored ``punkt_tab`` model,
  put on ``nltk.data.path`` by importing :mod:`scoring.tokenization`, done lazily; nothing is
  downloaded);
- the ground-truth sentence of an answer comes from the official ``findanswer`` character
  arithmetic, which assumes one separator character between sentences: extra whitespace
  *drifts* the offset and an answer near the end of a sentence may land on the next sentence.
  That drift is the official ground truth and is kept on purpose;
- the **official** metrics (IoU, HPD, SNR) are computed on the k=1 *binarised* score vector
  (every sentence tied at the maximum is selected; a vector of length <= 1 is all ones; NaN
  anywhere selects nothing), against the ground-truth candidate with the best Jaccard index
  (first on ties). A score vector of the wrong length is a "fail": NaN for all metrics,
  excluded from the means and counted;
- the **extended** metrics (``hpd_rank``, ``snr_raw``) are what the paper's text describes:
  the same HPD and SNR formulas applied to the raw scores, with the same best candidate;
- every per-sample metric and every aggregate is a finite number or None: an SNR that is not a
  finite double (noise ~1e-150 of the signal, raw scores only) is undefined and counted like a
  zero noise, where the official code would give NaN or inf.

Aggregates are plain fractions (the website shows them x100 with 2 decimals:
:func:`official_percent`). Error messages name paths, ids, indices and JSON types, never gold
text.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

import numpy as np

from ..stats import bootstrap_cis
from ..strict_json import (
    InvalidJson,
    InvalidPredictions,
    JsonObject,
    Problems,
    json_type,
    load_json_object,
    loads_json,
    show,
)

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
K = 1  # the leaderboard's top-k; the official code only ever uses k = 1

OFFICIAL_KEYS = ("IoU", "HPD", "SNR")
SUMMARY_KEYS = ("IoU", "HPD", "SNR", "IoU_std", "HPD_std", "SNR_std", "fails", "no_snr", "n",
                "HPD_rank", "SNR_raw")
_SAMPLE_METRICS = ("iou", "hpd", "snr", "hpd_rank", "snr_raw")


class InvalidQuackieGold(ValueError):
    """A SQuAD file or a QUACKIE gold file is malformed (the message names a path, never gold text)."""


# --------------------------------------------------------------------------- ground truth

def split_sentences(context: str) -> list[str]:
    """``nltk.sent_tokenize(context)`` with the English Punkt model, as the official code.

    NLTK is imported on first use (scoring alone never needs it); importing
    :mod:`scoring.tokenization` puts the vendored model first on ``nltk.data.path``."""
    from ..tokenization import sent_tokenize  # noqa: PLC0415  (NLTK: scoring a score file never needs it)

    return sent_tokenize(context, language="english")


def find_answer_sentence(sentences: Sequence[str], answer_start: int) -> int:
    """Index of the sentence the official ``findanswer`` marks for a character offset.

    Pure character arithmetic: stop at a sentence if the remaining offset is shorter than it,
    else subtract its length plus one separator character. Extra whitespace between sentences
    is not accounted for (the official drift), the separator belongs to the next sentence, and
    an offset past the end marks the last sentence.
    """
    if not sentences:
        raise ValueError("findanswer needs at least one sentence")
    remaining = answer_start
    for index, sentence in enumerate(sentences):
        if remaining < len(sentence):
            return index
        remaining -= len(sentence) + 1
    return len(sentences) - 1


def build_sample(sample_id: str, question: str, context: str, answer_starts: Sequence[int]) -> dict:
    """A frozen QUACKIE sample: the sentences and one one-hot GT candidate per answer start
    (duplicated starts give duplicated candidates, as officially)."""
    if not answer_starts:
        raise InvalidQuackieGold(f"sample {show(str(sample_id))} has no answer")
    sentences = split_sentences(context)
    if not sentences:
        raise InvalidQuackieGold(f"sample {show(str(sample_id))}: context has no sentences")
    candidates = []
    for start in answer_starts:
        candidate = [0] * len(sentences)
        candidate[find_answer_sentence(sentences, start)] = 1
        candidates.append(candidate)
    return {"id": sample_id, "question": question, "context": context, "sentences": sentences,
            "gt_candidates": candidates}


_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer"}


def _field(container: Mapping, name: str, expected: type, path: str) -> Any:
    field_path = f"{path}.{name}" if path else name
    if name not in container:
        raise InvalidQuackieGold(f"{field_path} is missing")
    value = container[name]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise InvalidQuackieGold(f"{field_path} must be {_JSON_NAMES[expected]}, found {json_type(value)}")
    return value


def _objects(values: list, path: str) -> Iterable[tuple[str, dict]]:
    for index, value in enumerate(values):
        item_path = f"{path}[{index}]"
        if not isinstance(value, dict):
            raise InvalidQuackieGold(f"{item_path} must be an object, found {json_type(value)}")
        yield item_path, value


def squad_samples(squad: dict) -> tuple[list[dict], dict]:
    """QUACKIE samples from a SQuAD v1.1 or v2.0 JSON document, in file order.

    One sample per question with at least one answer; unanswerable questions (empty
    ``answers``, as SQuAD v2.0 writes them) are skipped and counted. Returns
    ``(samples, {"questions": n, "unanswerable": k, "kept": n - k})``. The answer text is not
    used (only ``answer_start``). Contexts are split once per paragraph.
    """
    if not isinstance(squad, dict):
        raise InvalidQuackieGold(f"top level must be a JSON object, found {json_type(squad)}")
    data = _field(squad, "data", list, "")
    samples: list[dict] = []
    first_seen: dict[str, str] = {}
    questions = unanswerable = 0
    for article_path, article in _objects(data, "data"):
        for paragraph_path, paragraph in _objects(_field(article, "paragraphs", list, article_path),
                                                  f"{article_path}.paragraphs"):
            context = _field(paragraph, "context", str, paragraph_path)
            sentences: list[str] | None = None
            for qa_path, qa in _objects(_field(paragraph, "qas", list, paragraph_path), f"{paragraph_path}.qas"):
                sample_id = _field(qa, "id", str, qa_path)
                question = _field(qa, "question", str, qa_path)
                if "is_impossible" in qa:
                    _field(qa, "is_impossible", bool, qa_path)
                answers = _field(qa, "answers", list, qa_path)
                if sample_id in first_seen:
                    raise InvalidQuackieGold(f"{qa_path}.id: duplicate question id {show(sample_id)} "
                                             f"(first at {first_seen[sample_id]})")
                first_seen[sample_id] = qa_path
                starts = []
                for answer_path, answer in _objects(answers, f"{qa_path}.answers"):
                    start = _field(answer, "answer_start", int, answer_path)
                    if start < 0:
                        raise InvalidQuackieGold(f"{answer_path}.answer_start must not be negative")
                    starts.append(start)
                questions += 1
                if not starts:
                    unanswerable += 1
                    continue
                if sentences is None:
                    sentences = split_sentences(context)
                    if not sentences:
                        raise InvalidQuackieGold(f"{paragraph_path}.context has no sentences")
                candidates = []
                for start in starts:
                    candidate = [0] * len(sentences)
                    candidate[find_answer_sentence(sentences, start)] = 1
                    candidates.append(candidate)
                samples.append({"id": sample_id, "question": question, "context": context,
                                "sentences": list(sentences), "gt_candidates": candidates})
    return samples, {"questions": questions, "unanswerable": unanswerable, "kept": len(samples)}


def validate_gold(gold: object) -> dict[str, dict]:
    """Check a QUACKIE gold object ``{sample_id: {"sentences": [str, ...], "gt_candidates":
    [[0, 1, 0], ...]}}`` and return it as ``{id: {"sentences", "gt_candidates"}}`` (other fields,
    e.g. "question" and "context" of :func:`build_sample`, are allowed and dropped).

    Every candidate must be a one-hot array of 0/1 integers as long as ``sentences``.
    """
    if not isinstance(gold, dict):
        raise InvalidQuackieGold(f'top level must be a JSON object {{"<sample id>": {{"sentences": [...], '
                                 f'"gt_candidates": [...]}}}}, found {json_type(gold)}')
    checked: dict[str, dict] = {}
    for sample_id, entry in gold.items():
        path = f"[{show(sample_id)}]"
        if not isinstance(entry, dict):
            raise InvalidQuackieGold(f"{path} must be an object, found {json_type(entry)}")
        sentences = _field(entry, "sentences", list, path)
        if not sentences:
            raise InvalidQuackieGold(f"{path}.sentences must not be empty")
        for index, sentence in enumerate(sentences):
            if not isinstance(sentence, str):
                raise InvalidQuackieGold(f"{path}.sentences[{index}] must be a string, found {json_type(sentence)}")
        candidates = _field(entry, "gt_candidates", list, path)
        if not candidates:
            raise InvalidQuackieGold(f"{path}.gt_candidates must not be empty")
        for index, candidate in enumerate(candidates):
            where = f"{path}.gt_candidates[{index}]"
            if not isinstance(candidate, list):
                raise InvalidQuackieGold(f"{where} must be an array, found {json_type(candidate)}")
            if len(candidate) != len(sentences):
                raise InvalidQuackieGold(f"{where} has {len(candidate)} items but {path}.sentences has "
                                         f"{len(sentences)}")
            if not all(type(value) is int and value in (0, 1) for value in candidate):
                raise InvalidQuackieGold(f"{where} must hold only the integers 0 and 1")
            if sum(candidate) != 1:
                raise InvalidQuackieGold(f"{where} must be one-hot (exactly one 1), found {sum(candidate)} ones")
        checked[sample_id] = {"sentences": sentences, "gt_candidates": candidates}
    return checked


# --------------------------------------------------------------------------- metrics

def binarise_top1(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """The official k=1 binarisation, as a boolean array.

    Length <= 1: all ones. Otherwise ``t = np.partition(scores, -1)[-1]`` and ``scores >= t``,
    so every sentence tied at the maximum is selected. NaN anywhere makes ``t`` NaN and
    nothing is selected.
    """
    pred = np.asarray(scores, dtype=float)
    if len(pred) <= K:
        return np.ones(pred.shape, dtype=bool)
    threshold = np.partition(pred, -K)[-K]
    return pred >= threshold  # comparisons with NaN are False (no warning)


def _jaccard(gt: np.ndarray, selected: np.ndarray) -> float:
    union = np.count_nonzero(gt | selected)
    return np.count_nonzero(gt & selected) / union if union else 0.0  # sklearn's zero_division


def _hpd(gt: np.ndarray, values: np.ndarray) -> float:
    """Official ``hpd_score``: precision of "at least the GT's lowest score" against the GT."""
    detect = values >= values[gt].min()
    detected = np.count_nonzero(detect)
    return np.count_nonzero(gt & detect) / detected if detected else 0.0


def _scaled_down(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``(values / 2**e, e)`` with the largest magnitude in [0.5, 1): a power-of-two rescale is
    exact, so ratios and means come out as before, but sums of huge values cannot overflow."""
    peak = float(np.abs(values).max()) if values.size else 0.0
    exponent = int(np.frexp(peak)[1]) if peak > 0 and math.isfinite(peak) else 0
    return np.ldexp(values, -exponent), exponent


def _snr(gt: np.ndarray, values: np.ndarray) -> float | None:
    """Official ``snr_score``: (mean GT - mean rest)^2 / var(rest) with the population variance.

    None (undefined) when there is no rest, the rest is constant (a zero noise), or the ratio is
    not a finite double. The last case only arises on raw scores (``snr_raw``) whose noise is
    ~1e-150 of the signal or less, e.g. ``[1, 0, 1e-170]``: the official ``s**2 / noise**2``
    gives NaN there when the float std underflows to 0 (its ``noise == 0`` check) and +inf when
    only the squares under/overflow, and an inf would make the whole nanmean inf. We count
    both as undefined, like a zero noise. On the binarised vector the ratio is at most n - 2.
    """
    rest = values[~gt]
    if rest.size == 0 or rest.min() == rest.max():  # exactly "std == 0", without round-off
        return None
    scaled, _ = _scaled_down(values)  # SNR is scale-free
    scaled_rest = scaled[~gt]
    with np.errstate(all="ignore"):
        snr = ((scaled[gt].mean() - scaled_rest.mean()) / scaled_rest.std()) ** 2
    return float(snr) if np.isfinite(snr) else None


_FAILED = {"fail": True, "candidate": None, **{name: None for name in _SAMPLE_METRICS}}


def _as_candidates(gt_candidates) -> np.ndarray:
    candidates = np.asarray(gt_candidates)
    if candidates.ndim != 2:
        raise ValueError("gt_candidates must be a non-empty list of equally long 0/1 vectors")
    return candidates.astype(bool)


def sample_metrics(scores: Sequence[float] | np.ndarray, gt_candidates) -> dict:
    """Official and extended metrics of one sample.

    Returns ``{"fail", "candidate", "iou", "hpd", "snr", "hpd_rank", "snr_raw"}``; ``candidate``
    is the index of the GT candidate used (best Jaccard against the binarised scores, first on
    ties). Scores of the wrong length, NaN scores (docs/metrics.md#quackie) or not a flat sequence of numbers
    fail: every metric is None. ``snr`` / ``snr_raw`` are None when undefined (no rest, a
    constant rest, or a ratio that is not a finite double: see :func:`_snr`); ``snr_raw`` also
    when a score is infinite. Every number returned is finite.
    """
    candidates = gt_candidates if isinstance(gt_candidates, np.ndarray) and gt_candidates.dtype == bool \
        else _as_candidates(gt_candidates)
    try:
        pred = np.asarray(scores, dtype=float)
    except (TypeError, ValueError):
        return dict(_FAILED)
    if pred.ndim != 1 or pred.shape[0] != candidates.shape[1]:
        return dict(_FAILED)
    if np.isnan(pred).any():
        # ExpBench's rule (docs/metrics.md#quackie, a deliberate deviation from the official code,
        # which would score nothing selected): NaN scores mean the interpretation failed, so the
        # sample is excluded and counted.
        return dict(_FAILED)
    binary = binarise_top1(pred)
    if len(candidates) == 1:
        best = 0
    else:  # Jaccard of every candidate (an empty union counts 0, as sklearn); first on ties, as np.nanargmax
        unions = np.maximum(np.count_nonzero(candidates | binary, axis=1), 1)
        best = int(np.argmax(np.count_nonzero(candidates & binary, axis=1) / unions))
    gt = candidates[best]
    values = binary.astype(float)
    result = {"fail": False, "candidate": best, "iou": _jaccard(gt, binary), "hpd": float(_hpd(gt, values)),
              "snr": _snr(gt, values), "hpd_rank": None, "snr_raw": None}
    result["hpd_rank"] = float(_hpd(gt, pred))  # = 1 / #(sentences scoring >= the GT)
    if np.isfinite(pred).all():
        result["snr_raw"] = _snr(gt, pred)
    return result


def _mean_std(values: list) -> tuple[float | None, float | None]:
    """nanmean and nanstd (population) of the defined values; None over no value. Computed on
    power-of-two rescaled values, so huge finite values (an ``snr_raw`` near the double limit)
    cannot overflow the sum into inf; a result that is still not finite is None."""
    present = np.array([value for value in values if value is not None], dtype=float)
    present = present[~np.isnan(present)]
    if present.size == 0:
        return None, None
    scaled, exponent = _scaled_down(present)
    with np.errstate(all="ignore"):
        mean, std = np.ldexp(scaled.mean(), exponent), np.ldexp(scaled.std(), exponent)
    return (float(mean) if np.isfinite(mean) else None), (float(std) if np.isfinite(std) else None)


def score(gold: Mapping[str, Mapping], scores: Mapping[str, Sequence[float]]) -> dict:
    """Score a whole submission. ``gold`` = ``{id: {"sentences", "gt_candidates"}}`` (as
    :func:`validate_gold` returns it), ``scores`` = ``{id: [float, ...]}``.

    Samples missing from ``scores`` are fails, as officially a failed interpretation; ids of
    ``scores`` not in ``gold`` are ignored. Means and population stds are over the samples where
    the metric is defined (nanmean / nanstd); a mean over no sample is None. ``fails`` counts
    failed samples; ``no_snr`` counts samples whose official SNR is NaN, fails included, as the
    official ``analyze`` does (so the SNR mean is over ``n - no_snr`` samples). ``n`` is the
    number of gold samples.
    """
    per_sample = []
    for sample_id, entry in gold.items():
        if sample_id in scores:
            metrics = sample_metrics(scores[sample_id], entry["gt_candidates"])
        else:
            metrics = dict(_FAILED)
        per_sample.append({"id": sample_id, **{name: metrics[name] for name in _SAMPLE_METRICS},
                           "fail": metrics["fail"]})
    result: dict[str, Any] = {}
    for key, name in (("IoU", "iou"), ("HPD", "hpd"), ("SNR", "snr")):
        result[key], result[f"{key}_std"] = _mean_std([row[name] for row in per_sample])
    result = {key: result[key] for key in ("IoU", "HPD", "SNR", "IoU_std", "HPD_std", "SNR_std")}
    result["fails"] = sum(row["fail"] for row in per_sample)
    result["no_snr"] = sum(row["snr"] is None for row in per_sample)
    result["n"] = len(per_sample)
    result["HPD_rank"], _ = _mean_std([row["hpd_rank"] for row in per_sample])
    result["SNR_raw"], _ = _mean_std([row["snr_raw"] for row in per_sample])
    result["per_sample"] = per_sample
    return result


def summary(result: Mapping) -> dict:
    """The CLI's fields of a :func:`score` result, in order (no per-sample rows)."""
    return {key: result[key] for key in SUMMARY_KEYS}


def official_percent(result: Mapping, keys: Sequence[str] = OFFICIAL_KEYS) -> dict:
    """Means as the official website shows them: x100, rounded to 2 decimals (None stays None)."""
    return {key: None if result[key] is None else round(result[key] * 100, 2) for key in keys}


def bootstrap_intervals(result: Mapping, *, n_resamples: int = 1000, confidence: float = 0.95,
                        seed: int = 0) -> dict[str, tuple[float, float] | None]:
    """Percentile bootstrap CIs (fractions) of the means of ``IoU``, ``HPD``, ``SNR``,
    ``HPD_rank`` and ``SNR_raw`` over the samples where each is defined. Metrics defined on the
    same samples share their resamples (IoU and HPD always do). None where no sample counts."""
    columns = {"IoU": "iou", "HPD": "hpd", "SNR": "snr", "HPD_rank": "hpd_rank", "SNR_raw": "snr_raw"}
    rows = result["per_sample"]
    groups: dict[tuple[int, ...], dict[str, list[float]]] = {}
    for key, name in columns.items():
        defined = tuple(i for i, row in enumerate(rows) if row[name] is not None)
        groups.setdefault(defined, {})[key] = [rows[i][name] for i in defined]
    intervals: dict[str, tuple[float, float] | None] = {}
    for defined, metrics in groups.items():
        if not defined:
            intervals.update({key: None for key in metrics})
        else:
            intervals.update(bootstrap_cis(metrics, n_resamples=n_resamples, confidence=confidence, seed=seed))
    return {key: intervals[key] for key in columns}


# --------------------------------------------------------------------------- score files

def _bad_number(value: object) -> str | None:
    """Why a JSON value is not an acceptable score, or None if it is one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return json_type(value)
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            return "a number too large for a double"
        return None
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return None


def parse_scores(raw: bytes | str, sample_ids: Iterable[str], *,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, list[float]]:
    """Validate a sentence-score file ``{sample_id: [float, ...]}`` and return it as floats.

    Rejected (one line, lines named): not a JSON object, duplicated ids, a value that is not an
    array, an element that is not a finite number (NaN and Infinity literals, and numbers that
    overflow a double, included), ids not among ``sample_ids``. Allowed: missing ids and arrays
    of any length, empty included (both are counted fails when scoring).
    """
    text, document = load_json_object(raw, max_bytes=max_bytes, expected='{"<sample id>": [<score>, ...]}')

    problems = Problems(text)
    first_index: dict[str, int] = {}
    for index, (key, _) in enumerate(document):
        if key in first_index:
            problems.add(index, "" if problems.full else show(key), first_at=first_index[key])
        else:
            first_index[key] = index
    problems.raise_if_any("duplicated sample ids")

    parsed: dict[str, list[float]] = {}
    problems = Problems(text)
    for index, (key, value) in enumerate(document):
        if isinstance(value, JsonObject) or not isinstance(value, list):
            problems.add(index, f"{show(key)} is {json_type(value)}, expected an array of numbers")
            continue
        bad = [(position, why) for position, element in enumerate(value)
               if (why := _bad_number(element)) is not None]
        if bad:
            position, why = bad[0]
            more = f" (and {len(bad) - 1} more in this array)" if len(bad) > 1 else ""
            problems.add(index, f"{show(key)}[{position}] is {why}, expected a finite number{more}")
            continue
        parsed[key] = [float(element) for element in value]
    problems.raise_if_any("invalid scores")

    known = sample_ids if isinstance(sample_ids, AbstractSet) else frozenset(sample_ids)
    problems = Problems(text)
    for index, key in enumerate(parsed):  # no duplicates and nothing skipped: index = position in the file
        if key not in known:
            problems.add(index, "" if problems.full else show(key))
    problems.raise_if_any("sample ids not in the track's inputs")
    return parsed


# --------------------------------------------------------------------------- files in, one line out
# ``python -m scoring quackie`` (scoring/cli.py) reads its arguments and calls run and summary_line.


class InvalidQuackieInput(ValueError):
    """A gold or score file given to :func:`run` is unusable (one line, no gold text)."""


class _CliError(Exception):
    pass


def _reject_duplicate_keys(pairs: list) -> dict:
    result = {}
    for key, value in pairs:
        if key in result:
            raise _CliError(f"duplicate key {show(key)}")
        result[key] = value
    return result


def _read_gold(path: str) -> dict[str, dict]:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise _CliError(f"cannot read gold file {path}: {exc.strerror or exc}") from None
    try:
        document = loads_json(raw, object_pairs_hook=_reject_duplicate_keys)
    except (InvalidJson, UnicodeDecodeError) as exc:
        raise _CliError(f"gold file {path} is not valid JSON: {exc}") from None
    except _CliError as exc:
        raise _CliError(f"invalid gold file {path}: {exc}") from None
    try:
        return validate_gold(document)
    except InvalidQuackieGold as exc:
        raise _CliError(f"invalid gold file {path}: {exc}") from None


def run(gold_path: str, scores_path: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    """Read, validate and score two files; :class:`InvalidQuackieInput` (one line) on invalid input."""
    try:
        gold = _read_gold(gold_path)
        try:
            raw = Path(scores_path).read_bytes()
        except OSError as exc:
            raise _CliError(f"cannot read score file {scores_path}: {exc.strerror or exc}") from None
        try:
            scores = parse_scores(raw, gold.keys(), max_bytes=max_bytes)
        except InvalidPredictions as exc:
            raise _CliError(f"invalid score file {scores_path}: {exc}") from None
    except _CliError as exc:
        raise InvalidQuackieInput(" ".join(str(exc).splitlines())) from None
    return score(gold, scores)


def summary_line(result: Mapping) -> str:
    """The CLI's JSON line: fractions, None and any non-finite number (NaN, +-inf) as null
    (strict JSON has no literal for them)."""
    fields = {key: None if isinstance(value, float) and not math.isfinite(value) else value
              for key, value in summary(result).items()}
    return json.dumps(fields, allow_nan=False)
