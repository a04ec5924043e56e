"""An upload the server refuses from its size alone: the server answers 413 before reading the
body and closes the connection; the client stops sending, reads that answer and says so."""
import json
import socket
import threading

from expbench_client.client import Client
from expbench_client.errors import ExitCode, Subject, error_for_status

PROBLEM = {"type": "about:blank", "title": "Request Entity Too Large", "status": 413,
           "detail": "The request body is 20,971,900 bytes; this address takes at most 1,048,576 bytes.",
           "size": 20_971_900, "limit": 1_048_576}


def refusing_server():
    """A server that reads only the request's head, answers 413 and closes, as the real one does
    from Content-Length; its port, and the thread that serves one request."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = listener.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            body = json.dumps(PROBLEM).encode()
            conn.sendall(b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/problem+json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        listener.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener.getsockname()[1], thread


def test_the_client_reads_the_413_instead_of_a_broken_pipe():
    port, thread = refusing_server()
    response = Client(f"http://127.0.0.1:{port}", token="t", retries=0).submit_response(
        "expmrc-squad", b"x" * (20 * 1024 * 1024), method_name="m")
    thread.join(10)
    assert response.status == 413 and response.body["limit"] == 1_048_576


def test_a_413_is_one_clear_line_and_a_usage_error():
    error = error_for_status(413, PROBLEM, {}, url="http://x", subject=Subject("task 'x'", ""), token_source=None,
                             prog="expbench")
    assert error.code == ExitCode.USAGE
    assert str(error) == ("error: too large for the server (HTTP 413): The request body is 20,971,900 bytes; "
                          "this address takes at most 1,048,576 bytes; nothing was stored")
    bare = error_for_status(413, {"status": 413, "type": "about:blank", "limit": 5}, {}, url="http://x",
                            subject=Subject("task 'x'", ""), token_source=None, prog="expbench")
    assert "at most 5 bytes" in str(bare)
