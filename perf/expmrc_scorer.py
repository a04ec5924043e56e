"""ExpMRC scorer throughput: our scorer warm and cold vs a plain uncached implementation.

Run: .venv/bin/python perf/expmrc_scorer.py

Scores the official SQuAD and RACE+ sample submissions and prints questions/second for
  (a) scoring.metrics.expmrc with its token cache filled by a previous run (a long-lived worker),
  (b) scoring.metrics.expmrc with the cache cleared before every run,
  (c) a straightforward, uncached implementation of the official algorithm (below),
checks that all three give the same figures, and ends with the ratios against (c).
"""
from __future__ import annotations

import json
import string
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "expmrc"
SUBSETS = ("squad", "race")
sys.path.insert(0, str(REPO))

# ----------------------------------------------------------------------- reference (c)
# The official algorithm as plainly as it can be written (docs/metrics.md#expmrc):
# character loop, list-based normalization, Counter intersection, no caching.
import nltk  # noqa: E402

from scoring.metrics import expmrc  # noqa: E402  (after the path set-up above)

SPECIAL = ["-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=", "，", "。", "：", "？", "！", "“", "”",
           "；", "’", "《", "》", "……", "·", "、", "「", "」", "（", "）", "－", "～", "『", "』"]
PUNCTUATION = set(string.punctuation + "".join(SPECIAL))


def reference_segmentation(text):
    out, buffer = [], ""
    for char in str(text).strip():
        if "\u4e00" <= char <= "\u9fa5" or char in SPECIAL:
            if buffer:
                out += nltk.word_tokenize(buffer)
                buffer = ""
            out.append(char)
        else:
            buffer += char
    if buffer:
        out += nltk.word_tokenize(buffer)
    return out


def reference_normalize(tokens):
    return [t.lower() for t in tokens if t not in ("a", "an", "the") and t not in PUNCTUATION]


def reference_f1(references, prediction):
    predicted = reference_normalize(reference_segmentation(prediction))
    scores = []
    for reference in references:
        gold = reference_normalize(reference_segmentation(reference))
        if not gold or not predicted:
            scores.append(1 if gold == predicted else 0)
            continue
        common = sum((Counter(gold) & Counter(predicted)).values())
        if common == 0:
            scores.append(0)
            continue
        precision, recall = common / len(predicted), common / len(gold)
        scores.append(2 * precision * recall / (precision + recall))
    return max(scores)


def reference_score(gold, predictions):
    total = skip = 0
    answer_sum = evidence_sum = overall_sum = 0
    version = gold["version"]
    if "squad" in version or "cmrc2018" in version:
        questions = [(qa["id"], [a["text"] for a in qa["answers"]], qa["evidences"], None)
                     for article in gold["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    else:
        questions = [(f"{passage['id']}-{j}", None, passage["evidences"][j], passage["answers"][j])
                     for passage in gold["data"] for j in range(len(passage["answers"]))]
    for key, answers, evidences, letter in questions:
        total += 1
        if key not in predictions:
            skip += 1
            continue
        prediction = predictions[key]
        answer = reference_f1(answers, prediction["answer"]) if letter is None else int(prediction["answer"] == letter)
        evidence = reference_f1(evidences, prediction["evidence"])
        answer_sum += answer
        evidence_sum += evidence
        overall_sum += answer * evidence
    return {"ALL_F1": "%.3f" % (100 * overall_sum / total), "ANS_F1": "%.3f" % (100 * answer_sum / total),
            "EVI_F1": "%.3f" % (100 * evidence_sum / total), "TOTAL": total, "SKIP": skip}


# ----------------------------------------------------------------------- measurement

def questions_per_second(score, inputs, repeats, before_each=lambda: None):
    """Best of ``repeats`` runs over all inputs (least disturbed by the rest of the machine)."""
    best = float("inf")
    for _ in range(repeats):
        before_each()
        start = time.perf_counter()
        for gold, predictions in inputs:
            score(gold, predictions)
        best = min(best, time.perf_counter() - start)
    return sum(len(predictions) for _, predictions in inputs) / best


def ours(gold, predictions):
    return {k: v for k, v in expmrc.score_predictions(gold, predictions).official_dict("").items()
            if k in ("ALL_F1", "ANS_F1", "EVI_F1", "TOTAL", "SKIP")}


def main() -> int:
    if not DATA.is_dir():
        print(f"skipped: ExpMRC dev data not found at {DATA}")
        return 0
    inputs = []
    for subset in SUBSETS:
        gold = json.loads((DATA / f"expmrc-{subset}-dev.json").read_bytes())
        raw = (DATA / "sample_submission" / f"{subset}.json").read_bytes()
        inputs.append((gold, expmrc.parse_predictions(raw, expmrc.key_spec(gold))))
    for gold, predictions in inputs:  # same figures from all three before timing anything
        assert ours(gold, predictions) == reference_score(gold, predictions), gold["version"]
    n_questions = sum(len(p) for _, p in inputs)
    print(f"ExpMRC scorer, {' + '.join(SUBSETS)} sample submissions: {n_questions} questions per run, best of N runs")

    warm = questions_per_second(expmrc.score_predictions, inputs, repeats=20)
    cold = questions_per_second(expmrc.score_predictions, inputs, repeats=3, before_each=expmrc.clear_token_cache)
    reference = questions_per_second(reference_score, inputs, repeats=3)
    print(f"(a) scoring.metrics.expmrc warm cache : {warm:10,.0f} questions/s")
    print(f"(b) scoring.metrics.expmrc cold cache : {cold:10,.0f} questions/s")
    print(f"(c) plain uncached reference  : {reference:10,.0f} questions/s")
    print(f"ratio warm / reference: {warm / reference:.1f}x")
    print(f"ratio cold / reference: {cold / reference:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
