"""Hostile interpreter uploads cost their sender, never the site (docs/sandbox.md, "Limits of
the upload check"). Eight of them at once, against the real gunicorn (two sync workers) of the
embedded stack, while an anonymous visitor loads a task board: each upload is refused with a
400 naming the limit (never a 500, never a killed worker), nothing is stored, no quota is
used, the board answers every time, and the eight refusals together cost the web tier a few
CPU seconds. Before the limits, one of these uploads held a web worker for 31 s of parsing
and another inflated 950 MB in it. The cost is measured in CPU time, not by the clock: how
long a board takes to come back depends on how busy the machine is, what the uploads make the
web workers compute does not."""
import os
import struct
import threading
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from expbench_client.client import Client
from tests.scoring.test_upload_check_limits import GOOD, MB, zip_of

from .stack import REPO

pytestmark = [pytest.mark.integration, pytest.mark.needs_bwrap]

QUACKIE_FIXTURE = REPO / "tests" / "fixtures" / "quackie" / "squad_v2_small.json"
BOARD = "/tasks/expmrc-squad/"
UPLOADS_CPU_SECONDS = 10.0  # the eight refusals together, board requests left out
HONEST = b"def interpret(model, question, context, sentences):\n    return [float(len(s)) for s in sentences]\n"


def lying_zip():
    """helper.txt: 950 MB of deflate whose headers declare 100 bytes, with the CRC of the first
    100, in a 0.94 MB zip (one compressed 1 MB block repeated; a full flush makes each
    block independent)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    stream = (compressor.compress(b"#" * MB) + compressor.flush(zlib.Z_FULL_FLUSH)) * 950 + compressor.flush()
    raw = bytearray(zip_of({"interpreter.py": GOOD, "helper.txt": stream}, compression=zipfile.ZIP_STORED))
    local = raw.index(b"PK\x03\x04", 1)  # the second member's local header
    central = raw.rindex(b"PK\x01\x02")  # ... and its central directory record
    for method_at, sizes_at in ((local + 8, local + 14), (central + 10, central + 16)):
        raw[method_at:method_at + 2] = struct.pack("<H", zipfile.ZIP_DEFLATED)
        raw[sizes_at:sizes_at + 12] = struct.pack("<III", zlib.crc32(b"#" * 100), len(stream), 100)
    return bytes(raw)


def attacks():
    """(name, filename, content, a phrase the refusal must hold)."""
    flat = GOOD + b"x\n" * 32_000  # 64 KB of the dearest statements to parse
    return [
        ("lying sizes", "bomb.zip", lying_zip(), "holds more than the 100 bytes its header declares"),
        ("10 MB of source", "big.zip", zip_of({"interpreter.py": GOOD + b"x = 1\n" * 1_700_000}),
         "the limit on a zip's unpacked content"),
        ("200 KB of nesting", "deep.py", GOOD + b"x = " + b"-" * 200_000 + b"1\n", "a module may have at most"),
        ("operator chain", "chain.py", GOOD + b"x = f" + b"()" * 30_000 + b"\n", "nested too deeply to parse"),
        ("brackets", "brackets.py", GOOD + b"x = " + b"[" * 250 + b"]" * 250 + b"\n", "brackets nested more than"),
        ("indentation", "indent.py", GOOD + b"".join(b" " * i + b"if x:\n" for i in range(80)) + b" " * 80
         + b"pass\n", "indented more than"),
        ("many modules", "many.zip", zip_of({"interpreter.py": GOOD, **{f"m{i}.py": b"x = 1\n" for i in range(120)}}),
         ".py files"),
        # The dearest refusal the limits allow: all the source they let through, wrong at the end.
        ("largest source, wrong at the end", "late.zip",
         zip_of({"interpreter.py": flat, "zlast.py": flat[:-4] + b"\n)\n"}), "zlast.py: syntax error"),
    ]


USERNAME, PASSWORD = "mallory", "integration-pw-16"


@pytest.fixture(scope="module")
def track(embedded_stack, tmp_path_factory):
    """A QUACKIE track on the small fixture with a tiny classifier, and the attacker's account,
    set up with the standard commands in one process (each manage.py start costs seconds)."""
    from tests.tiny_models import build_tiny_classifier

    model_dir = build_tiny_classifier(tmp_path_factory.mktemp("models") / "tiny", answerable=True)
    commands = [
        ["import_quackie", str(QUACKIE_FIXTURE), "--name", "hostile", "--version", "1"],
        ["register_hosted_model", "--slug", "tinyhostile", "--name", "Tiny (hostile uploads)",
         "--kind", "classification", "--path", str(model_dir)],
        ["create_track", "--set", "hostile", "--model", "tinyhostile", "--now"],
    ]
    code = ("from django.core.management import call_command\n"
            + "".join(f"call_command(*{args!r})\n" for args in commands)
            + "from django.contrib.auth.models import User\nfrom accounts.models import Profile\n"
            + f"Profile.objects.create(user=User.objects.create_user({USERNAME!r}, password={PASSWORD!r}))\n")
    result = embedded_stack.manage("shell", "-c", code)
    assert result.returncode == 0, result.stdout + result.stderr
    status, body = embedded_stack.request("POST", "/api/v1/auth/token/",
                                          json_body={"username": USERNAME, "password": PASSWORD})
    assert status == 200, body
    return "quackie-hostile-tinyhostile", body["token"]


def timed_get(stack, path):
    started = time.monotonic()
    status, _ = stack.request("GET", path)
    return status, time.monotonic() - started


def web_cpu_seconds(stack):
    """CPU seconds used so far by the web tier: gunicorn's process group (the master, its live
    workers, and through the master's reaped-children counters any worker that ended)."""
    group, ticks = stack.procs["web"].pid, 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[2]) == group:  # pgrp; then utime, stime, cutime, cstime
            ticks += sum(int(value) for value in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def stored_uploads(stack):
    folder = stack.root / "var" / "media" / "submissions"
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_eight_hostile_uploads_at_once_leave_the_board_responsive(embedded_stack, track):
    track, token = track
    client = Client(embedded_stack.url, token)
    status, quota_before = embedded_stack.request("GET", f"/api/v1/tasks/{track}/quota/", token=token)
    assert status == 200 and quota_before["used"] == 0, quota_before
    files_before = stored_uploads(embedded_stack)
    web_log_start = len(embedded_stack.log_text("web"))
    assert timed_get(embedded_stack, BOARD)[0] == 200  # warm: the visitor's first view is not measured
    spent = web_cpu_seconds(embedded_stack)
    assert all(timed_get(embedded_stack, BOARD)[0] == 200 for _ in range(20))
    per_board = (web_cpu_seconds(embedded_stack) - spent) / 20
    spent = web_cpu_seconds(embedded_stack)

    hostile = attacks()
    answers: dict[str, tuple[int, dict]] = {}
    upload_seconds: dict[str, float] = {}
    start = threading.Barrier(len(hostile) + 1)

    def send(name, filename, content):
        start.wait()
        started = time.monotonic()
        answers[name] = client.submit(track, content, method_name=name, filename=filename, kind="code")
        upload_seconds[name] = time.monotonic() - started

    threads = [threading.Thread(target=send, args=(name, filename, content), daemon=True)
               for name, filename, content, _ in hostile]
    for thread in threads:
        thread.start()
    start.wait()
    time.sleep(0.05)  # the uploads are on the wire first: the board queues behind them
    board = []
    while any(thread.is_alive() for thread in threads) or not board:
        board.append(timed_get(embedded_stack, BOARD))
        time.sleep(0.05)  # a visitor's pace: the board's own CPU stays small beside the uploads'
    for thread in threads:
        thread.join(timeout=60)

    uploads_cpu = web_cpu_seconds(embedded_stack) - spent - len(board) * per_board
    assert all(status == 200 for status, _ in board), board
    print(f"\nboard during 8 hostile uploads: {len(board)} requests, slowest {max(s for _, s in board):.3f} s "
          f"({', '.join(f'{seconds:.2f}' for _, seconds in board)}); uploads answered after "
          + ", ".join(f"{name}: {seconds:.2f} s" for name, seconds in upload_seconds.items())
          + f"; the web tier's CPU for the uploads {uploads_cpu:.2f} s (a board request {per_board:.3f} s)")
    assert uploads_cpu < UPLOADS_CPU_SECONDS, board
    for name, _, _, phrase in hostile:
        status, body = answers[name]
        assert status == 400, (name, status, body)
        assert body["category"] == "invalid_input" and phrase in body["detail"], (name, body)
    status, quota_after = embedded_stack.request("GET", f"/api/v1/tasks/{track}/quota/", token=token)
    assert status == 200 and quota_after["used"] == 0 and quota_after["remaining"] == quota_before["remaining"]
    assert stored_uploads(embedded_stack) == files_before  # a refused upload is never stored
    web_log = embedded_stack.log_text("web")[web_log_start:]
    assert "WORKER TIMEOUT" not in web_log and "Traceback" not in web_log, web_log[-3000:]

    # The same account's next honest upload is accepted: the attack cost it nothing. (Its run is
    # withdrawn: other tests cover honest runs, and this one would hold the sandbox worker.)
    status, body = client.submit(track, HONEST, method_name="Honest", filename="interpreter.py", kind="code")
    assert status == 201 and body["status"] == "queued", body
    status, withdrawn = embedded_stack.request("POST", f"/api/v1/submissions/{body['id']}/cancel/", token=token)
    if status == 409:  # the worker claimed it first: let it finish
        withdrawn = embedded_stack.wait_for(body["id"], token, timeout=180)
    assert withdrawn["status"] in ("cancelled", "scored"), withdrawn
