"""ICQ cue discovery speed against a plain pandas/numpy implementation of the same counts.

Run: .venv/bin/python perf/icq.py [--instances 100000] [--seed 0] [--repeats 5]

Peer: the ICQ authors' method as they describe it (Huang & Zhu, Findings of EMNLP 2023;
docs/diagnostics.md#icq-cue-profiling), written plainly with pandas and numpy
(``peer_cues`` below): count feature x label occurrences in the reference split R and the test
split S (classification: per instance; multi-choice: a feature belongs to a question when it
fires in some but not all of its options, and its labels are counted over those option rows,
right/wrong), keep the features with >= 11 occurrences in both, and rank them by cueness =
mse(p_f, prior) / exp(JSD(p_f, q_f)) exactly as docs/diagnostics.md#icq-cue-profiling and the
docstring of ``scoring.analysis.icq`` define it (label prior of R, natural log, top 20, ties by
n_reference then key). Both sides must give the same cue table: same top-20 keys in the same
order, same counts, cueness within 1e-9 (checked every run).

What is timed, both sides on the same extracted features, the same number of times
(``--repeats``, best kept), in CPU seconds (time.process_time: the machine is shared):
  counting  from the per-option feature sets of both splits to the ranked cue table:
            ``icq.discover_cues`` on prebuilt ``FeatureIndex`` objects (their cached counts
            dropped before each run) against ``peer_cues`` on the same feature sets. The
            ``ratio`` lines cover this step only.
  extraction (ours only; the peer has no extractor of its own: the authors' spaCy pipeline is
            not installable offline) ``icq.build_index`` on both splits, cold (per-text caches
            cleared) and warm; printed with its share of a whole cold discovery, which it
            dominates.

Workloads
1. Synthetic classification data, ``--instances`` instances in R and in S each: a seeded
   generator writes short premise/hypothesis sentences with three labels and plants one cue
   word ("suddenly", ~8% of hypotheses, "contradiction" 80% of the time); word features only,
   then every English feature type (sentiment, tense, NER, typo, ...). The planted cue must rank
   first.
2. C3 (if shared/data/expmrc is present): S = the C3 dev set, R = the C3 pseudo training data,
   both through ``icq.expmrc_multichoice_instances`` as the server builds them
   (benchmark/demo.py imports train-pseudo-c3.zip as the reference split, benchmark/cues.py
   discovers on it), zh features. Besides counting and extraction it times the whole
   ``icq.profile`` (cues + accuracy and distribution tests with the official sample
   submission) cold and warm, without a peer (the probes have no counterpart in the authors'
   method to re-run).
The last line, ``ratio: X``, is peer / ours for counting on workload 1 with every English
feature type (what the server runs: ``feature_types=None``).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
import zipfile
from itertools import chain
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "expmrc"
sys.path.insert(0, str(REPO))

from scoring.analysis import features, icq  # noqa: E402  (after the path set-up above)

CLOCK = time.process_time  # CPU seconds of this process: other jobs on the machine disturb them little

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


# ----------------------------------------------------------------------- the peer

def _split_counts(rows: list[list[frozenset[str]]], labels: list, kind: str) -> tuple[pd.DataFrame, pd.Series]:
    """Per feature: n (instances / questions carrying it) and one count column per label; and the
    label counts of the whole split (its prior). Plain pandas/numpy over one long table of
    (instance, option, feature) entries."""
    n_options = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    option_sets = list(chain.from_iterable(rows))
    per_option = np.fromiter((len(s) for s in option_sets), dtype=np.int64, count=len(option_sets))
    codes, keys = pd.factorize(np.fromiter(chain.from_iterable(option_sets), dtype=object,
                                           count=int(per_option.sum())))
    n_keys = len(keys)
    option_of_entry = np.repeat(np.arange(len(option_sets)), per_option)
    instance_of_option = np.repeat(np.arange(len(rows)), n_options)
    instance = instance_of_option[option_of_entry]
    if kind == icq.CLASSIFICATION:
        label_codes, names = pd.factorize(np.asarray([str(label) for label in labels], dtype=object))
        n_labels = len(names)
        by_label = np.bincount(codes * n_labels + label_codes[instance], minlength=n_keys * n_labels)
        n = np.bincount(codes, minlength=n_keys)  # a feature set holds a key once per instance
        prior = pd.Series(np.bincount(label_codes, minlength=n_labels), index=list(names))
    else:
        names = [icq.RIGHT, icq.WRONG]
        n_labels = 2
        gold = np.asarray(labels, dtype=np.int64)
        # How many options of its question carry each (question, feature): attached when 0 < c < k.
        pair = instance * n_keys + codes
        unique, inverse, count = np.unique(pair, return_inverse=True, return_counts=True)
        attached = count[inverse] < n_options[instance]
        option_index = np.arange(len(option_sets)) - np.repeat(np.cumsum(n_options) - n_options, n_options)
        wrong = (option_index[option_of_entry] != gold[instance]).astype(np.int64)
        by_label = np.bincount(codes[attached] * 2 + wrong[attached], minlength=n_keys * 2)
        n = np.bincount((unique % n_keys)[count < n_options[unique // n_keys]], minlength=n_keys)
        prior = pd.Series([len(rows), int(n_options.sum()) - len(rows)], index=names)
    table = pd.DataFrame(by_label.reshape(n_keys, n_labels), index=pd.Index(keys, name="key"), columns=list(names))
    table["n"] = n
    return table, prior


def peer_cues(reference: tuple[list, list], test: tuple[list, list], *, kind: str, top_k: int = icq.TOP_K,
              min_count: int = icq.MIN_COUNT) -> pd.DataFrame:
    """The ranked cue table from (feature sets per option, label per instance) of R and S."""
    ref, prior_counts = _split_counts(*reference, kind)
    tst, test_prior = _split_counts(*test, kind)
    labels = sorted(set(prior_counts.index) | set(test_prior.index))
    ref = ref[ref["n"] >= min_count].reindex(columns=labels + ["n"], fill_value=0)
    tst = tst[tst["n"] >= min_count].reindex(columns=labels + ["n"], fill_value=0)
    both = pd.merge(ref, tst, how="inner", left_index=True, right_index=True, suffixes=("_r", "_s"))
    r = both[[f"{label}_r" for label in labels]].to_numpy(dtype=float)
    s = both[[f"{label}_s" for label in labels]].to_numpy(dtype=float)
    p = r / r.sum(axis=1, keepdims=True)
    q = s / s.sum(axis=1, keepdims=True)
    prior = prior_counts.reindex(labels, fill_value=0).to_numpy(dtype=float)
    prior = prior / prior.sum()
    mse = ((p - prior) ** 2).mean(axis=1)
    m = (p + q) / 2
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 log 0 = 0
        kl_p = np.where(p > 0, p * np.log(p / m), 0.0).sum(axis=1)
        kl_q = np.where(q > 0, q * np.log(q / m), 0.0).sum(axis=1)
    jsd = np.maximum(0.5 * kl_p + 0.5 * kl_q, 0.0)
    out = pd.DataFrame({"key": both.index, "cueness": mse / np.exp(jsd), "mse": mse, "jsd": jsd,
                        "n_reference": both["n_r"].to_numpy(), "n_test": both["n_s"].to_numpy()})
    for i, label in enumerate(labels):
        out[f"R_{label}"] = r[:, i].astype(np.int64)
        out[f"S_{label}"] = s[:, i].astype(np.int64)
    out = out.sort_values(["cueness", "n_reference", "key"], ascending=[False, False, True], kind="mergesort")
    return out.head(top_k).reset_index(drop=True)


def same_table(ours: list[dict], peer: pd.DataFrame) -> None:
    """Same keys in the same order, same counts, cueness/mse/jsd within 1e-9."""
    assert len(ours) == len(peer), (len(ours), len(peer))
    for cue, row in zip(ours, peer.itertuples(index=False), strict=True):
        key = features.make_key(cue["feature"], cue["value"])
        assert key == row.key, (key, row.key)
        assert (cue["n_reference"], cue["n_test"]) == (row.n_reference, row.n_test), key
        for label, count in cue["reference_counts"].items():
            assert count == getattr(row, f"R_{label}"), (key, label)
        for label, count in cue["test_counts"].items():
            assert count == getattr(row, f"S_{label}"), (key, label)
        for name in ("cueness", "mse", "jsd"):
            assert math.isclose(cue[name], getattr(row, name), rel_tol=0, abs_tol=1e-9), (key, name)


# ----------------------------------------------------------------------- measurement

def seconds(function) -> tuple[float, object]:
    started = CLOCK()
    result = function()
    return CLOCK() - started, result


def compare_counting(ref_index: icq.FeatureIndex, test_index: icq.FeatureIndex, *, kind: str, language: str,
                     feature_types, repeats: int) -> tuple[float, float, list[dict]]:
    """Best-of-``repeats`` CPU seconds of (ours, peer), alternated, on the same feature sets."""
    inputs = [(index.rows, [instance.label for instance in index.instances]) for index in (ref_index, test_index)]
    ours_best = peer_best = float("inf")
    cues: list[dict] = []
    for _ in range(repeats):
        for index in (ref_index, test_index):
            index._counts = index._members = index._labels = None  # drop the counts a previous run cached: count again
        elapsed, cues = seconds(lambda: icq.discover_cues(ref_index, test_index, kind=kind, language=language,
                                                         feature_types=feature_types))
        ours_best = min(ours_best, elapsed)
        elapsed, table = seconds(lambda: peer_cues(*inputs, kind=kind))
        peer_best = min(peer_best, elapsed)
        same_table(cues, table)
    return ours_best, peer_best, cues


def extraction(reference, test, *, kind: str, language: str, feature_types) -> tuple[float, float, tuple]:
    """(cold, warm) CPU seconds of extracting both splits' features, and the two indexes."""
    icq.clear_caches()
    cold, indexes = seconds(lambda: tuple(icq.build_index(split, kind=kind, language=language,
                                                          feature_types=feature_types) for split in (reference, test)))
    warm, _ = seconds(lambda: tuple(icq.build_index(split, kind=kind, language=language,
                                                    feature_types=feature_types) for split in (reference, test)))
    return cold, warm, indexes


