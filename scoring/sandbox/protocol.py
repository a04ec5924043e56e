"""The parent's reading of the child's protocol lines (docs/sandbox.md, "Protocol validation").

Everything the child writes is untrusted: the submitted code runs in the same process and can
write any bytes to the protocol pipe. ``decode`` turns one line (already capped at
``output_bytes`` by ``child_process``) into a dict at bounded cost, and ``check_startup`` /
``check_reply`` accept only the messages ``child.py`` sends, with the expected keys and types:
finite, bounded numbers, booleans, strings. Anything else raises ``ProtocolViolation``, which
the runner turns into the submission's own ``protocol_error``: a malformed message must never
raise anything else out of the runner (that would be refunded as a platform fault).
"""
from __future__ import annotations

import json
import math

# The honest child measures seconds with perf_counter; a day is far beyond any limit.
MAX_SECONDS = 86_400.0
# Score items the honest child sends are floats (it converts every real number); an int can
# only be forged. Bounded so float() of it cannot overflow (and stays exact).
MAX_INT = 2**53
# Strings kept from a message (the child truncates its own to these lengths, or near them).
TEXT_CHARS = {"type": 200, "message": 1000, "traceback": 4000, "not_a_list": 200,
              "seccomp_problem": 500}
SHOWN_BYTES = 120  # how much of a malformed line a message quotes


def storable(value: object) -> object:
    """``value`` (a string, or lists and dicts of them) with what a database refuses to store
    replaced by U+FFFD: NUL characters (PostgreSQL text and jsonb cannot hold them) and lone
    surrogates (not UTF-8). Text from the child can carry either; left in, storing the run's
    message fails and the run would end as the platform's fault instead of its sender's."""
    if isinstance(value, str):
        if not _encodable(value):
            value = "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in value)
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(item) for item in value]
    return value


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class ProtocolViolation(Exception):
    """A line from the child that is not one of the protocol's messages."""


def quote(line: bytes) -> str:
    """A short, printable excerpt of a raw line for an error message (never the parsed value:
    ``repr`` of a deeply nested structure could itself recurse without bound)."""
    return repr(line[:SHOWN_BYTES]) + (f" ... ({len(line)} bytes)" if len(line) > SHOWN_BYTES else "")


def decode(line: bytes) -> dict:
    """One protocol line as a dict, or ``ProtocolViolation``. ``json.loads`` is a C parser
    whose cost is linear in the (capped) line, but deep nesting makes it raise RecursionError,
    and a 4300+ digit integer ValueError: both are the child's malformed message."""
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError):
        raise ProtocolViolation(f"not a JSON reply: {quote(line)}") from None
    if not isinstance(reply, dict):
        raise ProtocolViolation(f"a reply must be a JSON object: {quote(line)}")
    return reply


def _keys(message: dict, required: set[str], optional: frozenset[str] = frozenset()) -> None:
    missing = required - message.keys()
    extra = message.keys() - required - optional
    if missing or extra:
        what = (f"missing {sorted(missing)}" if missing else "") + \
            (" and " if missing and extra else "") + \
            (f"unexpected {sorted(str(key)[:40] for key in extra)[:5]}" if extra else "")
        raise ProtocolViolation(f"a {_kind(message)} message with {what}")


def _kind(message: dict) -> str:
    event = message.get("event")
    return repr(event[:40]) if isinstance(event, str) else "reply"


def _seconds(message: dict) -> float:
    value = message["seconds"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (isinstance(value, int) and abs(value) > MAX_INT):
        raise ProtocolViolation(f"{_kind(message)}: 'seconds' is not a number of seconds")
    seconds = float(value)
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
        raise ProtocolViolation(f"{_kind(message)}: 'seconds' is out of range")
    return seconds


def _text(message: dict, key: str) -> str:
    value = message[key]
    if not isinstance(value, str):
        raise ProtocolViolation(f"{_kind(message)}: {key!r} is not a string")
    limit = TEXT_CHARS[key]
    text = value if len(value) <= limit else value[:limit - 15] + " ...[truncated]"
    return str(storable(text))


def _flag(message: dict, key: str) -> bool:
    if not isinstance(message[key], bool):
        raise ProtocolViolation(f"{_kind(message)}: {key!r} is not a boolean")
    return message[key]


def _error(message: dict) -> dict:
    _keys(message, {"type", "message", "traceback"})
    return {key: _text(message, key) for key in ("type", "message", "traceback")}


def check_startup(message: dict, expected: str, failure: str) -> dict:
    """A start-up message: ``expected`` ("loaded" or "ready") with its fields, or ``failure``
    ("load_error" or "import_error") with type, message and traceback. Returns a clean copy."""
    event = message.get("event")
    if event == failure:
        _keys(message, {"event", "type", "message", "traceback"})
        return {"event": event, **_error({k: v for k, v in message.items() if k != "event"})}
    if event != expected:
        raise ProtocolViolation(f"unexpected start-up message (expected {expected!r}): {_kind(message)}")
    if expected == "loaded":
        _keys(message, {"event", "seconds", "seccomp", "seccomp_problem"})
        return {"event": event, "seconds": _seconds(message), "seccomp": _flag(message, "seccomp"),
                "seccomp_problem": _text(message, "seccomp_problem")}
    _keys(message, {"event", "seconds", "sentences"})
    return {"event": event, "seconds": _seconds(message), "sentences": _flag(message, "sentences")}


def check_reply(message: dict, sample_id: str) -> dict:
    """A per-sample reply for ``sample_id``: ``scores`` (its items are judged later by
    ``validate_scores``; only an integer beyond ``MAX_INT``, which the honest child never
    sends, is refused here), ``error`` or ``not_a_list``. Returns a clean copy."""
    if message.get("id") != sample_id:
        shown = message.get("id")
        shown = repr(shown[:60]) if isinstance(shown, str) else type(shown).__name__
        raise ProtocolViolation(f"a reply for {shown} arrived while sample {sample_id} was expected")
    if "error" in message:
        _keys(message, {"id", "error"})
        if not isinstance(message["error"], dict):
            raise ProtocolViolation(f"the error reply for sample {sample_id} is not an object")
        return {"id": sample_id, "error": _error(message["error"])}
    if "not_a_list" in message:
        _keys(message, {"id", "not_a_list", "seconds"})
        return {"id": sample_id, "not_a_list": _text(message, "not_a_list"), "seconds": _seconds(message)}
    if "scores" not in message:
        raise ProtocolViolation(f"the reply for sample {sample_id} has no scores")
    _keys(message, {"id", "scores", "seconds"})
    scores = message["scores"]
    if isinstance(scores, list) and any(type(item) is int and abs(item) > MAX_INT for item in scores):
        raise ProtocolViolation(f"the reply for sample {sample_id} has an integer score out of range")
    return {"id": sample_id, "scores": scores, "seconds": _seconds(message)}
