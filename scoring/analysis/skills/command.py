"""``python -m scoring skills build|score``: the skill variants of a gold file on one's own machine,
built and scored exactly as the server does (seed 0, :func:`score_variant`, :func:`skill_gaps`
with seed 0). ``scoring.cli`` parses the arguments and turns :class:`SkillsInputError` into its
one-line ``error: ...``. See docs/diagnostics.md#skill-based-reconstructed-sets.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...metrics import expmrc
from ...strict_json import InvalidJson, InvalidPredictions, loads_json, show
from .catalogue import EN, OK, SKILLS, ZH
from .gaps import skill_gaps
from .scorer import (
    MISSING_ORIGINAL,
    original_item_f1_on_kept,
    parse_section,
    read_sections,
    score_variant,
)
from .variants import build_all, public_inputs

SEED = 0  # the server's build and gap seed
MAX_BYTES = 200 * 1024 * 1024


class SkillsInputError(ValueError):
    """An input problem worth one line on stderr (never gold text)."""


def read_gold(path: str) -> dict:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SkillsInputError(f"cannot read gold file {path}: {exc.strerror or exc}") from None
    try:
        gold = loads_json(raw)
    except (InvalidJson, UnicodeDecodeError) as exc:
        raise SkillsInputError(f"gold file {path} is not valid JSON: {exc}") from None
    try:
        if not isinstance(gold, dict) or expmrc.task_kind(gold) != expmrc.SPAN:
            raise SkillsInputError(f"gold file {path}: skill variants need a span-extraction gold "
                                   "(SQuAD / CMRC 2018 layout)")
        expmrc.check_gold(gold)
    except expmrc.InvalidGold as exc:
        raise SkillsInputError(f"invalid gold file {path}: {exc}") from None
    return gold


def language_of(gold: dict, language: str | None) -> str:
    """The language asked for, else the gold's: Chinese for a CMRC 2018 version, English otherwise."""
    if language is not None:
        return language
    return ZH if "cmrc" in str(gold.get("version", "")).lower() else EN


def _ids(gold: dict) -> tuple[str, ...]:
    return tuple(qa["id"] for article in gold["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"])


def _summary(result: dict) -> dict:
    return {key: result.get(key) for key in ("status", "n_items", "n_changed", "n_dropped", "note", "method")}


def build(gold_path: str, out_dir: str, language: str | None) -> dict:
    """Write every built variant's public inputs (``<skill>.inputs.json``: every question of the
    original, as served) and its gold (``<skill>.gold.json``: the scored questions) to
    ``out_dir``; return the summary."""
    gold = read_gold(gold_path)
    language = language_of(gold, language)
    results = build_all(gold, language=language, seed=SEED)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        skills = {}
        for skill, result in results.items():
            entry = _summary(result)
            entry["inputs"] = entry["gold"] = None
            if result["status"] == OK:
                for kind, document in (("inputs", public_inputs(result["public"])), ("gold", result["gold"])):
                    path = out / f"{skill}.{kind}.json"
                    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
                    entry[kind] = str(path)
            skills[skill] = entry
    except OSError as exc:
        raise SkillsInputError(f"cannot write to {out_dir}: {exc.strerror or exc}") from None
    return {"gold": gold_path, "version": gold["version"], "language": language, "seed": SEED, "skills": skills}


def _sections(path: str, gold: dict, results: dict) -> dict:
    """The submission's sections, validated as the server validates a skills upload."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SkillsInputError(f"cannot read skills file {path}: {exc.strerror or exc}") from None
    try:
        document = read_sections(raw, max_bytes=MAX_BYTES)
        names = [name for name, _ in document]
        if "original" not in names:
            raise InvalidPredictions(MISSING_ORIGINAL)
        parsed = {}
        for name, section in document:
            if name == "original":
                spec = expmrc.key_spec(gold)
            elif name in results and results[name]["status"] == OK:
                spec = expmrc.KeySpec(kind=expmrc.SPAN, keys=_ids(results[name]["public"]), option_letters="")
            elif name in results:
                raise InvalidPredictions(f"section {show(name)}: {name} has no variant for this gold "
                                         f"({results[name]['status']})")
            else:
                raise InvalidPredictions(f"section {show(name)} is not a skill section "
                                         f"(known: original, {', '.join(SKILLS)})")
            parsed[name] = parse_section(name, section, spec, max_bytes=MAX_BYTES)
    except InvalidPredictions as exc:
        raise SkillsInputError(f"invalid skills file {path}: {exc}") from None
    return parsed


def score(gold_path: str, skills_path: str, language: str | None) -> dict:
    """Original F1 and, per skill, variant F1, gap, 95% CI and items, on the 0–100 scale; a skill
    not scored has ``"f1": null`` and its ``status`` (not submitted, not applicable, ...)."""
    gold = read_gold(gold_path)
    results = build_all(gold, language=language_of(gold, language), seed=SEED)
    sections = _sections(skills_path, gold, results)
    original = expmrc.score_predictions(gold, sections["original"])
    variant_f1 = {name: {q["key"]: q["answer"] for q in score_variant(results[name]["gold"], preds).per_question}
                  for name, preds in sections.items() if name != "original"}
    # Each skill's original side against the references its variant kept (same on both sides).
    on_kept = original_item_f1_on_kept(gold, sections["original"], {name: results[name]["gold"] for name in variant_f1})
    gaps = skill_gaps({q["key"]: q["answer"] for q in original.per_question}, variant_f1, seed=SEED,
                      original_by_skill=on_kept)
    skills = {}
    for skill, result in results.items():
        gap = gaps.get(skill)
        if gap is None or gap["gap"] is None:
            status = "not submitted" if result["status"] == OK else result["status"]
            skills[skill] = {"f1": None, "gap": None, "ci": None, "n": result.get("n_items", 0), "status": status}
        else:
            skills[skill] = {"f1": gap["variant_f1"], "original_f1": gap["original_f1"], "gap": gap["gap"],
                             "ci": [gap["ci_low"], gap["ci_high"]], "n": gap["n"], "status": OK}
    return {"original": {"f1": original.answer, "n": original.total}, "skills": skills}
