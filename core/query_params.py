"""Query parameters of the API's pages (``limit``, ``offset``): a clear 400 for anything but a
whole number, where DRF's own pagination would quietly use a default."""
from django.http import HttpRequest
from rest_framework.exceptions import ValidationError

from .api_paths import is_legacy_api_path

#: ``limit`` and ``offset`` as the OpenAPI schema states them: the bounds the server enforces (a
#: 400 below them), so that a client built from the schema refuses what the server would refuse.
LIMIT_SCHEMA = {"type": "integer", "minimum": 1}
OFFSET_SCHEMA = {"type": "integer", "minimum": 0}


def whole_number(name: str, value: str, *, minimum: int) -> int:
    """A query parameter as an int of at least ``minimum``, or a 400 naming it."""
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise ValidationError({name: [f"must be a whole number of at least {minimum}, not {value!r}"]})
    return number


def page_limit(request: HttpRequest, given: str | None, *, default: int, ceiling: int) -> int | None:
    """How many items a page of a list holds: ``limit`` if given (at most ``ceiling``), else
    ``default``; None (the whole list) on a deprecated unversioned path without one, which keeps
    its answer of before pages."""
    if given is None:
        return None if is_legacy_api_path(request) else default
    return min(ceiling, whole_number("limit", given, minimum=1))
