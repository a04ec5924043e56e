"""A small HTTP client for the ExpBench API, standard library only (no Django), shared by the
command-line client and the integration tests.

Every path it calls is under :data:`API_PREFIX` (``/api/v1/``; build one with :func:`api_path`).
HTTP error statuses are answers, not exceptions: every call returns the status and the decoded
body. A list that comes in pages (``{"count", "next", "previous", "results"}``) is read to its
last page, unless the call asks for one page with ``limit`` or ``offset``; a task's board, in the
same envelope (``rows`` instead of ``results`` from a server of before the one envelope), is read
whole by :meth:`Client.board`, which answers it as the deprecated path did, under ``rows``. Only
a server that cannot be reached raises, as :class:`ServerUnreachable`, and a board or a list that
keeps changing while its pages are read, as :class:`BoardChanged` or :class:`ListChanged`. Reads
(GET) are retried with exponential backoff on connection errors and 5xx answers; writes never
are, so a submission is never sent twice. A file upload (:meth:`Client.submit_file`) is read
from disk while it is sent (:class:`UploadBody`), so its size does not matter to memory.

Why this module is long: one HTTP conversation (requests, retries, timeouts, streamed uploads
and downloads, and reading paged lists and boards as one consistent answer) shared by every
command; split, the retry and paging rules would be repeated per module.
"""
from __future__ import annotations

import gzip
import http.client
import json
import os
import select
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from .multipart import UploadBody, encode_multipart

# Seconds the server may take to answer (and between two pieces of an answer): a hung server
# costs a read this long, once; a timed-out read is not retried (``--timeout``).
DEFAULT_TIMEOUT = 30.0
# An upload is validated before the server answers; a large file takes longer than a read.
UPLOAD_TIMEOUT = 600.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 0.5
CHUNK = 64 * 1024
RETRIED_METHODS = frozenset({"GET", "HEAD"})
PAGE_PARAMETERS = frozenset({"limit", "offset"})
# A server that keeps sending "next" must not keep the client reading for ever.
MAX_PAGES = 10_000
# The most items the server puts on one page (its API_MAX_PAGE_SIZE): fewer round trips when
# the client reads a whole list or board; a server with a lower ceiling cuts it, and says so in
# its ``next`` links.
PAGE_SIZE = 1000
# A board that changed while its pages were read is read again from its first page, once.
BOARD_READS = 2
# So is a list: its offsets shifted, so an item would come twice or be skipped.
LIST_READS = 2

#: The API version this client speaks. The server keeps the unversioned ``/api/`` paths only as
#: deprecated aliases, for one release.
API_PREFIX = "/api/v1/"


def answered(sock: socket.socket) -> bool:
    """Whether the server has started to answer (or closed) while the request is still sent."""
    return bool(select.select([sock], [], [], 0)[0])


class EarlyAnswerMixin:
    """Sends a large body in chunks and stops as soon as the server answers: a server that
    refuses an upload from its size (413) answers before reading it and closes the connection,
    and a client that kept sending would get a broken pipe instead of the answer. Whatever the
    server sent is then read by ``getresponse`` as usual."""

    sock: socket.socket | None

    def send(self, data: Any) -> None:
        if not isinstance(data, (bytes, bytearray)) or len(data) <= CHUNK or self.sock is None:
            super().send(data)  # type: ignore[misc]  # the HTTPConnection it is mixed into
            return
        view = memoryview(data)
        for start in range(0, len(view), CHUNK):
            if answered(self.sock):
                return
            try:
                self.sock.sendall(view[start:start + CHUNK])
            except (BrokenPipeError, ConnectionResetError):
                return  # the server stopped reading: its answer, if any, is read next

    def endheaders(self, message_body: Any = None, *, encode_chunked: bool = False) -> None:
        """A streamed body (:class:`UploadBody`) is sent piece by piece after the request head,
        stopping at the first sign of an answer; closing it then closes the file, so a refused
        2 GB upload is not read to its end for nothing. Other bodies go the usual way."""
        if not isinstance(message_body, UploadBody):
            super().endheaders(message_body, encode_chunked=encode_chunked)  # type: ignore[misc]
            return
        super().endheaders()  # type: ignore[misc]  # the request head alone
        with closing(message_body.stream()) as pieces:
            for piece in pieces:
                if self.sock is None or answered(self.sock):
                    return
                try:
                    self.sock.sendall(piece)
                except (BrokenPipeError, ConnectionResetError):
                    return


