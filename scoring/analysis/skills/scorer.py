"""Scoring a reconstructed test set so that a mask never earns credit by itself.

The masking skills keep a gold answer whose words they mask as the masked span of the new passage
(``"more power"`` → ``"[UNK] power"``). Scored as text, ``[UNK]`` would become the token ``unk``,
which matches every mask of a prediction: the constant answer ``"[UNK] [UNK]"`` scored 19 F1 on
s2. Here, as Sugawara et al. (2020) do, the answer is scored **by position against the original
text**, with what can be read from an ExpMRC prediction (a text, no offsets):

* every masking variant's paragraph carries ``masks``: ``[start, end, original text]`` of each
  mask of its passage (hidden gold only; the public inputs are built by whitelist);
* a gold answer is its span of the variant passage with the masks put back: the original answer;
* a predicted answer (or evidence) that keeps no word but masks, punctuation and articles scores
  0 (a mask alone is never an answer);
* otherwise the prediction is looked up in the variant passage: if every place where it occurs
  reads the same once its masks are put back, it is scored as that original text (a system that
  finds the right span gets the credit the same span gets on the original); if it does not occur,
  or occurs where it reads differently, its masks are removed and the words left are scored.

Then the official ExpMRC F1 applies. A variant without ``masks`` (a gold built before masks were
recorded, or a skill that masks nothing) has its masks removed from both gold and prediction.
See docs/diagnostics.md#skill-based-reconstructed-sets.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from ...metrics import expmrc
from ...strict_json import InvalidPredictions, JsonObject, listed, load_json_object, plain_json, show
from .catalogue import UNK

SKILLS_FORMAT = '{"original": {<predictions>}, "s1": {<predictions>}, ...}'
MISSING_ORIGINAL = 'section "original" is missing: the gaps are measured against it'

_MASK = re.compile(re.escape(UNK), re.IGNORECASE)


def strip_masks(text: object) -> str:
    """``text`` with every mask token replaced by a space (non-strings as ``str`` shows them)."""
    return _MASK.sub(" ", text if isinstance(text, str) else str(text))


def informative(text: object) -> bool:
    """Does ``text`` keep a token the ExpMRC scorer counts, once its masks are removed?"""
    return bool(expmrc.normalize_tokens(expmrc.mixed_segmentation(strip_masks(text))))


def restore(context: str, masks: Sequence[Sequence], start: int, end: int) -> str:
    """``context[start:end]`` with each mask inside put back to its original text (a mask the
    span cuts through is removed)."""
    out, position = [], start
    for mask_start, mask_end, original in masks:
        if mask_end <= start or mask_start >= end:
            continue
        out.append(context[position:max(position, mask_start)])
        out.append(original if start <= mask_start and mask_end <= end else " ")
        position = max(position, mask_end)
    out.append(context[position:end])
    return "".join(out)


def _read(prediction: object, context: str, masks) -> str:
    """The text a prediction is scored as (see the module docstring)."""
    text = prediction if isinstance(prediction, str) else str(prediction)
    if not informative(text):
        return ""
    if masks is None or not _MASK.search(text):
        return strip_masks(text)
    needle = text.strip()
    readings: set[str] = set()
    position = context.find(needle)
    while position >= 0 and len(readings) < 2:
        readings.add(restore(context, masks, position, position + len(needle)))
        position = context.find(needle, position + 1)
    return readings.pop() if len(readings) == 1 else strip_masks(text)


def score_variant(variant_gold: dict, predictions: dict) -> expmrc.ExpmrcScore:
    """Score predictions on a skill variant: the result of ``expmrc.score_predictions`` (same
    shape: answer, evidence and overall on the 0–100 scale, ``per_question`` in 0..1), on the
    gold answers read back as the original text and each prediction read as described in the
    module docstring. Use it instead of ``expmrc.score_predictions`` for every skill variant."""
    data: list[dict] = []
    read: dict[str, object] = {}
    for article in variant_gold["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            context, masks = paragraph["context"], paragraph.get("masks")
            qas = []
            for qa in paragraph["qas"]:
                answers = _restored_answers(context, masks, qa)
                if not answers:  # nothing left to score (the build keeps no such question)
                    continue
                qas.append({"id": qa["id"], "question": qa["question"], "answers": answers,
                            "evidences": qa["evidences"]})
                entry = predictions.get(qa["id"])
                if isinstance(entry, dict) and "answer" in entry and "evidence" in entry:
                    read[qa["id"]] = {**entry, "answer": _read(entry["answer"], context, masks),
                                      "evidence": _read(entry["evidence"], context, masks)}
                elif qa["id"] in predictions:
                    read[qa["id"]] = entry  # malformed: the ExpMRC scorer names it
            if qas:
                paragraphs.append({"context": context, "qas": qas})
        if paragraphs:
            data.append({"title": article.get("title", ""), "paragraphs": paragraphs})
    if not data:
        return expmrc.ExpmrcScore(kind=expmrc.SPAN, version=variant_gold.get("version", ""), answer=0.0,
                                  evidence=0.0, overall=0.0, total=0, unanswered=0, per_question=[])
    return expmrc.score_predictions({"version": variant_gold["version"], "data": data}, read)


def _restored_answers(context: str, masks, qa: dict) -> list[dict]:
    """A variant question's gold answers read back as the original text (uninformative ones left out)."""
    answers = []
    for answer in qa["answers"]:
        start = answer.get("answer_start")
        if masks is not None and isinstance(start, int) and context.startswith(answer["text"], start):
            text = restore(context, masks, start, start + len(answer["text"]))
        else:
            text = strip_masks(answer["text"])
        if informative(text):
            answers.append({"text": text, "answer_start": start})
    return answers


