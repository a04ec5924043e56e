"""The web front: a request reaches Django only once it has fully arrived.

gunicorn's sync workers read a request on the thread that then runs it, so a client that sends
its headers a byte at a time holds a worker for as long as it likes: two such clients (16 bytes
in all) kept every visitor waiting. Here gunicorn's asyncio worker (``-k asgi``) reads headers
and bodies on its event loop, where a slow connection costs a socket and a coroutine, and this
bridge hands each complete request to Django's ordinary WSGI application on a small fixed pool of
threads. The threads are kept for the life of the process, so each keeps its persistent database
connection, as a sync worker does (Django's own ASGI handler starts a thread per request).

* Bodies are read into a spooled temporary file (memory up to ``FILE_UPLOAD_MAX_MEMORY_SIZE``,
  then a file in ``FILE_UPLOAD_TEMP_DIR``, where Django spools uploads too) before a thread is
  involved. A body whose ``Content-Length`` is over its address's
  limit is not read at all: Django gets an empty stream and answers 413 from the header
  (``config.body_limits``), as it did before. Nor is a body without ``Content-Length``
  (chunked), which Django never reads either.
* Responses go out through the event loop: the thread hands the answer over in pieces of
  ``RESPONSE_PIECE_BYTES`` and goes on to the next request unless more than
  ``RESPONSE_BUFFER_BYTES`` wait for a slow reader, so a slow download holds a thread only for
  answers larger than that.
* The response is closed on the thread that made it, which sends Django's ``request_finished``
  (database connections checked and returned, as under WSGI).
"""
import asyncio
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from tempfile import SpooledTemporaryFile
from typing import IO, Any

log = logging.getLogger("expbench.front")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# A thread stops and waits while more than this many bytes of its answer wait to be written.
RESPONSE_BUFFER_BYTES = 4 * 1024 * 1024
# Small writes (a file served in 8 KiB blocks) are joined into pieces of this size.
RESPONSE_PIECE_BYTES = 64 * 1024
_END = object()


