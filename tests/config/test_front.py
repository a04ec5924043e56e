"""The buffering front (config.front) with a plain WSGI application: what Django receives, what a
client receives, and that neither a refused body nor a client that left holds a thread."""
import asyncio
import os
import subprocess
import sys
import threading

import pytest
from django.conf import settings

from config import front
from config.front import BufferedWSGI, wsgi_environ


def scope(path="/tasks/x/", method="GET", headers=(), client=("203.0.113.9", 51000)):
    return {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "query_string": b"a=1",
            "headers": [(name.lower(), value) for name, value in headers], "client": client,
            "server": ("127.0.0.1", 8000), "http_version": "1.1", "scheme": "http", "root_path": ""}


def receiver(*messages):
    queue = list(messages)

    async def receive():
        if not queue:
            raise AssertionError("the front read past the end of the request")
        return queue.pop(0)

    return receive


def never_read():
    async def receive():
        raise AssertionError("the front read a body it had refused")

    return receive


class Client:
    """What the client gets: the start message and the body, joined."""

    def __init__(self, fail_after=None, delay=0.0):
        self.start, self.body, self.sends, self.done = None, b"", 0, False
        self.fail_after, self.delay = fail_after, delay

    async def send(self, message):
        self.sends += 1
        if self.fail_after is not None and self.sends > self.fail_after:
            raise ConnectionResetError("the client left")
        if self.delay:
            await asyncio.sleep(self.delay)
        if message["type"] == "http.response.start":
            self.start = message
        else:
            self.body += message.get("body", b"")
            self.done = not message.get("more_body", False)


def serve(app, request_scope, receive, client, refused=lambda path, size: False, threads=2, spool_dir=None):
    bridge = BufferedWSGI(app, threads=threads, refused=refused, spool_bytes=1024, spool_dir=spool_dir)
    try:
        asyncio.run(asyncio.wait_for(bridge(request_scope, receive, client.send), 20))
    finally:
        bridge.pool.shutdown(wait=True)


class Recorder:
    """A WSGI application that records its environ, the body it read and the thread that ran it."""

    def __init__(self, body=b"ok", pieces=1, status="200 OK"):
        self.response, self.pieces, self.status = body, pieces, status
        self.environ, self.read, self.thread, self.closed_on = None, None, None, None

    def __call__(self, environ, start_response):
        self.environ, self.thread = environ, threading.get_ident()
        self.read = environ["wsgi.input"].read()
        start_response(self.status, [("Content-Type", "text/plain")])
        recorder = self

        class Answer:
            def __iter__(self):
                return iter([recorder.response] * recorder.pieces)

            def close(self):
                recorder.closed_on = threading.get_ident()

        return Answer()


def test_the_environ_names_the_peer_and_passes_forwarded_headers_as_headers_only():
    environ = wsgi_environ(scope(path="/tâches/", headers=[(b"X-Forwarded-For", b"198.51.100.1"),
                                                           (b"Accept", b"text/html"), (b"Accept", b"*/*"),
                                                           (b"Content-Type", b"text/plain")]), None)
    # The client's address is the socket's: whether X-Forwarded-For counts is Django's decision
    # (TRUSTED_PROXIES), as it was under the sync workers.
    assert environ["REMOTE_ADDR"] == "203.0.113.9"
    assert environ["HTTP_X_FORWARDED_FOR"] == "198.51.100.1"
    assert environ["HTTP_ACCEPT"] == "text/html,*/*"
    assert environ["CONTENT_TYPE"] == "text/plain"
    assert environ["PATH_INFO"] == "/tâches/".encode().decode("latin1")  # PEP 3333: bytes as latin-1
    assert (environ["QUERY_STRING"], environ["SERVER_PORT"]) == ("a=1", "8000")


def test_the_application_gets_the_whole_body_and_the_client_the_whole_answer(monkeypatch, tmp_path):
    app, client = Recorder(body=b"x" * 1000, pieces=3), Client()
    receive = receiver({"type": "http.request", "body": b"ab", "more_body": True},
                       {"type": "http.request", "body": b"c" * 5000, "more_body": False})
    spooled = []

    class Spool(front.SpooledTemporaryFile):
        def rollover(self):  # past spool_bytes: to a file in spool_dir (unnamed: where its fd points)
            super().rollover()
            spooled.append(os.path.dirname(os.readlink(f"/proc/self/fd/{self._file.fileno()}")))

    monkeypatch.setattr(front, "SpooledTemporaryFile", Spool)
    serve(app, scope(method="POST", headers=[(b"content-length", b"5002")]), receive, client, spool_dir=str(tmp_path))
    assert app.read == b"ab" + b"c" * 5000
    assert spooled == [str(tmp_path)]
    assert client.start["status"] == 200 and (b"content-type", b"text/plain") in client.start["headers"]
    assert client.body == b"x" * 3000 and client.done
    # Closed on the thread that ran it: Django's request_finished returns that thread's connection.
    assert app.closed_on == app.thread != threading.get_ident()


