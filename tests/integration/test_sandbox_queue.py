"""The sandbox queue through real processes (web, a one-slot sandbox worker, the reaper worker and
beat, as scripts/run.sh starts them), with a 3 s lease so that the reaper acts within the test:
a run whose import outlasts its lease keeps it (renewed by time, not per sample); a user's second
run does not start before another user's first; a NUL character in a run's error messages is
stored (on PostgreSQL where it is reachable, which refuses NUL in text) and charged to the sender;
a run in which every sample failed shows its owner the first failing sample's traceback."""
import uuid

import pytest

from expbench_client.client import Client

from .stack import Stack, reachable, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.needs_bwrap]

LEASE_SECONDS = 3


def code(import_seconds: float, body: str = "return [float(len(s)) for s in sentences]") -> bytes:
    """An honest interpreter whose import takes ``import_seconds`` (a slow import or set-up)."""
    return (f"import time\ntime.sleep({import_seconds})\n\n"
            f"def interpret(model, question, context, sentences):\n    {body}\n").encode()


@pytest.fixture(scope="module")
def database_url():
    """PostgreSQL when it is reachable on 127.0.0.1 (a database of its own), else SQLite."""
    if not reachable("127.0.0.1", 5432):
        yield None
        return
    import psycopg

    name = f"expbench_it_{uuid.uuid4().hex[:8]}"
    admin = "postgresql://postgres@127.0.0.1:5432/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def stack(tmp_path_factory, database_url):
    from tests.tiny_models import build_tiny_classifier

    from .test_worker_kinds import QUACKIE_FIXTURE

    root = tmp_path_factory.mktemp("sandbox-queue")
    stack = Stack(root, database_url=database_url, env={"SCORING_LEASE_SECONDS": str(LEASE_SECONDS)}).setup()
    try:
        model_dir = build_tiny_classifier(root / "models" / "tiny", answerable=True)
        for args in (["import_quackie", str(QUACKIE_FIXTURE), "--name", "small", "--version", "1"],
                     ["register_hosted_model", "--slug", "tiny", "--name", "Tiny", "--kind", "classification",
                      "--path", str(model_dir)],
                     ["create_track", "--set", "small", "--model", "tiny", "--now"]):
            result = stack.manage(*args)
            assert result.returncode == 0, result.stdout + result.stderr
        stack.start_web()
        stack.start_worker("reaper", queues="reaper", concurrency=1)
        stack.start_worker("sandbox", queues="sandbox", concurrency=1)
        stack.start_beat()
        yield stack
    finally:
        stack.stop()


SLUG = "quackie-small-tiny"


def submit(stack, token, content, name):
    status, body = Client(stack.url, token).submit(SLUG, content, method_name=name, filename="interpreter.py",
                                                   kind="code")
    assert status == 201, body
    return body["id"]


def entry(stack, token, pk):
    status, body = stack.request("GET", f"/api/v1/submissions/{pk}/", token=token)
    assert status == 200, body
    return body


def test_a_run_whose_import_outlasts_its_lease_keeps_it(stack):
    token = stack.create_user("slow", "integration-pw-11")
    pk = submit(stack, token, code(4 * LEASE_SECONDS), "Slow import")
    done = stack.wait_for(pk, token, timeout=300)
    assert done["status"] == "scored", done
    # One claim: never re-queued by the reaper while the import ran, so never run twice.
    assert done["attempts"] == 1, done
    assert "lost its lease" not in stack.log_text("sandbox")


def test_a_users_second_run_does_not_start_before_another_users_first(stack):
    alice = stack.create_user("alice", "integration-pw-12")
    bob = stack.create_user("bob", "integration-pw-13")
    first = submit(stack, alice, code(2 * LEASE_SECONDS), "Alice 1")
    wait_until(lambda: entry(stack, alice, first)["status"] == "running", "Alice's first run to start")
    second = submit(stack, alice, code(0), "Alice 2")  # queued first, behind Alice's running run
    bobs = submit(stack, bob, code(0), "Bob 1")        # queued after it
    finished = [stack.wait_for(pk, token, timeout=300) for pk, token in ((first, alice), (second, alice), (bobs, bob))]
    assert [f["status"] for f in finished] == ["scored"] * 3, finished
    alice_first, alice_second, bob_first = finished
    assert bob_first["started_at"] < alice_second["started_at"], finished
    assert "gave way" in stack.log_text("sandbox")


NUL_MESSAGE = 'raise ValueError("bad\\x00value")'
# The first sample fails with a NUL in its message, the others are scored: the run is scored
# and its first failure, kept for the owner in the details, holds the NUL.
FIRST_FAILS = """global calls
    calls = globals().get("calls", 0) + 1
    if calls == 1:
        raise ValueError("first\\x00sample")
    return [float(len(s)) for s in sentences]"""


def test_a_nul_in_a_samples_error_is_stored_and_the_run_charged_to_its_sender(stack):
    """On PostgreSQL (text and jsonb refuse NUL) storing such a run used to fail, and the run
    was refunded as the platform's fault (scorer_error)."""
    token = stack.create_user("nul", "integration-pw-14")
    pk = submit(stack, token, code(0, FIRST_FAILS), "NUL in one sample")
    done = stack.wait_for(pk, token, timeout=300)
    assert done["status"] == "scored", done
    first = done["details"]["sandbox"]["first_failures"]["exception"]
    assert "ValueError: first\ufffdsample" in first["detail"], first
    status, quota = stack.request("GET", f"/api/v1/tasks/{SLUG}/quota/", token=token)
    assert status == 200 and quota["used"] == 1, quota


def test_a_run_whose_every_sample_fails_shows_its_owner_the_first_traceback(stack):
    token = stack.create_user("allfail", "integration-pw-15")
    pk = submit(stack, token, code(0, NUL_MESSAGE), "Every sample fails")
    failed = stack.wait_for(pk, token, timeout=300)
    assert failed["status"] == "failed", failed
    assert failed["error"]["category"] == "code_failed", failed  # the sender's fault, not scorer_error
    message = failed["error"]["message"]
    assert message.startswith("all_samples_failed: every sample failed:"), message
    # The traceback of the first failing sample, with the NUL shown as U+FFFD.
    assert "ValueError: bad\ufffdvalue" in message and "line 5, in interpret" in message, message
    status, quota = stack.request("GET", f"/api/v1/tasks/{SLUG}/quota/", token=token)
    assert status == 200 and quota["used"] == 1, quota
