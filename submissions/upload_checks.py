"""Which prediction files the web worker checks while the sender waits, and which the scoring worker checks.

Parsing and validating JSON costs CPU per value, not per byte: a file at the size limit made of a
million small entries took 4.5 CPU-s of a web worker, during which that worker served nobody
else. Before parsing, :func:`json_values_at_most` bounds the number of JSON values of the upload
with a few byte counts (every value but the first of its container follows a comma; every
container opens with ``{`` or ``[``; commas and brackets inside strings only raise the bound),
about 10 ms per 10 MB. A file under ``UPLOAD_CHECK_MAX_VALUES`` is checked at once, as before:
its cost is bounded by that number, and an invalid file is refused on the spot and costs no quota.
A larger one is stored and queued like a valid file, and the scoring worker checks it first, with
the same messages: a refusal there ends the submission ``failed`` (category ``invalid_input``),
charged to its sender, since the server has already stored and queued it. The bytes are kept.
"""
from django.conf import settings

OVER_THE_INLINE_CHECK = (
    "This file was checked after upload, by the scoring worker: it holds more JSON values than the "
    "upload form checks while you wait ({limit:,}), so, like any file stored and queued, it counts against "
    "your quota. The problem: {problem}")


def json_values_at_most(raw: bytes) -> int:
    """An upper bound on the number of JSON values in ``raw``, from byte counts alone."""
    return raw.count(b",") + raw.count(b"{") + raw.count(b"[") + 1


def checked_at_upload(raw: bytes) -> bool:
    """Whether the web worker validates ``raw`` before accepting it (else the scoring worker does)."""
    return json_values_at_most(raw) <= settings.UPLOAD_CHECK_MAX_VALUES


def refusal_after_upload(problem: str) -> str:
    """The message of a file the scoring worker refused: the parser's own words, and why it counts."""
    return OVER_THE_INLINE_CHECK.format(limit=settings.UPLOAD_CHECK_MAX_VALUES, problem=problem)
