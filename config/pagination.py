"""Pages of API lists: ``?limit=&offset=`` (docs/client.md#lists)."""
from typing import Any

from django.conf import settings
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from core.query_params import LIMIT_SCHEMA, OFFSET_SCHEMA, page_limit, whole_number

LIMIT_HELP = (f"items per page (default {settings.API_PAGE_SIZE}; a larger number is cut to "
              f"{settings.API_MAX_PAGE_SIZE})")
OFFSET_HELP = "items to skip (default 0)"


class ApiPagination(LimitOffsetPagination):
    """``{"count", "next", "previous", "results"}`` with ``API_PAGE_SIZE`` items unless ``limit``
    says otherwise; a larger ``limit`` is cut to ``API_MAX_PAGE_SIZE``. The deprecated
    unversioned paths keep their old answer, the whole list, unless a ``limit`` is given."""

    default_limit = settings.API_PAGE_SIZE
    max_limit = settings.API_MAX_PAGE_SIZE

    def get_limit(self, request: Request) -> int | None:
        return page_limit(request._request, request.query_params.get(self.limit_query_param),
                          default=self.default_limit, ceiling=self.max_limit)

    def get_offset(self, request: Request) -> int:
        given = request.query_params.get(self.offset_query_param)
        return 0 if given is None else whole_number(self.offset_query_param, given, minimum=0)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {"name": self.limit_query_param, "required": False, "in": "query", "description": LIMIT_HELP,
             "schema": dict(LIMIT_SCHEMA)},
            {"name": self.offset_query_param, "required": False, "in": "query", "description": OFFSET_HELP,
             "schema": dict(OFFSET_SCHEMA)},
        ]
