"""Reading uploaded JSON files with precise, gold-free error messages; shared by the scorers.

A JSON object is parsed into its raw (key, value) pairs so duplicated keys stay visible, and
line numbers are worked out only on the error path, so valid files pay nothing for them.
"""
from __future__ import annotations

import bisect
import codecs
import gc
import json
import re
import sys
from collections.abc import Iterator


class InvalidPredictions(ValueError):
    """An uploaded prediction file is rejected (one line; ids, fields, lines; no gold text)."""


JSON_TYPE_NAMES = {
    dict: "an object", list: "an array", str: "a string", bool: "a boolean",
    int: "a number", float: "a number", type(None): "null",
}


def json_type(value: object) -> str:
    return "an object" if isinstance(value, JsonObject) else JSON_TYPE_NAMES.get(type(value), type(value).__name__)


class JsonObject(list):
    """A JSON object as its raw (key, value) pairs, so duplicated keys stay visible."""


_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")
SURROGATE = re.compile("[\ud800-\udfff]")
_NEWLINE = re.compile("\n")
MAX_LISTED = 5


def _top_level_key_offsets(text: str) -> Iterator[int]:
    """Character offset of every top-level key of a JSON text already known to be a valid
    object, in order. Only run on the error path, to give line numbers, and only as far as the
    last entry named (a generator); values are skipped with the C scanner."""
    decoder = json.JSONDecoder()
    pos = _skip(text, _skip(text, 0) + 1)  # past "{"
    while text[pos] != "}":
        yield pos
        _, pos = decoder.raw_decode(text, pos)  # the key, a JSON string
        pos = _skip(text, _skip(text, pos) + 1)  # past ":"
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text[pos] == ",":
            pos = _skip(text, pos + 1)


def _skip(text: str, pos: int) -> int:
    """The offset of the first character at or after ``pos`` that is not JSON whitespace."""
    match = _JSON_WHITESPACE.match(text, pos)
    return match.end() if match else pos


class Problems:
    """Collects offending top-level entries and renders one line naming the first few.

    Hostile files can hold a million offending entries, so the cost stays linear: only the
    first ``MAX_LISTED`` are kept (the rest are counted; callers skip building descriptions
    once ``full``), and a line number is a binary search in the newline offsets, computed
    once, instead of a count from the start of the file per entry."""

    def __init__(self, text: str):
        self._text = text
        self._keys: Iterator[int] | None = None
        self._offsets: list[int] = []  # offsets of the top-level keys read so far
        self._newlines: list[int] | None = None
        self.found: list[tuple[int, str, int | None]] = []  # (pair index, description, first at)
        self.count = 0

    @property
    def full(self) -> bool:
        """Whether further problems are only counted (their description is never shown)."""
        return self.count >= MAX_LISTED

    def add(self, index: int, description: str = "", *, first_at: int | None = None) -> None:
        """Entry ``index`` (its position among the top-level pairs) is wrong; ``first_at``: the
        index of the entry it repeats, shown as "(first at line N)"."""
        self.count += 1
        if len(self.found) < MAX_LISTED:
            self.found.append((index, description, first_at))

    def line(self, index: int) -> int:
        """The line of the key of top-level pair ``index``."""
        if self._keys is None:
            self._keys = _top_level_key_offsets(self._text)
        while len(self._offsets) <= index:
            self._offsets.append(next(self._keys))
        if self._newlines is None:
            self._newlines = [match.start() for match in _NEWLINE.finditer(self._text)]
        return bisect.bisect_left(self._newlines, self._offsets[index]) + 1

    def raise_if_any(self, summary: str) -> None:
        if not self.found:
            return
        shown = "; ".join(f"line {self.line(i)}: {what}"
                          + (f" (first at line {self.line(first)})" if first is not None else "")
                          for i, what, first in self.found)
        more = self.count - len(self.found)
        raise InvalidPredictions(f"{summary}: {shown}" + (f"; and {more} more" if more > 0 else ""))


class InvalidJson(ValueError):
    """``json.loads`` refused a text. The message is one gold-free phrase without a "not valid
    JSON" prefix; ``reason`` is the same without the position, for callers that number lines."""

    def __init__(self, reason: str, lineno: int | None = None, colno: int | None = None):
        super().__init__(reason if lineno is None else f"{reason} at line {lineno}, column {colno}")
        self.reason = reason


def loads_json(text: str | bytes, **hooks):
    """``json.loads`` with every way it refuses a text turned into one :class:`InvalidJson`:
    bad syntax (with line and column), nesting deep enough to exhaust the stack, and integers
    longer than Python's conversion limit (4300 digits by default), which ``int()`` refuses
    with a plain ValueError. A UnicodeDecodeError (undetectable encoding of bytes) is left to
    the caller, who knows how to word it, as is any other ValueError a hook raises."""
    # A JSON document holds no reference cycles, yet the cyclic GC keeps scanning the millions
    # of containers a large upload builds: pausing it halves the parse of a 36 MB file.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        # Two of json's messages end in "at" ("Unterminated string starting at", "Invalid control
        # character at"), expecting a position: without the trailing word, ours reads "... at line N".
        raise InvalidJson(exc.msg.removesuffix(" at"), exc.lineno, exc.colno) from None
    except RecursionError:
        raise InvalidJson("nested too deeply") from None
    except ValueError as exc:
        # int() refuses long digit strings with a plain ValueError; anything else (a hook's own
        # error, a UnicodeDecodeError of undetectable bytes) is the caller's to word.
        if "integer string conversion" not in str(exc):
            raise
        raise InvalidJson(f"a number has more than {sys.get_int_max_str_digits()} digits") from None
    finally:
        if enabled:
            gc.enable()


