"""ExpMRC scorer: answer + evidence F1, identical to the official ``eval_expmrc.py``.

Pure functions over plain dicts (no Django). Behaviour follows the official script of ExpMRC
(Cui et al., 2022) exactly, including its quirks (docs/metrics.md#expmrc); uploads are validated
more strictly than the official script does (docs/metrics.md#expmrc, "Validation"), and no error
message ever carries gold text, only paths, ids and field names.
"""
from __future__ import annotations

import functools
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple, Sequence

from ..strict_json import (  # noqa: F401  (InvalidPredictions is part of this module's API)
    JSON_TYPE_NAMES,
    SURROGATE,
    InvalidPredictions,
    JsonObject,
    Problems,
    json_type,
    load_json_object,
    show,
)
from ..tokenization import word_tokenize  # vendored Punkt model, NLTK's tokenizers only

SPAN, MULTICHOICE = "span", "multichoice"
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
TOKEN_CACHE_SIZE = 1 << 15  # distinct strings (~2 KB each); the 4 dev sets + their samples need ~6k


class InvalidGold(ValueError):
    """The gold / test-set file is malformed (the message names a path, never gold text)."""


# --------------------------------------------------------------------------- tokenization

# The official 33 "special" items. "……" is two characters, so it can never match the
# single-character segmentation test, but its characters do join the punctuation set.
SPECIAL_ITEMS = (
    "-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=",
    "，", "。", "：", "？", "！", "“", "”", "；", "’", "《", "》", "……",
    "·", "、", "「", "」", "（", "）", "－", "～", "『", "』",
)
_PUNCTUATION_CHARS = frozenset(string.punctuation + "".join(SPECIAL_ITEMS))
_ARTICLES = frozenset(("a", "an", "the"))
# One capture group of single characters: re.split alternates NLTK runs and one-char tokens.
_SINGLE_CHAR_TOKEN = re.compile(
    "([\u4e00-\u9fa5"
    + "".join(re.escape(item) for item in SPECIAL_ITEMS if len(item) == 1)
    + "])"
)


def mixed_segmentation(text: object) -> list[str]:
    """Official segmentation: each CJK char (U+4E00–U+9FA5) and special char is a token,
    every run of other characters goes through ``nltk.word_tokenize``."""
    tokens: list[str] = []
    pieces = _SINGLE_CHAR_TOKEN.split(str(text).strip())
    for index, piece in enumerate(pieces):
        if index % 2:
            tokens.append(piece)
        elif piece and not piece.isspace():  # word_tokenize of blanks is [], skip the call
            tokens.extend(word_tokenize(piece))
    return tokens


def normalize_tokens(tokens: Sequence[str]) -> list[str]:
    """Drop exact ``a``/``an``/``the`` (checked before lower-casing, so "The" stays) and
    one-character punctuation tokens; lower-case the rest."""
    return [
        token.lower()
        for token in tokens
        if token not in _ARTICLES and token not in _PUNCTUATION_CHARS
    ]


@functools.lru_cache(maxsize=TOKEN_CACHE_SIZE)
def _token_bag(text: str) -> tuple[dict[str, int], int]:
    """Normalized token counts and token total of a string. Cached because gold strings
    recur in every submission scored by a long-lived worker; callers must not mutate it."""
    tokens = normalize_tokens(mixed_segmentation(text))
    return dict(Counter(tokens)), len(tokens)


def clear_token_cache() -> None:
    _token_bag.cache_clear()


