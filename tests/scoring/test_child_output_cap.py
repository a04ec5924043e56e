"""What the parent keeps of a child's output, whatever it is doing when the child floods: waiting
for a reply, writing a message the child never reads, or ending the child. Plain processes
stand in for the sandboxed child (the pipes and their reading are the same); text a child sends
is made storable for the database (NUL, lone surrogates)."""
import json
import sys
import time

import pytest

from scoring.sandbox.child_process import CappedBuffer, Child, OutputFlood
from scoring.sandbox.limits import SandboxLimits
from scoring.sandbox.protocol import check_reply, storable

CAP = 100_000
FLOOD = "import os\nwhile True:\n    os.write(1, b'x' * 65536)\n"


def child(program: str, **kwargs) -> Child:
    limits = SandboxLimits(output_bytes=CAP)
    return Child([sys.executable, "-c", program], {}, ".", limits, CappedBuffer(limits.stderr_bytes), None,
                 wraps_signals=False, **kwargs)


def test_a_flood_while_the_parent_writes_is_capped_and_raised():
    """The child never reads its stdin: the parent's message (larger than the pipe) waits while
    the child floods stdout. Every read there used to be buffered without limit."""
    flooding = child(FLOOD)
    try:
        with pytest.raises(OutputFlood, match=f"more than {CAP} bytes without a line end"):
            flooding.exchange({"id": "q", "context": "y" * 4_000_000}, time.monotonic() + 60)
        assert len(flooding.out) <= CAP + 1
        assert flooding.out_dropped > 0
    finally:
        flooding.kill()


def test_a_flood_while_the_child_is_ended_is_capped():
    flooding = child(FLOOD)
    flooding.finish(graceful=True)  # waits up to 5 s for the child to exit, reading meanwhile
    assert len(flooding.out) <= CAP + 1


def test_an_honest_reply_line_of_the_full_size_is_read():
    line = json.dumps({"id": "q", "scores": [], "seconds": 0.0, "pad": "z" * (CAP - 60)})
    assert len(line) <= CAP
    program = f"import sys\nsys.stdout.write({line!r} + '\\n')\nsys.stdout.flush()\nsys.stdin.read()\n"
    honest = child(program)
    try:
        assert honest.exchange(None, time.monotonic() + 60)["id"] == "q"
    finally:
        honest.kill()


def test_the_interrupt_stops_a_wait_on_a_silent_child():
    class Lost(Exception):
        pass

    calls = []

    def interrupt():
        calls.append(1)
        if len(calls) > 3:
            raise Lost()

    silent = child("import time\ntime.sleep(60)\n", interrupt=interrupt)
    try:
        with pytest.raises(Lost):
            silent.exchange(None, time.monotonic() + 60)
    finally:
        silent.kill()


def test_text_from_a_child_is_made_storable():
    assert storable("a\x00b") == "a\ufffdb"
    assert storable("lone \ud800 surrogate") == "lone \ufffd surrogate"
    assert storable({"k\x00": ["x\x00", 1, None]}) == {"k\ufffd": ["x\ufffd", 1, None]}
    reply = check_reply({"id": "q", "error": {"type": "ValueError", "message": "bad\x00value",
                                              "traceback": "Traceback\x00"}}, "q")
    assert reply["error"] == {"type": "ValueError", "message": "bad\ufffdvalue", "traceback": "Traceback\ufffd"}
    buffer = CappedBuffer(100)
    buffer.add(b"err\x00")
    assert buffer.text() == "err\ufffd"