def report(title: str, n_instances: int, cold: float, warm: float, ours_s: float, peer_s: float) -> None:
    print(f"{title}")
    print(f"  extraction (ours): {cold:.2f} s cold, {warm:.2f} s warm = {100 * cold / (cold + ours_s):.0f}% of a "
          f"cold discovery ({n_instances / (cold + ours_s):,.0f} instances/s end to end)")
    print(f"  counting + cueness: ours {1000 * ours_s:.1f} ms, peer (pandas/numpy) {1000 * peer_s:.1f} ms, "
          f"same top-{icq.TOP_K} table; peer / ours = {peer_s / ours_s:.2f}x")


def bench_synthetic(n: int, seed: int, feature_types, repeats: int) -> float:
    reference, test = synthetic(n, seed, "r"), synthetic(n, seed + 1, "t")
    kind = icq.CLASSIFICATION
    cold, warm, (ref_index, test_index) = extraction(reference, test, kind=kind, language="en",
                                                     feature_types=feature_types)
    ours_s, peer_s, cues = compare_counting(ref_index, test_index, kind=kind, language="en",
                                            feature_types=feature_types, repeats=repeats)
    label = "word" if feature_types else "all English feature types"
    report(f"synthetic, {label}: {n:,} reference + {n:,} test instances", 2 * n, cold, warm, ours_s, peer_s)
    top = cues[0]
    print(f"  top cue: {top['feature']}={top['value']!r} cueness {top['cueness']:.4f}; planted cue ranks first: "
          f"{top['feature'] == 'word' and top['value'] == CUE}")
    return peer_s / ours_s