def f1_against_references(references: Sequence[str], prediction: object) -> float:
    """Bag-of-tokens F1 of ``prediction``, maximum over ``references`` (official formula)."""
    if not references:
        raise ValueError("f1_against_references needs at least one reference")
    predicted, predicted_len = _token_bag(str(prediction))
    best = 0.0
    for reference in references:
        gold, gold_len = _token_bag(str(reference))
        if gold_len == 0 or predicted_len == 0:
            score = 1.0 if gold_len == predicted_len else 0.0  # both empty -> 1, one empty -> 0
        else:
            smaller, larger = (gold, predicted) if len(gold) <= len(predicted) else (predicted, gold)
            common = 0
            for token, count in smaller.items():
                other = larger.get(token)
                if other:
                    common += count if count < other else other
            if common == 0:
                score = 0.0
            else:
                precision = 1.0 * common / predicted_len
                recall = 1.0 * common / gold_len
                score = (2 * precision * recall) / (precision + recall)
        if score > best:
            best = score
    return best


def answer_f1(gold_answers: Sequence[str], predicted_answer: object) -> float:
    """Span answer score: F1 against the reference answer texts."""
    return f1_against_references(gold_answers, predicted_answer)


def evidence_f1(gold_evidences: Sequence[str], predicted_evidence: object) -> float:
    """Evidence score (span and multi-choice): F1 against the reference evidences."""
    return f1_against_references(gold_evidences, predicted_evidence)


def choice_score(gold_letter: str, predicted_answer: object) -> float:
    """Multi-choice answer score: raw equality, so "c", "C " or 2 score 0 as officially."""
    return 1.0 if predicted_answer == gold_letter else 0.0


# --------------------------------------------------------------------------- gold

class _GoldQuestion(NamedTuple):
    key: str
    answers: tuple[str, ...]  # span: reference answer texts; multi-choice: (gold letter,)
    evidences: tuple[str, ...]


def task_kind(gold: dict) -> str:
    """Official dispatch on a substring of ``gold["version"]``."""
    if not isinstance(gold, dict):
        raise InvalidGold(f"top level must be a JSON object, found {json_type(gold)}")
    version = gold.get("version")
    if not isinstance(version, str):
        raise InvalidGold(f"version must be a string, found {json_type(version)}")
    if "squad" in version or "cmrc2018" in version:
        return SPAN
    if "race" in version or "c3" in version:
        return MULTICHOICE
    raise InvalidGold(f"Unsupported version: {version!r}. The official scorer reads the task from the "
                      '"version" string: it must contain "squad" or "cmrc2018" (span extraction) or "race" or '
                      '"c3" (multiple choice), e.g. "expmrc-squad-dev"')


def _field(container: dict, name: str, expected: type, path: str) -> Any:
    field_path = f"{path}.{name}" if path else name
    if name not in container:
        raise InvalidGold(f"{field_path} is missing")
    value = container[name]
    if not isinstance(value, expected):
        raise InvalidGold(f"{field_path} must be {JSON_TYPE_NAMES[expected]}, found {json_type(value)}")
    return value


def _strings(values: list, path: str, *, non_empty: bool) -> tuple[str, ...]:
    if non_empty and not values:
        raise InvalidGold(f"{path} must not be empty")
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise InvalidGold(f"{path}[{index}] must be a string, found {json_type(value)}")
    return tuple(values)


def _objects(values: list, path: str):
    for index, value in enumerate(values):
        item_path = f"{path}[{index}]"
        if not isinstance(value, dict):
            raise InvalidGold(f"{item_path} must be an object, found {json_type(value)}")
        yield item_path, value


def _span_questions(data: list):
    for article_path, article in _objects(data, "data"):
        paragraphs_path = f"{article_path}.paragraphs"
        for paragraph_path, paragraph in _objects(_field(article, "paragraphs", list, article_path), paragraphs_path):
            _field(paragraph, "context", str, paragraph_path)
            qas_path = f"{paragraph_path}.qas"
            for qa_path, qa in _objects(_field(paragraph, "qas", list, paragraph_path), qas_path):
                key = _field(qa, "id", str, qa_path)
                _field(qa, "question", str, qa_path)
                answers = _field(qa, "answers", list, qa_path)
                if not answers:
                    raise InvalidGold(f"{qa_path}.answers must not be empty")
                # answer_start is ignored by the scorer (11 CMRC answers carry -1): not checked.
                texts = tuple(_field(answer, "text", str, path)
                              for path, answer in _objects(answers, f"{qa_path}.answers"))
                evidences = _strings(_field(qa, "evidences", list, qa_path), f"{qa_path}.evidences", non_empty=True)
                yield f"{qa_path}.id", _GoldQuestion(key, texts, evidences)


