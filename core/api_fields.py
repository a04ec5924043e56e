"""API fields whose schema states what the server enforces."""
from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers

#: What the schema's ``pattern`` says of a name: at least one character that is not a space. The
#: server trims a name before checking it, so a name of spaces only is refused as blank.
NOT_BLANK = RegexValidator(r"\S", message="must not be blank")


def name_field(max_length: int, **kwargs: Any) -> serializers.CharField:
    """A name (of a method, a system, a team): trimmed, 1 to ``max_length`` characters, not only
    spaces; the schema says so with ``minLength``, ``maxLength`` and ``pattern``."""
    return serializers.CharField(max_length=max_length, min_length=1, validators=[NOT_BLANK], **kwargs)
