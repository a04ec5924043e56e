"""The peer of perf/expmrc_scorer.py: the official ExpMRC algorithm written as plainly as it can be.

Run as a script it is a stand-in for the official ``eval_expmrc.py`` process:

    NLTK_DATA=scoring/resources/nltk_data .venv/bin/python perf/expmrc_reference.py GOLD.json PRED.json

and prints the official one-line JSON. It imports nltk and the standard library only (no
``scoring``), as the official script does, so the whole-process timing compares like with like.
The algorithm follows docs/metrics.md#expmrc (tokenization, normalization, per-question scores):
character loop, list-based normalization, Counter intersection, no caching. It is our own
restatement of that description, not the official code.
"""
from __future__ import annotations

import json
import string
import sys
from collections import Counter
from pathlib import Path

import nltk

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
        if letter is None:
            answer = reference_f1(answers, str(prediction["answer"]))
        else:
            answer = int(prediction["answer"] == letter)
        evidence = reference_f1(evidences, prediction["evidence"])
        answer_sum += answer
        evidence_sum += evidence
        overall_sum += answer * evidence
    return {"ALL_F1": "%.3f" % (100 * overall_sum / total), "ANS_F1": "%.3f" % (100 * answer_sum / total),
            "EVI_F1": "%.3f" % (100 * evidence_sum / total), "TOTAL": total, "SKIP": skip}


def main(argv: list[str]) -> int:
    gold_path, predictions_path = argv
    gold = json.loads(Path(gold_path).read_bytes())
    predictions = json.loads(Path(predictions_path).read_bytes())
    result = reference_score(gold, predictions)
    print(json.dumps({**result, "VERSION": gold["version"], "FILE": predictions_path}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