_LETTERS = string.ascii_uppercase


def _multichoice_questions(data: list):
    for path, passage in _objects(data, "data"):
        passage_id = _field(passage, "id", str, path)
        _field(passage, "article", str, path)
        questions = _strings(_field(passage, "questions", list, path), f"{path}.questions", non_empty=False)
        columns = {name: _field(passage, name, list, path) for name in ("options", "answers", "evidences")}
        for name, column in columns.items():
            if len(column) != len(questions):
                raise InvalidGold(f"{path}.{name} has {len(column)} items but {path}.questions has {len(questions)}")
        for j in range(len(questions)):
            options_path = f"{path}.options[{j}]"
            options = columns["options"][j]
            if not isinstance(options, list):
                raise InvalidGold(f"{options_path} must be an array, found {json_type(options)}")
            _strings(options, options_path, non_empty=True)
            if len(options) > len(_LETTERS):
                raise InvalidGold(f"{options_path} has {len(options)} options, more than {len(_LETTERS)}")
            letter = columns["answers"][j]
            if not (isinstance(letter, str) and len(letter) == 1 and letter in _LETTERS[: len(options)]):
                # Name the allowed letters, not the value: gold must not leak.
                raise InvalidGold(f"{path}.answers[{j}] must be one of the question's option letters "
                                  f"{', '.join(_LETTERS[: len(options)])}")
            evidences_path = f"{path}.evidences[{j}]"
            evidences = columns["evidences"][j]
            if not isinstance(evidences, list):
                raise InvalidGold(f"{evidences_path} must be an array, found {json_type(evidences)}")
            evidences = _strings(evidences, evidences_path, non_empty=True)
            # passage_id + "-" + j, never parsed back: passage ids contain "-" ("m6-80").
            yield f"{path} question {j}", _GoldQuestion(f"{passage_id}-{j}", (letter,), evidences), len(options)


def _gold_questions(gold: dict) -> tuple[str, list[_GoldQuestion], int]:
    """Validate ``gold`` and return (kind, questions in official order, largest option count)."""
    kind = task_kind(gold)
    data = _field(gold, "data", list, "")
    questions: list[_GoldQuestion] = []
    first_seen: dict[str, str] = {}
    max_options = 0
    if kind == SPAN:
        items = ((path, question, 0) for path, question in _span_questions(data))
    else:
        items = _multichoice_questions(data)
    for path, question, option_count in items:
        if question.key in first_seen:
            raise InvalidGold(f"{path}: duplicate question key {question.key!r} (first at {first_seen[question.key]})")
        first_seen[question.key] = path
        questions.append(question)
        max_options = max(max_options, option_count)
    if not questions:
        raise InvalidGold("data holds no questions")
    return kind, questions, max_options


def check_gold(gold: dict) -> None:
    """Raise InvalidGold unless ``gold`` is a well-formed ExpMRC test set."""
    _gold_questions(gold)


@dataclass(frozen=True)
class KeySpec:
    """What upload validation needs to know about a test set; holds no gold text."""

    kind: str
    keys: tuple[str, ...]  # question keys in official file order
    option_letters: str  # multi-choice: "A".. up to the largest option count; "" for span

    def __post_init__(self):
        object.__setattr__(self, "keys", tuple(self.keys))

    @functools.cached_property
    def key_set(self) -> frozenset[str]:
        return frozenset(self.keys)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "keys": list(self.keys), "option_letters": self.option_letters}

    @classmethod
    def from_dict(cls, d: dict) -> KeySpec:
        if d.get("kind") not in (SPAN, MULTICHOICE):
            raise ValueError(f"KeySpec kind must be {SPAN!r} or {MULTICHOICE!r}")
        keys, letters = d.get("keys"), d.get("option_letters")
        if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
            raise ValueError("KeySpec keys must be a list of strings")
        if not isinstance(letters, str):
            raise ValueError("KeySpec option_letters must be a string")
        return cls(d["kind"], tuple(keys), letters)


