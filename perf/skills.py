"""Time to build every reconstructed skill test set (s1–s14, s9p) for the ExpMRC dev sets.

Run: .venv/bin/python perf/skills.py [--repeat N]

For SQuAD (English, 501 questions) and CMRC 2018 (Chinese, 515 questions) prints
  (a) build_all (what `build_skill_sets` runs: passages analysed once for all skills),
  (b) the same skills built one by one with build_variant (each analyses the passages again),
  (c) the time per skill of (b),
and, as the in-process reference, (r) one cold scoring pass of the official sample submission
with scoring.metrics.expmrc (token cache cleared), ending with the ratios (a)/(r) and (b)/(r).
Best of --repeat runs (default 3).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "expmrc"
SUBSETS = (("squad", "en"), ("cmrc2018", "zh"))
sys.path.insert(0, str(REPO))

from scoring.analysis import skills  # noqa: E402  (after the path set-up above)
from scoring.metrics import expmrc


def best_of(repeat, function):
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"ExpMRC dev data not found at {DATA}; nothing to measure")
        return 1
    for subset, language in SUBSETS:
        gold = json.loads((DATA / f"expmrc-{subset}-dev.json").read_bytes())
        predictions = json.loads((DATA / "sample_submission" / f"{subset}.json").read_bytes())
        n_questions = sum(len(p["qas"]) for a in gold["data"] for p in a["paragraphs"])

        def together(gold=gold, language=language):
            return skills.build_all(gold, language=language)

        def one_by_one(gold=gold, language=language):
            return {skill: skills.build_variant(gold, skill, language=language) for skill in skills.SKILLS}

        def score(gold=gold, predictions=predictions):
            expmrc.clear_token_cache()
            return expmrc.score_predictions(gold, predictions)

        cold_s, results = best_of(args.repeat, together)
        warm_s, _ = best_of(args.repeat, one_by_one)
        ref_s, _ = best_of(args.repeat, score)

        per_skill = {}
        for skill in skills.SKILLS:
            started = time.perf_counter()
            skills.build_variant(gold, skill, language=language)
            per_skill[skill] = time.perf_counter() - started

        print(f"== {subset} ({language}, {n_questions} questions)")
        print(f"(a) build_all (all skills)          : {cold_s:7.3f} s")
        print(f"(b) build_variant per skill, summed : {warm_s:7.3f} s")
        print(f"(r) ExpMRC scoring pass, cold cache : {ref_s:7.3f} s")
        print(f"ratio (a)/(r) = {cold_s / ref_s:5.2f}   (b)/(r) = {warm_s / ref_s:5.2f}   "
              f"(b)/(a) = {warm_s / cold_s:5.2f}")
        print("(c) per skill, build_variant alone:")
        for skill, seconds in per_skill.items():
            result = results[skill]
            status = result["status"] if result["status"] != "ok" else (
                f"{result['n_items']} kept, {result['n_changed']} perturbed, {result['n_dropped']} dropped")
            print(f"    {skill:4s} {seconds:7.3f} s  {status}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
