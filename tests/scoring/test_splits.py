"""The public/private split (scoring/splits.py), checked against what is known by construction."""
import random

import pytest

from scoring.splits import column_means, part_rows, private_mask


def test_the_split_is_seeded_exact_and_stratified():
    strata = ["entailment"] * 500 + ["neutral"] * 300 + ["contradiction"] * 201
    random.Random(1).shuffle(strata)
    mask = private_mask(len(strata), 0.3, seed=7, strata=strata)
    assert mask == private_mask(len(strata), 0.3, seed=7, strata=strata)  # the same split every time
    assert mask != private_mask(len(strata), 0.3, seed=8, strata=strata)
    assert sum(mask) == round(0.3 * len(strata))
    for name, size in (("entailment", 500), ("neutral", 300), ("contradiction", 201)):
        private = sum(m for m, s in zip(mask, strata, strict=True) if s == name)
        assert abs(private - 0.3 * size) <= 1, name  # every stratum keeps the share to one item


def test_the_public_part_estimates_the_whole_without_bias():
    # Known truth: items right with probability 0.6; over many seeds the public-part mean is
    # centred on the whole set's mean (a fair sample), within simulation error.
    rng = random.Random(0)
    outcomes = [[1.0 if rng.random() < 0.6 else 0.0] for _ in range(400)]
    whole = column_means(["acc"], outcomes)["acc"]
    gaps = []
    for seed in range(300):
        mask = private_mask(len(outcomes), 0.5, seed=seed)
        gaps.append(column_means(["acc"], part_rows(outcomes, mask, private=False))["acc"] - whole)
    mean_gap = sum(gaps) / len(gaps)
    assert abs(mean_gap) < 0.5  # points on the 0-100 scale; one seed's gap has sd ~1.7
    assert max(abs(g) for g in gaps) > 1.0  # the parts do differ seed to seed: the test could fail


def test_column_means_skip_undefined_items_like_the_scorers():
    assert column_means(["a", "b"], [[1.0, None], [0.0, 0.5], [0.5, None]]) == {"a": 50.0, "b": 50.0}
    assert column_means(["a"], [[None]]) == {"a": None}


def test_a_share_outside_the_range_is_refused():
    with pytest.raises(ValueError):
        private_mask(10, 1.0, seed=0)
