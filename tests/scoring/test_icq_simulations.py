"""Simulations with known truth for the ICQ statistics (scoring/analysis/icq.py,
docs/diagnostics.md#icq-cue-profiling).

Every board is synthetic data whose features are drawn at random, independently of the answer,
except for the cues planted on purpose, so which features are cues and which model follows
which cue is known. The features are handed to ``FeatureIndex`` directly (no text, no
extractor), except in the first test, which goes through the word extractor. Everything is
seeded; each test takes a few seconds.
"""
import random

import numpy as np
import pytest

from scoring.analysis import icq
from scoring.analysis.icq import CLASSIFICATION, MULTICHOICE, FeatureIndex, Instance

ALPHA = 0.05
N_FEATURES = 20
RATE = 0.15  # each option carries each unrelated feature with this probability


def mc_board(seed, prefix, n, *, k=4, planted=(), n_features=N_FEATURES, rate=RATE):
    """``n`` k-option questions with a uniformly drawn gold option; every option carries each
    feature ``word\\tf<j>`` independently with probability ``rate``. ``planted`` holds
    (value, n_questions, p_gold): the first n_questions questions also carry ``word\\t<value>`` in
    exactly one option, the gold one with probability p_gold."""
    rng = np.random.default_rng(seed)
    carries = rng.random((n, k, n_features)) < rate
    gold = rng.integers(0, k, n)
    instances, features = [], []
    for q in range(n):
        rows = [{f"word\tf{j}" for j in np.flatnonzero(carries[q, o])} for o in range(k)]
        for value, n_questions, p_gold in planted:
            if q < n_questions:
                option = gold[q] if rng.random() < p_gold else (gold[q] + rng.integers(1, k)) % k
                rows[option].add(f"word\t{value}")
        instances.append(Instance(f"{prefix}{q}", "", [""] * k, int(gold[q])))
        features.append(rows)
    return FeatureIndex(instances, kind=MULTICHOICE, feature_types=["word"], features=features)


def cue_free(index, accuracy, seed):
    """Right with probability ``accuracy`` whatever the features, else a uniformly drawn wrong option."""
    rng = random.Random(seed)
    predictions = {}
    for instance in index.instances:
        k = len(instance.hypotheses)
        predictions[instance.id] = (instance.label if rng.random() < accuracy
                                    else rng.choice([j for j in range(k) if j != instance.label]))
    return predictions


def follower(index, accuracy, seed, key, toward):
    """Cue-free, except where ``key`` is attached to a question: then an option carrying it
    (``toward="right"``: the cue says "pick me") or one not carrying it (``"wrong"``)."""
    predictions = cue_free(index, accuracy, seed)
    rng = random.Random(f"{seed}\tfollow")
    for i, instance in enumerate(index.instances):
        if key in index.attached[i]:
            carrying = [j for j, row in enumerate(index.rows[i]) if key in row]
            others = [j for j in range(len(instance.hypotheses)) if j not in carrying]
            predictions[instance.id] = rng.choice(carrying if toward == "right" else others)
    return predictions


# --------------------------------------------------------------------------- cueness

def text_board(seed, prefix, n, planted):
    """Like mc_board, through the English word extractor: options are strings of made-up words."""
    rng = random.Random(seed)
    vocabulary = ["zq" + letter for letter in "abcdefghijklmnopqrst"[:N_FEATURES]]  # letters only: one token each
    instances = []
    for q in range(n):
        gold = rng.randrange(4)
        options = [[word for word in vocabulary if rng.random() < RATE] for _ in range(4)]
        for value, p_gold in planted:
            option = gold if rng.random() < p_gold else rng.choice([o for o in range(4) if o != gold])
            options[option].append(value)
        instances.append(Instance(f"{prefix}{q}", "Some passage.", [" ".join(o) or "zz" for o in options], gold))
    return instances