class EarlyAnswerHTTPConnection(EarlyAnswerMixin, http.client.HTTPConnection):
    pass


class EarlyAnswerHTTPSConnection(EarlyAnswerMixin, http.client.HTTPSConnection):
    pass


class EarlyAnswerHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(EarlyAnswerHTTPConnection, req)


class EarlyAnswerHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(EarlyAnswerHTTPSConnection, req, context=self._context)  # type: ignore[attr-defined]


OPENER = urllib.request.build_opener(EarlyAnswerHTTPHandler, EarlyAnswerHTTPSHandler)


def api_path(*segments: str | int) -> str:
    """The path of an endpoint, each segment quoted so that a user-given name ("a/b") cannot
    reach another endpoint: ``api_path("tasks", "x", "quota") == "/api/v1/tasks/x/quota/"``."""
    return API_PREFIX + "".join(f"{quote(str(segment))}/" for segment in segments)


class ServerUnreachable(ConnectionError):
    """No HTTP answer: connection refused, DNS failure, timeout, or the connection broke.
    ``maybe_sent`` is true when the request could have reached the server before that."""

    def __init__(self, url: str, reason: str, *, maybe_sent: bool) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason
        self.maybe_sent = maybe_sent


class TimedOut(ServerUnreachable):
    """The server accepted the connection but did not answer within ``timeout`` seconds."""

    def __init__(self, url: str, timeout: float) -> None:
        super().__init__(url, f"no answer within {timeout:g} s", maybe_sent=True)
        self.timeout = timeout


def is_timeout(exc: BaseException) -> bool:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return isinstance(reason, (TimeoutError, socket.timeout))


@dataclass
class Response:
    status: int
    body: Any  # decoded JSON; the text itself when the answer is not JSON
    headers: Mapping[str, str] = field(default_factory=dict)
    is_json: bool = True

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def backoff_delays(retries: int, base: float = DEFAULT_BACKOFF) -> list[float]:
    """Seconds to wait before each retry: base, 2 base, 4 base, ..."""
    return [base * 2**attempt for attempt in range(max(0, retries))]


def describe_connection_error(exc: BaseException) -> tuple[str, bool]:
    """A short reason ("connection refused") and whether the request may have been received."""
    reason: Any = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused", False
    if isinstance(reason, socket.gaierror):
        return "host name not found", False
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return "timed out", True
    if isinstance(reason, ConnectionResetError):
        return "connection reset", True
    if isinstance(reason, http.client.RemoteDisconnected):
        return "the server closed the connection", True
    if isinstance(reason, ssl.SSLError):
        return f"TLS error: {reason.reason or reason}", False
    if isinstance(reason, http.client.IncompleteRead):
        return "the answer was cut off", True
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower(), True
    return str(reason) or type(reason).__name__, True


def is_page(body: Any) -> bool:
    """One page of a list (DRF's limit/offset pagination)."""
    return (isinstance(body, Mapping) and {"count", "next", "previous", "results"} <= body.keys()
            and isinstance(body["results"], list))


class BrokenDownload(Exception):
    """Reading (or inflating) an answer failed part way."""


class BoardChanged(Exception):
    """A task's board changed while its pages were read, on the second reading too: its rows
    would mix two versions of the board (duplicated or missing entries)."""

    def __init__(self, task: str, reads: int) -> None:
        super().__init__(f"the board of {task} changed while it was read ({reads} times)")
        self.task = task
        self.reads = reads


class ListChanged(Exception):
    """A list changed while its pages were read (an item was added or removed, so the offsets
    shifted), on the second reading too: its joined pages would hold an item twice or miss one."""

    def __init__(self, path: str, reads: int) -> None:
        super().__init__(f"the list {path} changed while it was read ({reads} times)")
        self.path = path
        self.reads = reads


def item_ids(items: list[Any]) -> list[Any]:
    """The ``id`` of each item that has one."""
    return [item["id"] for item in items if isinstance(item, Mapping) and "id" in item]


def board_items(body: Mapping[str, Any]) -> str:
    """Where a board page holds its rows: ``results``, the envelope of every list, or ``rows``
    on a server of before it (and on the deprecated unversioned path)."""
    return "results" if "results" in body else "rows"


