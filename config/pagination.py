"""Pages of API lists: ``?limit=&offset=`` (docs/client.md#lists)."""
from django.conf import settings
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from core.query_params import whole_number

from .errors import is_legacy_api_path


class ApiPagination(LimitOffsetPagination):
    """``{"count", "next", "previous", "results"}`` with ``API_PAGE_SIZE`` items unless ``limit``
    says otherwise; a larger ``limit`` is cut to ``API_MAX_PAGE_SIZE``. The deprecated
    unversioned paths keep their old answer, the whole list, unless a ``limit`` is given."""

    default_limit = settings.API_PAGE_SIZE
    max_limit = settings.API_MAX_PAGE_SIZE

    def get_limit(self, request: Request) -> int | None:
        given = request.query_params.get(self.limit_query_param)
        if given is None:
            return None if is_legacy_api_path(request._request) else self.default_limit
        return min(self.max_limit, whole_number(self.limit_query_param, given, minimum=1))

    def get_offset(self, request: Request) -> int:
        given = request.query_params.get(self.offset_query_param)
        return 0 if given is None else whole_number(self.offset_query_param, given, minimum=0)
