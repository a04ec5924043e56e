"""A request's id follows the work it queues (config/request_id.py): the upload's scoring message
carries the id in its headers, and a real worker (Celery's own consumer and tracer, in a thread
of this process, on an in-memory broker) runs the task, and logs its lines, under that id, then
forgets it before its next task."""
import logging
import queue
import threading
import uuid

import pytest
from celery import Celery, current_app
from celery.contrib.testing.worker import TestWorkController
from celery.result import _set_task_join_will_block
from celery.worker import state as worker_state
from django.test import Client

from config.request_id import CELERY_HEADER, HEADER, NO_REQUEST, current_request_id
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, token_for, upload_file


def memory_app(queue_name):
    """A Celery app of its own on the in-memory broker (the product's app keeps its broker);
    the signal handlers under test are connected for every app, as they are for the product's."""
    app = Celery(f"request-id-{queue_name}", broker="memory://", set_as_current=False, fixups=[])
    app.conf.update(task_default_queue=queue_name, worker_hijack_root_logger=False, task_ignore_result=True,
                    broker_connection_retry_on_startup=False)
    return app


@pytest.fixture
def broker():
    """Messages the product sends go to an in-memory broker for the length of the test."""
    name = f"q-{uuid.uuid4().hex[:8]}"
    app, product = memory_app(name), current_app._get_current_object()
    app.set_current()
    try:
        yield app, name
    finally:
        product.set_current()


def sent_messages(app, name):
    found = []
    with app.connection_for_write() as connection:
        inbox = connection.SimpleQueue(name)
        while True:
            try:
                message = inbox.get(timeout=0.2)
            except inbox.Empty:
                break
            message.ack()
            found.append(message)
        inbox.close()
    return found


@pytest.mark.django_db(transaction=True)  # the message is sent at the real commit, inside the request
def test_an_upload_sends_its_scoring_message_with_the_requests_id(broker, console):
    app, name = broker
    make_task("expmrc-squad")
    user = make_user()
    answer = Client(HTTP_AUTHORIZATION=f"Token {token_for(user)}", HTTP_X_REQUEST_ID="upload-7f3a").post(
        "/api/v1/tasks/expmrc-squad/submissions/",
        {"file": upload_file(perfect_predictions(fixture_gold("expmrc-squad"))), "method_name": "x"})
    assert answer.status_code == 201 and answer[HEADER] == "upload-7f3a"
    scoring = [m for m in sent_messages(app, name) if m.headers["task"] == "submissions.tasks.score_submission"]
    assert len(scoring) == 1
    assert scoring[0].headers[CELERY_HEADER] == "upload-7f3a"
    assert scoring[0].decode()[0] == [answer.json()["id"]]
    assert current_request_id.get() == NO_REQUEST  # and the test's own thread is back outside a request


def test_a_task_sent_outside_a_request_carries_no_id(broker):
    app, name = broker
    current_app.send_task("submissions.tasks.reap_stuck_submissions")  # as beat does
    [message] = sent_messages(app, name)
    assert CELERY_HEADER not in message.headers


@pytest.fixture
def worker():
    """A real worker consuming from its own in-memory queue, in a thread; its tasks record the
    request id they ran under."""
    name = f"q-{uuid.uuid4().hex[:8]}"
    app = memory_app(name)
    seen: queue.Queue = queue.Queue()

    @app.task(name="tests.request_id.record", shared=False)
    def record(label):
        logging.getLogger("tests.worker").warning("running %s", label)
        seen.put((label, current_request_id.get()))

    controller = TestWorkController(app=app, concurrency=1, pool="solo", loglevel="ERROR", logfile=None,
                                    ready_callback=None, without_heartbeat=True, without_mingle=True,
                                    without_gossip=True, hostname=f"{name}@test")

    def run():
        app.set_current()  # the worker thread's tasks are looked up in this app, not the product's
        controller.start()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    controller.ensure_started()
    try:
        yield record, seen
    finally:
        # As Celery's own embedded test worker (celery.contrib.testing.worker) stops: and a worker
        # marks the process as one where result.get() would block; the rest of the suite is not.
        worker_state.should_terminate = 0
        thread.join(10)
        worker_state.should_terminate = None
        _set_task_join_will_block(False)
        assert not thread.is_alive()


def test_the_worker_runs_and_logs_the_task_under_the_id_and_forgets_it_after(worker, console):
    record, seen = worker
    token = current_request_id.set("req-42.a")  # what the middleware does while serving a request
    try:
        record.delay("queued by the request")
    finally:
        current_request_id.reset(token)
    record.delay("queued by beat")
    forged = current_request_id.set("bad")
    try:  # a message whose header is not a plain token (hand-made, or from an older sender)
        record.apply_async(("forged header",), headers={CELERY_HEADER: "two\nlines"})
    finally:
        current_request_id.reset(forged)
    runs = [seen.get(timeout=20) for _ in range(3)]
    assert runs == [("queued by the request", "req-42.a"), ("queued by beat", NO_REQUEST),
                    ("forged header", NO_REQUEST)]
    lines = console.getvalue().splitlines()
    assert [line for line in lines if "running queued by the request" in line][0].endswith(
        "[req-42.a]: running queued by the request")
    assert [line for line in lines if "running queued by beat" in line][0].endswith(
        f"[{NO_REQUEST}]: running queued by beat")


def test_a_task_run_eagerly_inside_a_request_keeps_the_requests_id():
    app = memory_app("eager")

    @app.task(name="tests.request_id.eager", shared=False)
    def where():
        return current_request_id.get()

    token = current_request_id.set("inline-1")
    try:
        assert where.apply().get() == "inline-1"
        assert current_request_id.get() == "inline-1"
    finally:
        current_request_id.reset(token)
