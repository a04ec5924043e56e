"""Edits of a passage or question (replace the characters start..end by a text), what a skill
returns (:class:`Perturbation`), and how gold answer offsets are carried through the edits."""
from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from .catalogue import UNK
from .text import Text


@dataclass
class Edit:
    start: int
    end: int
    text: str


@dataclass
class Perturbation:
    context_edits: list[Edit] = field(default_factory=list)
    question_edits: list[Edit] = field(default_factory=list)
    # answer index -> (context edit index, offset of the unchanged answer inside the edit's new text)
    placed: dict[int, tuple[int, int]] = field(default_factory=dict)
    # answers the perturbation broke (no longer one contiguous, unchanged span): not scored
    lost: set[int] = field(default_factory=set)


def apply_edits(text: str, edits: Sequence[Edit]) -> tuple[str, list[int]]:
    """Apply sorted, non-overlapping edits; return the new text and each edit's new start."""
    out, new_starts, position, length = [], [], 0, 0
    for edit in edits:
        if edit.start < position or edit.end < edit.start:
            raise AssertionError("edits must be sorted and must not overlap")
        out.append(text[position:edit.start])
        length += edit.start - position
        new_starts.append(length)
        out.append(edit.text)
        length += len(edit.text)
        position = edit.end
    out.append(text[position:])
    return "".join(out), new_starts


class SpanMap:
    """Carries character offsets of the original text through a list of edits. A boundary
    inside an edited region snaps outwards to the whole replacement."""

    def __init__(self, edits: Sequence[Edit], new_starts: Sequence[int]):
        self.edits = edits
        self.new_starts = new_starts
        self.starts = [e.start for e in edits]
        self.ends = [e.end for e in edits]
        self.shift = [0]  # cumulative length change of the first k edits
        for e in edits:
            self.shift.append(self.shift[-1] + len(e.text) - (e.end - e.start))

    def start(self, offset: int) -> int:
        k = bisect.bisect_right(self.starts, offset) - 1  # last edit starting at or before offset
        if k >= 0 and offset < self.ends[k]:
            return self.new_starts[k]
        return offset + self.shift[k + 1]

    def end(self, offset: int) -> int:
        k = bisect.bisect_left(self.starts, offset) - 1  # last edit starting before offset
        if k >= 0 and offset <= self.ends[k]:
            return self.new_starts[k] + len(self.edits[k].text)
        return offset + self.shift[k + 1]


def carry_span(perturbation: Perturbation, new_starts: Sequence[int], span_map: SpanMap, index: int,
               span: tuple[int, int]) -> tuple[int, int] | None:
    """Where answer ``index`` (``span`` in the original passage) stands in the perturbed passage:
    at the offset the perturbation placed it, else its boundaries carried through the edits;
    None when the perturbation broke it up."""
    if index in perturbation.lost:
        return None
    start, end = span
    if index in perturbation.placed:
        edit_index, offset = perturbation.placed[index]
        new_start = new_starts[edit_index] + offset
        return new_start, new_start + (end - start)
    return span_map.start(start), span_map.end(end)


def mask_tokens(analysis: Text, token_indices: Iterable[int]) -> list[Edit]:
    return [Edit(*analysis.tokens[i], UNK) for i in sorted(set(token_indices))]


def mask_where(analysis: Text, predicate: Callable[[int], bool]) -> list[Edit]:
    return mask_tokens(analysis, (i for i in range(len(analysis.tokens)) if predicate(i)))