def bench_c3(repeats: int) -> None:
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

    load, _ = seconds(chinese._tokenizer)  # the jieba dictionary, loaded once per process
    kind = icq.MULTICHOICE
    icq.clear_caches()
    profile_cold, result = seconds(lambda: icq.profile(reference, test, predictions, kind=kind, language="zh"))
    profile_warm, _ = seconds(lambda: icq.profile(reference, test, predictions, kind=kind, language="zh"))
    cold, warm, (ref_index, test_index) = extraction(reference, test, kind=kind, language="zh", feature_types=None)
    ours_s, peer_s, cues = compare_counting(ref_index, test_index, kind=kind, language="zh", feature_types=None,
                                            repeats=repeats)
    report(f"C3, zh features: dev {len(test):,} questions vs pseudo-train {len(reference):,} questions",
           len(test) + len(reference), cold, warm, ours_s, peer_s)
    print(f"  whole profile (cues + accuracy and distribution tests, ours, no peer): {profile_cold:.2f} s cold, "
          f"{profile_warm:.2f} s warm (jieba dictionary load {load:.2f} s not included); "
          f"{len(result['accuracy_test'])} accuracy rows, {len(result['distribution_test'])} distribution rows")
    top = cues[0]
    print(f"  top cue: {top['feature']}={top['value']} cueness {top['cueness']:.4f} "
          f"R {top['reference_counts']} S {top['test_counts']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="runs of each side's counting (best kept)")
    args = parser.parse_args()
    bench_synthetic(args.instances, args.seed, ["word"], args.repeats)
    headline = bench_synthetic(args.instances, args.seed, None, args.repeats)
    bench_c3(args.repeats)
    print(f"ratio: {headline:.2f}")


if __name__ == "__main__":
    main()
