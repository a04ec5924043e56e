"""Queues that cannot starve each other, through real processes (as scripts/run.sh starts them:
a worker per queue): while a long model job holds the models worker, a prediction file is
scored, its diagnostics computed and the board rebuilt, each by its own worker. The model job
is a track's inclusion run held open by a test hook."""
import pytest

from .stack import Stack, wait_until
from .test_worker_kinds import QUACKIE_FIXTURE

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    from tests.tiny_models import build_tiny_classifier

    root = tmp_path_factory.mktemp("queue-separation")
    stack = Stack(root).setup()
    try:
        stack.start_web()
        stack.start_worker("worker", queues="scoring", concurrency=1)
        stack.start_worker("background", queues="maintenance", concurrency=1)
        stack.start_worker("models", queues="models", concurrency=1, env={"EXPBENCH_TEST_MODELS_DELAY": "900"})
        model_dir = build_tiny_classifier(root / "models" / "tiny", answerable=True)
        for args in (["import_quackie", str(QUACKIE_FIXTURE), "--name", "small", "--version", "1"],
                     ["register_hosted_model", "--slug", "tiny", "--name", "Tiny", "--kind", "classification",
                      "--path", str(model_dir)],
                     ["create_track", "--set", "small", "--model", "tiny"]):
            result = stack.manage(*args)
            assert result.returncode == 0, result.stdout + result.stderr
        yield stack
    finally:
        stack.stop()


def track_status(stack):
    result = stack.manage("shell", "-c", "from benchmark.models import Track; print('status=' + Track.objects.get().status)")
    # Other lines (log messages of the start-up) may come first.
    return next((line[len("status="):] for line in result.stdout.splitlines() if line.startswith("status=")), "")


def test_diagnostics_and_boards_do_not_wait_behind_a_long_model_job(stack):
    wait_until(lambda: track_status(stack) == "running", "the model job to hold the models worker")
    token = stack.create_user("researcher", "integration-pw-41")
    status, created = stack.upload(token, "expmrc-squad", b"{}", method_name="Behind no model job")
    assert status == 201, created
    stack.wait_for(created["id"], token, timeout=300)

    def diagnosed():
        status, body = stack.request("GET", f"/api/v1/submissions/{created['id']}/", token=token)
        return status == 200 and body["diagnostics_status"] == "done"

    wait_until(diagnosed, "the entry's diagnostics")
    stack.board("expmrc-squad", until=lambda board: any(row["method"] == "Behind no model job"
                                                         for row in board["rows"]))
    # All of it while the model job still held its worker: nothing waited behind it.
    assert track_status(stack) == "running"
    # (The start-up banner lists every task; a message taken shows as "Task <name>[<id>]".)
    assert "Task submissions.tasks.compute_diagnostics[" in stack.log_text("background")
    assert "Task submissions.tasks.compute_diagnostics[" not in stack.log_text("models")
    assert "Task leaderboards.tasks.rebuild_boards[" not in stack.log_text("models")