def plain_json(value: object) -> object:
    """A value read with :class:`JsonObject` objects (pairs, duplicates kept) as plain JSON values."""
    if isinstance(value, JsonObject):
        return {key: plain_json(item) for key, item in value}
    if isinstance(value, list):
        return [plain_json(item) for item in value]
    return value


def show(value: str, limit: int = 40) -> str:
    """A submitter's own string, quoted on one line and shortened."""
    return json.dumps(value if len(value) <= limit else value[: limit - 3] + "...")


def listed(values: list[str], limit: int = MAX_LISTED) -> str:
    """The first ``limit`` of a submitter's strings, quoted, and how many more there are (a
    hostile file can hold tens of thousands: the message stays short)."""
    shown = ", ".join(show(value) for value in values[:limit])
    more = len(values) - limit
    return shown + (f" and {more} more" if more > 0 else "")


# The first bytes of file formats people upload by mistake, for a message that names the format
# instead of the first byte that is not UTF-8 (0x89 for a PNG).
MAGIC_BYTES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF document"), (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"PK\x05\x06", "an empty ZIP archive"), (b"\x1f\x8b", "a gzip-compressed file"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"), (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\xd0\xcf\x11\xe0", "an old Office document"), (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x93NUMPY", "a NumPy array"), (b"\x80\x04", "a Python pickle"), (b"\x80\x05", "a Python pickle"),
    (b"\x7fELF", "a program (ELF)"),
)


def looks_like(raw: bytes) -> str:
    """What a file's first bytes say it is ("" when they name no known binary format)."""
    return next((name for magic, name in MAGIC_BYTES if raw.startswith(magic)), "")


def decode_utf8(raw: bytes) -> str:
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        kind = looks_like(raw)
        if kind:
            raise InvalidPredictions(f"prediction file is not JSON text: this looks like {kind}. "
                                     "Upload the JSON file itself (UTF-8 text).") from None
        line = raw.count(b"\n", 0, exc.start) + 1
        hint = ""
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            hint = " (it looks like UTF-16: save it as UTF-8)"
        raise InvalidPredictions(
            f"prediction file is not UTF-8: invalid byte 0x{raw[exc.start]:02x} at line {line} "
            f"(byte offset {exc.start}){hint}") from None


def load_json_object(raw: bytes | str, *, max_bytes: int, expected: str):
    """Size check, UTF-8 decoding (BOM stripped) and JSON parsing of an upload whose top level
    must be an object. Returns (text, document as a JsonObject). ``expected`` describes the
    object for the error message, e.g. '{"<id>": "<label>"}'."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if len(raw) > max_bytes:
        raise InvalidPredictions(f"prediction file is {len(raw):,} bytes, over the limit of {max_bytes:,} bytes")
    text = decode_utf8(bytes(raw))
    if not text.strip():
        # json says "Expecting value at line 1, column 1", which reads as a syntax error.
        raise InvalidPredictions("prediction file is empty" if not text else
                                 "prediction file is empty (it holds only white space)")
    try:
        document = loads_json(text, object_pairs_hook=JsonObject)
    except InvalidJson as exc:
        kind = looks_like(bytes(raw))  # a format whose first bytes are ASCII, e.g. a small PDF
        message = f"this looks like {kind}" if kind else str(exc)
        raise InvalidPredictions(f"not valid JSON: {message}") from None
    if not isinstance(document, JsonObject):
        raise InvalidPredictions(f"top level must be a JSON object {expected}, found {json_type(document)}")
    return text, document


def parse_id_to_string(raw: bytes | str, known_ids, *, max_bytes: int, expected: str = '{"<id>": "<answer>"}') -> dict:
    """A JSON object mapping ids to strings (e.g. CheckList answers). Duplicated ids, values
    that are not strings and ids not in ``known_ids`` are refused, naming the first few."""
    text, document = load_json_object(raw, max_bytes=max_bytes, expected=expected)
    known = known_ids if isinstance(known_ids, (set, frozenset)) else set(known_ids)
    seen: set = set()
    problems = Problems(text)
    for index, (key, value) in enumerate(document):
        if key in seen:
            problems.add(index, f"{show(key)} appears twice")
        seen.add(key)
        if not isinstance(value, str):
            problems.add(index, f"{show(key)}: value is {json_type(value)}, expected a string")
        elif SURROGATE.search(value):
            problems.add(index, f"{show(key)}: value holds an unpaired \\u surrogate escape")
    problems.raise_if_any("invalid entries")
    problems = Problems(text)
    for index, (key, _) in enumerate(document):
        if key not in known:
            problems.add(index, show(key))
    problems.raise_if_any("ids not in the item list")
    return {key: value for key, value in document}
