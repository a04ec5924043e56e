"""Headers a browser enforces on the site's behalf: a Content-Security-Policy on every answer,
and read-only CORS on the public API.

The policy allows scripts, styles, images and fonts from the site itself only, with no inline
code (the pages keep theirs in static files, so an injected ``<script>`` or ``style``
attribute does nothing), no plugins, no framing and forms posting only to the site.

CORS: a page on another origin may read the API with GET or HEAD (``Access-Control-Allow-Origin:
*``) but without credentials: browsers then send neither cookies nor, since the preflight does
not allow the ``Authorization`` header, a token, so only what anyone may read is readable, and
a cross-origin write is never allowed.

Framing: the routes in ``FRAMABLE_ROUTES`` (a board made to be embedded, leaderboards/embeds.py)
are the exception to "no framing": their policy says ``frame-ancestors *`` and they carry no
``X-Frame-Options``, so any site may show them in an ``<iframe>``. They have no form, no action
and nothing of the visitor's session, which is what framing could abuse. Every other answer
keeps the site's policy.
"""
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from core.api_paths import is_api_path

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Request headers a cross-origin read may send (conditional GETs); never Authorization or Cookie.
CORS_REQUEST_HEADERS = "Accept, Accept-Language, Content-Language, If-None-Match, If-Modified-Since, X-Request-ID"
# Response headers a cross-origin reader may see beyond the safe-listed ones.
CORS_EXPOSED_HEADERS = "ETag, Last-Modified, Link, Retry-After, Deprecation, X-Request-ID"
PREFLIGHT_MAX_AGE = "86400"
#: Route names other sites may frame.
FRAMABLE_ROUTES = frozenset({"task-embed"})


def framable_policy(policy: str) -> str:
    """``policy`` with its ``frame-ancestors`` directive replaced by ``frame-ancestors *``."""
    directives = [part.strip() for part in policy.split(";") if part.strip()]
    kept = [part for part in directives if part.split()[0].lower() != "frame-ancestors"]
    return "; ".join([*kept, "frame-ancestors *"])


def framable(request: HttpRequest) -> bool:
    match = getattr(request, "resolver_match", None)
    return match is not None and match.url_name in FRAMABLE_ROUTES


def is_preflight(request: HttpRequest) -> bool:
    return request.method == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in request.META


def preflight_answer(request: HttpRequest) -> HttpResponse:
    """A preflight's answer: allowed for reads; for anything else an answer without the CORS
    headers, which the browser takes as a refusal."""
    response = HttpResponse(status=204)
    if request.META["HTTP_ACCESS_CONTROL_REQUEST_METHOD"].upper() in READ_METHODS:
        response["Access-Control-Allow-Origin"] = "*"
        response["Access-Control-Allow-Methods"] = "GET, HEAD, OPTIONS"
        response["Access-Control-Allow-Headers"] = CORS_REQUEST_HEADERS
        response["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
    return response


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = is_api_path(request)
        if api and is_preflight(request):
            response = preflight_answer(request)
        else:
            response = self.get_response(request)
            if api and request.method in READ_METHODS:
                response["Access-Control-Allow-Origin"] = "*"
                response["Access-Control-Expose-Headers"] = CORS_EXPOSED_HEADERS
        if framable(request):
            # Django's clickjacking middleware, inside this one, set DENY.
            del response["X-Frame-Options"]
            if settings.CONTENT_SECURITY_POLICY and "Content-Security-Policy" not in response:
                response["Content-Security-Policy"] = framable_policy(settings.CONTENT_SECURITY_POLICY)
        if settings.CONTENT_SECURITY_POLICY and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY
        return response
