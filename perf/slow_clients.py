"""A normal visitor's board latency while slow clients hold connections open.

Slow clients: ``--slow`` (20) connections that each send a request's header one byte per second
(a header line that never ends, so the request never completes) for ``--hold`` (60) seconds;
the server closes one, it connects again. Meanwhile a normal visitor asks for the SQuAD task's
board page (``/tasks/expmrc-squad/``, gzip as browsers ask) over and over, one connection per
request, each with a 10 s time-out; a request that times out or fails counts as 10 s.

Servers, one after the other on the same deployment (embedded default: SQLite, the shared file
cache, demo data, stored boards), each with two gunicorn processes:

* reference: gunicorn's sync workers facing the clients directly, as ExpBench ran before the front;
* front: what scripts/run.sh and docker-compose.yml start now (``config.asgi`` on gunicorn's
  asyncio worker: requests buffered on the event loop, then run on a small pool of threads).

For each it prints the visitor's p50, p99 and worst latency, requests answered and failed, first
with no slow client (idle) and then under the slow clients. The last line is
``ratio: <reference p99 / front p99 under slow clients>`` (how many times lower the front's p99).

    .venv/bin/python perf/slow_clients.py              # 20 slow connections held 60 s per server
    .venv/bin/python perf/slow_clients.py --hold 15    # shorter
"""
import argparse
import http.client
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BOARD_PATH = "/tasks/expmrc-squad/"
VISITOR_TIMEOUT = 10.0
IDLE_SECONDS = 10.0


def slow_client(port: int, stop: threading.Event, opened: list[int]) -> None:
    """Sends a request header one byte a second until ``stop``; reconnects when the server closes."""
    header = b"GET " + BOARD_PATH.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: "
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                opened.append(1)
                sent = 0
                while not stop.is_set():
                    sock.sendall(header[sent:sent + 1] if sent < len(header) else b"a")
                    sent += 1
                    stop.wait(1.0)
        except OSError:
            stop.wait(0.2)


def visit(port: int) -> tuple[float, bool]:
    started = time.perf_counter()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=VISITOR_TIMEOUT)
        conn.request("GET", BOARD_PATH, headers={"Accept-Encoding": "gzip"})
        response = conn.getresponse()
        response.read()
        conn.close()
        ok = response.status == 200
    except OSError:
        ok = False
    elapsed = time.perf_counter() - started
    return (elapsed if ok else max(elapsed, VISITOR_TIMEOUT)), ok


def visitor(port: int, seconds: float) -> tuple[list[float], int]:
    """Latencies of a visitor asking for the board for ``seconds``, and how many requests failed."""
    latencies, failed = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        latency, ok = visit(port)
        latencies.append(latency)
        failed += not ok
        time.sleep(0.05)  # a person clicks; the server is not saturated by the visitor alone
    return latencies, failed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(name: str, latencies: list[float], failed: int) -> str:
    return (f"  {name:<26} p50 {statistics.median(latencies):7.3f} s   p99 {percentile(latencies, 0.99):7.3f} s   "
            f"worst {max(latencies):7.3f} s   {len(latencies) - failed} answered, {failed} failed or timed out")


def measure(stack, server: str, slow: int, hold: float) -> float:
    stack.start_web(server)
    port = stack.port
    try:
        visit(port)  # the first request loads what each process loads once
        idle, idle_failed = visitor(port, IDLE_SECONDS)
        stop, opened = threading.Event(), []
        threads = [threading.Thread(target=slow_client, args=(port, stop, opened), daemon=True) for _ in range(slow)]
        for thread in threads:
            thread.start()
        time.sleep(2.0)  # every slow connection is open and has sent its first bytes
        loaded, loaded_failed = visitor(port, hold)
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
    finally:
        stack.kill("web")
    print(f"{server}: {slow} slow connections ({len(opened)} opened in all), held {hold:.0f} s")
    print(summary("idle", idle, idle_failed))
    print(summary("under slow clients", loaded, loaded_failed))
    sys.stdout.flush()
    return percentile(loaded, 0.99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=20, help="slow connections held open (20)")
    parser.add_argument("--hold", type=float, default=60.0, help="seconds they are held, per server (60)")
    args = parser.parse_args()

    from tests.integration.stack import Stack

    with tempfile.TemporaryDirectory(prefix="expbench-slow-") as tmp:
        stack = Stack(tmp).setup()
        try:
            rebuilt = stack.manage("rebuild_boards")
            if rebuilt.returncode != 0:
                raise RuntimeError(f"rebuild_boards failed:\n{rebuilt.stderr}")
            reference = measure(stack, "sync", args.slow, args.hold)
            front = measure(stack, "front", args.slow, args.hold)
        finally:
            stack.stop()
    print(f"board p99 under {args.slow} slow connections: reference (sync workers) {reference:.3f} s, "
          f"front {front:.3f} s")
    print(f"ratio: {reference / front:.2f}")


if __name__ == "__main__":
    main()
