"""Retries with backoff, against a port where nothing listens (no server involved)."""
import gzip
import io
import json
import socket
import time

import pytest

from expbench_client.cli import main
from expbench_client.client import (
    BrokenDownload,
    Client,
    ServerUnreachable,
    backoff_delays,
    copy_answer,
    decode_body,
    describe_connection_error,
)


@pytest.fixture
def closed_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # the socket is closed: connecting is refused


def test_backoff_doubles():
    assert backoff_delays(3) == [0.5, 1.0, 2.0]
    assert backoff_delays(0) == []
    assert backoff_delays(2, base=0.1) == [0.1, 0.2]


def test_a_read_is_retried_with_backoff_then_reported(closed_url):
    waits = []
    client = Client(closed_url, retries=3, backoff=0.5, sleep=waits.append)
    with pytest.raises(ServerUnreachable) as caught:
        client.call("GET", "/api/tasks/")
    assert waits == [0.5, 1.0, 2.0]
    assert caught.value.reason == "connection refused" and caught.value.maybe_sent is False


def test_the_backoff_really_waits(closed_url):
    start = time.monotonic()
    with pytest.raises(ServerUnreachable):
        Client(closed_url, retries=2, backoff=0.1).call("GET", "/api/tasks/")
    assert 0.3 <= time.monotonic() - start < 2


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_writes_are_never_retried(closed_url, method):
    waits = []
    with pytest.raises(ServerUnreachable):
        Client(closed_url, retries=3, sleep=waits.append).call(method, "/api/submissions/1/", json_body={})
    assert waits == []


def test_zero_retries_disables_them(closed_url):
    waits = []
    with pytest.raises(ServerUnreachable):
        Client(closed_url, retries=0, sleep=waits.append).call("GET", "/api/tasks/")
    assert waits == []


def test_download_is_retried_too(closed_url):
    waits = []
    with pytest.raises(ServerUnreachable):
        Client(closed_url, retries=1, backoff=0.01, sleep=waits.append).download("/api/tasks/x/inputs/", io.BytesIO())
    assert waits == [0.01]


def test_connection_errors_are_named():
    assert describe_connection_error(ConnectionRefusedError()) == ("connection refused", False)
    assert describe_connection_error(socket.gaierror(-2, "Name or service not known")) == ("host name not found", False)
    assert describe_connection_error(TimeoutError()) == ("timed out", True)
    assert describe_connection_error(ConnectionResetError()) == ("connection reset", True)


def test_cli_server_down_is_exit_3_and_one_line(closed_url, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.delenv("EXPBENCH_TOKEN", raising=False)
    assert main(["--url", closed_url, "tasks", "--retries", "0"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"error: cannot reach the ExpBench server at {closed_url} (connection refused); "
                            "is it running? Set --url or EXPBENCH_URL.\n")


def test_answers_are_copied_in_chunks_and_gzip_is_inflated():
    payload = json.dumps({"items": [{"id": i, "question": "Who?" * 20} for i in range(5000)]}).encode()
    packed = gzip.compress(payload)
    seen = []
    plain, inflated = io.BytesIO(), io.BytesIO()
    assert copy_answer(io.BytesIO(payload).read, plain, expected=len(payload),
                       on_chunk=lambda got, total: seen.append(got)) == len(payload)
    assert plain.getvalue() == payload and len(seen) > 1 and seen[-1] == len(payload)
    assert copy_answer(io.BytesIO(packed).read, inflated, gzipped=True) == len(payload)
    assert inflated.getvalue() == payload
    assert decode_body(packed, "gzip") == (json.loads(payload), True)
    assert decode_body(b"<html>", None) == ("<html>", False)


def test_a_short_or_truncated_answer_is_a_broken_download():
    payload = gzip.compress(b"x" * 100000)
    with pytest.raises(BrokenDownload, match="ended early"):
        copy_answer(io.BytesIO(payload[: len(payload) // 2]).read, io.BytesIO(), gzipped=True)
    with pytest.raises(BrokenDownload, match="10 of 20 bytes"):
        copy_answer(io.BytesIO(b"x" * 10).read, io.BytesIO(), expected=20)
