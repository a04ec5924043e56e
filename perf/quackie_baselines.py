"""All 15 QUACKIE baseline rows per sample on a chosen device: ours against each row on its own
with a plain classifier on the same device; optionally, the same explanations on another device.

Run: .venv/bin/python perf/quackie_baselines.py [--samples 5] [--threads 2] [--model DIR]
     [--device cpu|cuda|cuda:N|auto] [--compare-with DEVICE] [--no-peer]

Ours: what the built-in baseline job does per sample (``submissions.baseline_runs.explain_sample``):
``interpret_many`` over the 15 rows inside ``shared_forward_passes`` (the sum and max rows of a
family share one explanation, classifier probabilities and the sample's embedding are computed
once), on the hosted model loaded on ``--device`` at its batch size for that device
(docs/quackie_models.md, "Devices").

Peer (what running the official rows one by one gives, without our harness): each of the 15
rows by ``interpret`` on its own, seed 0, through the same interpreters, with the probabilities
of a plain transformers classifier on the same device: one tokenizer call over all texts of a
call padded to the longest, one forward pass under ``torch.no_grad``, softmax (the classifier
function of perf/quackie_lime.py); the gradient rows use the same network without shared
encodings. Same model, samples and seed on both sides; one untimed warm-up sample per side;
the order of the sides alternates per sample.

``--compare-with DEVICE`` explains the same samples with ours on that device too and prints, per
row, the largest score difference and on how many samples the top sentence is the same: the
check that an explanation does not depend on the worker's device (SmoothGrad's noise is drawn
on the CPU; SHAP_10's singular regression may still turn float rounding into another weight,
docs/quackie_models.md §5).

Samples and model as perf/quackie_lime.py (the first N SQuAD dev questions that fit in 512
tokens; --model, else the trained demo classifier, else MiniLM-L6 with a seeded random head).
Printed: seconds per sample of each side (wall; on a GPU the device is synchronised by reading
the results back), and as the last line ``ratio: <peer seconds per sample / ours>``.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

PERF = Path(__file__).resolve().parent
sys.path.insert(0, str(PERF))

from quackie_lime import DEMO_MODEL, load_samples, untrained_minilm  # noqa: E402

from scoring.models import interpreters  # noqa: E402
from scoring.models.hosted_model import choose_device, load_hosted_model, quiet_transformers  # noqa: E402


class PlainModel:
    """The hosted model's interface with a plain classifier's probabilities: every call is one
    tokenizer call padded to the longest text and one forward pass, nothing shared between
    calls. Gradient helpers are the hosted model's, outside any shared block."""

    kind = "classification"

    def __init__(self, hosted, path: Path):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.hosted, self.device = hosted, hosted.device
        self.batch_size = hosted.batch_size
        with quiet_transformers():
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.network = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True, dtype=torch.float32).eval().to(self.device)

    def predict_proba(self, questions, contexts) -> np.ndarray:
        contexts = [contexts] if isinstance(contexts, str) else list(contexts)
        questions = [questions] * len(contexts) if isinstance(questions, str) else list(questions)
        encoding = self.tokenizer(questions, contexts, padding=True, truncation=True, max_length=512,
                                  return_tensors="pt").to(self.device)
        with torch.no_grad():
            logits = self.network(**encoding).logits
        return torch.softmax(logits.float(), dim=-1).double().cpu().numpy()

    def __getattr__(self, name):  # encode_and_embed, predict_proba_torch, context_start, ...
        return getattr(self.hosted, name)


def ours(model, sample) -> dict[str, list[float]]:
    question, context, sentences = sample
    with model.shared_forward_passes():
        return interpreters.interpret_many(interpreters.BASELINE_METHODS, model, question, context, sentences,
                                           seed=0)


def peer(model, sample) -> dict[str, list[float]]:
    question, context, sentences = sample
    return {name: interpreters.interpret(name, model, question, context, sentences, seed=0)
            for name in interpreters.BASELINE_METHODS}


def timed(function, *args) -> tuple[float, object]:
    started = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - started, result


def top_sentences(scores: list[float]) -> tuple[int, ...]:
    return tuple(np.flatnonzero(np.asarray(scores) >= max(scores)))


def compare(results: list[dict[str, list[float]]], others: list[dict[str, list[float]]], label: str) -> None:
    print(f"explanations on {label}: per row, largest |score difference| and samples with the same top sentence")
    pairs = list(zip(results, others, strict=True))
    for name in interpreters.BASELINE_METHODS:
        diff = max(float(np.max(np.abs(np.asarray(a[name]) - np.asarray(b[name])))) for a, b in pairs)
        same = sum(top_sentences(a[name]) == top_sentences(b[name]) for a, b in pairs)
        print(f"  {name:28s} {diff:9.2e}  top sentence same {same}/{len(results)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N or auto")
    parser.add_argument("--compare-with", default=None, help="also explain with ours on this device and compare")
    parser.add_argument("--no-peer", action="store_true", help="time ours only (the peer is the slow side)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = choose_device(args.device)

    scratch = tempfile.TemporaryDirectory()
    if args.model is not None:
        path = args.model
    elif (DEMO_MODEL / "config.json").is_file():
        path = DEMO_MODEL
    else:
        path = untrained_minilm(Path(scratch.name) / "minilm")
    model = load_hosted_model(path, "classification", device=device, runtime="torch")
    samples = load_samples(model, args.samples)
    warm_up, timed_samples = samples[0], samples[1:]
    print(f"model: {path}; device {model.device_label}; batch size {model.batch_size}; torch threads "
          f"{args.threads}; {len(timed_samples)} SQuAD dev samples, all {len(interpreters.BASELINE_METHODS)} rows")

    sides = [("ours", ours, model)]
    if not args.no_peer:
        sides.append(("peer", peer, PlainModel(model, path)))
    for _, function, subject in sides:
        function(subject, warm_up)
    seconds = {name: [] for name, _, _ in sides}
    results = {name: [] for name, _, _ in sides}
    for i, sample in enumerate(timed_samples):
        for name, function, subject in (sides if i % 2 == 0 else sides[::-1]):
            elapsed, result = timed(function, subject, sample)
            seconds[name].append(elapsed)
            results[name].append(result)
    for name, _, _ in sides:
        print(f"{name}: {np.mean(seconds[name]):.3f} s/sample (min {min(seconds[name]):.3f}, "
              f"max {max(seconds[name]):.3f})")
    if not args.no_peer:
        compare(results["ours"], results["peer"], f"{model.device_label}, ours against the peer")
    if args.compare_with:
        other = load_hosted_model(path, "classification", device=choose_device(args.compare_with), runtime="torch")
        ours(other, warm_up)
        elapsed = [timed(ours, other, sample) for sample in timed_samples]
        print(f"ours on {other.device_label} (batch size {other.batch_size}): "
              f"{np.mean([e for e, _ in elapsed]):.3f} s/sample")
        compare(results["ours"], [r for _, r in elapsed], f"{model.device_label} against {other.device_label}")
    scratch.cleanup()
    if not args.no_peer:
        print(f"ratio: {np.mean(seconds['peer']) / np.mean(seconds['ours']):.2f}")


if __name__ == "__main__":
    main()
