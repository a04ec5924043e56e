"""What the code-submission sandbox costs: start-up per submission and overhead per sample.

Run: .venv/bin/python perf/sandbox_overhead.py [--samples 20] [--method Gradient_sum]
     [--runs 3] [--mode bwrap|none] [--model DIR --kind classification|qa]

Model: the trained demo classifier var/models/answerability-minilm when it exists, else a tiny
random BERT classifier built on the fly (the output says which). Samples: the first N SQuAD dev
questions (../shared/data/expmrc) with short contexts (<= 160 tokens), sentences from the
vendored Punkt model; a built-in sentence set when that file is missing.

The same interpreter (a built-in baseline, default Gradient_sum, wrapped in the tiny module that
``scoring.sandbox.baseline_code`` generates) runs on the same samples
  - in process: load_hosted_model in this process (torch and transformers already imported, as
    in a warm worker), then scoring.models.interpreters.interpret per sample;
  - sandboxed: scoring.sandbox.run_interpreter (a fresh bwrap child that imports torch and
    transformers, loads the model once, then answers one JSON line per sample), --runs times.
Start-up overhead per submission = sandboxed time to first reply (from the run_interpreter call
to the first progress callback: job directory, bwrap, Python, imports, model load, sample 1)
minus the in-process model-load time of a warm worker (a second load in this process; the
first one, which also imports the model classes, is printed too); the line after it also
subtracts the in-process time of that first sample. Per-sample overhead compares samples 2..N (the first
one carries one-off warm-up work on both sides): parent wall clock per sample in the sandbox
(pipe + JSON + validation included) against the in-process call.
The last line is `ratio: <sandboxed per-sample / in-process per-sample>`.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402,F401  (imported up front: a warm worker has it)

REPO = Path(__file__).resolve().parents[1]
SQUAD_DEV = REPO.parent / "shared" / "data" / "expmrc" / "expmrc-squad-dev.json"
DEMO_MODEL = REPO / "var" / "models" / "answerability-minilm"
MAX_CONTEXT_TOKENS = 160
sys.path.insert(0, str(REPO))

import scoring.tokenization  # noqa: E402,F401  (vendored Punkt model on nltk.data.path)
from scoring import sandbox  # noqa: E402
from scoring.models import interpreters  # noqa: E402
from scoring.models.hosted_model import load_hosted_model  # noqa: E402
from scoring.sandbox.command import bwrap_command, host_env  # noqa: E402
from tests.tiny_models import build_tiny_classifier  # noqa: E402

FALLBACK = [
    ("Where did the cat sit?", "The cat sat on the mat in Paris. It was red. Then it rained."),
    ("Who built the house?", "The king built the house in London. The queen lived there. "
                             "Later the city grew around it."),
    ("When was the film made?", "The film was made in the early years of the century. "
                                "It won a national award. The music was German."),
]


def load_samples(model, count: int) -> list[dict]:
    import nltk

    pairs = []
    if SQUAD_DEV.is_file():
        data = json.loads(SQUAD_DEV.read_text(encoding="utf-8"))
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                context = paragraph["context"]
                for qa in paragraph["qas"][:2]:
                    if model.n_tokens(qa["question"], context) <= MAX_CONTEXT_TOKENS:
                        pairs.append((qa["question"], context))
                if len(pairs) >= count:
                    break
            if len(pairs) >= count:
                break
    while len(pairs) < count:
        pairs.append(FALLBACK[len(pairs) % len(FALLBACK)])
    samples = []
    for index, (question, context) in enumerate(pairs[:count]):
        sentences = nltk.sent_tokenize(context)
        samples.append({"id": f"s{index:02d}", "question": question, "context": context,
                        "sentences": sentences, "n_sentences": len(sentences)})
    return samples


def bare_start_seconds(repeat: int = 5) -> tuple[float, float]:
    """Median wall time of `python -c pass` started directly and through the sandbox."""
    import subprocess

    plain = [sys.executable, "-c", "pass"]
    boxed = bwrap_command([], sandbox.SandboxLimits(), plain)
    results = []
    for command in (plain, boxed):
        times = []
        for _ in range(repeat):
            began = time.perf_counter()
            subprocess.run(command, check=True, env=host_env())
            times.append(time.perf_counter() - began)
        results.append(statistics.median(times))
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--method", default="Gradient_sum")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", default="bwrap", choices=sandbox.MODES)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--kind", default="classification", choices=["classification", "qa"])
    args = parser.parse_args()

    scratch = tempfile.TemporaryDirectory()
    if args.model is not None:
        path, label = args.model, f"{args.model} ({args.kind})"
    elif (DEMO_MODEL / "config.json").is_file():
        path = DEMO_MODEL
        label = "trained demo classifier var/models/answerability-minilm (MiniLM-L6)"
    else:
        path = build_tiny_classifier(Path(scratch.name) / "tiny")
        label = "tiny random BERT classifier (var/models/answerability-minilm not trained yet)"
    available, reason = sandbox.sandbox_available(args.mode)
    if not available:
        raise SystemExit(f"no sandbox: {reason}")
    print(f"model: {label}; method {args.method}; torch threads {torch.get_num_threads()}; "
          f"mode {args.mode}: {reason}")

    started = time.perf_counter()
    load_hosted_model(path, args.kind)  # the first load also imports the model classes
    cold_load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    model = load_hosted_model(path, args.kind)
    load_seconds = time.perf_counter() - started
    samples = load_samples(model, args.samples)
    tokens = [model.n_tokens(s["question"], s["context"]) for s in samples]
    print(f"samples: {len(samples)}, {statistics.mean(tokens):.0f} tokens and "
          f"{statistics.mean(s['n_sentences'] for s in samples):.1f} sentences on average")
    code = sandbox.write_baseline_code(args.method, scratch.name, seed=0)
    in_process: list[list[float]] = []
    to_first_reply, sandboxed, computed, startups, loads, imports = [], [], [], [], [], []
    first_in_process = None
    largest_difference = 0.0
    for _ in range(args.runs):  # the two sides alternate, so machine load hits both alike
        seconds, reference = [], {}
        for sample in samples:
            began = time.perf_counter()
            scores = interpreters.interpret(args.method, model, sample["question"],
                                            sample["context"], sample["sentences"], seed=0)
            seconds.append(time.perf_counter() - began)
            reference[sample["id"]] = scores
        in_process.append(seconds)
        if first_in_process is None:
            first_in_process = seconds[0]

        marks = []
        began = time.perf_counter()
        result = sandbox.run_interpreter(
            code, path, args.kind, samples, mode=args.mode,
            progress=lambda done, total, marks=marks: marks.append(time.perf_counter()))
        if not result.ok or result.failures:
            raise SystemExit(f"sandboxed run failed: {result.failure} {result.message} "
                             f"{result.failure_details}\n{result.stderr[-2000:]}")
        to_first_reply.append(marks[0] - began)
        startups.append(result.startup_seconds)
        loads.append(result.model_load_seconds)
        imports.append(result.import_seconds)
        sandboxed.append([result.sample_seconds[s["id"]] for s in samples])
        computed.append([result.compute_seconds[s["id"]] for s in samples])
        for sample in samples:
            got, want = result.scores[sample["id"]], reference[sample["id"]]
            largest_difference = max(largest_difference,
                                      max(abs(a - b) for a, b in zip(got, want, strict=True)))
    isolation = ", ".join(result.isolation)

    def later(rows):  # samples 2..N of every run
        return [value for row in rows for value in row[1:]]

    first_reply = statistics.median(to_first_reply)
    overhead = first_reply - load_seconds
    per_in = statistics.mean(later(in_process))
    per_box = statistics.mean(later(sandboxed))
    per_compute = statistics.mean(later(computed))
    print(f"isolation: {isolation}")
    print(f"consistency: largest |sandboxed - in-process| score = {largest_difference:.2e}")
    print(f"in process: model load {load_seconds:.3f} s in a warm worker (the first load in "
          f"this process, importing the model classes: {cold_load_seconds:.3f} s); "
          f"first sample {first_in_process:.3f} s")
    startup, load, user_import = (statistics.median(v) for v in (startups, loads, imports))
    rest = statistics.median(s - a - b for s, a, b in zip(startups, loads, imports, strict=True))
    print(f"sandboxed (median of {args.runs} runs): time to first reply {first_reply:.3f} s "
          f"= job set-up + launch -> ready {startup:.3f} s + first sample; launch -> ready = "
          f"torch/transformers import and model load {load:.3f} s + importing the submitted "
          f"module {user_import:.3f} s + the rest (bwrap, Python start, seccomp) {rest:.3f} s")
    if args.mode == "bwrap":
        bare, boxed = bare_start_seconds()
        print(f"bare start, `python -c pass` x5: {bare * 1000:.0f} ms direct, "
              f"{boxed * 1000:.0f} ms in the sandbox (+{(boxed - bare) * 1000:.0f} ms per start)")
    print(f"start-up overhead per submission: {overhead:.3f} s "
          f"(time to first reply - in-process model load)")
    print(f"start-up overhead without the first sample's own work: "
          f"{overhead - first_in_process:.3f} s")
    print(f"per sample (samples 2..{len(samples)}, {args.runs} runs): in process "
          f"{per_in * 1000:.2f} ms; sandboxed {per_box * 1000:.2f} ms (of which inside "
          f"interpret {per_compute * 1000:.2f} ms); overhead {1000 * (per_box - per_in):+.2f} ms")
    scratch.cleanup()
    print(f"ratio: {per_box / per_in:.3f}")


if __name__ == "__main__":
    main()