def key_spec(gold: dict) -> KeySpec:
    kind, questions, max_options = _gold_questions(gold)
    return KeySpec(kind, tuple(question.key for question in questions), _LETTERS[:max_options])


# --------------------------------------------------------------------------- predictions

# An answer or an evidence is a span of its passage: the longest ExpMRC dev passage has 2,548
# characters (RACE+). Scoring tokenises every prediction string (5.7-41 us per character), so a
# cap per string bounds what one file can cost the scoring worker.
MAX_PREDICTION_CHARS = 10_000


def parse_predictions(raw: bytes, spec: KeySpec, *, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, dict]:
    """Validate an uploaded prediction file (docs/metrics.md#expmrc) and return ``{key: {"answer", "evidence"}}``.

    Missing keys are allowed (they score 0); extra fields inside an entry are ignored and dropped.
    """
    text, document = load_json_object(
        raw, max_bytes=max_bytes, expected='{"<question key>": {"answer": ..., "evidence": ...}}')

    problems = Problems(text)
    first_index: dict[str, int] = {}
    for index, (key, value) in enumerate(document):
        if key in first_index:
            problems.add(index, "" if problems.full else show(key), first_at=first_index[key])
        else:
            first_index[key] = index
        if isinstance(value, JsonObject) and len({name for name, _ in value}) < len(value):
            counts = Counter(name for name, _ in value)  # one pass, not a count() per field
            for name in ("answer", "evidence"):
                if counts[name] > 1:
                    problems.add(index, f'{show(key)}: field "{name}" appears more than once')
    problems.raise_if_any("duplicated keys")
    if len(document) > len(spec.keys):
        # More distinct keys than the test set has questions: some are unknown. Say so before
        # validating every entry, so that a hostile file of a million small entries costs its
        # parsing and no more.
        _refuse_unknown_keys(text, (key for key, _ in document), spec)

    predictions: dict[str, dict] = {}
    problems = Problems(text)
    for index, (key, value) in enumerate(document):
        if not isinstance(value, JsonObject):
            problems.add(index, f'{show(key)}: entry is {json_type(value)}, '
                                'expected an object with "answer" and "evidence"')
            continue
        fields = dict(value)
        entry = {}
        for name in ("answer", "evidence"):
            if name not in fields:
                problems.add(index, f'{show(key)}: field "{name}" is missing')
            elif not isinstance(fields[name], str):
                problems.add(index, f'{show(key)}: field "{name}" is {json_type(fields[name])}, expected a string')
            elif SURROGATE.search(fields[name]):
                problems.add(index, f'{show(key)}: field "{name}" holds an unpaired \\u surrogate escape')
            elif len(fields[name]) > MAX_PREDICTION_CHARS:
                problems.add(index, f'{show(key)}: field "{name}" has {len(fields[name]):,} characters; an answer or '
                                    f'evidence is a span of its passage, at most {MAX_PREDICTION_CHARS:,} characters')
            else:
                entry[name] = fields[name]
        predictions[key] = entry
    problems.raise_if_any("invalid entries")

    if spec.kind == MULTICHOICE:
        allowed = spec.option_letters
        problems = Problems(text)
        for index, (key, entry) in enumerate(predictions.items()):
            answer = entry["answer"]
            if len(answer) != 1 or answer not in allowed:
                problems.add(index, f'{show(key)}: "answer" is {show(answer, 12)}')
        problems.raise_if_any(f'multi-choice "answer" must be one uppercase option letter ({", ".join(allowed)})')

    _refuse_unknown_keys(text, predictions, spec)
    return predictions


