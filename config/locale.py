"""The language of an answer: pages in the reader's language, machine-readable answers in one.

Pages follow Django's choice (the language chooser's cookie, else ``Accept-Language``, else
``LANGUAGE_CODE``). The API, ``/metrics`` and the downloads (CSV, JSON, Atom) are read by
programs: their field names, problem documents and messages must not change with the reader's
browser, and a cache may share them between readers. So they are always produced in
``LANGUAGE_CODE`` and do not vary on ``Accept-Language``."""
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

from core.api_paths import is_api_path

#: Paths that end so are files for programs (board CSVs, test-set inputs, result feeds).
MACHINE_READABLE_SUFFIXES = (".csv", ".json", ".atom")
#: Paths read by programs that neither start with the API's prefix nor end with a suffix above.
MACHINE_READABLE_PATHS = frozenset({"/metrics"})


def machine_readable(request: HttpRequest) -> bool:
    """True for an answer that programs read, whose wording must not depend on the reader."""
    path = request.path_info
    return is_api_path(request) or path in MACHINE_READABLE_PATHS or path.endswith(MACHINE_READABLE_SUFFIXES)


class PageLanguageMiddleware(LocaleMiddleware):
    """Django's ``LocaleMiddleware`` for pages; ``LANGUAGE_CODE`` for machine-readable answers."""

    def process_request(self, request: HttpRequest) -> None:
        if machine_readable(request):
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = translation.get_language()
            return
        super().process_request(request)

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if machine_readable(request):
            return response
        return super().process_response(request, response)
