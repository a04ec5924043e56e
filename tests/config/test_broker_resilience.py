"""No file in the embedded broker's folder stops a consumer: an unreadable message file is set
aside in bad/ and logged, and the next good message is delivered; a missing folder is created
again, one replaced by a file is waited for."""
import json
import logging
import os
import uuid
from pathlib import Path

import pytest
from kombu import Connection, Consumer, Exchange, Producer, Queue

from config import broker

QUEUE = Queue("scoring", Exchange("scoring", type="direct"), routing_key="scoring")


@pytest.fixture(autouse=True)
def fresh_broker_state():
    """kombu keeps the declared bindings per process, not per folder: a binding declared for an
    earlier test's folder would keep this one from writing its exchange table."""
    broker.Transport.global_state.clear()
    yield
    broker.Transport.global_state.clear()


def connect(folder: Path) -> Connection:
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False,
               "control_folder": str(folder / "control"), "polling_interval": 0.01}
    return Connection("filesystem://localhost/", transport="config.broker:Transport", transport_options=options)


def bad_name() -> str:
    # "0_" sorts before every real time stamp: the consumer meets the bad file first.
    return f"0_{uuid.uuid4()}.scoring.msg"


def publish_and_consume(folder: Path, body: dict, before_consume=None, timeout: float = 5) -> list:
    """Publish ``body`` to the scoring queue, run ``before_consume``, then drain: the bodies
    received (none when nothing came within ``timeout``)."""
    received: list = []
    with connect(folder) as connection:
        channel = connection.channel()
        Producer(channel).publish(body, exchange=QUEUE.exchange, routing_key="scoring", declare=[QUEUE],
                                  serializer="json")
        if before_consume is not None:
            before_consume()

        def on_message(payload, message):
            received.append(payload)
            message.ack()

        with Consumer(channel, [QUEUE], callbacks=[on_message], accept=["json"]):
            try:
                connection.drain_events(timeout=timeout)
            except TimeoutError:
                pass
    return received


def quarantined(folder: Path) -> list[str]:
    bad = folder / broker.QUARANTINE
    return sorted(p.name for p in bad.iterdir()) if bad.exists() else []


BAD_FILES = {
    "random bytes": lambda path: path.write_bytes(os.urandom(512) + b"\xff\xfe"),
    "empty file": lambda path: path.write_bytes(b""),
    "JSON that is not a message": lambda path: path.write_text(json.dumps({"foo": 1})),
    "a JSON list": lambda path: path.write_text("[1, 2, 3]"),
    "half a message": lambda path: path.write_text(json.dumps({"body": "x", "properties": {}})),
    "a directory": lambda path: path.mkdir(),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_bad_file_is_set_aside_and_the_next_message_delivered(tmp_path, caplog, case):
    name = bad_name()
    BAD_FILES[case](tmp_path / name)
    with caplog.at_level(logging.ERROR, logger="config.broker"):
        received = publish_and_consume(tmp_path, {"submission": 7})
    assert received == [{"submission": 7}]
    assert quarantined(tmp_path) == [name]
    assert not (tmp_path / name).exists()
    assert any(name in record.getMessage() and "set aside" in record.getMessage() for record in caplog.records)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".claimed", ".partial"))]


def test_a_file_that_vanished_is_skipped(tmp_path, monkeypatch, caplog):
    """A name listed that is gone by the time it is taken (another worker took it)."""
    listdir = os.listdir
    ghost = bad_name()
    monkeypatch.setattr(broker.os, "listdir", lambda folder: [*listdir(folder), ghost])
    with caplog.at_level(logging.ERROR, logger="config.broker"):
        received = publish_and_consume(tmp_path, {"submission": 8})
    assert received == [{"submission": 8}]
    assert quarantined(tmp_path) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_file_that_vanishes_while_read_is_logged(tmp_path, caplog):
    """The claimed file removed before it is read: the read fails, nothing is raised."""
    with connect(tmp_path) as connection:
        channel = connection.default_channel
        (tmp_path / (name := bad_name())).write_text("{}")
        real_read = channel._read

        def read_after_removal(path, kombu_message):
            os.unlink(path)
            return real_read(path, kombu_message)

        channel._read = read_after_removal
        with caplog.at_level(logging.ERROR, logger="config.broker"), pytest.raises(broker.Empty):
            channel._get("scoring")
    assert any(name in r.getMessage() and "vanished" in r.getMessage() for r in caplog.records)


def test_the_next_message_after_several_bad_files_is_delivered(tmp_path):
    names = []
    for make in BAD_FILES.values():
        names.append(bad_name())
        make(tmp_path / names[-1])
    assert publish_and_consume(tmp_path, {"submission": 9}) == [{"submission": 9}]
    assert quarantined(tmp_path) == sorted(names)


def test_a_missing_broker_folder_is_created_again(tmp_path, caplog):
    folder = tmp_path / "broker"
    folder.mkdir()

    def remove_folder():
        for path in sorted(folder.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        folder.rmdir()

    with caplog.at_level(logging.WARNING, logger="config.broker"):
        # The published message goes with the folder; the consumer must survive, and a message
        # published after it gets through, exchange table included.
        assert publish_and_consume(folder, {"lost": 1}, before_consume=remove_folder, timeout=0.5) == []
        assert publish_and_consume(folder, {"submission": 10}) == [{"submission": 10}]
    assert folder.is_dir()
    assert any("missing" in r.getMessage() for r in caplog.records)


def test_a_broker_folder_replaced_by_a_file_is_waited_for(tmp_path, caplog):
    folder = tmp_path / "broker"
    folder.mkdir()
    with connect(folder) as connection:
        channel = connection.default_channel
        channel._put("scoring", {"kept": 1})
        aside = tmp_path / "broker.aside"
        folder.rename(aside)
        folder.write_text("not a folder")
        with caplog.at_level(logging.WARNING, logger="config.broker"):
            for _ in range(3):  # a lasting problem is logged once, not at every poll
                with pytest.raises(broker.Empty):
                    channel._get("scoring")
            folder.unlink()
            aside.rename(folder)
            assert channel._get("scoring") == {"kept": 1}
    problems = [r.getMessage() for r in caplog.records if "not a folder" in r.getMessage()]
    assert len(problems) == 1
    assert any("usable again" in r.getMessage() for r in caplog.records)


def test_size_and_purge_survive_a_missing_folder(tmp_path):
    folder = tmp_path / "broker"
    folder.mkdir()
    with connect(folder) as connection:
        channel = connection.default_channel
        folder.rmdir()
        assert channel._size("scoring") == 0
        assert channel._purge("scoring") == 0
        assert folder.is_dir()