def wsgi_environ(scope: Scope, body: IO[bytes]) -> dict[str, Any]:
    """The WSGI environ (PEP 3333) of an ASGI HTTP scope: paths as latin-1 strings of their bytes,
    repeated headers joined with commas, as gunicorn's own WSGI workers do."""
    script_name = scope.get("root_path", "").encode("utf8").decode("latin1")
    path_info = scope["path"].encode("utf8").decode("latin1")
    if script_name and path_info.startswith(script_name):
        path_info = path_info[len(script_name):]
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path_info,
        "QUERY_STRING": scope.get("query_string", b"").decode("latin1"),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] if server[1] is not None else 80),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if scope.get("client"):
        environ["REMOTE_ADDR"] = str(scope["client"][0])
        environ["REMOTE_PORT"] = str(scope["client"][1])
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin1").upper().replace("-", "_")
        key = name if name in ("CONTENT_LENGTH", "CONTENT_TYPE") else f"HTTP_{name}"
        value = raw_value.decode("latin1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            text = value.decode("latin1").strip()
            return int(text) if text.isdigit() else None
    return None


class ResponseRelay:
    """Carries one answer from the thread that makes it to the event loop that writes it.

    The thread calls ``start`` and ``write``; a coroutine (``send_all``) sends the pieces in order.
    The thread waits only while more than ``RESPONSE_BUFFER_BYTES`` are queued; a client that
    left makes every later piece be dropped, so the thread never waits on a closed connection."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, with_body: bool = True) -> None:
        self.loop = loop
        # HEAD: the application's body is read and dropped here (RFC 9110 section 9.3.2), as
        # gunicorn's WSGI workers do, instead of gunicorn dropping it with a warning per request.
        self.with_body = with_body
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.queued = 0
        self.room = threading.Condition()
        self.gone = False
        self.head: Message | None = None
        self.pending = bytearray()

    # The thread's side ----------------------------------------------------------------
    def start_response(self, status: str, headers: list[tuple[str, str]],
                       exc_info: Any = None) -> Callable[[bytes], None]:
        if self.head is not None and self.head.get("sent") and exc_info:
            raise exc_info[1].with_traceback(exc_info[2])
        self.head = {
            "type": "http.response.start",
            "status": int(status.split(" ", 1)[0]),
            "headers": [(name.lower().encode("latin1"), value.encode("latin1")) for name, value in headers],
        }
        return self.write

    def write(self, data: bytes) -> None:
        self._send_head()
        if not self.with_body:
            return
        self.pending += data
        if len(self.pending) >= RESPONSE_PIECE_BYTES:
            self._put_piece()

    def finish(self) -> None:
        self._send_head()
        if self.pending:
            self._put_piece()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, _END)

    def fail(self) -> None:
        """The application raised before or while answering: a plain 500 if nothing was sent."""
        if self.head is None or not self.head.get("sent"):
            self.head = {"type": "http.response.start", "status": 500,
                         "headers": [(b"content-type", b"text/plain; charset=utf-8")]}
            self.pending = bytearray(b"Internal server error")
        self.finish()

    def _send_head(self) -> None:
        if self.head is None:
            raise RuntimeError("the application wrote before calling start_response")
        if not self.head.get("sent"):
            self.head["sent"] = True
            message = {key: value for key, value in self.head.items() if key != "sent"}
            self.loop.call_soon_threadsafe(self.queue.put_nowait, message)

    def _put_piece(self) -> None:
        piece = bytes(self.pending)
        self.pending = bytearray()
        with self.room:
            self.room.wait_for(lambda: self.gone or self.queued < RESPONSE_BUFFER_BYTES)
            if self.gone:
                return
            self.queued += len(piece)
        self.loop.call_soon_threadsafe(self.queue.put_nowait, piece)

    # The event loop's side ------------------------------------------------------------
    async def send_all(self, send: Send) -> None:
        while (item := await self.queue.get()) is not _END:
            if self.gone:
                continue
            try:
                if isinstance(item, bytes):
                    await send({"type": "http.response.body", "body": item, "more_body": True})
                else:
                    await send(item)
            except OSError:
                self.went_away()
                continue
            if isinstance(item, bytes):
                with self.room:
                    self.queued -= len(item)
                    self.room.notify_all()
        if not self.gone:
            try:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            except OSError:
                self.went_away()

    def went_away(self) -> None:
        with self.room:
            self.gone = True
            self.room.notify_all()


def run_wsgi(app: WSGIApp, environ: dict[str, Any], relay: ResponseRelay) -> None:
    """Runs on a pool thread: the whole Django request, the response closed on this thread."""
    result = None
    try:
        result = app(environ, relay.start_response)
        for chunk in result:
            if chunk:
                relay.write(chunk)
    except Exception:
        log.exception("the application failed on %s %s", environ["REQUEST_METHOD"], environ["PATH_INFO"])
        relay.fail()
        return
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    relay.finish()


class BufferedWSGI:
    """An ASGI application that runs a WSGI application on ``threads`` threads, each request once
    it has arrived in full. ``refused(path, size)`` says whether a body of ``size`` bytes is over
    the address's limit; it runs on a pool thread (it may read the database)."""

    def __init__(self, app: WSGIApp, *, threads: int, refused: Callable[[str, int], bool],
                 spool_bytes: int = 5 * 1024 * 1024, spool_dir: str | None = None) -> None:
        self.app = app
        self.refused = refused
        self.spool_bytes = spool_bytes
        self.spool_dir = spool_dir
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="wsgi")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
        elif scope["type"] == "http":
            await self.http(scope, receive, send)
        else:  # WebSocket: nothing here speaks it
            await send({"type": "websocket.close", "code": 1000})

    async def lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.pool.shutdown(wait=False, cancel_futures=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        size = declared_length(scope)
        with SpooledTemporaryFile(max_size=self.spool_bytes, dir=self.spool_dir) as body:
            refused = False
            if size:
                refused = await loop.run_in_executor(self.pool, self.refused, scope["path"], size)
            # Only a body that Django will read is read: one announced by Content-Length, within
            # its limit. A refused one is left unread (the application answers 413 from
            # Content-Length), and so is one without Content-Length (chunked), which Django
            # ignores too: buffering it would have no bound.
            if size is not None and not refused and not await self.read_body(receive, body):
                return  # the client left before its request was complete
            body.seek(0)
            relay = ResponseRelay(loop, with_body=scope["method"] != "HEAD")
            sender = asyncio.ensure_future(relay.send_all(send))
            try:
                await loop.run_in_executor(self.pool, run_wsgi, self.app, wsgi_environ(scope, body), relay)
            except BaseException:
                # Cancelled (the worker stops) or the pool is closed: a thread still answering
                # drops what is left instead of waiting for a writer that is gone.
                relay.went_away()
                sender.cancel()
                raise
            await sender

    @staticmethod
    async def read_body(receive: Receive, body: IO[bytes]) -> bool:
        """The request's body into ``body``; False when the client disconnected first."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return False
            body.write(message.get("body", b""))
            if not message.get("more_body"):
                return True
