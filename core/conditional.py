"""Conditional GET (RFC 9110, section 13): answers that carry an ``ETag`` and ``Last-Modified``,
a ``304 Not Modified`` without a body when the client already holds the current copy, and how
the OpenAPI schema documents both.

For an operation that can answer 304, write its schema as

    @extend_schema(responses={200: TheSerializer, 304: NOT_MODIFIED}, parameters=CONDITIONAL_HEADERS)

``NOT_MODIFIED`` is the 304 (no body, so no content type); ``CONDITIONAL_HEADERS`` are the
request headers that ask for it and the validators sent with the 200 and the 304."""
import hashlib
import os
import re
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from django.core.cache import cache
from django.http import FileResponse, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.cache import get_conditional_response, patch_vary_headers
from django.utils.http import http_date, quote_etag
from django.utils.text import compress_string
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from .recent import RecentlyUsed

#: An answer, whole or streamed (a stored file).
AnyResponse = TypeVar("AnyResponse", bound=HttpResponseBase)


def strong_etag(*parts: object) -> str:
    """A strong ETag (quoted) from whatever identifies the representation's bytes."""
    return quote_etag(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:32])


def with_validators(response: AnyResponse, etag: str, last_modified: datetime | None = None, *,
                    private: bool = False) -> AnyResponse:
    """``ETag`` (and ``Last-Modified``), and ask caches to check back each time (a check costs a
    304). ``private``: only the client may keep it (e.g. what only staff may see)."""
    response["ETag"] = etag
    if last_modified is not None:
        response["Last-Modified"] = http_date(last_modified.timestamp())
    response["Cache-Control"] = "private, no-cache" if private else "no-cache"
    return response


def unchanged(request: HttpRequest, etag: str, last_modified: datetime | None = None, *,
              private: bool = False) -> HttpResponse | None:
    """The 304 when the client's copy is current (``If-None-Match``, else ``If-Modified-Since``),
    else None. The 304 carries the validators the 200 would have (RFC 9110, 15.4.5), so that a
    client and any cache on the way keep a current copy. Django's weak comparison for
    ``If-None-Match`` also matches the ``W/`` form GZipMiddleware gives a compressed answer."""
    answer = get_conditional_response(request, etag=etag,
                                      last_modified=int(last_modified.timestamp()) if last_modified else None)
    return None if answer is None else with_validators(answer, etag, last_modified, private=private)


ACCEPTS_GZIP = re.compile(r"\bgzip\b")


def stored_response(request: HttpRequest, key: str, render: Callable[[], HttpResponse], *, seconds: int,
                    content_type: str) -> HttpResponse:
    """The answer stored in the shared cache under ``key`` (which must name everything the bytes
    depend on: an ETag), rendered by ``render`` on a miss (kept only if it is a 200). Stored plain
    and gzipped, so that neither a hit nor a client that accepts gzip costs a compression: the
    page of a 1,000-entry board takes longer to compress than to serve. The gzipped copy has no
    random padding against BREACH: a stored answer is the same for everyone and holds no secret."""
    answer = stored_answer(request, key, content_type=content_type)
    if answer is not None:
        return answer
    response = render()
    if response.status_code != 200:
        return response
    packed = compress_string(response.content)
    cache.set_many({f"{key}:plain": response.content, f"{key}:gzip": packed}, seconds)
    recent_bodies.keep(f"{key}:gzip", packed)
    return _encoded(packed, content_type) if _accepts_gzip(request) else response


def stored_answer(request: HttpRequest, key: str, *, content_type: str) -> HttpResponse | None:
    """The answer ``stored_response`` kept under ``key``, in the encoding the client accepts, or
    None if there is none (yet)."""
    gzipped = _accepts_gzip(request)
    name = f"{key}:{'gzip' if gzipped else 'plain'}"
    body = recent_bodies.get(name)
    if body is None:
        body = cache.get(name)
        if body is None:
            return None
        recent_bodies.keep(name, body)
    if gzipped:
        return _encoded(body, content_type)
    response = HttpResponse(body, content_type=content_type)
    patch_vary_headers(response, ("Accept-Encoding",))
    return response


class RecentBodies(RecentlyUsed[bytes]):
    """The stored answers this process served last, up to ``budget`` bytes: a hit costs a
    dictionary lookup instead of the shared cache's file read and decompression (a fifth of a
    stored page's time in the web worker). A key names everything its bytes depend on (an
    ETag), so a kept body is never out of date; only ``manage.py restore``, which needs an empty
    database and a fresh start of every process (docs/operations.md), clears the shared cache
    under keys that may come back with other bytes."""

    def __init__(self, budget: int) -> None:
        super().__init__(max_weight=budget, weight=len)
        self.budget = budget

    def keep(self, name: str, body: bytes) -> None:
        if len(body) <= self.budget // 8:  # a big body would push out many small ones
            self.put(name, body)


