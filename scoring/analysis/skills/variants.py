"""The reconstructed test sets of a gold file: :func:`build_variant` (one skill), :func:`build_all`
(every skill, passages analysed once) and :func:`public_inputs` (what may be served). Each gold
answer is located in the original passage, carried through the skill's perturbation and re-read
from the new passage; see "Gold answers", "Public inputs" and "Layout" in the package docstring."""
from __future__ import annotations

from collections.abc import Callable, Mapping

from scoring.analysis.skills.back_translation import back_translations, describe, resolve_translation, s6_factory
from scoring.analysis.skills.catalogue import EN, NOT_APPLICABLE, NOT_CONFIGURED, OK, SKILLS, UNK, ZH
from scoring.analysis.skills.edits import SpanMap, apply_edits
from scoring.analysis.skills.perturbations import BUILDERS, MASKING_SKILLS, Question
from scoring.analysis.skills.randomness import question_rng
from scoring.analysis.skills.text import Analyses, analyse
from scoring.metrics import expmrc


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


def _informative(text: str) -> bool:
    """Does the (possibly masked) answer keep a token the scorer counts, other than [UNK]?"""
    return bool(expmrc.normalize_tokens(expmrc.mixed_segmentation(text.replace(UNK, " "))))


def _check_span_gold(gold: dict) -> None:
    if expmrc.task_kind(gold) != expmrc.SPAN:
        raise ValueError("skill variants need a span-extraction gold (SQuAD / CMRC 2018 layout)")
    expmrc.check_gold(gold)


def _result(skill, status, gold=None, n_items=0, n_changed=0, n_dropped=0, note="", counts=None) -> dict:
    return {"skill": skill, "status": status, "gold": gold, "n_items": n_items, "n_changed": n_changed,
            "n_dropped": n_dropped, "note": note, "counts": counts or {}, "public": None}


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
    for article in gold["data"]:
        new_paragraphs, public_paragraphs = [], []
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            context_analysis = analyses.passage(context, language)
            grouped: dict[str, list[dict]] = {}
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
                span_map = SpanMap(perturbation.context_edits, new_starts)
                answers, n_lost = [], 0
                for k, (s, e) in enumerate(located):
                    if k in perturbation.lost:
                        n_lost += 1
                        continue
                    if k in perturbation.placed:
                        edit_index, offset = perturbation.placed[k]
                        ns = new_starts[edit_index] + offset
                        ne = ns + (e - s)
                    else:
                        ns, ne = span_map.start(s), span_map.end(e)
                    text = new_context[ns:ne]
                    if ne <= ns:
                        counts["answers_not_found"] += 1
                        continue
                    if skill in MASKING_SKILLS and UNK in text and not _informative(text):
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
                new_qa = {"id": qa["id"], "question": new_question, "answers": answers,
                          "evidences": list(qa.get("evidences", []))}
                grouped.setdefault(new_context, []).append(new_qa)
            for new_context, qas in grouped.items():
                new_paragraph = {"id": paragraph["id"]} if "id" in paragraph else {}
                new_paragraph.update({"context": new_context, "qas": qas})
                new_paragraphs.append(new_paragraph)
            for new_context, qas in public_grouped.items():
                public_paragraph = {"id": paragraph["id"]} if "id" in paragraph else {}
                public_paragraph.update({"context": new_context, "qas": qas})
                public_paragraphs.append(public_paragraph)
        if new_paragraphs:
            data.append({"title": article.get("title", ""), "paragraphs": new_paragraphs})
        if public_paragraphs:
            public_data.append({"title": article.get("title", ""), "paragraphs": public_paragraphs})
    dropped = counts["dropped_answer_masked"] + counts["dropped_answer_lost"] + counts["dropped_answer_not_found"]
    note = (f"{counts['kept']} of {counts['questions']} questions kept, {counts['changed']} perturbed; "
            f"{dropped} dropped ({counts['dropped_answer_masked']} with every gold answer masked, "
            f"{counts['dropped_answer_lost']} with every gold answer broken up, "
            f"{counts['dropped_answer_not_found']} with no gold answer found in the passage); "
            f"gold answers: {counts['answers_rewritten']} re-written, {counts['answers_masked']} removed as masked, "
            f"{counts['answers_lost']} removed as broken up, "
            f"{counts['answers_not_found']} not found in the original passage")
    if not counts["kept"]:  # an empty gold file is not a test set (the scorer refuses it)
        return _result(skill, NOT_APPLICABLE, None, 0, 0, dropped, "every question dropped: " + note, counts)
    variant = {"version": gold["version"], "skill": skill, "data": data}
    result = _result(skill, OK, variant, counts["kept"], counts["changed"], dropped, note, counts)
    result["public"] = {"version": gold["version"], "skill": skill, "data": public_data}
    return result


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
