"""Skill gaps: the F1 of the original minus that of a reconstructed set on the same items, with a
paired bootstrap CI, and the reading InDepth-Eva-MRC gives it."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...stats import bootstrap_ci
from .catalogue import SKILLS


def skill_gaps(original_item_f1: Mapping[str, float], variant_item_f1: Mapping[str, Mapping[str, float]], *,
               n_resamples: int = 1000, seed: int = 0,
               original_by_skill: Mapping[str, Mapping[str, float]] | None = None) -> dict:
    """Per skill: answer F1 on the variant and of the original on the same items, the gap
    (original − variant) on the 0–100 scale with a 95% paired bootstrap CI, the reading.

    Inputs are per-item F1 in 0..1 keyed by question id (e.g. the ``answer`` of
    ``score_predictions(...).per_question``). Only items present in both count; ``n_unmatched``
    reports variant items missing from the original. ``original_by_skill`` gives a skill's own
    original side (scored against the references its variant kept,
    ``scorer.original_item_f1_on_kept``); it replaces ``original_item_f1`` for that skill."""
    out = {}
    for skill in sorted(variant_item_f1, key=lambda s: list(SKILLS).index(s) if s in SKILLS else len(SKILLS)):
        if skill not in SKILLS:
            raise ValueError(f"unknown skill {skill!r}")
        items = variant_item_f1[skill]
        base = original_by_skill[skill] if original_by_skill and skill in original_by_skill else original_item_f1
        keys = [k for k in items if k in base]
        meta = SKILLS[skill]
        entry = {"skill": skill, "name": meta["name"], "group": meta["group"], "reading": meta["reading"],
                 "n": len(keys), "n_unmatched": len(items) - len(keys)}
        if not keys:
            entry.update({"variant_f1": None, "original_f1": None, "gap": None, "ci_low": None, "ci_high": None})
        else:
            original = np.fromiter((base[k] for k in keys), dtype=float, count=len(keys))
            variant = np.fromiter((items[k] for k in keys), dtype=float, count=len(keys))
            differences = 100.0 * (original - variant)
            low, high = bootstrap_ci(differences, n_resamples=n_resamples, seed=seed)
            entry.update({
                "variant_f1": float(100.0 * variant.mean()),
                "original_f1": float(100.0 * original.mean()),
                "gap": float(differences.mean()),
                "ci_low": low,
                "ci_high": high,
            })
        out[skill] = entry
    return out
