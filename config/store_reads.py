"""Anonymous reads answered from the store ahead of DRF.

The board's API is the most read operation, and for an anonymous reader its answer is nearly
always a 304 or a page stored earlier (``leaderboards.api.stored_task_leaderboard``). DRF's
dispatch around it (its request wrapper, two authenticators, content negotiation, permission
and throttle classes) cost more than serving the stored page did. So such a read is answered
here: the same bytes and headers the DRF view gives (tests/config/test_store_reads.py compares
them), counted against the same anonymous rate limit. Anything else (a client that sends
credentials or a session, asks for another format, or a request the store cannot answer: an
unknown or hidden board, a bad parameter, a page not stored yet, an exhausted rate limit) goes
to the DRF view, which gives the answer and the error shape of every other operation. The
schema still describes the DRF view: ``functools.wraps`` keeps its ``cls``."""
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import cc_delim_re, patch_vary_headers

from .throttling import AnonWindowThrottle

#: Media ranges of an Accept header under which DRF's negotiation gives the view's JSON.
JSON_RANGES = ("application/json", "*/*")


def plain_anonymous_read(request: HttpRequest) -> bool:
    """A GET without credentials or a session that takes JSON in DRF's default format."""
    if request.method != "GET" or "HTTP_AUTHORIZATION" in request.META:
        return False
    if settings.SESSION_COOKIE_NAME in request.COOKIES or "format" in request.GET:
        return False
    accept = request.META.get("HTTP_ACCEPT")
    return accept is None or any(media in accept for media in JSON_RANGES)


def served_from_store(view: Callable[..., HttpResponse],
                      stored: Callable[..., HttpResponse | None]) -> Callable[..., HttpResponse]:
    """``view`` (a DRF function view), with anonymous reads that ``stored`` can answer answered
    by it instead."""
    throttle = AnonWindowThrottle()
    drf_headers = drf_headers_of(view)

    @functools.wraps(view)
    def entry(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if plain_anonymous_read(request):
            answer = stored(request, *args, **kwargs)
            # get_ident reads only request.META (the address, behind TRUSTED_PROXIES the forwarded one).
            if answer is not None and throttle.spend(throttle.get_ident(request)) is None:
                # Through DRF the session is read (to find the user), so Django adds Vary: Cookie:
                # rightly, as a session may see what anonymous readers do not.
                answer = with_headers(answer, drf_headers)
                patch_vary_headers(answer, ("Cookie",))
                return answer
        # Over the limit, this counts the request once more, which changes nothing: it stays over.
        return view(request, *args, **kwargs)

    return entry


def drf_headers_of(view: Callable[..., HttpResponse]) -> dict[str, str]:
    """The headers DRF gives every answer of ``view``; a viewset's route (a router's) has its
    actions bound first, as DRF binds them per request, so that ``Allow`` names them."""
    instance = view.cls(**getattr(view, "initkwargs", {}))  # type: ignore[attr-defined]
    actions = dict(getattr(view, "actions", None) or {})
    if "get" in actions:
        actions.setdefault("head", actions["get"])  # as DRF's viewset route does on each request
    for method, action in actions.items():
        setattr(instance, method, getattr(instance, action))
    return dict(instance.default_response_headers)


def with_headers(response: HttpResponse, headers: dict[str, str]) -> HttpResponse:
    """The headers DRF's ``finalize_response`` sets on every answer of a view (``Allow``, and
    ``Vary: Accept`` added to the response's own Vary)."""
    for key, value in headers.items():
        if key == "Vary":
            patch_vary_headers(response, cc_delim_re.split(value))
        else:
            response[key] = value
    return response
