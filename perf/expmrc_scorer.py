"""ExpMRC scorer speed against the official algorithm, on submissions the worker has not seen.

Run: .venv/bin/python perf/expmrc_scorer.py [--submissions 4] [--repeats 3] [--seed 0]

Peer: the official ExpMRC algorithm (eval_expmrc.py of Cui et al., 2022, as docs/metrics.md#expmrc
describes it), restated plainly and uncached in
perf/expmrc_reference.py; it gives the same figures (checked on every submission timed).

Workload: SQuAD and RACE+ dev gold. From each official sample submission the script derives
``--submissions`` x ``--repeats`` new submissions per subset (seeded): a span answer or evidence
of the sample that equals a gold string is kept (a correct system writes the gold span too, so
the new submissions are exactly right as often as the sample: 411/501 SQuAD answers, 314/501
SQuAD and 135/561 RACE+ evidences); every other answer and evidence is moved to a different
window of passage words around the sample's (a few words shorter or longer on either side), and
a quarter of the RACE+ letters are redrawn. No other prediction string is reused between
submissions where the passage allows it (the shares are printed), so a warm worker's token
cache helps only with gold strings, never with a prediction it saw before.

Each of the ``--repeats`` repeats takes its own batch of new submissions, and every side scores
that same batch once; the figures are totals over all repeats, so both sides do exactly the
same work ((p): best of ``--repeats`` runs per side, alternated):
  (a) warm   scoring.metrics.expmrc in a long-lived worker: the token cache was filled by scoring
             the sample submission (untimed), then the batch is scored, each submission once;
  (b) cold   scoring.metrics.expmrc with the cache cleared before every submission (a fresh worker);
  (r) peer   perf/expmrc_reference.py's reference_score in the same process on the same batch;
  (p) whole process: ``python -m scoring expmrc GOLD PRED`` against ``python perf/expmrc_reference.py
             GOLD PRED`` (nltk and the standard library only, as the official script), one new
             submission per subset, same output line checked; imports dominate this figure.
Times are CPU seconds of the process (children: of the child), so other jobs on the machine
disturb them little. Each ratio is the peer's time over ours (above 1: ours is faster), on its own
line; the last line, ``ratio: X``, is the headline (r) / (a): a warm worker on new submissions
against the official algorithm in process. The cold ratio is (r) / (b).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "expmrc"
SUBSETS = ("squad", "race")
sys.path.insert(0, str(REPO))

from expmrc_reference import reference_score  # noqa: E402  (perf/ is sys.path[0] when run as a script)

from scoring.metrics import expmrc  # noqa: E402  (after the path set-up above)
from scoring.tokenization import VENDORED_NLTK_DATA  # noqa: E402

WORD = re.compile(r"\S+")
# Window shifts (words added or removed at the start, at the end), nearest first: a new system's
# answer or evidence is usually close to another system's, not random text.
SHIFTS = sorted(((a, b) for a in range(-4, 5) for b in range(-4, 5) if (a, b) != (0, 0)),
                key=lambda ab: (abs(ab[0]) + abs(ab[1]), ab))


# ----------------------------------------------------------------------- new submissions

def passages(gold: dict) -> dict[str, str]:
    """Question key -> the passage its answer and evidence come from."""
    if "squad" in gold["version"]:
        return {qa["id"]: paragraph["context"] for article in gold["data"]
                for paragraph in article["paragraphs"] for qa in paragraph["qas"]}
    return {f"{passage['id']}-{j}": passage["article"] for passage in gold["data"]
            for j in range(len(passage["answers"]))}


def gold_strings(gold: dict) -> set[str]:
    if "squad" in gold["version"]:
        return {text for article in gold["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]
                for text in [a["text"] for a in qa["answers"]] + qa["evidences"]}
    return {text for passage in gold["data"] for evidences in passage["evidences"] for text in evidences}


def windows(text: str, passage: str, rng: random.Random) -> list[str]:
    """Distinct nearby word windows of ``passage`` around ``text`` (or, when ``text`` is not a
    verbatim part of it, shortened versions of ``text``), never ``text`` itself, shuffled."""
    spans = [m.span() for m in WORD.finditer(passage)]
    start = passage.find(text) if text else -1
    if start < 0:
        spans, passage = [m.span() for m in WORD.finditer(text)], text
        first, last = 0, len(spans)
    else:
        end = start + len(text)
        inside = [i for i, (s, e) in enumerate(spans) if e > start and s < end]
        if not inside:
            return []
        first, last = inside[0], inside[-1] + 1
    out, seen = [], {text}
    for a, b in SHIFTS:
        s, e = max(0, first + a), min(len(spans), last + b)
        if e > s:
            candidate = passage[spans[s][0]:spans[e - 1][1]]
            if candidate not in seen:
                seen.add(candidate)
                out.append(candidate)
    near = out[:24]  # the nearest windows, in a seeded order per question
    rng.shuffle(near)
    return near + out[24:]


def new_submissions(gold: dict, sample: dict, count: int, seed: int) -> list[dict]:
    """``count`` submissions derived from ``sample``; submission t takes window t of each string."""
    context = passages(gold)
    multichoice = "squad" not in gold["version"]
    options = ({f"{p['id']}-{j}": len(p["options"][j]) for p in gold["data"] for j in range(len(p["answers"]))}
               if multichoice else {})
    right = gold_strings(gold)
    out: list[dict] = [{} for _ in range(count)]

    def variants(text: str, passage: str, rng: random.Random) -> list[str]:
        # A string equal to a gold string is what a correct system writes too: kept, so the new
        # submissions are exactly right as often as the sample; every other string is new.
        return [text] if text in right else windows(text, passage, rng) or [text]

    for key, entry in sample.items():
        rng = random.Random(f"{seed}\t{key}")
        evidences = variants(entry["evidence"], context[key], rng)
        answers = [] if multichoice else variants(entry["answer"], context[key], rng)
        for t in range(count):
            if multichoice:
                answer = entry["answer"] if rng.random() < 0.75 else "ABCD"[rng.randrange(options[key])]
            else:
                answer = answers[t % len(answers)]
            out[t][key] = {"answer": answer, "evidence": evidences[t % len(evidences)]}
    return out


def novelty(golds: list[dict], samples: list[dict], batches: list[list[tuple[dict, dict]]]) -> tuple[int, float, float]:
    """(prediction strings scored, share never seen before in the run, share equal to a gold string)."""
    seen = {text for sample in samples for entry in sample.values() for text in entry.values()}
    gold = set().union(*(gold_strings(g) for g in golds))
    total = new = golden = 0
    for batch in batches:
        for gold_dict, predictions in batch:
            span = "squad" in gold_dict["version"]
            for entry in predictions.values():
                for name in ("answer", "evidence") if span else ("evidence",):
                    text = entry[name]
                    total += 1
                    golden += text in gold
                    new += text not in seen and text not in gold
                    seen.add(text)
    return total, new / total, golden / total


# ----------------------------------------------------------------------- measurement

def ours(gold, predictions):
    return {k: v for k, v in expmrc.score_predictions(gold, predictions).official_dict("").items()
            if k in ("ALL_F1", "ANS_F1", "EVI_F1", "TOTAL", "SKIP")}


# CPU seconds, not wall-clock: the machine is shared (two cores, other jobs), and a process's own
# CPU time is what the other jobs disturb least. Every step here is single-threaded.
CLOCK = time.process_time


def timed(function, *args) -> float:
    started = CLOCK()
    function(*args)
    return CLOCK() - started


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_seconds(command: list[str], env: dict) -> tuple[float, str]:
    started = child_cpu()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return child_cpu() - started, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=4, help="new submissions per subset per repeat")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of every side (best kept)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"skipped: ExpMRC dev data not found at {DATA}")
        print("ratio: n/a")
        return 0
    golds, samples, parsed_samples, generated = [], [], [], []
    for subset in SUBSETS:
        gold = json.loads((DATA / f"expmrc-{subset}-dev.json").read_bytes())
        sample = json.loads((DATA / "sample_submission" / f"{subset}.json").read_bytes())
        golds.append(gold)
        samples.append(sample)
        parsed_samples.append(expmrc.parse_predictions(json.dumps(sample).encode(), expmrc.key_spec(gold)))
        generated.append(new_submissions(gold, sample, args.submissions * args.repeats, args.seed))
    # Batch r: submissions r*N .. r*N+N-1 of every subset. Each side gets its usual input: the
    # parsed upload for ours, json.loads for the peer (equal dicts; parsing is not timed).
    batches, raw_batches = [], []
    for r in range(args.repeats):
        part = slice(r * args.submissions, (r + 1) * args.submissions)
        raw = [(gold, predictions) for gold, subs in zip(golds, generated, strict=True) for predictions in subs[part]]
        raw_batches.append(raw)
        batches.append([(gold, expmrc.parse_predictions(json.dumps(p).encode(), expmrc.key_spec(gold)))
                        for gold, p in raw])
    n_strings, new_share, gold_share = novelty(golds, samples, raw_batches)
    per_batch = sum(len(p) for _, p in batches[0])
    scored = per_batch * args.repeats

    # Totals over all batches: each side scores exactly the same submissions, each once per repeat.
    warm = cold = peer = 0.0
    for batch, raw in zip(batches, raw_batches, strict=True):
        # (a) the worker has scored earlier submissions on this gold: fill the cache with the sample's.
        expmrc.clear_token_cache()
        for gold, sample in zip(golds, parsed_samples, strict=True):
            expmrc.score_predictions(gold, sample)
        warm += timed(lambda b=batch: [expmrc.score_predictions(g, p) for g, p in b])
        # (b) a fresh worker per submission.
        for gold, predictions in batch:
            expmrc.clear_token_cache()
            cold += timed(expmrc.score_predictions, gold, predictions)
        # (r) the peer, same submissions; its figures are checked against ours (untimed).
        started = CLOCK()
        expected = [reference_score(g, p) for g, p in raw]
        peer += CLOCK() - started
        for (gold, predictions), figures in zip(batch, expected, strict=True):
            assert ours(gold, predictions) == figures, (gold["version"], figures)

    print(f"ExpMRC scorer, {' + '.join(SUBSETS)} dev: {args.submissions} new submissions per subset per repeat "
          f"({per_batch:,} questions), a new batch in each of {args.repeats} repeats, every side scoring every "
          f"batch; same figures as the peer on all {len(batches) * len(batches[0])} submissions")
    print(f"    prediction strings: {n_strings:,} scored, {100 * new_share:.1f}% new to the run, "
          f"{100 * gold_share:.1f}% equal to a gold string")
    print(f"(a) ours, warm worker, new submissions : {scored / warm:9,.0f} questions/s")
    print(f"(b) ours, cold cache per submission    : {scored / cold:9,.0f} questions/s")
    print(f"(r) official algorithm, in process     : {scored / peer:9,.0f} questions/s")

    env = {**os.environ, "NLTK_DATA": VENDORED_NLTK_DATA, "OMP_WAIT_POLICY": "PASSIVE"}
    ours_total = peer_total = 0.0
    with tempfile.TemporaryDirectory() as folder:
        for subset, subs in zip(SUBSETS, generated, strict=True):
            path = Path(folder) / f"{subset}.json"
            path.write_text(json.dumps(subs[0]), encoding="utf-8")
            gold_path = str(DATA / f"expmrc-{subset}-dev.json")
            ours_s = peer_s = float("inf")
            for _ in range(args.repeats):  # alternated, so that a busy moment hits both sides
                seconds, ours_out = process_seconds(
                    [sys.executable, "-m", "scoring", "expmrc", gold_path, str(path)], {**env, "PYTHONPATH": str(REPO)})
                ours_s = min(ours_s, seconds)
                seconds, peer_out = process_seconds(
                    [sys.executable, str(Path(__file__).parent / "expmrc_reference.py"), gold_path, str(path)], env)
                peer_s = min(peer_s, seconds)
                assert json.loads(ours_out) == json.loads(peer_out), (ours_out, peer_out)
            ours_total += ours_s
            peer_total += peer_s
            print(f"(p) whole process, {subset:5s}: ours {ours_s:.2f} s, peer {peer_s:.2f} s CPU "
                  f"(same output line), peer / ours = {peer_s / ours_s:.2f}x")
    print(f"cold / peer in process: {peer / cold:.2f}x")
    print(f"whole process, peer / ours: {peer_total / ours_total:.2f}x")
    print(f"ratio: {peer / warm:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