def test_cue_free_features_score_zero_against_the_prior_where_the_paper_gives_0_0625():
    # Three planted cues: "cueright" is in the gold option of 75% of the questions, "cueup" of 45%
    # and "cuedown" of 5% (the prior is 25%: +0.50, +0.20, -0.20); the 20 zq* words are unrelated.
    planted = [("cueright", 0.75), ("cueup", 0.45), ("cuedown", 0.05)]
    reference = text_board(1, "r", 2000, planted)
    test = text_board(2, "s", 500, planted)
    cues = {c["value"]: c for c in icq.discover_cues(reference, test, kind=MULTICHOICE,
                                                     feature_types=["word"], top_k=None)}
    noise = [c for value, c in cues.items() if value.startswith("zq")]
    assert len(noise) == N_FEATURES
    for cue in noise:
        assert cue["prior"] == {"right": 0.25, "wrong": 0.75}
        assert cue["cueness"] < 0.003  # ~0: the noise floor is about prior * (1 - prior) / rows
        assert 0.04 < cue["cueness_published"] < 0.09  # ~(1/2 - 1/4)^2 = 0.0625: the published formula ignores the prior
    assert np.mean([c["cueness"] for c in noise]) < 0.001
    assert np.mean([c["cueness_published"] for c in noise]) == pytest.approx(0.0625, abs=0.006)
    # A 75%-right cue: 0.25 against the prior, and as low as the noise in the published formula.
    assert cues["cueright"]["cueness"] == pytest.approx(0.25, abs=0.03)
    assert cues["cueright"]["cueness_published"] == pytest.approx(0.0625, abs=0.01)
    # Equal strength relative to the prior, opposite directions: alike now, 0.0025 vs 0.2025 before.
    up, down = cues["cueup"], cues["cuedown"]
    assert up["cue_label"] == "right" and down["cue_label"] == "wrong"
    assert up["cueness"] == pytest.approx(0.04, abs=0.012) and down["cueness"] == pytest.approx(0.04, abs=0.012)
    assert down["cueness_published"] > 20 * up["cueness_published"]
    ranked = list(cues)
    assert ranked[0] == "cueright" and set(ranked[1:3]) == {"cueup", "cuedown"}


