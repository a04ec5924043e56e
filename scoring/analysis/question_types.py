"""Question type (first interrogative word) and length-bin labels for diagnostics.

The word lists live in ``resources/question_types.json``; they are used by the question-type
permutation tests (Luo, 2022; docs/diagnostics.md#question-types) and the linguistic-bias subsets
(Wu et al., 2022; docs/diagnostics.md#linguistic-bias).
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Sequence

from .. import RESOURCES_DIR

_RESOURCE = RESOURCES_DIR / "question_types.json"
_LISTS = json.loads(_RESOURCE.read_text(encoding="utf-8"))

OTHER = "other"
ENGLISH_WH_WORDS: frozenset[str] = frozenset(_LISTS["wh_words"])
# Chinese interrogatives, longest first: a regex alternation tries alternatives in order, so at
# the leftmost match position the longest word wins ("什么时候" over "什么", "哪里" over "哪").
CHINESE_INTERROGATIVES: tuple[str, ...] = tuple(sorted(_LISTS["chinese_wh_words_hint"], key=len, reverse=True))
# Common words that contain an interrogative character but ask nothing: "几乎" (almost),
# "哪怕" (even if). Without this, "他几乎……是谁？" would be typed "几" instead of "谁".
_NOT_INTERROGATIVE_FOLLOWERS = {"几": "乎", "哪": "怕"}

_ENGLISH_WORD = re.compile(r"\w+")


def _chinese_alternative(word: str) -> str:
    follower = _NOT_INTERROGATIVE_FOLLOWERS.get(word)
    return re.escape(word) + (f"(?!{re.escape(follower)})" if follower else "")


_CHINESE_INTERROGATIVE = re.compile("|".join(_chinese_alternative(word) for word in CHINESE_INTERROGATIVES))


def question_type(question: str, language: str = "en") -> str:
    """Bucket of a question by its first interrogative word.

    en: the first of what/which/who/whom/whose/when/where/why/how among the lower-cased word
    tokens, left to right ("In what year ..." -> "what", "How many ..." -> "how";
    "what's" -> "what"), else "other".
    zh: the interrogative (什么 哪 谁 何时 什么时候 哪里 为什么 怎么 如何 多少 几) found earliest in the
    string, the longest one when several start there; the label is the word itself
    ("为什么", "什么时候", "哪"), else "other". Chinese questions often put the interrogative
    last ("……是谁？"), so position in the string rather than the first token decides.
    """
    if language == "en":
        for token in _ENGLISH_WORD.findall(question.lower()):
            if token in ENGLISH_WH_WORDS:
                return token
        return OTHER
    if language == "zh":
        match = _CHINESE_INTERROGATIVE.search(question)
        return match.group(0) if match else OTHER
    raise ValueError(f"unsupported language {language!r} (expected 'en' or 'zh')")


def length_bin(n: int, width: int, cap: int | None = None) -> str:
    """Label of the bin of width ``width`` holding the non-negative count ``n``.

    Bins start at multiples of ``width`` and the label gives both inclusive ends ("0-49",
    "50-99", ...); with width 1 the label is the count itself ("3"). With ``cap``, every count
    from ``cap`` up shares one open bin "<cap>+" (the "600->+inf" of Wu et al., 2022), and the bin just
    below ends at ``cap - 1`` when the cap is not a multiple of the width. Sort labels with
    ``bin_sort_key``, not alphabetically ("100-149" < "50-99" as strings).
    """
    if isinstance(width, bool) or int(width) != width or width < 1:
        raise ValueError(f"bin width must be a positive integer, got {width!r}")
    if n < 0 or int(n) != n:
        raise ValueError(f"length must be a non-negative integer, got {n!r}")
    if cap is not None and (isinstance(cap, bool) or int(cap) != cap or cap < 1):
        raise ValueError(f"bin cap must be a positive integer, got {cap!r}")
    width, n = int(width), int(n)
    if cap is not None and n >= cap:
        return f"{int(cap)}+"
    low = (n // width) * width
    high = low + width - 1 if cap is None else min(low + width, int(cap)) - 1
    return str(low) if high == low else f"{low}-{high}"


SMALL_GROUPS = "other (small groups)"


def pool_small_groups(labels: Sequence[str | None], min_size: int) -> tuple[list[str | None], list[str], bool]:
    """Relabel items so that no published group is smaller than ``min_size`` (hidden splits,
    docs/diagnostics.md#hidden-splits-what-is-never-shown: a group of one question would reveal
    that question's outcome).

    Groups with fewer than ``min_size`` items get the label ``SMALL_GROUPS``. The pool is
    published as one group only when it has ``min_size`` items itself; items labelled None
    (left out of every group) stay None. Hiding is not enough on its own: the totals are
    published, so whatever is not shown can be computed by subtraction. Hence the items outside
    the published groups must number 0 or at least ``min_size``; while they do not, the
    smallest remaining group joins the pool (complementary suppression).

    Returns (new labels, original labels that were pooled, whether the pool is published).
    """
    if isinstance(min_size, bool) or int(min_size) != min_size or min_size < 1:
        raise ValueError(f"minimum group size must be a positive integer, got {min_size!r}")
    sizes = Counter(label for label in labels if label is not None)
    left_out = len(labels) - sum(sizes.values())
    pooled = {label for label, size in sizes.items() if size < min_size}
    while True:
        pool_size = sum(sizes[label] for label in pooled)
        # Left-out items are never shown; a published pool next to a few of them would expose them.
        pool_published = pool_size >= min_size and (left_out == 0 or left_out >= min_size)
        unshown = left_out + (0 if pool_published else pool_size)
        remaining = [label for label in sizes if label not in pooled]
        if unshown == 0 or unshown >= min_size or not remaining:
            break
        pooled.add(min(remaining, key=lambda label: (sizes[label], bin_sort_key(label))))
    relabelled = [SMALL_GROUPS if label in pooled else label for label in labels]
    return relabelled, sorted(pooled, key=bin_sort_key), pool_published


def value_bin(value: float, width: float) -> str:
    """Label of the half-open bin ``[low, low + width)`` holding a real ``value``, where
    ``low`` is a multiple of ``width`` (e.g. a Flesch-Kincaid grade of 9.3 with width 2 ->
    "[8, 10)"; negative values work: -0.5 -> "[-2, 0)")."""
    if not width > 0 or not math.isfinite(width):
        raise ValueError(f"bin width must be positive, got {width!r}")
    if not math.isfinite(value):
        raise ValueError(f"cannot bin {value!r}")
    low = math.floor(value / width) * width
    return f"[{_number(low)}, {_number(low + width)})"


def _number(x: float) -> str:
    # Round away binary noise (0.1 * 3 = 0.30000000000000004) before printing.
    return format(round(x, 9) + 0.0, "g")  # + 0.0 turns -0.0 into 0.0


_LEADING_NUMBER = re.compile(r"^\[?\s*(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)")


def bin_sort_key(label: str) -> tuple[int, float, str]:
    """Sort key putting bin labels in numeric order by their lower end ("0-49" < "50-99" <
    "100-149", "[-2, 0)" < "[0, 2)", "600+" last of its run); labels without a leading
    number (e.g. "other") sort after all numeric ones, alphabetically."""
    match = _LEADING_NUMBER.match(label)
    if match is None:
        return (1, 0.0, label)
    return (0, float(match.group(1)), label)
