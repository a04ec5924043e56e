"""Question types (first interrogative word) and bin labels."""
import pytest

from scoring.analysis.question_types import (
    SMALL_GROUPS,
    bin_sort_key,
    length_bin,
    pool_small_groups,
    question_type,
    value_bin,
)


@pytest.mark.parametrize("question, expected", [
    ("What city in Victoria is called the sporting capital?", "what"),
    ("How many electorates does the State of Victoria have?", "how"),
    ("HOW MUCH did it cost?", "how"),
    ("In which year did the war start?", "which"),  # first wh-word anywhere, not the first word
    ("The treaty was signed by whom?", "whom"),
    ("Whose army won?", "whose"),
    ("What's the name of the river?", "what"),
    ("Why are the small lakes emptied before winter?", "why"),
    ("Name the king of France.", "other"),
    ("Whatever happened next?", "other"),  # whole words only
    ("", "other"),
    ("Somewhere, when and where did it happen?", "when"),
])
def test_english(question, expected):
    assert question_type(question) == expected
    assert question_type(question, "en") == expected


@pytest.mark.parametrize("question, expected", [
    ("尚恩有什么爱好？", "什么"),
    ("赵鹏在2014年下半赛季没有出场的原因是什么？", "什么"),
    ("男女主角亦有专属声优这一模式是由谁改编的？", "谁"),
    ("为什么天空是蓝色的？", "为什么"),  # not the "什么" inside it
    ("什么时候开始的？", "什么时候"),  # longest match at the same position
    ("他出生在哪里？", "哪里"),
    ("他去了哪个城市？", "哪"),
    ("他何时出生？", "何时"),
    ("一共有多少人？", "多少"),
    ("他有几个孩子？", "几"),
    ("他几乎每天跑步，跑了多久？", "other"),  # 几乎 = almost, 多久 not in the list
    ("哪怕下雨，谁会来？", "谁"),  # 哪怕 = even if
    ("如何制作？", "如何"),
    ("怎么办？", "怎么"),
    ("这是一本书。", "other"),
])
def test_chinese(question, expected):
    assert question_type(question, "zh") == expected


def test_unknown_language():
    with pytest.raises(ValueError):
        question_type("What?", "fr")


def test_length_bin():
    assert length_bin(0, 50) == "0-49"
    assert length_bin(49, 50) == "0-49"
    assert length_bin(50, 50) == "50-99"
    assert length_bin(123, 50) == "100-149"
    assert length_bin(3, 1) == "3"
    for bad in [(-1, 50), (3, 0), (3, 2.5), (2.5, 1)]:
        with pytest.raises(ValueError):
            length_bin(*bad)


def test_value_bin():
    assert value_bin(9.3, 2) == "[8, 10)"
    assert value_bin(10.0, 2) == "[10, 12)"
    assert value_bin(-0.5, 2) == "[-2, 0)"
    assert value_bin(-2.0, 2) == "[-2, 0)"
    assert value_bin(0.35, 0.1) == "[0.3, 0.4)"
    assert value_bin(7250.0, 500) == "[7000, 7500)"
    with pytest.raises(ValueError):
        value_bin(float("nan"), 2)


def test_bin_labels_sort_numerically():
    labels = ["100-149", "other", "50-99", "0-49", "600+"]
    assert sorted(labels, key=bin_sort_key) == ["0-49", "50-99", "100-149", "600+", "other"]
    assert sorted(["[10, 12)", "[-2, 0)", "[8, 10)", "[0, 2)"], key=bin_sort_key) == [
        "[-2, 0)", "[0, 2)", "[8, 10)", "[10, 12)"]
    assert sorted(["12", "2", "1"], key=bin_sort_key) == ["1", "2", "12"]


def test_length_bin_with_a_cap():
    assert length_bin(599, 50, cap=600) == "550-599"
    assert length_bin(600, 50, cap=600) == "600+"
    assert length_bin(12_000, 50, cap=600) == "600+"
    assert length_bin(590, 70, cap=600) == "560-599"  # the last bin below the cap is cut short
    assert length_bin(3, 1, cap=600) == "3"
    with pytest.raises(ValueError):
        length_bin(3, 50, cap=0)


def unshown(labels, relabelled, published):
    """Items in no published group: the ones whose total outcome follows by subtraction."""
    return sum(1 for new in relabelled if new is None or (new == SMALL_GROUPS and not published))


def test_small_groups_are_pooled_and_the_pool_shown_when_big_enough():
    labels = ["what"] * 10 + ["who"] * 6 + ["whose"] * 1 + ["why"] * 4
    relabelled, pooled, published = pool_small_groups(labels, 5)
    assert pooled == ["whose", "why"] and published is True
    assert relabelled.count(SMALL_GROUPS) == 5 and relabelled.count("what") == 10 and relabelled.count("who") == 6
    assert pool_small_groups(["a"] * 5 + ["b"] * 7, 5)[:2] == (["a"] * 5 + ["b"] * 7, [])  # nothing to hide


def test_a_lone_small_group_takes_the_smallest_group_with_it():
    # Hiding "whose" alone would not do: total minus the shown groups gives it back.
    labels = ["what"] * 12 + ["who"] * 9 + ["whose"]
    relabelled, pooled, published = pool_small_groups(labels, 5)
    assert pooled == ["who", "whose"] and published is True
    assert relabelled.count(SMALL_GROUPS) == 10


@pytest.mark.parametrize("labels", [
    ["a"] * 10 + ["b"] * 6 + [None] * 2,  # two items left out of every group (e.g. no grade)
    ["a"] * 10 + [None] * 6 + ["c"],
    ["a"] * 20 + ["b"] * 2 + ["c"] * 2 + [None],
])
def test_what_is_not_shown_is_never_a_handful(labels):
    relabelled, pooled, published = pool_small_groups(labels, 5)
    hidden = unshown(labels, relabelled, published)
    assert hidden == 0 or hidden >= 5
    shown = [label for label in relabelled if label is not None and (label != SMALL_GROUPS or published)]
    assert all(shown.count(label) >= 5 for label in set(shown))


def test_fewer_items_than_the_minimum_show_nothing():
    assert pool_small_groups(["a", "a", "b"], 5) == ([SMALL_GROUPS] * 3, ["a", "b"], False)


def test_pool_rejects_a_bad_minimum():
    with pytest.raises(ValueError):
        pool_small_groups(["a"], 0)
