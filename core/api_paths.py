"""The API's paths: ``/api/v1/`` is current, the unversioned ``/api/`` paths are deprecated
aliases that keep the answers they gave before /api/v1/ (docs/client.md)."""
from django.http import HttpRequest

API_PREFIX = "/api/"
CURRENT_API_PREFIX = "/api/v1/"


def is_api_path(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def is_legacy_api_path(request: HttpRequest) -> bool:
    """An unversioned /api/ path: a deprecated alias that keeps the answers of before /api/v1/."""
    return is_api_path(request) and not request.path_info.startswith(CURRENT_API_PREFIX)
