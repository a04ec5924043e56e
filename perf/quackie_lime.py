"""LIME-100 seconds per sample: our harness vs the lime package called the plain way.

Run: .venv/bin/python perf/quackie_lime.py [--samples 6] [--batch-size 8]
     [--threads 2] [--model DIR --kind classification|qa]

Model: the trained demo classifier var/models/answerability-minilm when it exists, else a tiny
random BERT classifier built on the fly (the output says which). Samples: the first N questions
of the ExpMRC SQuAD dev set (../shared/data/expmrc) that fit in 512 tokens, sentences from the
vendored Punkt model.

Both sides explain P(answerable) of the same hosted model on the same samples with 100
perturbations and map the word weights to sentences the same way (sum):
  - ours: scoring.models.interpreters.interpret("LIME_100_sum", ...): LimeTextExplainer with a seeded
    random_state, every perturbed context of a sample de-duplicated and sent through the model's
    batched predict_proba (batches of --batch-size, similar lengths grouped together);
  - plain: LimeTextExplainer() with all defaults and a classifier function that calls
    predict_proba once per perturbed text (no batching), as a straightforward user would;
  - plain-batched: the same defaults, the classifier function passing all perturbed texts of the
    sample to the hosted model's predict_proba in one call (the wrapper batches them): the
    strongest way to call lime without our harness, and the reference of the last line.
One warm-up sample per side is not timed; the order of the two sides alternates per sample.
A consistency check (untimed) re-runs the plain way with our random_state on the first sample
and prints the largest difference of the word weights (batching must not change the result).
Printed: both ratios; the last line is `ratio: <plain-batched / ours>` (seconds per sample).
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

import numpy as np  # noqa: E402
import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SQUAD_DEV = REPO.parent / "shared" / "data" / "expmrc" / "expmrc-squad-dev.json"
DEMO_MODEL = REPO / "var" / "models" / "answerability-minilm"
sys.path.insert(0, str(REPO))

from scoring.metrics import expmrc  # noqa: E402,F401  (vendored Punkt model on nltk.data.path)
from scoring.models import interpreters  # noqa: E402
from scoring.models.hosted_model import load_hosted_model  # noqa: E402
from tests.tiny_models import build_tiny_classifier  # noqa: E402

N_PERTURBATIONS = 100


def load_samples(model, count: int):
    import nltk

    data = json.loads(SQUAD_DEV.read_text(encoding="utf-8"))
    samples = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                if model.n_tokens(qa["question"], context) <= 512:
                    samples.append((qa["question"], context, nltk.sent_tokenize(context)))
                if len(samples) >= count + 1:  # + 1 warm-up sample
                    return samples
    return samples


def ours(model, question, context, sentences):
    return interpreters.interpret(f"LIME_{N_PERTURBATIONS}_sum", model, question, context,
                                  sentences, seed=0)


def plain_weights(model, question, context, random_state=None, batched=False):
    from lime.lime_text import LimeTextExplainer

    def classifier_fn(texts):
        if batched:  # one call: the question broadcast over every perturbed context
            return model.predict_proba(question, list(texts))
        return np.vstack([model.predict_proba(question, text) for text in texts])

    explainer = LimeTextExplainer(random_state=random_state)
    explanation = explainer.explain_instance(context, classifier_fn, num_samples=N_PERTURBATIONS)
    return dict(explanation.as_list(label=1))


def plain(model, question, context, sentences):
    weights = plain_weights(model, question, context)
    return interpreters.words_to_sentences(weights, sentences, "sum")


def plain_batched(model, question, context, sentences):
    weights = plain_weights(model, question, context, batched=True)
    return interpreters.words_to_sentences(weights, sentences, "sum")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--kind", default="classification", choices=["classification", "qa"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    scratch = None
    if args.model is not None:
        path, label = args.model, f"{args.model} ({args.kind})"
    elif (DEMO_MODEL / "config.json").is_file():
        path = DEMO_MODEL
        label = "trained demo classifier var/models/answerability-minilm (MiniLM-L6)"
    else:
        scratch = tempfile.TemporaryDirectory()
        path = build_tiny_classifier(Path(scratch.name) / "tiny")
        label = "tiny random BERT classifier (var/models/answerability-minilm not trained yet)"
    model = load_hosted_model(path, args.kind, batch_size=args.batch_size)
    samples = load_samples(model, args.samples)
    warm_up, timed = samples[0], samples[1:]
    print(f"model: {label}; batch size {args.batch_size}; torch threads {args.threads}")
    tokens = [model.n_tokens(q, c) for q, c, _ in timed]
    print(f"samples: {len(timed)} SQuAD dev questions, {statistics.mean(tokens):.0f} tokens "
          f"on average; LIME with {N_PERTURBATIONS} perturbations")

    sides = [("ours", ours), ("plain", plain), ("plain_batched", plain_batched)]
    for _, function in sides:
        function(model, *warm_up)
    seconds = {name: [] for name, _ in sides}
    for i, sample in enumerate(timed):
        # Rotate the order per sample so no side always runs first (caches, machine load).
        for name, function in sides[i % 3:] + sides[:i % 3]:
            started = time.perf_counter()
            scores = function(model, *sample)
            seconds[name].append(time.perf_counter() - started)
            assert len(scores) == len(sample[2])

    question, context, _ = timed[0]
    batched = interpreters.lime_word_weights(model, question, context, N_PERTURBATIONS, seed=0)
    one_by_one = plain_weights(model, question, context,
                          random_state=interpreters.sample_seed(0, question))
    diff = max(abs(batched.get(w, 0.0) - one_by_one.get(w, 0.0)) for w in set(batched) | set(one_by_one))
    print(f"consistency: same random_state, batched vs one-by-one word weights: "
          f"max |diff| = {diff:.2e} over {len(set(batched) | set(one_by_one))} words")

    def line(name, label):
        values = seconds[name]
        print(f"{label} {statistics.mean(values):.3f} s/sample (min {min(values):.3f}, max {max(values):.3f})")
        return statistics.mean(values)

    ours_s = line("ours", "ours          (seeded, de-duplicated, batched):")
    plain_s = line("plain", "plain         (lime defaults, one call/text): ")
    batched_s = line("plain_batched", "plain-batched (lime defaults, one call/sample):")
    print(f"ratio plain / ours: {plain_s / ours_s:.2f}")
    print(f"ratio: {batched_s / ours_s:.2f}")
    if scratch is not None:
        scratch.cleanup()


if __name__ == "__main__":
    main()
