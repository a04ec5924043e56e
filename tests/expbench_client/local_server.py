"""A stand-in HTTP server on localhost for client tests: a handler class answers JSON, ``serve``
runs it for the length of a test, ``page`` cuts a list into the server's limit/offset pages."""
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit


class JsonHandler(BaseHTTPRequestHandler):
    def answer(self, status, payload, headers=None):
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def query(self):
        """The request's query parameters, {name: last value}."""
        return {name: values[-1] for name, values in parse_qs(urlsplit(self.path).query).items()}

    def log_message(self, *args):  # keep the test output clean
        pass


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """The server's base URL (http://127.0.0.1:<port>) while it runs ``handler``."""
    with running(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as url:
        yield url


@contextmanager
def running(httpd: HTTPServer) -> Iterator[str]:
    """The base URL of ``httpd`` (bound to a port on 127.0.0.1) while it serves in a thread."""
    # A short poll interval: shutdown() waits for the loop to notice, up to one interval.
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


#: The most items a page holds on the real server (API_MAX_PAGE_SIZE).
MAX_PAGE_SIZE = 1000


def page(items, path, query, *, key="results", default_limit=100, ceiling=MAX_PAGE_SIZE, **fields):
    """One page of ``items`` as /api/v1/ answers it: ``limit`` (cut to ``ceiling``) and ``offset``
    from ``query``, and ``next``/``previous`` links that keep the other parameters. The links name
    the server https://public.example, as a server behind a proxy may: the client must still ask
    the server it was pointed at."""
    limit = min(ceiling, int(query.get("limit", default_limit)))
    offset = int(query.get("offset", 0))
    kept = {name: value for name, value in query.items() if name not in ("limit", "offset")}

    def link(at):
        return f"https://public.example{path}?{urlencode({**kept, 'limit': limit, 'offset': at})}"

    return {**fields, "count": len(items), "next": link(offset + limit) if offset + limit < len(items) else None,
            "previous": link(max(0, offset - limit)) if offset else None, key: items[offset:offset + limit]}
