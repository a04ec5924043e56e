"""The embedded broker loses no message when producers and a consumer share its folder."""
import multiprocessing

from kombu import Connection
from kombu.exceptions import ChannelError

MESSAGES_PER_PRODUCER = 1500


def channel(folder, transport):
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False}
    return Connection("filesystem://localhost/", transport=transport, transport_options=options).default_channel


def produce(folder, transport, producer):
    sender = channel(folder, transport)
    for i in range(MESSAGES_PER_PRODUCER):
        sender._put("scoring", {"producer": producer, "i": i})


def send_and_drain(folder, transport, producers=2):
    """Producers in their own processes, while this process takes messages as fast as it can
    (as a worker polling the folder). Returns (messages read, messages that could not be read)."""
    from queue import Empty

    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=produce, args=(folder, transport, p)) for p in range(producers)]
    for process in processes:
        process.start()
    reader = channel(folder, transport)
    received, unreadable = [], 0

    def take_all():
        nonlocal unreadable
        while True:
            try:
                received.append(reader._get("scoring"))
            except Empty:
                return
            except (ValueError, ChannelError):  # an empty or half-written message file
                unreadable += 1

    while any(process.is_alive() for process in processes):
        take_all()
    for process in processes:
        process.join()
    take_all()
    return received, unreadable


def test_every_message_arrives_whole_while_producers_and_a_consumer_race(tmp_path):
    received, unreadable = send_and_drain(tmp_path, "config.broker:Transport")
    assert unreadable == 0
    assert sorted((m["producer"], m["i"]) for m in received) == [
        (p, i) for p in range(2) for i in range(MESSAGES_PER_PRODUCER)]
    assert not [name for name in tmp_path.iterdir() if name.suffix == ".partial"]


def test_the_embedded_default_uses_the_atomic_transport(settings):
    from config.broker import Transport
    from config.celery import app

    assert settings.CELERY_BROKER_URL.startswith("filesystem://")  # no CELERY_BROKER_URL in the tests
    with app.connection_for_write() as connection:
        assert type(connection.transport) is Transport
