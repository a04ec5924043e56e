"""ICQ cue discovery speed.

Run: .venv/bin/python perf/icq.py [--instances 100000] [--seed 0]

1. Word-cue discovery (``feature_types=["word"]``) on synthetic classification data: a seeded
   generator writes short premise/hypothesis sentences with three labels and plants one cue
   word ("suddenly") that appears in ~8% of hypotheses and marks "contradiction" 80% of the
   time; the reference and the test split hold ``--instances`` instances each. Caches are
   cleared first, so the time includes feature extraction (cold). Prints the time,
   instances/second and whether the planted cue ranks first.
2. The same discovery with every English feature type (sentiment, tense, NER, typo, ...).
3. If ``shared/data/expmrc`` is present: the full ``profile()`` (zh features, cues + accuracy
   and distribution tests with the official sample submission) on the C3 dev set with the C3
   pseudo training data as the reference split.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "expmrc"
sys.path.insert(0, str(REPO))

from scoring.analysis import icq  # noqa: E402  (after the path set-up above)

LABELS = ("entailment", "neutral", "contradiction")
CUE = "suddenly"
SUBJECTS = ("man", "woman", "boy", "girl", "teacher", "farmer", "doctor", "student", "driver", "singer",
            "nurse", "baker", "pilot", "child", "waiter", "painter", "dog", "cat", "horse", "family")
ADJECTIVES = ("old", "young", "tall", "small", "tired", "busy", "quiet", "friendly", "new", "local",
              "happy", "sad", "careful", "famous", "strong")
VERBS = ("eats", "reads", "plays", "watches", "holds", "carries", "buys", "paints", "cleans", "opens",
         "finds", "throws", "builds", "drives", "sells", "cooks", "draws", "visits", "fixes", "moves")
OBJECTS = ("an apple", "a book", "the guitar", "a movie", "a box", "the bag", "some bread", "a wall",
           "the kitchen", "the door", "a key", "a ball", "a house", "a car", "the fish", "a cake",
           "a picture", "the park", "a bike", "the window")
PLACES = ("in the park", "at home", "near the river", "on the street", "in a small town", "at school",
          "in the kitchen", "by the sea", "in the garden", "at the market")
ADVERBS = ("slowly", "quickly", "carefully", "quietly", "happily", "again", "today", "outside")


def synthetic(n: int, seed: int, prefix: str) -> list[icq.Instance]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        subject = f"{rng.choice(('The', 'A'))} {rng.choice(ADJECTIVES)} {rng.choice(SUBJECTS)}"
        premise = f"{subject} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(PLACES)}."
        words = [subject, rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(ADVERBS)]
        if rng.random() < 0.08:
            words.insert(rng.randrange(1, len(words) + 1), CUE)
            label = "contradiction" if rng.random() < 0.8 else rng.choice(LABELS[:2])
        else:
            label = rng.choice(LABELS)
        out.append(icq.Instance(f"{prefix}{i}", premise, [" ".join(words) + "."], label))
    return out


def bench_synthetic(n: int, seed: int, feature_types) -> None:
    reference, test = synthetic(n, seed, "r"), synthetic(n, seed + 1, "t")
    icq.clear_caches()
    start = time.perf_counter()
    cues = icq.discover_cues(reference, test, kind=icq.CLASSIFICATION, feature_types=feature_types)
    elapsed = time.perf_counter() - start
    label = "word" if feature_types else "all English feature types"
    print(f"synthetic cue discovery ({label}): {n:,} reference + {n:,} test instances in {elapsed:.2f} s "
          f"({2 * n / elapsed:,.0f} instances/second)")
    top = cues[0]
    print(f"  top cue: {top['feature']}={top['value']!r} cueness {top['cueness']:.4f} "
          f"(n_reference {top['n_reference']}, n_test {top['n_test']}); "
          f"planted cue ranks first: {top['feature'] == 'word' and top['value'] == CUE}")
    for cue in cues[1:4]:
        print(f"  next: {cue['feature']}={cue['value']!r} cueness {cue['cueness']:.6f}")


def bench_c3() -> None:
    if not DATA.is_dir():
        print(f"C3: skipped, {DATA} not found")
        return
    dev = json.loads((DATA / "expmrc-c3-dev.json").read_text(encoding="utf-8"))
    with zipfile.ZipFile(DATA / "pseudo_training_data" / "train-pseudo-c3.zip") as archive:
        train = json.loads(archive.read("train-pseudo-c3.json"))
    submission = json.loads((DATA / "sample_submission" / "c3.json").read_text(encoding="utf-8"))
    predictions = {key: value["answer"] for key, value in submission.items()}
    test, reference = icq.expmrc_multichoice_instances(dev), icq.expmrc_multichoice_instances(train)
    from scoring.analysis.features import chinese

    start = time.perf_counter()
    chinese._tokenizer()
    load = time.perf_counter() - start
    icq.clear_caches()
    start = time.perf_counter()
    result = icq.profile(reference, test, predictions, kind=icq.MULTICHOICE, language="zh")
    cold = time.perf_counter() - start
    start = time.perf_counter()
    icq.profile(reference, test, predictions, kind=icq.MULTICHOICE, language="zh")
    warm = time.perf_counter() - start
    print(f"C3 profile (dev {len(test)} questions vs pseudo-train {len(reference)} questions, zh features): "
          f"{cold:.2f} s cold, {warm:.2f} s with the per-text caches filled (jieba dictionary load "
          f"{load:.2f} s not included)")
    for cue in result["cues"][:5]:
        print(f"  {cue['feature']}={cue['value']}: cueness {cue['cueness']:.4f} mse {cue['mse']:.4f} "
              f"jsd {cue['jsd']:.4f} n_reference {cue['n_reference']} n_test {cue['n_test']} "
              f"R {cue['reference_counts']} S {cue['test_counts']}")
    print(f"  accuracy test rows: {len(result['accuracy_test'])}, distribution test rows: "
          f"{len(result['distribution_test'])} "
          f"(following the cue: {sum(row['follows_cue'] for row in result['distribution_test'])})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bench_synthetic(args.instances, args.seed, ["word"])
    bench_synthetic(args.instances, args.seed, None)
    bench_c3()


if __name__ == "__main__":
    main()
