"""Train a small "is this question answerable from this context?" classifier (QUACKIE demo).

``make_training_pairs`` turns SQuAD-format data (v1.1 or v2.0) into ``(question, context,
label)`` pairs: label 1 for each answerable question with its own paragraph, label 0 for the same
question paired with another paragraph (half of the negatives, when possible, from another
paragraph of the same article: topically close, so the model has to look for the answer rather
than the topic), plus, for SQuAD 2.0, the unanswerable questions with their own paragraph.

``train_classifier`` fine-tunes ``AutoModelForSequenceClassification(num_labels=2)`` from a
local checkpoint (class 1 = answerable, input order question then context, as QUACKIE feeds it),
holds out a share of the *questions* (all pairs of a question stay on one side), and saves the
model and tokenizer to ``out_dir`` together with ``expbench_training.json`` (settings and
results). Plain torch loop: AdamW, linear warm-up (10%) and decay, dynamic padding, contexts
truncated to ``max_length`` tokens (question kept whole). No downloads, no Django.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see scoring.models.hosted_model

import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable, Sequence  # noqa: E402

TRAINING_INFO = "expbench_training.json"
Pair = tuple[str, str, int]


def _answerable(qa: dict) -> bool:
    return bool(qa.get("answers")) and not qa.get("is_impossible", False)


def make_training_pairs(squad: dict, *, seed: int = 0, negatives_per_positive: int = 1,
                        same_article_share: float = 0.5,
                        include_impossible: bool = True) -> list[Pair]:
    """Positive and negative (question, context, label) pairs from a SQuAD-format dict."""
    rng = random.Random(seed)
    articles = squad["data"] if isinstance(squad, dict) else squad
    paragraphs = []  # (article index, context)
    for a, article in enumerate(articles):
        for paragraph in article.get("paragraphs", []):
            paragraphs.append((a, paragraph["context"]))
    by_article: dict[int, list[str]] = {}
    for a, context in paragraphs:
        by_article.setdefault(a, []).append(context)
    all_contexts = [context for _, context in paragraphs]

    pairs: list[Pair] = []
    for a, article in enumerate(articles):
        for paragraph in article.get("paragraphs", []):
            own = paragraph["context"]
            for qa in paragraph.get("qas", []):
                question = qa["question"]
                if not _answerable(qa):
                    if include_impossible:
                        pairs.append((question, own, 0))
                    continue
                pairs.append((question, own, 1))
                used = {own}
                for _ in range(negatives_per_positive):
                    pool = [c for c in by_article.get(a, []) if c not in used]
                    if not (pool and rng.random() < same_article_share):
                        pool = [c for c in all_contexts if c not in used]
                    if not pool:  # fewer other paragraphs than negatives asked for
                        break
                    other = rng.choice(pool)
                    used.add(other)
                    pairs.append((question, other, 0))
    return pairs


def split_held_out(pairs: Sequence[Pair], held_out: float, seed: int = 0):
    """(train, held_out) with every question's pairs on one side."""
    questions = sorted({question for question, _, _ in pairs})
    random.Random(seed).shuffle(questions)
    n_held = int(round(len(questions) * held_out)) if held_out > 0 else 0
    if held_out > 0 and len(questions) > 1:
        n_held = min(max(n_held, 1), len(questions) - 1)
    held = set(questions[:n_held])
    train = [pair for pair in pairs if pair[0] not in held]
    test = [pair for pair in pairs if pair[0] in held]
    return train, test


def _batches(items, size):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def evaluate_pairs(network, tokenizer, pairs: Sequence[Pair], *, max_length: int,
                   batch_size: int = 32) -> dict:
    """Accuracy (and per-label accuracy) of ``network`` on labelled pairs."""
    import torch  # noqa: PLC0415  (heavy: training and evaluation only)

    if not pairs:
        return {"accuracy": None, "accuracy_answerable": None, "accuracy_unanswerable": None}
    network.eval()
    correct = {0: 0, 1: 0}
    total = {0: 0, 1: 0}
    with torch.inference_mode():
        for batch in _batches(list(pairs), batch_size):
            encoding = tokenizer([q for q, _, _ in batch], [c for _, c, _ in batch],
                                 padding=True, truncation="only_second", max_length=max_length,
                                 return_tensors="pt")
            predicted = network(**encoding).logits.argmax(dim=-1).tolist()
            for (_, _, label), guess in zip(batch, predicted, strict=True):
                total[label] += 1
                correct[label] += int(guess == label)

    def share(c, t):
        return c / t if t else None

    return {"accuracy": share(correct[0] + correct[1], total[0] + total[1]),
            "accuracy_answerable": share(correct[1], total[1]),
            "accuracy_unanswerable": share(correct[0], total[0])}


