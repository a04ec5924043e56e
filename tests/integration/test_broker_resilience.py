"""A real scoring worker on the embedded broker survives bad files in the broker folder: they
are set aside in bad/, and the next upload is scored by the same worker process."""
import json
import os
import time
import uuid

import pytest

from .conftest import assert_official, sample_and_expected
from .stack import Stack

pytestmark = pytest.mark.integration


def test_bad_broker_files_do_not_stop_the_scoring_worker(tmp_path):
    stack = Stack(tmp_path).setup()
    try:
        stack.start_web().start_worker("worker", queues="scoring")
        worker = stack.procs["worker"]
        broker = tmp_path / "var" / "broker"
        # "0_" sorts before every real message: the worker meets these first.
        bad = {f"0_{uuid.uuid4()}.scoring.msg": make for make in (
            lambda path: path.write_bytes(os.urandom(256)),
            lambda path: path.write_bytes(b""),
            lambda path: path.write_text(json.dumps({"foo": 1})),
            lambda path: path.mkdir(),
        )}
        for name, make in bad.items():
            make(broker / name)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any((broker / name).exists() for name in bad):
            time.sleep(0.1)

        token = stack.create_user("dora", "integration-pw-1")
        content, expected = sample_and_expected()
        status, body = stack.upload(token, "expmrc-squad", content, method_name="After bad files")
        assert status == 201, body
        scored = stack.wait_for(body["id"], token)
        assert scored["status"] == "scored", scored
        assert_official(scored["scores"], expected)

        assert worker.poll() is None, stack.log_text("worker")[-3000:]
        assert sorted(os.listdir(broker / "bad")) == sorted(bad)
        log = stack.log_text("worker")
        assert all(name in log for name in bad)
        assert "Unrecoverable error" not in log
    finally:
        stack.stop()
