"""Building every reconstructed skill test set (s1–s14, s9p) in one pass against one skill per run.

Run: .venv/bin/python perf/skills.py [--repeat N]

Peer: each skill built separately, as the original InDepth-Eva-MRC code does it (its ``Skill``
package builds one skill per run; Wu et al., 2022, docs/diagnostics.md#skill-based-reconstructed-sets):
``skills.build_variant(gold, skill)`` once for every entry of ``skills.SKILLS`` (s1–s14 and s9p,
15 calls; s3 and s6 return at once: not applicable / not configured without translation models),
each call analysing the passages again. Ours: ``skills.build_all(gold)`` (what
``build_skill_sets`` runs), which analyses each passage once for all skills. Both must return
the same variants (checked with ``==`` on every run).

For the SQuAD dev set (English, 501 questions) and CMRC 2018 (Chinese, 515 questions): one
untimed build first (word lists and lexicons load once per process, for neither side), then
--repeat runs of each side, alternated, best kept, in CPU seconds (time.process_time: the
machine is shared); then the peer's time per skill. The last line, ``ratio: X``, is peer / ours
over both sets together. Default --repeat 3.

    .venv/bin/python perf/skills.py --audit [--dump DIR]

prints instead, as one JSON document, the audit figures of the skill sets on the SQuAD dev set (the
same command before and after a change of the build or of the scoring):
  constant_mask      answer F1 of the constant answer "[UNK] [UNK]" on the original and each variant;
  same_spans_masked  the skill gap of a system that returns the sample submission's spans carried
                     through each variant's perturbation (masked, substituted) exactly as the
                     variant does it: a correct scorer shows no gap;
  s4_kept_by_length  share of questions s4 keeps, by the word count of the first gold answer;
  s9_masks           what the masked tokens of s9 were, over the distinct passages;
  s1_substitutions   how many tokens s1 replaces (``--dump DIR`` writes each one with its
                     sentence, and every this/that/these/those with whether s9 masks it, as JSON
                     lines, for a check with a POS tagger).
Variants are scored with ``skills.score_variant`` when the package has it, else (releases before
the skills scorer) with the ExpMRC scorer, as the server then did.
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
from scoring.analysis.skills.perturbations import BUILDERS, Question
from scoring.analysis.skills.randomness import question_rng
from scoring.analysis.skills.text import analyse
from scoring.analysis.skills.variants import _locate, carried_text
from scoring.metrics import expmrc

# Skills whose perturbation carries any span of the passage (masking, substitution, question only).
CARRIED = ("s1", "s2", "s7", "s8", "s9", "s9p", "s10", "s11", "s12", "s13", "s14")


def best_of(repeat, function):
    """Best CPU seconds of ``repeat`` runs (process time: other jobs on the machine disturb it little)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        result = function()
        best = min(best, time.process_time() - started)
    return best, result


def _questions(gold):
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield paragraph["context"], qa


