"""The disclosure rule for per-group statistics of hidden splits (scoring.disclosure): no group
shown, nor any remainder the totals give away, pins down a member's outcome, even for an
observer who knows the rule and sees which groups were pooled."""
import itertools
from collections import defaultdict

import pytest

from scoring import disclosure
from scoring.analysis import icq
from scoring.analysis.question_types import SMALL_GROUPS
from scoring.disclosure import coarsen_groups, disclosable, reveals_members


def test_a_group_reveals_its_members_only_within_one_of_an_end():
    assert [disclosable(correct, 18) for correct in (0, 1, 17, 18)] == [False, True, True, False]
    assert not disclosable(3, 4)  # too small, whatever its outcomes
    # F1: 5 questions at mean 0.99 sum to 4.95 > 4, so each has F1 >= 0.95; at 0.8 nothing is forced.
    assert not disclosable(4.95, 5) and disclosable(4.0, 5) and disclosable(1.0, 5) and not disclosable(0.5, 5)
    # A count the public side already fixes (one possible value) tells nothing new.
    assert not reveals_members(3, 3, 3) and reveals_members(3, 3, 9) and not reveals_members(4, 3, 9)
    with pytest.raises(ValueError):
        reveals_members(float("nan"), 0, 5)


def test_coarsening_pools_an_all_right_group_and_keeps_the_others():
    labels = ["what"] * 20 + ["when"] * 18 + ["who"] * 9 + ["why"] * 3
    outcomes = [1, 0] * 10 + [1] * 18 + [1, 1, 1, 1, 0, 1, 1, 1, 1] + [1, 0, 1]
    size_only = coarsen_groups(labels, outcomes, protect_outcomes=False)
    assert size_only.pooled == ["who", "why"] and size_only.pooled_for_outcomes == []
    coarse = coarsen_groups(labels, outcomes)
    assert coarse.pooled == ["when", "who", "why"] and coarse.pooled_for_outcomes == ["when"]
    assert coarse.pool_published and set(coarse.labels) == {"what", SMALL_GROUPS}
    with pytest.raises(ValueError):
        coarsen_groups(labels, outcomes[:-1])
    with pytest.raises(ValueError):
        coarsen_groups(labels, [2.0] * len(labels))


def published_view(labels, outcomes, protect_outcomes):
    """Everything an observer of one grouping sees: which groups are shown (pooled ones are
    relabelled), whether the pool is shown, each shown group's sum, and the public total."""
    coarse = coarsen_groups(labels, outcomes, protect_outcomes=protect_outcomes)
    sums = defaultdict(int)
    for label, value in zip(coarse.labels, outcomes, strict=True):
        if label is not None and (label != SMALL_GROUPS or coarse.pool_published):
            sums[label] += value
    return tuple(coarse.labels), coarse.pool_published, tuple(sorted(sums.items())), sum(outcomes)


def determined_items(labels, protect_outcomes):
    """A rule-aware observer: for every possible 0/1 outcome vector, the set of vectors that
    publish the same view; an item is determined when it has one value across such a set.
    Views whose total is 0 or n are skipped (the public score alone settles those)."""
    worlds = defaultdict(list)
    for outcomes in itertools.product((0, 1), repeat=len(labels)):
        worlds[published_view(labels, outcomes, protect_outcomes)].append(outcomes)
    found = []
    for view, members in worlds.items():
        if view[-1] in (0, len(labels)):
            continue
        for item in range(len(labels)):
            if len({outcomes[item] for outcomes in members}) == 1:
                found.append((view, item))
    return found


