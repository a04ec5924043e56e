"""The reconstructed test sets of a gold file: :func:`build_variant` (one skill), :func:`build_all`
(every skill, passages analysed once) and :func:`public_inputs` (what may be served). Each gold
answer is located in the original passage, carried through the skill's perturbation and re-read
from the new passage; see "Gold answers", "Public inputs" and "Layout" in the package docstring."""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping

from ...metrics import expmrc
from .back_translation import back_translations, describe, resolve_translation, s6_factory
from .catalogue import EN, NOT_APPLICABLE, NOT_CONFIGURED, OK, SKILLS, UNK, ZH
from .edits import SpanMap, apply_edits, carry_span
from .perturbations import BUILDERS, MASKING_SKILLS, METHODS, Question
from .randomness import question_rng
from .scorer import informative
from .text import Analyses, analyse

# s4 keeps the same share of questions in every answer-length bucket (see balance_answer_lengths):
# English words 1, 2, 3, 4+; Chinese characters 1-2, 3-4, 5-7, 8+.
LENGTH_BALANCED = frozenset({"s4"})
LENGTH_BUCKETS = {EN: (2, 3, 4), ZH: (3, 5, 8)}
MIN_BUCKET = 10

# Why s3 has no variant (see "Scoring" in the package docstring).
S3_NOT_APPLICABLE = (
    "s3 is not scored: with every content word masked, a gold answer keeps only its function words "
    "(\"the [UNK] of [UNK]\"), which match any such span of the passage once masks earn no credit, and the "
    "original answer's words are no longer in the passage (its own span, masked, scores 17.5 F1 against the "
    "original answers on the SQuAD dev set); scoring the predicted position against the original text "
    "(Sugawara et al., 2020) would need answer offsets, which ExpMRC predictions do not carry")


def _locate(context: str, text: str, start) -> tuple[int, int] | None:
    if not text:
        return None
    if isinstance(start, int) and start >= 0 and context.startswith(text, start):
        return start, start + len(text)
    best = None
    position = context.find(text)
    while position >= 0:
        if best is None or (isinstance(start, int) and abs(position - start) < abs(best - start)):
            best = position
        position = context.find(text, position + 1)
    return None if best is None else (best, best + len(text))


def carried_text(context: str, qa: dict, skill: str, span: tuple[int, int], *, seed: int = 0,
                 language: str = EN) -> str | None:
    """The text that ``span`` of the original passage becomes in ``skill``'s variant, as the
    build carries a gold answer (None when the perturbation breaks it up): what a system that
    finds the same span on the variant returns."""
    question = Question(id=qa["id"], context=analyse(context, language),
                        question=analyse(qa["question"], language, split_sentences=False), answers=[span],
                        rng=question_rng(seed, qa["id"], skill), language=language)
    perturbation = BUILDERS[skill](question)
    new_context, new_starts = apply_edits(context, perturbation.context_edits)
    carried = carry_span(perturbation, new_starts, SpanMap(perturbation.context_edits, new_starts), 0, span)
    return None if carried is None else new_context[carried[0]:carried[1]]


def _check_span_gold(gold: dict) -> None:
    if expmrc.task_kind(gold) != expmrc.SPAN:
        raise ValueError("skill variants need a span-extraction gold (SQuAD / CMRC 2018 layout)")
    expmrc.check_gold(gold)


def _result(skill, status, gold=None, n_items=0, n_changed=0, n_dropped=0, note="", counts=None) -> dict:
    if status == OK and skill in METHODS:  # the fallback is named where the variant is shown
        note = f"{note}. Method: {METHODS[skill]}"
    return {"skill": skill, "status": status, "gold": gold, "n_items": n_items, "n_changed": n_changed,
            "n_dropped": n_dropped, "note": note, "counts": counts or {}, "public": None,
            "method": METHODS.get(skill, "")}


def build_variant(gold: dict, skill: str, *, language: str = EN, seed: int = 0,
                  translation_models: Mapping | None = None) -> dict:
    """One reconstructed test set. Returns {"skill", "status", "gold", "n_items", "n_changed",
    "n_dropped", "note", "counts", "public"}; ``gold`` is None unless status is "ok". ``public``
    holds every question of the original (dropped ones too, with their perturbed passage): serve
    its ``public_inputs`` and accept predictions for all its ids, so the inputs never reveal
    which questions were dropped; only ``gold``'s questions are scored. Status is "not
    applicable" for a skill not defined for ``language`` and when every question is dropped,
    "not configured" for s6 without translation models."""
    if skill not in SKILLS:
        raise ValueError(f"unknown skill {skill!r}; known: {', '.join(SKILLS)}")
    _check_arguments(gold, language)
    return _variant(gold, skill, language, seed, translation_models, Analyses())


def _check_arguments(gold: dict, language: str) -> None:
    if language not in (EN, ZH):
        raise ValueError(f"language must be 'en' or 'zh', not {language!r}")
    _check_span_gold(gold)