def whole_board(answer: Response) -> Response:
    """A board read whole, its rows under ``rows`` as the deprecated path answered it (and as
    ``leaderboard --json`` always printed it), whichever envelope its pages came in."""
    body = answer.body
    if not answer.ok or not is_board_page(body) or "results" not in body:
        return answer
    renamed = {key: value for key, value in body.items() if key != "results"}
    return Response(answer.status, {**renamed, "rows": body["results"]}, answer.headers, answer.is_json)


def is_board_page(body: Any) -> bool:
    """One page of a task's board. A server from before pages answered the whole board without
    ``count`` and ``next``."""
    return (isinstance(body, Mapping) and {"count", "next"} <= body.keys()
            and isinstance(body.get(board_items(body)), list))


def board_version(page: Response) -> tuple[Any, ...]:
    """What every page of one version of a board has in common: its size, test set and order,
    and when it was computed (``Last-Modified``). The ``ETag`` differs from page to page (it
    covers the page's offset), so it cannot be compared across pages; see
    :meth:`Client.board_unchanged`."""
    body = page.body
    return (body.get("count"), body.get("test_set_version"), body.get("sort"), body.get("order"),
            page.headers.get("Last-Modified"))


def copy_answer(read: Callable[[int], bytes], sink: BinaryIO, *, gzipped: bool = False, expected: int | None = None,
                on_chunk: Callable[[int, int | None], None] | None = None) -> int:
    """Copy an answer into ``sink`` chunk by chunk, inflating gzip on the fly, so a 27 MB file is
    never held in memory. Returns the bytes written. Reading problems raise BrokenDownload; a
    write problem (disk full) is an OSError for the caller, since it is not the server's fault."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
    received = written = 0
    while True:
        try:
            chunk = read(CHUNK)
            if inflater is None:
                data = chunk
            else:
                data = inflater.decompress(chunk) if chunk else inflater.flush()
        except (OSError, http.client.HTTPException) as exc:
            raise BrokenDownload(describe_connection_error(exc)[0]) from None
        except zlib.error:
            raise BrokenDownload("the server sent gzip data that does not inflate") from None
        sink.write(data)
        written += len(data)
        if not chunk:
            break
        received += len(chunk)
        if on_chunk:
            on_chunk(received, expected)
    if inflater is not None and not inflater.eof:
        raise BrokenDownload("the gzip stream ended early")
    if expected is not None and received < expected:
        raise BrokenDownload(f"{received} of {expected} bytes arrived")
    return written


def decode_body(raw: bytes, content_encoding: str | None) -> tuple[Any, bool]:
    """(JSON value, True), or (text, False) when the answer is not JSON. An empty body is None."""
    if content_encoding and content_encoding.lower() == "gzip":
        raw = gzip.decompress(raw)
    if not raw.strip():
        return None, True
    try:
        return json.loads(raw), True
    except ValueError:
        return raw.decode("utf-8", errors="replace"), False


class Client:
    def __init__(self, base_url: str, token: str | None = None, timeout: float = DEFAULT_TIMEOUT, *,
                 retries: int = DEFAULT_RETRIES, backoff: float = DEFAULT_BACKOFF,
                 sleep: Callable[[float], None] = time.sleep):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep

    # low level ------------------------------------------------------------------------
    def build(self, method: str, path: str, *, json_body: Any = None, fields: Mapping[str, str] | None = None,
              files: Mapping[str, tuple[str, bytes]] | None = None, token: str | None = None,
              query: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None,
              stream: UploadBody | None = None) -> urllib.request.Request:
        headers = {"Accept": "application/json", "Accept-Encoding": "gzip", "User-Agent": "expbench-client",
                   **(headers or {})}
        token = token or self.token
        if token:
            headers["Authorization"] = f"Token {token}"
        data: Any = None
        if stream is not None:
            # The length is announced, so urllib sends no chunked encoding and the server can
            # refuse a body too large for it before reading it.
            data, headers["Content-Type"], headers["Content-Length"] = stream, stream.content_type, str(stream.length)
        elif json_body is not None:
            data = json.dumps(json_body).encode()
            headers["Content-Type"] = "application/json"
        elif fields is not None or files is not None:
            data, headers["Content-Type"] = encode_multipart(fields or {}, files or {})
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return urllib.request.Request(url, data=data, method=method, headers=headers)

    def open(self, req: urllib.request.Request, timeout: float | None = None) -> Any:
        """urlopen with the retry policy: returns an open response (2xx/3xx) or an HTTPError
        carrying a 4xx/5xx answer; raises ServerUnreachable when there is no answer at all."""
        retryable = req.get_method() in RETRIED_METHODS
        delays = backoff_delays(self.retries, self.backoff) if retryable else []
        for attempt in range(len(delays) + 1):
            try:
                return OPENER.open(req, timeout=timeout or self.timeout)
            except urllib.error.HTTPError as error:
                if error.code < 500 or attempt == len(delays):
                    return error
                error.close()
                reason = f"HTTP {error.code}"
            except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
                if is_timeout(exc):  # a server that hangs once hangs again: no retry
                    raise TimedOut(self.base_url, timeout or self.timeout) from None
                reason, maybe_sent = describe_connection_error(exc)
                if attempt == len(delays):
                    raise ServerUnreachable(self.base_url, reason, maybe_sent=maybe_sent) from None
            self.sleep(delays[attempt])
        raise AssertionError("unreachable: the loop returns or raises on its last attempt")

    def call(self, method: str, path: str, *, json_body: Any = None, fields: Mapping[str, str] | None = None,
             files: Mapping[str, tuple[str, bytes]] | None = None, token: str | None = None,
             query: Mapping[str, Any] | None = None, timeout: float | None = None,
             headers: Mapping[str, str] | None = None) -> Response:
        req = self.build(method, path, json_body=json_body, fields=fields, files=files, token=token, query=query,
                         headers=headers)
        response = self.read_all(self.open(req, timeout))
        # A query (or a link followed as it is) that names limit or offset asks for that one page.
        asked = set(query or {}) | set(urllib.parse.parse_qs(urllib.parse.urlsplit(path).query))
        if method == "GET" and response.ok and is_page(response.body) and not PAGE_PARAMETERS & asked:
            # Reading the first page again opens the same Request again, as open() does on retries.
            return self.read_other_pages(response, path, lambda: self.read_all(self.open(req, timeout)),
                                         token=token, timeout=timeout)
        return response

    def read_list(self, path: str, *, query: Mapping[str, Any] | None = None, token: str | None = None) -> Response:
        """Every item of a list endpoint, read :data:`PAGE_SIZE` items a page (the answer of
        :meth:`read_other_pages`); an answer that is not a page comes back as it is."""
        def read_first() -> Response:
            return self.call("GET", path, query={**(query or {}), "limit": PAGE_SIZE}, token=token)

        first = read_first()
        if first.ok and is_page(first.body):
            return self.read_other_pages(first, path, read_first, token=token, timeout=None)
        return first

    def read_other_pages(self, first: Response, path: str, read_first: Callable[[], Response], *,
                         token: str | None, timeout: float | None) -> Response:
        """The first page with the results of every page after it (``next`` becomes null). The
        pages must come from one version of the list: if a later page shows another ``count``
        or an item ``id`` already read, the list is read again from ``read_first()``, once, and
        a second change raises :class:`ListChanged` rather than answer a mix. An error on a
        later page (or on the first page read again) is the answer, as it would be for a single
        request."""
        for reading in range(LIST_READS):
            if reading:
                first = read_first()
                if not first.ok or not is_page(first.body):
                    return first
            answer = self.join_pages(first, token=token, timeout=timeout)
            if answer is not None:
                return answer
        raise ListChanged(path, LIST_READS)

    def join_pages(self, first: Response, *, token: str | None, timeout: float | None) -> Response | None:
        """One reading of the pages after ``first``, joined to it; None when a page shows that
        the list changed since ``first`` (another ``count``, or an item ``id`` seen before)."""
        results = list(first.body["results"])
        seen = set(item_ids(results))
        next_url = first.body["next"]
        for _ in range(MAX_PAGES):
            if not next_url:
                break
            page = self.read_all(self.open(self.build("GET", self.path_of(next_url), token=token), timeout))
            if not page.ok or not is_page(page.body):
                return page
            ids = item_ids(page.body["results"])
            if page.body["count"] != first.body["count"] or not seen.isdisjoint(ids):
                return None
            if not page.body["results"]:
                break
            seen.update(ids)
            results += page.body["results"]
            next_url = page.body["next"]
        body = {**first.body, "next": None, "previous": None, "results": results}
        return Response(first.status, body, first.headers, first.is_json)

    def path_of(self, url: str) -> str:
        """A link from the server as a path under ``base_url``: the request goes to the server
        this client was pointed at (a proxy may make the server name itself differently, e.g.
        http instead of https), so a token is never sent elsewhere."""
        link, base = urllib.parse.urlsplit(url), urllib.parse.urlsplit(self.base_url)
        path, prefix = link.path, base.path.rstrip("/")
        if prefix and (path == prefix or path.startswith(prefix + "/")):
            path = path[len(prefix):]
        return path + (f"?{link.query}" if link.query else "")

    def read_all(self, answer: Any) -> Response:
        """The whole answer of :meth:`open`, decoded."""
        try:
            raw = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            if is_timeout(exc):
                raise TimedOut(self.base_url, self.timeout) from None
            reason, _ = describe_connection_error(exc)
            raise ServerUnreachable(self.base_url, reason, maybe_sent=True) from None
        finally:
            answer.close()
        # Header names are case-insensitive; one spelling ("Retry-After") makes lookups simple.
        headers = {name.title(): value for name, value in answer.headers.items()} if answer.headers else {}
        try:
            body, is_json = decode_body(raw, headers.get("Content-Encoding"))
        except (OSError, EOFError, zlib.error):  # announced gzip that is not
            body, is_json = raw.decode("utf-8", errors="replace"), False
        status = answer.code if isinstance(answer, urllib.error.HTTPError) else answer.status
        return Response(status, body, headers, is_json)

    def request(self, method: str, path: str, *, json_body: Any = None, fields: Mapping[str, str] | None = None,
                files: Mapping[str, tuple[str, bytes]] | None = None, token: str | None = None) -> tuple[int, Any]:
        """(HTTP status, decoded JSON body or text). Never raises on HTTP errors."""
        response = self.call(method, path, json_body=json_body, fields=fields, files=files, token=token)
        return response.status, response.body

    def download(self, path: str, sink: BinaryIO, *, on_chunk: Callable[[int, int | None], None] | None = None,
                 token: str | None = None) -> Response:
        """Stream a GET answer into ``sink`` in chunks, decompressing gzip on the fly. On 200 the
        body is the number of bytes written; any other status comes back as from :meth:`call`."""
        answer = self.open(self.build("GET", path, token=token))
        if isinstance(answer, urllib.error.HTTPError) or answer.status != 200:
            return self.read_all(answer)
        gzipped = (answer.headers.get("Content-Encoding") or "").lower() == "gzip"
        length = answer.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        try:
            with answer:
                written = copy_answer(answer.read, sink, gzipped=gzipped, expected=expected, on_chunk=on_chunk)
        except BrokenDownload as exc:
            raise ServerUnreachable(self.base_url, f"the download broke off: {exc}", maybe_sent=True) from None
        return Response(200, written, {name.title(): value for name, value in answer.headers.items()})

    # task boards ------------------------------------------------------------------------
    def board(self, task: str, *, sort: str | None = None, order: str | None = None) -> Response:
        """A task's whole board, as one answer: the first page's fields with every row, ``next``
        and ``previous`` null (what the deprecated unversioned path answered). Its pages, read
        :data:`PAGE_SIZE` rows at a time, must all come from one version of the board: if it
        changes in between, it is read again from the start, and a second change raises
        :class:`BoardChanged` rather than answer a mix. An error on any page is the answer."""
        query = {"limit": PAGE_SIZE, **{name: value for name, value in (("sort", sort), ("order", order)) if value}}
        path = api_path("tasks", task, "leaderboard")
        for _ in range(BOARD_READS):
            answer = self.read_board(path, query)
            if answer is not None:
                return whole_board(answer)
        raise BoardChanged(task, BOARD_READS)

    def read_board(self, path: str, query: Mapping[str, Any]) -> Response | None:
        """One reading of a board, page after page; None when the board changed meanwhile."""
        first = self.call("GET", path, query=query)
        if not first.ok or not is_board_page(first.body) or not first.body["next"]:
            return first  # an error, a board from a server without pages, or a board of one page
        items = board_items(first.body)
        rows, next_url = list(first.body[items]), first.body["next"]
        for _ in range(MAX_PAGES):
            if not next_url:
                break
            page = self.call("GET", self.path_of(next_url))
            if not page.ok or not is_board_page(page.body):
                return page
            if board_version(page) != board_version(first):
                return None
            if not page.body.get(items):
                break
            rows += page.body[items]
            next_url = page.body["next"]
        if len(rows) != first.body["count"]:
            return None
        unchanged = self.board_unchanged(path, query, first)
        if isinstance(unchanged, Response):
            return unchanged
        if not unchanged:
            return None
        body = {**first.body, "next": None, "previous": None, items: rows}
        return Response(first.status, body, first.headers, first.is_json)

    def board_unchanged(self, path: str, query: Mapping[str, Any], first: Response) -> bool | Response:
        """Whether the board is still the version of its first page, asked with that page's
        ``ETag`` (a 304 says yes): the pages in between compared equal on what they show of
        their version, but a change that keeps the count within the same second would not show
        there. True when the server sends no ETag; an error answer is returned as it is."""
        etag = first.headers.get("Etag")
        if not etag:
            return True
        check = self.call("GET", path, query=query, headers={"If-None-Match": etag})
        if check.status == 304:
            return True
        return False if check.ok else check

    # the API ---------------------------------------------------------------------------
    def obtain_token(self, username: str, password: str) -> tuple[int, Any]:
        return self.request("POST", api_path("auth", "token"), json_body={"username": username, "password": password})

    def submit(self, task: str, content: bytes, *, method_name: str, filename: str = "predictions.json",
               description: str = "", url: str = "", public: bool | None = None,
               kind: str = "predictions", declarations: Mapping[str, str] | None = None) -> tuple[int, Any]:
        """kind: predictions, skills (span tasks), code (QUACKIE tracks) or model. public: None
        leaves it to the account's setting on the server (private for new accounts)."""
        response = self.submit_response(task, content, method_name=method_name, filename=filename,
                                        description=description, url=url, public=public, kind=kind,
                                        declarations=declarations)
        return response.status, response.body

    def submit_response(self, task: str, content: bytes, *, method_name: str, filename: str = "predictions.json",
                        description: str = "", url: str = "", public: bool | None = None,
                        kind: str = "predictions", declarations: Mapping[str, str] | None = None) -> Response:
        fields = upload_fields(method_name=method_name, description=description, url=url, public=public, kind=kind,
                               declarations=declarations)
        return self.call("POST", api_path("tasks", task, "submissions"), fields=fields,
                         files={"file": (filename, content)}, timeout=max(self.timeout, UPLOAD_TIMEOUT))

    def submit_file(self, task: str, path: str | os.PathLike[str], *, method_name: str, filename: str | None = None,
                    description: str = "", url: str = "", public: bool | None = None, kind: str = "predictions",
                    declarations: Mapping[str, str] | None = None,
                    on_progress: Callable[[int, int], None] | None = None) -> Response:
        """Upload the file at ``path``, streamed from disk (:class:`UploadBody`): the client's
        memory does not grow with the file. Never retried, like every write."""
        fields = upload_fields(method_name=method_name, description=description, url=url, public=public, kind=kind,
                               declarations=declarations)
        body = UploadBody(fields, "file", path, filename=filename, on_progress=on_progress)
        return self.upload(api_path("tasks", task, "submissions"), body)

    def upload(self, path: str, body: UploadBody, *, token: str | None = None) -> Response:
        """POST a streamed body; the answer as from :meth:`call`. Raises
        ``multipart.UploadUnreadable`` when the file cannot be read to its end."""
        request = self.build("POST", path, stream=body, token=token)
        return self.read_all(self.open(request, max(self.timeout, UPLOAD_TIMEOUT)))

    def submission(self, submission_id: int) -> tuple[int, Any]:
        return self.request("GET", api_path("submissions", submission_id))

    def leaderboard(self, task: str) -> tuple[int, Any]:
        """The whole board (:meth:`board`)."""
        response = self.board(task)
        return response.status, response.body


def upload_fields(*, method_name: str, description: str = "", url: str = "", public: bool | None = None,
                  kind: str = "predictions", declarations: Mapping[str, str] | None = None) -> dict[str, str]:
    """The form fields of an upload besides the file. ``public`` is sent only when the user chose:
    absent, the server applies the account's default visibility (private for new accounts).
    ``declarations`` (``dev_set_use``, ``external_data``, ``code_url``, ``paper_url``): those
    given a value are sent; the server takes an absent one as "none declared"."""
    fields = {"method_name": method_name, "kind": kind}
    if public is not None:
        fields["public"] = "true" if public else "false"
    if description:
        fields["description"] = description
    if url:
        fields["url"] = url
    fields.update({name: value for name, value in (declarations or {}).items() if value})
    return fields


def quote(segment: str) -> str:
    """A user-given name as one path segment, so "a/b" cannot reach another endpoint."""
    return urllib.parse.quote(str(segment), safe="")