def audit(gold, predictions, dump=None) -> dict:
    score = getattr(skills, "score_variant", expmrc.score_predictions)
    results = skills.build_all(gold, language="en", seed=0)
    ids = [qa["id"] for _, qa in _questions(gold)]
    constant = {key: {"answer": "[UNK] [UNK]", "evidence": ""} for key in ids}
    out = {"scorer": getattr(score, "__module__", "") + "." + score.__name__,
           "constant_mask": {"original": round(expmrc.score_predictions(gold, constant).answer, 2)}}
    for skill, result in results.items():
        if result["status"] == "ok":
            out["constant_mask"][skill] = round(score(result["gold"], constant).answer, 2)
        else:
            out["constant_mask"][skill] = result["status"]

    original = {q["key"]: q["answer"] for q in expmrc.score_predictions(gold, predictions).per_question}
    variant_f1 = {}
    for skill in CARRIED:
        if results[skill]["status"] != "ok":
            continue
        carried = {}
        for context, qa in _questions(gold):
            entry = predictions[qa["id"]]
            # Where the system found its answer: the occurrence nearest the first gold answer.
            span = _locate(context, entry["answer"], qa["answers"][0]["answer_start"])
            text = entry["answer"] if span is None else carried_text(context, qa, skill, span)
            carried[qa["id"]] = {"answer": entry["answer"] if text is None else text, "evidence": entry["evidence"]}
        variant_f1[skill] = {q["key"]: q["answer"] for q in score(results[skill]["gold"], carried).per_question}
    gaps = skills.skill_gaps(original, variant_f1, seed=0)
    out["same_spans_masked"] = {
        skill: {"gap": round(g["gap"], 3), "ci": [round(g["ci_low"], 3), round(g["ci_high"], 3)], "n": g["n"]}
        for skill, g in gaps.items()}

    kept = set()
    if results["s4"]["status"] == "ok":
        kept = {qa["id"] for a in results["s4"]["gold"]["data"] for p in a["paragraphs"] for qa in p["qas"]}
    by_length: dict[str, list[int]] = {}
    for _, qa in _questions(gold):
        words = len(qa["answers"][0]["text"].split())
        bucket = str(words) if words < 4 else "4+"
        by_length.setdefault(bucket, [0, 0])
        by_length[bucket][0] += qa["id"] in kept
        by_length[bucket][1] += 1
    out["s4_kept_by_length"] = {k: f"{v[0]}/{v[1]} ({100 * v[0] / v[1]:.0f}%)" for k, v in sorted(by_length.items())}
    out["s4_method"] = results["s4"].get("method", "")

    masked: dict[str, int] = {}
    substitutions, demonstratives = [], []
    seen = set()
    for context, qa in _questions(gold):
        if context in seen:
            continue
        seen.add(context)
        analysis = analyse(context, "en")
        question = Question(id=qa["id"], context=analysis, answers=[], rng=question_rng(0, qa["id"], "s9"),
                            question=analyse(qa["question"], "en", split_sentences=False), language="en")

        def row(start, end, analysis=analysis, context=context, **more):
            s, e = next((s, e) for s, e in analysis.sentences if s <= start < e)
            return {"sentence": context[s:e], "start": start - s, "end": end - s, "word": context[start:end], **more}

        s9_starts = set()
        for edit in BUILDERS["s9"](question).context_edits:
            word = context[edit.start:edit.end].lower()
            masked[word] = masked.get(word, 0) + 1
            s9_starts.add(edit.start)
        for i, word in enumerate(analysis.lower):
            if word in ("this", "that", "these", "those"):
                start, end = analysis.tokens[i]
                demonstratives.append(row(start, end, masked=start in s9_starts))
        for edit in BUILDERS["s1"](question).context_edits:
            substitutions.append(row(edit.start, edit.end, replacement=edit.text))
    out["s9_masks"] = dict(sorted(masked.items(), key=lambda kv: -kv[1])) | {"total": sum(masked.values())}
    out["s1_substitutions"] = len(substitutions)
    if dump:
        Path(dump).mkdir(parents=True, exist_ok=True)
        for name, rows in (("s1.jsonl", substitutions), ("s9.jsonl", demonstratives)):
            (Path(dump) / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--audit", action="store_true", help="print the audit figures (SQuAD dev) instead")
    parser.add_argument("--dump", metavar="DIR", help="with --audit: write s1's substitutions and every "
                        "demonstrative (masked by s9 or not) with its sentence to DIR/s1.jsonl, DIR/s9.jsonl")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"ExpMRC dev data not found at {DATA}; nothing to measure")
        return 1
    if args.audit:
        gold = json.loads((DATA / "expmrc-squad-dev.json").read_bytes())
        predictions = json.loads((DATA / "sample_submission" / "squad.json").read_bytes())
        print(json.dumps(audit(gold, predictions, args.dump), indent=1))
        return 0
    ours_total = peer_total = 0.0
    for subset, language in SUBSETS:
        gold = json.loads((DATA / f"expmrc-{subset}-dev.json").read_bytes())
        n_questions = sum(len(p["qas"]) for a in gold["data"] for p in a["paragraphs"])
        skills.build_all(gold, language=language)  # untimed: loads word lists and lexicons once

        per_skill: dict[str, float] = {}

        def one_by_one(gold=gold, language=language, per_skill=per_skill):
            out = {}
            for skill in skills.SKILLS:
                started = time.process_time()
                out[skill] = skills.build_variant(gold, skill, language=language)
                per_skill[skill] = min(per_skill.get(skill, float("inf")), time.process_time() - started)
            return out

        ours_s = peer_s = float("inf")
        for _ in range(args.repeat):  # alternated, so that a busy moment hits both sides
            seconds, results = best_of(1, lambda g=gold, lang=language: skills.build_all(g, language=lang))
            ours_s = min(ours_s, seconds)
            seconds, separate = best_of(1, one_by_one)
            peer_s = min(peer_s, seconds)
            assert separate == results, f"{subset}: build_all and build_variant differ"
        ours_total += ours_s
        peer_total += peer_s

        print(f"== {subset} ({language}, {n_questions} questions), best of {args.repeat}, same variants on both sides")
        print(f"(a) ours: build_all, all {len(skills.SKILLS)} skills in one pass : {ours_s:7.3f} s")
        print(f"(p) peer: build_variant, one call per skill : {peer_s:7.3f} s   "
              f"peer / ours = {peer_s / ours_s:.2f}x")
        print("    peer per skill (best call):")
        for skill, seconds in per_skill.items():
            result = results[skill]
            status = result["status"] if result["status"] != "ok" else (
                f"{result['n_items']} kept, {result['n_changed']} perturbed, {result['n_dropped']} dropped")
            print(f"    {skill:4s} {seconds:7.3f} s  {status}")
    print(f"ratio: {peer_total / ours_total:.2f}")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
