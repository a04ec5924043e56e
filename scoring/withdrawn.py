"""A stored prediction file re-scored on a later version of its test set.

A corrected test set may withdraw questions. A file accepted on an earlier version can then
hold predictions for questions that no longer exist, which the strict parser refuses as
"keys not in the test set". When a *stored* file is re-scored (never for a new upload), those
predictions are dropped and counted, and the rest of the file goes through the same strict
validation as an upload. Questions the new version adds have no prediction: they score 0 and
count as unanswered, as the official ExpMRC scorer scores a missing prediction.
(docs/operations.md#re-scoring states the policy.)
"""
from __future__ import annotations

import json
from collections.abc import Container

from .strict_json import JsonObject, load_json_object


def drop_withdrawn(raw: bytes, known: Container[str], *, max_bytes: int, expected: str) -> tuple[bytes, list[str]]:
    """``(file, withdrawn)``: the top-level keys of ``raw`` not in ``known``, in file order, and the
    file without them. When none is withdrawn the bytes are returned unchanged (so error
    messages keep the file's own line numbers). Raises ``InvalidPredictions`` as the strict
    parser would on a file that is not a JSON object."""
    _, document = load_json_object(raw, max_bytes=max_bytes, expected=expected)
    withdrawn = [key for key, _ in document if key not in known]
    if not withdrawn:
        return raw, []
    kept = JsonObject((key, value) for key, value in document if key in known)
    # One entry per line, duplicated keys kept: the strict parser still sees (and refuses) them.
    return _dump(kept, top=True).encode("utf-8"), withdrawn


def note(count: int) -> str:
    """How an entry's history and pages word ``count`` ignored predictions."""
    plural = "" if count == 1 else "s"
    return f"{count} prediction{plural} for question{plural} no longer in the test set ignored"


def _dump(value: object, *, top: bool = False) -> str:
    if isinstance(value, JsonObject):
        separator = ",\n" if top else ","
        return "{" + separator.join(f"{json.dumps(key, ensure_ascii=False)}:{_dump(item)}"
                                    for key, item in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)