#: 16 MiB per process: at 2–10 kB gzipped per page, thousands of pages.
recent_bodies = RecentBodies(16 * 1024 * 1024)


def _accepts_gzip(request: HttpRequest) -> bool:
    return bool(ACCEPTS_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))


def _encoded(packed: bytes, content_type: str) -> HttpResponse:
    response = HttpResponse(packed, content_type=content_type)
    patch_vary_headers(response, ("Accept-Encoding",))
    response["Content-Encoding"] = "gzip"  # GZipMiddleware leaves an answer that has an encoding alone
    return response


def stored_file_answer(request: HttpRequest, stem: Path, build: Callable[[], bytes], *, content_type: str,
                       streamed: bool = False) -> HttpResponseBase:
    """An answer too large for the shared cache (the inputs of a test set: up to tens of MB),
    built once by ``build`` and kept on disk as ``<stem>.plain`` and ``<stem>.gz`` (``stem``
    must name everything the bytes depend on: an ETag). Later answers give the file the client
    accepts without encoding or compressing anything. ``streamed``: the file is streamed as a
    static file is served (its length known ahead, through the server's file wrapper: gunicorn
    hands it to ``sendfile``), never read here; else its bytes are the answer's content. Each
    file is written under a temporary name and renamed, so a reader never sees half of one; two
    first requests at once both build it, and either's copy is the same."""
    packed_path, plain_path = stem.with_name(stem.name + ".gz"), stem.with_name(stem.name + ".plain")
    gzipped = _accepts_gzip(request)
    wanted = packed_path if gzipped else plain_path
    try:
        handle = wanted.open("rb")
    except FileNotFoundError:
        plain = build()
        packed = compress_string(plain)
        stem.parent.mkdir(parents=True, exist_ok=True)
        for path, data in ((plain_path, plain), (packed_path, packed)):
            _write_atomically(path, data)
        handle = wanted.open("rb")
    response: HttpResponseBase
    if streamed:
        response = FileResponse(handle, content_type=content_type)
        del response["Content-Disposition"]  # FileResponse names the stored file; the caller names the download
    else:
        with handle:
            response = HttpResponse(handle.read(), content_type=content_type)
    patch_vary_headers(response, ("Accept-Encoding",))
    if gzipped:
        response["Content-Encoding"] = "gzip"  # GZipMiddleware leaves an answer that has an encoding alone
    return response


def _write_atomically(path: Path, data: bytes) -> None:
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def weaken_for_gzip(response: AnyResponse) -> AnyResponse:
    """A gzipped answer's ETag is weak (``W/``), as GZipMiddleware makes it: the bytes differ
    from the plain answer's; ``If-None-Match`` compares weakly, so either form matches."""
    etag = response.get("ETag", "")
    if response.get("Content-Encoding") == "gzip" and etag.startswith('"'):
        response["ETag"] = "W/" + etag
    return response


# -- OpenAPI --------------------------------------------------------------------------------
#: The 304 of an operation that answers conditional GETs: no body.
NOT_MODIFIED = OpenApiResponse(
    description="Not Modified: the copy named by If-None-Match (or, without it, dated by If-Modified-Since) "
                "is current. No body; the ETag and Last-Modified headers are those of the current answer.")

#: The request headers of a conditional GET and the validators of its answers (200 and 304).
CONDITIONAL_HEADERS = [
    OpenApiParameter("If-None-Match", OpenApiTypes.STR, OpenApiParameter.HEADER,
                     description="ETag(s) of copies the client holds: 304 when one of them is current."),
    OpenApiParameter("If-Modified-Since", OpenApiTypes.STR, OpenApiParameter.HEADER,
                     description="HTTP date of the client's copy: 304 when nothing changed since "
                                 "(ignored when If-None-Match is sent)."),
    OpenApiParameter("ETag", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200, 304],
                     description="Validator of the answer, for If-None-Match; W/-prefixed when the answer is gzipped."),
    OpenApiParameter("Last-Modified", OpenApiTypes.STR, OpenApiParameter.HEADER, response=[200, 304],
                     description="When the answer last changed (HTTP date), for If-Modified-Since."),
]
