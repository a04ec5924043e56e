"""ICQ's feature x label counts (scoring.analysis.icq.FeatureIndex.counts) are those of the rule
written out plainly: per question, each option row's features minus those every option has,
counted per label; n_f over questions. Counting only some features (what cue discovery asks of
the larger split) gives the same numbers for them, and the cue table does not change."""
import random
from collections import Counter

import pytest

from scoring.analysis.icq import CLASSIFICATION, MULTICHOICE, RIGHT, WRONG, FeatureIndex, Instance, discover_cues

VOCABULARY = [f"word\tw{i}" for i in range(300)]  # Zipf-like: few features qualify as cues


def random_board(seed, n, *, kind):
    """Instances with random feature sets (skewed, so some features are common to every option
    of a question), 2 to 5 options per question for multichoice."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
    instances, features = [], []
    for i in range(n):
        k = 1 if kind == CLASSIFICATION else rng.randint(2, 5)
        common = set(rng.choices(VOCABULARY[:4], k=rng.randint(0, 2)))
        rows = [sorted(common | set(rng.choices(VOCABULARY, weights, k=rng.randint(0, 6)))) for _ in range(k)]
        label = rng.choice(["a", "b", "c"]) if kind == CLASSIFICATION else rng.randrange(k)
        instances.append(Instance(f"{seed}-{i}", "premise", [f"option {j}" for j in range(k)], label))
        features.append(rows)
    return FeatureIndex(instances, kind=kind, feature_types=["word"], features=features)


def plain_counts(index):
    """The rule as the definition states it, one instance at a time."""
    n_f, by_label = Counter(), {}
    for instance, rows in zip(index.instances, index.rows, strict=True):
        sets = [set(row) for row in rows]
        if index.kind == CLASSIFICATION:
            attached = sets[0]
            by_label.setdefault(str(instance.label), Counter()).update(attached)
        else:
            attached = set().union(*sets) - set.intersection(*sets)
            for j, row in enumerate(sets):
                by_label.setdefault(RIGHT if j == instance.label else WRONG, Counter()).update(row & attached)
        n_f.update(attached)
    return n_f, by_label


@pytest.mark.parametrize("kind", [MULTICHOICE, CLASSIFICATION])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counts_follow_the_rule(kind, seed):
    index = random_board(seed, 300, kind=kind)
    n_f, by_label = index.counts()
    expected_n, expected_by_label = plain_counts(index)
    assert n_f == expected_n
    assert {label: +counts for label, counts in by_label.items()} == {
        label: +counts for label, counts in expected_by_label.items()}
    if kind == MULTICHOICE:  # features every option has count nowhere, yet they are there
        assert any(index.common) and all(not (common & attached) for common, attached in
                                         zip(index.common, index.attached, strict=True))


@pytest.mark.parametrize("kind", [MULTICHOICE, CLASSIFICATION])
def test_counting_some_features_gives_their_full_counts(kind):
    index = random_board(7, 300, kind=kind)
    keys = frozenset(VOCABULARY[::3])
    n_f, by_label = index.counts(keys)
    expected_n, expected_by_label = plain_counts(index)
    assert set(n_f) <= keys and all(n_f[key] == expected_n[key] for key in keys)
    for label, counts in expected_by_label.items():
        assert all(by_label.get(label, Counter())[key] == counts[key] for key in keys)
    assert index._counts is None  # partial counts are not kept as the index's counts
    assert index.counts()[0] == expected_n


@pytest.mark.parametrize("kind", [MULTICHOICE, CLASSIFICATION])
def test_cue_discovery_on_a_small_test_split_is_unchanged(kind):
    """The larger split is counted for the features the smaller one has often enough only: the
    cue table equals the one from full counts of both splits."""
    reference, test = random_board(11, 1500, kind=kind), random_board(12, 60, kind=kind)
    partial = discover_cues(reference, test, kind=kind, top_k=None, min_count=11)
    assert reference._counts is None  # the reference split was counted in part
    reference.counts(), test.counts()  # full counts, kept: now used as they are
    assert partial == discover_cues(reference, test, kind=kind, top_k=None, min_count=11) and partial
