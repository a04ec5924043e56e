"""Answerability-classifier training: pairs, split, and a tiny end-to-end fine-tune."""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import json  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from scoring.models.answerability import (  # noqa: E402
    TRAINING_INFO,
    make_training_pairs,
    split_held_out,
    train_classifier,
)
from scoring.models.hosted_model import load_hosted_model  # noqa: E402
from tests.tiny_models import build_tiny_classifier  # noqa: E402

torch.set_num_threads(1)


def squad(version="1.1"):
    def qa(qid, question, start=None, impossible=False):
        item = {"id": qid, "question": question,
                "answers": [] if start is None else [{"text": "x", "answer_start": start}]}
        if version == "2.0":
            item["is_impossible"] = impossible
        return item

    return {"version": version, "data": [
        {"title": "Cats", "paragraphs": [
            {"context": "The cat sat on the mat. It was red.",
             "qas": [qa("a1", "Where did the cat sit?", 19), qa("a2", "What color was it?", 31)]},
            {"context": "The dog ran in the park. The park was green.",
             "qas": [qa("a3", "Where did the dog run?", 19)]},
        ]},
        {"title": "Cities", "paragraphs": [
            {"context": "Paris is the capital of France.",
             "qas": [qa("b1", "What is the capital of France?", 0),
                     qa("b2", "What is the capital of Mars?", None, impossible=True)]},
            {"context": "London is in England. It is large.",
             "qas": [qa("b3", "Where is London?", 13)]},
        ]},
    ]}


def test_pairs_have_positives_and_foreign_negatives():
    data = squad()
    own = {qa["question"]: p["context"] for a in data["data"] for p in a["paragraphs"]
           for qa in p["qas"]}
    pairs = make_training_pairs(data, seed=1)
    positives = [p for p in pairs if p[2] == 1]
    negatives = [p for p in pairs if p[2] == 0]
    assert len(positives) == 5  # b2 has no answer: no positive ...
    assert all(own[q] == c for q, c, _ in positives)
    foreign = [p for p in negatives if own[p[0]] != p[1]]
    assert len(foreign) == 5  # one per positive
    assert [p for p in negatives if p not in foreign] == [  # ... but a natural negative
        ("What is the capital of Mars?", "Paris is the capital of France.", 0)]
    assert pairs == make_training_pairs(data, seed=1)  # deterministic
    many = make_training_pairs(data, negatives_per_positive=3)
    assert len(many) == 5 * 4 + 1 and len(set(many)) == len(many)  # distinct negatives
    assert len(make_training_pairs(data, negatives_per_positive=9)) == 5 * 4 + 1  # 3 others


def test_squad2_unanswerable_questions_are_natural_negatives():
    pairs = make_training_pairs(squad("2.0"))
    assert ("What is the capital of Mars?", "Paris is the capital of France.", 0) in pairs
    assert len(make_training_pairs(squad("2.0"), include_impossible=False)) == 10


def test_held_out_split_keeps_each_question_on_one_side():
    pairs = make_training_pairs(squad(), negatives_per_positive=2)
    train, test = split_held_out(pairs, 0.4, seed=0)
    assert len(train) + len(test) == len(pairs) and test
    assert not {q for q, _, _ in train} & {q for q, _, _ in test}
    assert split_held_out(pairs, 0.0)[1] == []


def test_training_a_tiny_model_saves_a_loadable_classifier(tmp_path):
    base = build_tiny_classifier(tmp_path / "base")
    pairs = make_training_pairs(squad(), negatives_per_positive=2) * 2
    calls = []
    result = train_classifier(base, pairs, tmp_path / "out", max_length=48, batch_size=4,
                              max_steps=3, lr=1e-3, held_out=0.2,
                              progress=lambda step, total, loss: calls.append((step, total, loss)))
    assert [c[:2] for c in calls] == [(1, 3), (2, 3), (3, 3)]
    assert all(isinstance(c[2], float) for c in calls)
    assert result["steps"] == 3 and result["n_train"] + result["n_held_out"] == len(pairs)
    assert 0.0 <= result["held_out_accuracy"] <= 1.0 and result["seconds"] > 0
    model = load_hosted_model(tmp_path / "out", "classification")
    assert model.network.config.id2label[1] == "answerable"
    assert model.predict_proba("Where is London?", "London is in England.").shape == (1, 2)
    info = json.loads((tmp_path / "out" / TRAINING_INFO).read_text())
    assert info["result"]["steps"] == 3 and info["settings"]["max_length"] == 48


def test_epochs_and_time_budget(tmp_path):
    base = build_tiny_classifier(tmp_path / "base")
    pairs = make_training_pairs(squad())
    result = train_classifier(base, pairs, tmp_path / "out", max_length=32, batch_size=4,
                              epochs=2, held_out=0.0)
    assert result["steps"] == 2 * 3  # ceil(10 / 4) steps per epoch
    assert result["held_out_accuracy"] is None and result["n_held_out"] == 0
    short = train_classifier(base, pairs, tmp_path / "out2", max_length=32, batch_size=4,
                             max_steps=50, held_out=0.0, max_seconds=0.0)
    assert short["steps"] == 1
    with pytest.raises(ValueError):
        train_classifier(base, [], tmp_path / "none")