def test_on_two_options_the_prior_is_one_half_and_the_ranking_is_the_papers():
    planted = [("a", 300, 0.9), ("b", 300, 0.2), ("c", 150, 0.65), ("d", 400, 0.4), ("e", 200, 0.05)]
    reference = mc_board(3, "r", 1200, k=2, planted=planted)
    test = mc_board(4, "s", 400, k=2, planted=[(v, n // 3, p) for v, n, p in planted])
    cues = icq.discover_cues(reference, test, kind=MULTICHOICE, feature_types=["word"], top_k=None)
    assert len(cues) == N_FEATURES + len(planted)
    assert all(c["prior"] == {"right": 0.5, "wrong": 0.5} for c in cues)
    assert [c["cueness"] for c in cues] == pytest.approx([c["cueness_published"] for c in cues], abs=1e-15)
    by_published = sorted(cues, key=lambda c: (-c["cueness_published"], -c["n_reference"], c["feature"], c["value"]))
    assert [c["value"] for c in cues] == [c["value"] for c in by_published]
    assert {c["value"] for c in cues[:5]} == {"a", "b", "c", "d", "e"}


# --------------------------------------------------------------------------- distribution test: false positives

def test_a_cue_free_model_is_rarely_flagged():
    tested = flagged = raw = published = 0
    for board in range(60):
        reference = mc_board(1000 + board, "r", 800)
        test = mc_board(2000 + board, "s", 400)
        cues = icq.discover_cues(reference, test, kind=MULTICHOICE, feature_types=["word"])
        accuracy = 0.60 + 0.15 * board / 59  # 0.60 .. 0.75, as in the review
        rows = icq.distribution_test(test, cue_free(test, accuracy, board), cues, kind=MULTICHOICE)
        tested += len(rows)
        flagged += sum(row["follows_cue"] for row in rows)
        raw += sum(row["p_value"] < ALPHA for row in rows)
        published += sum(row["follows_cue_published"] for row in rows)
    assert tested >= 600
    assert flagged / tested <= 0.02  # Holm over the cues of each board: ~0.002 in longer runs
    assert raw / tested <= 0.08  # the unadjusted exact test keeps its level (~0.035 in longer runs)
    assert published / tested >= 0.15  # the paper's reading flags a quarter of them


def test_a_cue_free_classifier_with_a_label_bias_is_rarely_flagged():
    """Classification: the null is the entry's own confusion matrix, so a model that favours one
    label everywhere is not said to follow the cues that point to that label."""
    labels = ["a", "b", "c"]
    tested = flagged = raw = 0
    for board in range(40):
        rng = np.random.default_rng(board)

        def split(prefix, n, rng=rng):
            gold = rng.choice(labels, n, p=[0.5, 0.3, 0.2])
            carries = rng.random((n, N_FEATURES)) < 0.1
            instances = [Instance(f"{prefix}{i}", "", [""], str(g)) for i, g in enumerate(gold)]
            features = [[{f"word\tf{j}" for j in np.flatnonzero(row)}] for row in carries]
            return FeatureIndex(instances, kind=CLASSIFICATION, feature_types=["word"], features=features)

        reference, test = split("r", 1500), split("s", 600)
        cues = icq.discover_cues(reference, test, kind=CLASSIFICATION, feature_types=["word"])
        predictions = {}
        for instance in test.instances:  # right 70%; errors go to "a" four times out of five
            if rng.random() < 0.7:
                predictions[instance.id] = instance.label
            else:
                others = [label for label in labels if label != instance.label]
                predictions[instance.id] = "a" if "a" in others and rng.random() < 0.8 else others[-1]
        rows = icq.distribution_test(test, predictions, cues, kind=CLASSIFICATION)
        tested += len(rows)
        flagged += sum(row["follows_cue"] for row in rows)
        raw += sum(row["p_value"] < ALPHA for row in rows)
    assert tested >= 400
    assert flagged / tested <= 0.02
    assert raw / tested <= 0.08


# --------------------------------------------------------------------------- distribution test: power

@pytest.mark.parametrize("toward, n_cue, p_reference, p_test", [
    ("right", 30, 0.6, 0.6),   # S_f holds ~12 right and ~18 wrong rows: flattened to ~24 rows
    ("wrong", 50, 0.1, 0.25),  # ~12 right rows in S_f; with p_test = 0.1 it could rarely be flattened
])
def test_a_model_that_follows_a_planted_cue_is_flagged_on_it(toward, n_cue, p_reference, p_test):
    boards, hits, other_flags, other_tested = 40, 0, 0, 0
    for board in range(boards):
        reference = mc_board(3000 + board, "r", 800, planted=[("cue", 120, p_reference)])
        test = mc_board(4000 + board, "s", 300, planted=[("cue", n_cue, p_test)])
        cues = icq.discover_cues(reference, test, kind=MULTICHOICE, feature_types=["word"])
        assert all(cue["cue_label"] == toward for cue in cues if cue["value"] == "cue")
        predictions = follower(test, 0.6 + 0.15 * board / (boards - 1), board, "word\tcue", toward)
        rows = icq.distribution_test(test, predictions, cues, kind=MULTICHOICE)
        planted = [row for row in rows if row["value"] == "cue"]
        hits += bool(planted and planted[0]["follows_cue"])
        other_tested += len(rows) - len(planted)
        other_flags += sum(row["follows_cue"] for row in rows if row["value"] != "cue")
    assert hits / boards >= 0.9
    assert other_flags / other_tested <= 0.05


def test_the_p_value_is_deterministic_given_the_seed():
    reference = mc_board(7, "r", 800, planted=[("cue", 120, 0.6)])
    test = mc_board(8, "s", 300, planted=[("cue", 40, 0.5)])
    cues = icq.discover_cues(reference, test, kind=MULTICHOICE, feature_types=["word"])
    predictions = cue_free(test, 0.7, 0)
    first = icq.distribution_test(test, predictions, cues, kind=MULTICHOICE, seed=5)
    assert first == icq.distribution_test(test, predictions, cues, kind=MULTICHOICE, seed=5)
    assert all(0.0 <= row["p_value"] <= row["p_holm"] <= 1.0 for row in first)