def kept_references(original_gold: dict, variant_gold: dict) -> dict[str, list[str]]:
    """Per question the variant scores, the original gold answers it kept: the references the
    original side of a gap is scored against, so both sides use the same ones.

    A variant can drop some of a question's answers (a shuffle broke it up, every word of it was
    masked) and keep the question with the others. Scoring the original against all its answers
    and the variant against the survivors would credit the original with answers the variant no
    longer has: a system whose answers do not change would show a gap (SQuAD dev: s4 +2.15 F1,
    s14 +1.30). An original answer is kept when its text is among the variant's answers read
    back as the original text. Where the variant rewrote answers (s1 antonyms, s8 numbers) the
    pairing is by count: if every original answer not found verbatim can be one the variant
    rewrote, all of them are kept; otherwise only the verbatim ones are (and all of them when
    none is verbatim)."""
    originals = {qa["id"]: [a["text"] for a in qa["answers"]]
                 for article in original_gold["data"] for p in article["paragraphs"] for qa in p["qas"]}
    kept: dict[str, list[str]] = {}
    for article in variant_gold["data"]:
        for paragraph in article["paragraphs"]:
            context, masks = paragraph["context"], paragraph.get("masks")
            for qa in paragraph["qas"]:
                variant = Counter(a["text"] for a in _restored_answers(context, masks, qa))
                if not variant or qa["id"] not in originals:
                    continue
                original = originals[qa["id"]]
                unmatched = Counter(original) - variant
                rewritten = sum((variant - Counter(original)).values())
                verbatim = [text for text in original if text in variant]
                if not verbatim or rewritten >= sum(unmatched.values()):
                    kept[qa["id"]] = original
                else:
                    kept[qa["id"]] = verbatim
    return kept


def original_item_f1_on_kept(original_gold: dict, predictions: dict,
                             variant_golds: dict[str, dict]) -> dict[str, dict[str, float]]:
    """``{skill: {question id: answer F1 of the original prediction against the references the
    variant kept}}`` (:func:`kept_references`), the original side of each skill's gap. A question
    whose references all survive keeps its ordinary original F1."""
    original = expmrc.score_predictions(original_gold, predictions)
    plain = {q["key"]: q["answer"] for q in original.per_question}
    all_references = {qa["id"]: [a["text"] for a in qa["answers"]]
                      for article in original_gold["data"] for p in article["paragraphs"] for qa in p["qas"]}
    result = {}
    for skill, variant_gold in variant_golds.items():
        per_item = {}
        for key, references in kept_references(original_gold, variant_gold).items():
            if key not in plain:
                continue
            entry = predictions.get(key)
            if references == all_references.get(key) or not isinstance(entry, dict) or "answer" not in entry:
                per_item[key] = plain[key]
            else:
                per_item[key] = expmrc.answer_f1(references, entry["answer"])
        result[skill] = per_item
    return result


def read_sections(raw: bytes | str, *, max_bytes: int) -> JsonObject:
    """The sections of a skills submission, as ``(name, predictions)`` pairs in file order: one
    JSON object, no section name twice (checked in linear time, whatever the number of keys).
    Which names are allowed is the caller's: the server knows the variants it built."""
    _, document = load_json_object(raw, max_bytes=max_bytes, expected=SKILLS_FORMAT)
    repeated = sorted(name for name, count in Counter(name for name, _ in document).items() if count > 1)
    if repeated:
        raise InvalidPredictions(f"duplicated sections: {listed(repeated)}")
    return document


def parse_section(name: str, section: object, spec: expmrc.KeySpec, *, max_bytes: int) -> dict:
    """One section as validated ExpMRC predictions for ``spec``; a problem names the section."""
    try:
        return expmrc.parse_predictions(json.dumps(plain_json(section)).encode(), spec, max_bytes=max_bytes)
    except InvalidPredictions as exc:
        raise InvalidPredictions(f"section {show(name)}: {exc}") from None