def _variant(gold: dict, skill: str, language: str, seed: int, translation_models, analyses: Analyses) -> dict:
    if language not in SKILLS[skill]["languages"]:
        return _result(skill, NOT_APPLICABLE, note=f"{skill} is defined for English passages only")
    if skill == "s3":
        return _result(skill, NOT_APPLICABLE, note=S3_NOT_APPLICABLE)
    if skill == "s6":
        resolved = resolve_translation(translation_models)
        if isinstance(resolved, str):
            return _result(skill, NOT_CONFIGURED, note=resolved)
        try:
            table = back_translations(gold, resolved, analyses)
        except Exception as exc:  # noqa: BLE001 - a failing model must not stop the other skills
            return _result(skill, NOT_CONFIGURED, note=f"translation failed ({describe(exc)})")
        builder = s6_factory(table)
    else:
        builder = BUILDERS[skill]
    return _build(gold, skill, builder, language=language, seed=seed, analyses=analyses)


def _build(gold: dict, skill: str, builder, *, language: str, seed: int, analyses: Analyses) -> dict:
    counts = {"questions": 0, "kept": 0, "changed": 0, "dropped_answer_masked": 0, "dropped_answer_lost": 0,
              "dropped_answer_not_found": 0, "answers_rewritten": 0, "answers_masked": 0, "answers_lost": 0,
              "answers_not_found": 0}
    data, public_data = [], []
    lengths: dict[str, int] = {}  # question id -> tokens of its first located gold answer
    changed: set[str] = set()
    for article in gold["data"]:
        new_paragraphs, public_paragraphs = [], []
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            context_analysis = analyses.passage(context, language)
            grouped: dict[str, list[dict]] = {}
            masks: dict[str, list] = {}
            public_grouped: dict[str, list[dict]] = {}
            for qa in paragraph["qas"]:
                counts["questions"] += 1
                located, texts = [], []
                for answer in qa["answers"]:
                    span = _locate(context, answer["text"], answer.get("answer_start"))
                    if span is None:
                        counts["answers_not_found"] += 1
                        continue
                    located.append(span)
                    texts.append(answer["text"])
                question = Question(
                    id=qa["id"], context=context_analysis,
                    question=analyse(qa["question"], language, split_sentences=False),
                    answers=located, rng=question_rng(seed, qa["id"], skill), language=language)
                perturbation = builder(question)
                new_context, new_starts = apply_edits(context, perturbation.context_edits)
                new_question, _ = apply_edits(qa["question"], perturbation.question_edits)
                # Every question is public, scored or not: leaving a dropped one out of the
                # inputs would tell which hidden answers the perturbation masked or moved.
                public_grouped.setdefault(new_context, []).append({"id": qa["id"], "question": new_question})
                if not located:
                    counts["dropped_answer_not_found"] += 1
                    continue
                lengths[qa["id"]] = _answer_length(context_analysis, located[0])
                span_map = SpanMap(perturbation.context_edits, new_starts)
                answers, n_lost = [], 0
                for k, span in enumerate(located):
                    carried = carry_span(perturbation, new_starts, span_map, k, span)
                    if carried is None:
                        n_lost += 1
                        continue
                    ns, ne = carried
                    text = new_context[ns:ne]
                    if ne <= ns:
                        counts["answers_not_found"] += 1
                        continue
                    if skill in MASKING_SKILLS and UNK in text and not informative(text):
                        counts["answers_masked"] += 1
                        continue
                    if text != texts[k]:
                        counts["answers_rewritten"] += 1
                    answers.append({"text": text, "answer_start": ns})
                counts["answers_lost"] += n_lost
                if not answers:
                    counts["dropped_answer_lost" if n_lost else "dropped_answer_masked"] += 1
                    continue
                counts["kept"] += 1
                if new_context != context or new_question != qa["question"]:
                    counts["changed"] += 1
                    changed.add(qa["id"])
                new_qa = {"id": qa["id"], "question": new_question, "answers": answers,
                          "evidences": list(qa.get("evidences", []))}
                grouped.setdefault(new_context, []).append(new_qa)
                if skill in MASKING_SKILLS:  # where each mask is and what it hides (scored by position)
                    masks[new_context] = [[new_starts[k], new_starts[k] + len(edit.text), context[edit.start:edit.end]]
                                          for k, edit in enumerate(perturbation.context_edits) if edit.text == UNK]
            for new_context, qas in grouped.items():
                new_paragraph = {"id": paragraph["id"]} if "id" in paragraph else {}
                new_paragraph.update({"context": new_context, "qas": qas})
                if new_context in masks:
                    new_paragraph["masks"] = masks[new_context]
                new_paragraphs.append(new_paragraph)
            for new_context, qas in public_grouped.items():
                public_paragraph = {"id": paragraph["id"]} if "id" in paragraph else {}
                public_paragraph.update({"context": new_context, "qas": qas})
                public_paragraphs.append(public_paragraph)
        if new_paragraphs:
            data.append({"title": article.get("title", ""), "paragraphs": new_paragraphs})
        if public_paragraphs:
            public_data.append({"title": article.get("title", ""), "paragraphs": public_paragraphs})
    if skill in LENGTH_BALANCED:
        kept_ids = {qa["id"] for article in data for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
        removed = balance_answer_lengths(lengths, kept_ids, language=language, seed=seed, skill=skill)
        if removed:
            data = _without(data, removed)
            counts["kept"] -= len(removed)
            counts["changed"] -= len(removed & changed)
            counts["dropped_length_balance"] = len(removed)
    dropped = (counts["dropped_answer_masked"] + counts["dropped_answer_lost"] + counts["dropped_answer_not_found"]
               + counts.get("dropped_length_balance", 0))
    note = (f"{counts['kept']} of {counts['questions']} questions kept, {counts['changed']} perturbed; "
            f"{dropped} dropped ({counts['dropped_answer_masked']} with every gold answer masked, "
            f"{counts['dropped_answer_lost']} with every gold answer broken up, "
            f"{counts['dropped_answer_not_found']} with no gold answer found in the passage"
            + (f", {counts['dropped_length_balance']} to keep every answer length equally often"
               if "dropped_length_balance" in counts else "") + "); "
            f"gold answers: {counts['answers_rewritten']} re-written, {counts['answers_masked']} removed as masked, "
            f"{counts['answers_lost']} removed as broken up, "
            f"{counts['answers_not_found']} not found in the original passage")
    if not counts["kept"]:  # an empty gold file is not a test set (the scorer refuses it)
        return _result(skill, NOT_APPLICABLE, None, 0, 0, dropped, "every question dropped: " + note, counts)
    variant = {"version": gold["version"], "skill": skill, "data": data}
    result = _result(skill, OK, variant, counts["kept"], counts["changed"], dropped, note, counts)
    result["public"] = {"version": gold["version"], "skill": skill, "data": public_data}
    return result


def _answer_length(analysis, span: tuple[int, int]) -> int:
    """Tokens of the passage that a gold answer span overlaps (words; Chinese: characters)."""
    start, end = span
    return sum(1 for s, e in analysis.tokens if s < end and start < e) or 1


def _bucket(length: int, language: str) -> int:
    edges = LENGTH_BUCKETS[language]
    return sum(1 for edge in edges if length >= edge)


def balance_answer_lengths(lengths: Mapping[str, int], kept: set[str], *, language: str, seed: int,
                           skill: str) -> set[str]:
    """The kept questions to drop so that every answer-length bucket keeps the same share of its
    questions (s4 loses long answers more often than short ones: without this the kept set
    would lean towards short answers). The share is the lowest bucket's (buckets of at least
    ``MIN_BUCKET`` questions decide it; smaller buckets are brought to it too); within a
    bucket the questions kept are those whose sha256(seed, id, skill) comes first, so the
    choice is deterministic and depends on the gold only through which answers survived."""
    totals: dict[int, list[str]] = {}
    for key, length in lengths.items():
        totals.setdefault(_bucket(length, language), []).append(key)
    rates = {b: sum(k in kept for k in keys) / len(keys) for b, keys in totals.items()}
    deciding = [rate for b, rate in rates.items() if len(totals[b]) >= MIN_BUCKET] or list(rates.values())
    if not deciding:
        return set()
    target = min(deciding)
    removed: set[str] = set()
    for keys in totals.values():
        survivors = sorted((k for k in keys if k in kept), key=lambda k: _rank(seed, k, skill))
        quota = min(len(survivors), math.floor(target * len(keys) + 0.5))
        removed.update(survivors[quota:])
    return removed


def _rank(seed: int, key: str, skill: str) -> bytes:
    return hashlib.sha256(f"{seed}\x1f{key}\x1f{skill}/balance".encode()).digest()


def _without(data: list[dict], removed: set[str]) -> list[dict]:
    out = []
    for article in data:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = [qa for qa in paragraph["qas"] if qa["id"] not in removed]
            if qas:
                paragraphs.append({**paragraph, "qas": qas})
        if paragraphs:
            out.append({**article, "paragraphs": paragraphs})
    return out


def build_all(gold: dict, *, language: str = EN, seed: int = 0, translation_models: Mapping | None = None,
              progress: Callable[[int, int], None] | None = None) -> dict[str, dict]:
    """Every skill's variant, in SKILLS order; ``progress(done, total)`` after each skill.
    Passages are analysed (sentences, tokens) once for all skills."""
    _check_arguments(gold, language)
    analyses = Analyses()
    results = {}
    total = len(SKILLS)
    for done, skill in enumerate(SKILLS, start=1):
        results[skill] = _variant(gold, skill, language, seed, translation_models, analyses)
        if progress is not None:
            progress(done, total)
    return results


def public_inputs(variant_gold: dict) -> dict:
    """Titles, contexts, question ids and questions only: the ExpMRC whitelist, plus the skill."""
    out = expmrc.public_inputs(variant_gold)
    if "skill" in variant_gold:
        out = {"version": out["version"], "skill": variant_gold["skill"], "data": out["data"]}
    return out