def train_classifier(base_path, pairs: Sequence[Pair], out_dir, *, max_length: int = 192,
                     batch_size: int = 16, epochs: int = 1, max_steps: int | None = None,
                     lr: float = 1e-4, held_out: float = 0.1, seed: int = 0,
                     progress: Callable[[int, int, float], None] | None = None,
                     max_seconds: float | None = None) -> dict:
    """Fine-tune a 2-label answerability classifier from a local checkpoint; save to ``out_dir``.

    ``max_steps`` (when given) overrides ``epochs`` (the data is reshuffled each pass);
    ``max_seconds`` stops training early once that much time has passed (a budget guard on a
    slow or busy machine; the learning rate is then not fully decayed).
    ``progress(step, total_steps, loss)`` is called after every optimisation step.
    Returns ``{"held_out_accuracy", "n_train", "n_held_out", "steps", "seconds", ...}``.
    """
    import torch  # noqa: PLC0415  (heavy: training and evaluation only)
    from transformers import AutoModelForSequenceClassification, AutoTokenizer  # noqa: PLC0415

    from .hosted_model import quiet_transformers  # noqa: PLC0415  (imports torch)

    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = random.Random(seed)
    train, test = split_held_out(pairs, held_out, seed)
    if not train:
        raise ValueError("no training pairs")
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(base_path, local_files_only=True)
        network = AutoModelForSequenceClassification.from_pretrained(
            base_path, num_labels=2, local_files_only=True,
            id2label={0: "unanswerable", 1: "answerable"},
            label2id={"unanswerable": 0, "answerable": 1})
    steps_per_epoch = math.ceil(len(train) / batch_size)
    total_steps = int(max_steps) if max_steps is not None else max(1, epochs) * steps_per_epoch
    warmup = max(1, int(0.1 * total_steps))

    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for parameter in network.parameters():
        (no_decay if parameter.ndim < 2 else decay).append(parameter)
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=lr)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup,
                                    max(0.0, (total_steps - step) / max(1, total_steps - warmup))))

    network.train()
    step, losses = 0, []
    order: list[Pair] = []
    while step < total_steps:
        if not order:
            order = list(train)
            rng.shuffle(order)
        batch, order = order[:batch_size], order[batch_size:]
        encoding = tokenizer([q for q, _, _ in batch], [c for _, c, _ in batch], padding=True,
                             truncation="only_second", max_length=max_length, return_tensors="pt")
        labels = torch.tensor([label for _, _, label in batch])
        loss = network(**encoding, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(step, total_steps, losses[-1])
        if max_seconds is not None and time.perf_counter() - started > max_seconds:
            break
    train_seconds = time.perf_counter() - started

    evaluation = evaluate_pairs(network, tokenizer, test, max_length=max_length)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    network.eval()
    with quiet_transformers():
        network.save_pretrained(out_dir)
        tokenizer.save_pretrained(out_dir)
    result = {
        "held_out_accuracy": evaluation["accuracy"],
        "held_out_accuracy_answerable": evaluation["accuracy_answerable"],
        "held_out_accuracy_unanswerable": evaluation["accuracy_unanswerable"],
        "n_train": len(train),
        "n_held_out": len(test),
        "steps": step,
        "epochs": round(step / steps_per_epoch, 2),
        "final_loss": sum(losses[-10:]) / len(losses[-10:]),
        "train_seconds": round(train_seconds, 2),
        "seconds": round(time.perf_counter() - started, 2),
    }
    settings = {"base": str(base_path), "max_length": max_length, "batch_size": batch_size,
                "max_steps": max_steps, "epochs": epochs, "lr": lr, "held_out": held_out,
                "max_seconds": max_seconds, "seed": seed, "torch_threads": torch.get_num_threads()}
    (out_dir / TRAINING_INFO).write_text(json.dumps({"settings": settings, "result": result},
                                                    indent=2) + "\n")
    return result