def test_a_refused_body_is_never_read_and_the_application_answers_from_content_length():
    app, client, asked = Recorder(status="413 Payload Too Large"), Client(), []

    def refused(path, size):
        asked.append((path, size))
        return True

    serve(app, scope(method="POST", headers=[(b"content-length", b"10000000000")]), never_read(), client, refused)
    assert asked == [("/tasks/x/", 10_000_000_000)]
    assert app.read == b"" and app.environ["CONTENT_LENGTH"] == "10000000000"
    assert client.start["status"] == 413 and client.done


def test_a_body_without_content_length_is_left_unread_as_django_leaves_it():
    app, client = Recorder(), Client()
    serve(app, scope(method="POST", headers=[(b"transfer-encoding", b"chunked")]), never_read(), client)
    assert app.read == b"" and "CONTENT_LENGTH" not in app.environ
    assert client.start["status"] == 200 and client.done


def test_a_client_that_leaves_before_its_body_ends_never_reaches_the_application():
    app = Recorder()
    receive = receiver({"type": "http.request", "body": b"ab", "more_body": True}, {"type": "http.disconnect"})
    serve(app, scope(method="POST", headers=[(b"content-length", b"100")]), receive, Client())
    assert app.environ is None


def test_a_large_answer_to_a_slow_reader_arrives_whole_and_in_order(monkeypatch):
    monkeypatch.setattr(front, "RESPONSE_BUFFER_BYTES", 256 * 1024)
    pieces = [bytes([i]) * 50_000 for i in range(40)]  # 2 MB, eight times the buffer

    def app(environ, start_response):
        start_response("200 OK", [])
        return iter(pieces)

    client = Client(delay=0.001)
    serve(app, scope(), receiver({"type": "http.request", "body": b""}), client)
    assert client.body == b"".join(pieces) and client.done


def test_a_client_that_leaves_mid_answer_frees_the_thread(monkeypatch):
    monkeypatch.setattr(front, "RESPONSE_BUFFER_BYTES", 64 * 1024)
    app = Recorder(body=b"y" * 100_000, pieces=50)  # 5 MB: the thread would wait for room forever
    serve(app, scope(), receiver({"type": "http.request", "body": b""}), Client(fail_after=2), threads=1)
    assert app.closed_on == app.thread


def test_a_head_request_gets_the_head_and_no_body():
    app, client = Recorder(body=b"page"), Client()
    serve(app, scope(method="HEAD"), receiver({"type": "http.request", "body": b""}), client)
    assert client.start["status"] == 200 and client.body == b"" and client.done
    assert app.closed_on == app.thread


def test_an_application_that_raises_gives_a_500():
    def app(environ, start_response):
        raise RuntimeError("boom")

    client = Client()
    serve(app, scope(), receiver({"type": "http.request", "body": b""}), client)
    assert client.start["status"] == 500 and client.done


@pytest.mark.parametrize("value", [b"12x", b"", b"-1"])
def test_a_content_length_that_is_not_a_number_is_not_checked(value):
    assert front.declared_length(scope(headers=[(b"content-length", value)])) is None


def test_the_served_application_refuses_to_start_without_allowed_hosts(tmp_path):
    """What gunicorn loads (config.asgi) keeps config.wsgi's refusal."""
    environ = {k: v for k, v in os.environ.items() if k not in ("ALLOWED_HOSTS", "DEBUG", "EXPBENCH_ENV")}
    environ.update(EXPBENCH_VAR_DIR=str(tmp_path / "var"), SECRET_KEY="x" * 50)
    refused = subprocess.run([sys.executable, "-c", "import config.asgi"], cwd=settings.BASE_DIR, env=environ,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0
    assert "ImproperlyConfigured: ALLOWED_HOSTS is not set" in refused.stderr
