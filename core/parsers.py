"""The API's JSON parser, with a limit on nesting.

Python's JSON decoder recurses once per level: a body of a few kilobytes nested a thousand deep
ends in ``RecursionError`` (a 500) in the decoder or in whatever walks the result. Every JSON
body the API takes is a flat object, so anything nested deeper than ``JSON_MAX_DEPTH`` (32) is
refused with a 400 before it is decoded."""
import json
import re
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils.json import strict_constant

# A JSON string, escapes included (the unrolled form: no backtracking, one pass).
STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
BRACKET = re.compile(rb"[\[\]{}]")
OPENING = frozenset(b"[{")


def nesting_depth(raw: bytes, stop_above: int | None = None) -> int:
    """How deep arrays and objects nest in ``raw`` (brackets inside strings do not count);
    counting stops once ``stop_above`` is passed."""
    depth = deepest = 0
    for match in BRACKET.finditer(STRING.sub(b'""', raw)):
        if match.group()[0] in OPENING:
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and deepest > stop_above:
                    break
        else:
            depth -= 1
    return deepest


class DepthLimitedJSONParser(JSONParser):
    """DRF's JSON parser, refusing bodies nested deeper than ``JSON_MAX_DEPTH``."""

    def parse(self, stream: IO[bytes], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        raw = stream.read() if stream is not None else b""
        limit = settings.JSON_MAX_DEPTH
        if nesting_depth(raw, stop_above=limit) > limit:
            raise ParseError(f"JSON parse error - the body is nested more than {limit} levels deep.")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            # NaN and Infinity are refused unless STRICT_JSON is off, as DRF's own parser does.
            return json.loads(raw.decode(encoding), parse_constant=strict_constant if self.strict else None)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise ParseError(f"JSON parse error - {exc}") from None