def _refuse_unknown_keys(text: str, keys: Iterable[str], spec: KeySpec) -> None:
    """Raise InvalidPredictions naming the keys (in file order) that are not in the test set."""
    problems = Problems(text)
    for index, key in enumerate(keys):
        if key not in spec.key_set:
            problems.add(index, "" if problems.full else show(key))
    problems.raise_if_any("keys not in the test set")


# --------------------------------------------------------------------------- scoring

@dataclass
class ExpmrcScore:
    kind: str
    version: str
    answer: float  # official 0-100 scale: ANS_F1 (answer accuracy for multi-choice)
    evidence: float  # EVI_F1
    overall: float  # ALL_F1: mean of per-question answer x evidence, not answer x evidence
    total: int
    unanswered: int
    per_question: list[dict] = field(default_factory=list)  # file order, scores in 0..1

    def official_dict(self, file: str) -> dict:
        """The official script's output object, keys in its order."""
        return {
            "ALL_F1": "%.3f" % self.overall,
            "ANS_F1": "%.3f" % self.answer,
            "EVI_F1": "%.3f" % self.evidence,
            "TOTAL": self.total,
            "SKIP": self.unanswered,
            "VERSION": self.version,
            "FILE": file,
        }


def score_predictions(gold: dict, predictions: dict) -> ExpmrcScore:
    """Score ``predictions`` (as returned by parse_predictions) against ``gold`` exactly as
    the official script does. Missing keys score 0 and stay in the denominator."""
    kind, questions, _ = _gold_questions(gold)
    per_question: list[dict] = []
    # Plain sequential sums in file order, as officially: builtin sum() of floats is
    # compensated on Python >= 3.12 and could move a figure across a rounding edge.
    answer_sum = evidence_sum = overall_sum = 0.0
    unanswered = 0
    for question in questions:
        if question.key not in predictions:
            unanswered += 1
            per_question.append({"key": question.key, "answer": 0.0, "evidence": 0.0, "overall": 0.0,
                                 "answered": False})
            continue
        entry = predictions[question.key]
        try:
            predicted_answer, predicted_evidence = entry["answer"], entry["evidence"]
        except (KeyError, TypeError):
            raise InvalidPredictions(f'{show(question.key)} is not an object with "answer" and "evidence"') from None
        if kind == SPAN:
            answer = answer_f1(question.answers, predicted_answer)
        else:
            answer = choice_score(question.answers[0], predicted_answer)
        evidence = evidence_f1(question.evidences, predicted_evidence)
        overall = answer * evidence
        answer_sum += answer
        evidence_sum += evidence
        overall_sum += overall
        per_question.append({"key": question.key, "answer": answer, "evidence": evidence, "overall": overall,
                             "answered": True})
    total = len(questions)
    return ExpmrcScore(
        kind=kind,
        version=gold["version"],
        answer=100.0 * answer_sum / total,
        evidence=100.0 * evidence_sum / total,
        overall=100.0 * overall_sum / total,
        total=total,
        unanswered=unanswered,
        per_question=per_question,
    )


# --------------------------------------------------------------------------- public inputs

def public_inputs(gold: dict) -> dict:
    """The gold with every answer and evidence removed, by whitelist: only fields known to be
    public are copied, so an unexpected gold field can never leak."""
    if task_kind(gold) == SPAN:
        data = [
            {
                "title": article.get("title", ""),
                "paragraphs": [
                    {
                        **({"id": paragraph["id"]} if "id" in paragraph else {}),
                        "context": paragraph["context"],
                        "qas": [{"id": qa["id"], "question": qa["question"]} for qa in paragraph["qas"]],
                    }
                    for paragraph in article["paragraphs"]
                ],
            }
            for article in gold["data"]
        ]
    else:
        data = [
            {"id": p["id"], "article": p["article"], "questions": p["questions"], "options": p["options"]}
            for p in gold["data"]
        ]
    return {"version": gold["version"], "data": data}
