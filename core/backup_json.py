"""The serialization format of backups (core.backups): Django's JSON, with times kept to the
microsecond. Django's own encoder cuts datetimes to milliseconds, so a restored site would
order two entries uploaded within the same millisecond by chance and show other times than
the original. Reading back is Django's JSON reader: the fields parse full ISO times."""
from datetime import datetime, time
from typing import Any

from django.core.serializers.json import Deserializer as JsonDeserializer
from django.core.serializers.json import DjangoJSONEncoder
from django.core.serializers.json import Serializer as JsonSerializer

FORMAT_NAME = "expbench-json"


class ExactTimesEncoder(DjangoJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, datetime | time):
            return o.isoformat()
        return super().default(o)


class Serializer(JsonSerializer):
    def _init_options(self) -> None:
        super()._init_options()  # type: ignore[misc]
        self.json_kwargs["cls"] = ExactTimesEncoder


Deserializer = JsonDeserializer