LAYOUTS = {
    "two groups and two small ones": ["a"] * 5 + ["b"] * 5 + ["c"] + ["d"] * 2,
    "items in no group": ["a"] * 5 + ["b"] * 6 + [None] * 3,
    "items in no group, as many as a group": ["a"] * 5 + ["b"] * 5 + [None] * 5,
    "a small group pooled with the smallest": ["a"] * 5 + ["b"] * 5 + ["c"] * 4,
    "two groups": ["a"] * 6 + ["b"] * 7,
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_no_outcome_is_determined_even_knowing_the_rule(layout):
    labels = LAYOUTS[layout]
    assert determined_items(labels, protect_outcomes=True) == []


def test_the_observer_does_find_outcomes_under_the_size_rule_alone():
    # The same observer against the size rule alone: an all-right group of 5 gives its members away.
    assert determined_items(LAYOUTS["two groups"], protect_outcomes=False)


def f1_bounds(total, n):
    """What a block's sum says of each member's F1 (values in [0, 1])."""
    return max(0.0, total - (n - 1)), min(1.0, total)


def test_f1_groups_near_the_top_are_pooled_until_every_member_is_open():
    labels = ["a"] * 5 + ["b"] * 8 + ["c"] * 10 + ["d"] * 12
    f1 = [1.0, 1.0, 1.0, 0.95, 1.0] + [0.5, 1.0, 0.0, 0.7, 1.0, 0.2, 0.9, 0.4] + [1.0] * 9 + [0.9] + [0.0, 1.0] * 6
    coarse = coarsen_groups(labels, f1)
    assert "a" in coarse.pooled_for_outcomes and "c" in coarse.pooled_for_outcomes
    blocks = defaultdict(list)
    for label, value in zip(coarse.labels, f1, strict=True):
        blocks[label].append(value)
    for values in blocks.values():
        assert f1_bounds(sum(values), len(values)) == (0.0, 1.0), values


# --------------------------------------------------------------------------- ICQ


def mc_world(lantern_right):
    """48 four-option questions. Option 0 carries "lantern" in questions 0-11 (gold there) and
    "stone" in questions 12-31 (gold in 12-21); 32-47 carry neither. The lantern questions are
    all right or all wrong (``lantern_right``); the plain ones make up for it so that the total
    and every other group stay the same."""
    instances, features, predictions = [], [], {}
    for q in range(48):
        gold = 0 if q < 22 else 1
        instances.append(icq.Instance(f"q{q}", "passage", [f"o{q}-{j}" for j in range(4)], gold))
        word = "word\tlantern" if q < 12 else "word\tstone" if q < 32 else None
        features.append([{word} if (word and j == 0) else set() for j in range(4)])
        if q < 12:
            right = lantern_right
        elif q < 32:
            right = q % 2 == 0
        else:
            right = q - 32 < (4 if lantern_right else 16)
        predictions[f"q{q}"] = gold if right else (gold + 1) % 4
    index = icq.FeatureIndex(instances, kind="multichoice", features=features)
    return index, predictions


CUES = [{"feature": "word", "value": "lantern"}, {"feature": "word", "value": "stone"}]


def test_an_all_right_cue_group_is_withheld_and_what_is_shown_does_not_depend_on_it():
    shown = {}
    for lantern_right in (True, False):
        index, predictions = mc_world(lantern_right)
        plain = icq.accuracy_test(index, predictions, CUES, kind="multichoice")
        assert plain[0]["acc_with"] == (1.0 if lantern_right else 0.0)  # what the rule prevents
        rows = icq.accuracy_test(index, predictions, CUES, kind="multichoice", protect_outcomes=True)
        lantern, stone = rows
        assert lantern["withheld"] and lantern["acc_with"] is None and lantern["p_holm"] is None
        assert (lantern["n_with"], lantern["n_without"]) == (12, 36)
        assert stone["acc_with"] == 0.5 and not stone.get("withheld")
        # Holm counts the withheld test with p = 1: the shown row cannot leak its p-value.
        assert stone["p_holm"] == pytest.approx(min(1.0, 2 * stone["p_value"]))
        shown[lantern_right] = rows
    assert shown[True] == shown[False]


def test_without_cues_withheld_rows_are_not_ranked():
    index, predictions = mc_world(True)
    rows = icq.accuracy_test(index, predictions, None, kind="multichoice", protect_outcomes=True)
    assert [row["value"] for row in rows] == ["stone"]


def distribution_world(picks_gold):
    """20 questions; "stone" on the gold option and two wrong ones, so 20 right and 40 wrong
    rows carry it and the flattened set draws 20 of the wrong ones. The entry picks the gold
    option in ``picks_gold`` questions and an unmarked wrong option (3) elsewhere."""
    instances, features, predictions = [], [], {}
    for q in range(40):
        instances.append(icq.Instance(f"q{q}", "passage", [f"o{q}-{j}" for j in range(4)], 0))
        features.append([{"word\tstone"} if (q < 20 and j < 3) else set() for j in range(4)])
        predictions[f"q{q}"] = 0 if q < picks_gold else 3
    cue = {"feature": "word", "value": "stone", "reference_dist": {"right": 0.6, "wrong": 0.4}, "cue_label": "right"}
    return icq.FeatureIndex(instances, kind="multichoice", features=features), predictions, [cue]


def test_a_flattened_count_at_the_end_of_its_range_is_withheld():
    # Every picked "stone" row is gold, so all of them are drawn: the count of drawn rows picked
    # equals the number of picks, the top of what the predictions allow.
    index, predictions, cues = distribution_world(picks_gold=20)
    plain = icq.distribution_test(index, predictions, cues, kind="multichoice")
    assert plain[0]["n_cue_label"] == 20
    [row] = icq.distribution_test(index, predictions, cues, kind="multichoice", protect_outcomes=True)
    assert row["withheld"] and row["n_flat"] is None and row["p_holm"] is None and row["follows_cue"] is None
    assert "predicted_dist" not in row
    # Picks spread over gold and marked wrong options leave the count inside its range: shown.
    index, predictions, cues = distribution_world(picks_gold=12)
    for q in range(12, 20):
        predictions[f"q{q}"] = 1  # a wrong option carrying "stone"
    [row] = icq.distribution_test(index, predictions, cues, kind="multichoice", protect_outcomes=True)
    assert not row.get("withheld") and row["n_flat"] == 40 and 12 <= row["n_cue_label"] < 20


def test_withheld_tests_count_in_the_correction_with_p_one():
    adjusted = disclosure.withheld_holm([0.01, None, 0.04], icq.holm)
    assert adjusted[1] is None
    assert adjusted == [pytest.approx(0.03), None, pytest.approx(0.08)]
