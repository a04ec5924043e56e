"""Whole-number query parameters of the API (``limit``, ``offset``): a clear 400 for anything
else, where DRF's own pagination would quietly use a default."""
from rest_framework.exceptions import ValidationError


def whole_number(name: str, value: str, *, minimum: int) -> int:
    """A query parameter as an int of at least ``minimum``, or a 400 naming it."""
    try:
        number = int(value)
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise ValidationError({name: [f"must be a whole number of at least {minimum}, not {value!r}"]})
    return number
