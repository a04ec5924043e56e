"""Slow clients against the real server (gunicorn started as scripts/run.sh starts it, real
sockets): connections that send their header or their body a byte at a time are held open while
a normal visitor's board requests all answer, and a body over its limit is still refused with 413
before the client has sent a byte of it."""
import http.client
import socket
import threading

import pytest

SLOW_HEADERS = 12  # more than the front's threads (2 processes x 4): none of them may be taken
SLOW_BODIES = 6


def open_slow(port, first_bytes):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(first_bytes)
    return sock


def trickle(sockets, stop):
    """One more byte on every slow connection each 0.2 s, until ``stop``."""
    while not stop.wait(0.2):
        for sock in sockets:
            sock.sendall(b"a")


def board_page(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/tasks/expmrc-squad/", headers={"Accept-Encoding": "gzip"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


@pytest.fixture
def slow_connections(embedded_stack):
    port = embedded_stack.port
    headers = [open_slow(port, b"GET /tasks/expmrc-squad/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ")
               for _ in range(SLOW_HEADERS)]
    bodies = [open_slow(port, b"POST /api/v1/auth/token/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              b"Content-Type: application/json\r\nContent-Length: 4000\r\n\r\n{")
              for _ in range(SLOW_BODIES)]
    stop = threading.Event()
    sender = threading.Thread(target=trickle, args=(headers + bodies, stop), daemon=True)
    sender.start()
    try:
        yield headers + bodies
    finally:
        stop.set()
        sender.join(timeout=5)
        for sock in headers + bodies:
            sock.close()


def test_slow_connections_do_not_keep_a_visitor_waiting(embedded_stack, slow_connections):
    embedded_stack.board("expmrc-squad")  # stored before the slow clients came
    statuses = [board_page(embedded_stack.port) for _ in range(20)]
    # A request that waited behind the slow connections would have raised socket.timeout (10 s).
    assert statuses == [200] * 20
    status, body = embedded_stack.request("GET", "/api/v1/tasks/expmrc-squad/leaderboard/")
    assert status == 200, body
    # The slow connections were held open all along, not dropped to make room.
    for sock in slow_connections:
        sock.sendall(b"a")


def test_a_body_over_its_limit_is_refused_before_it_is_sent(embedded_stack):
    with socket.create_connection(("127.0.0.1", embedded_stack.port), timeout=10) as sock:
        sock.sendall(b"POST /api/v1/tasks/expmrc-squad/submissions/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 10000000000\r\n\r\n")
        # Not one byte of the 10 GB body is sent (over even a model bundle's limit): the answer comes from Content-Length alone
        # (a server waiting for the body would let recv time out after 10 s).
        answer = sock.recv(65536)
        while answer and b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"application/problem+json" in answer.lower()


def test_answers_and_bodies_pass_the_front_whole(embedded_stack):
    conn = http.client.HTTPConnection("127.0.0.1", embedded_stack.port, timeout=10)
    try:
        conn.request("GET", "/", headers={"Accept-Encoding": "gzip"})
        page = conn.getresponse()
        page.read()
        # The security headers and the request id that Django sets reach the client.
        assert page.status == 200
        assert page.getheader("Content-Security-Policy") and page.getheader("X-Request-ID")
        assert page.getheader("X-Content-Type-Options") == "nosniff"
        conn.request("HEAD", "/")
        head = conn.getresponse()
        assert head.status == 200 and head.read() == b""
    finally:
        conn.close()
    # A request body arrives whole: a token is answered for the posted credentials.
    token = embedded_stack.create_user("front-user", "front-password-1")
    assert len(token) >= 20


def test_a_chunked_body_is_not_buffered_without_end(embedded_stack):
    """Django never reads a body without Content-Length, so the front does not wait for one:
    a chunked body that never ends is answered at once, not stored until the disk is full."""
    with socket.create_connection(("127.0.0.1", embedded_stack.port), timeout=10) as sock:
        sock.sendall(b"POST /api/v1/auth/token/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n400\r\n" + b"x" * 1024 + b"\r\n")
        answer = sock.recv(65536)  # the body's end never comes; recv would time out after 10 s
    assert answer.startswith(b"HTTP/1.1 4"), answer[:200]
