"""A model submission through real processes (gunicorn, the sandbox worker, the background
worker that rebuilds boards, the reaper, beat), on the demo's hidden-inputs task: the bundle is
uploaded over HTTP, smoke-run on the public sample, run on the hidden inputs in the sandbox,
scored and ranked on the board, while the inputs are refused to everyone."""
import pytest

from expbench_client.client import Client
from scoring.model_bundles.build import build_reference_bundle

from .stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.needs_bwrap]

SLUG = "expmrc-squad-hidden"  # benchmark_files/demo.yaml: inputs hidden, the fixture as public sample


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    stack = Stack(tmp_path_factory.mktemp("model-pipeline")).setup()
    try:
        stack.start_web()
        for name, queues in (("sandbox", "sandbox"), ("background", "maintenance"), ("reaper", "reaper")):
            stack.start_worker(name, queues=queues, concurrency=1)
        stack.start_beat()
        yield stack
    finally:
        stack.stop()


def test_a_bundle_goes_from_upload_to_the_board_without_the_inputs_leaving(stack, tmp_path):
    token = stack.create_user("modeller", "integration-pw-31")
    status, task = stack.request("GET", f"/api/v1/tasks/{SLUG}/")
    assert status == 200 and task["inputs"] == "hidden" and task["submission_kinds"] == ["model"]
    for path in (f"/api/v1/tasks/{SLUG}/inputs/", f"/tasks/{SLUG}/inputs.json"):
        assert stack.request("GET", path, token=token)[0] == 403
    refused, body = Client(stack.url, token).submit(SLUG, b"{}", method_name="A file", public=True)
    assert refused == 400 and "kind=model" in body["detail"]

    bundle = build_reference_bundle(tmp_path / "reference.zip").read_bytes()
    status, created = Client(stack.url, token).submit(SLUG, bundle, method_name="Lexical overlap",
                                                      filename="model.zip", kind="model", public=True)
    assert status == 201, created
    done = stack.wait_for(created["id"], token, timeout=600)
    assert done["status"] == "scored", (done, stack.log_text("sandbox")[-3000:])
    assert done["scores"]["overall_f1"] > 0 and done["details"]["model_run"]["smoke"] is True
    assert "Smoke run on the public sample" in done["run_log"]
    board = stack.board(SLUG, until=lambda b: any(r["kind"] == "submission" for r in b["rows"]))
    rows = [row for row in board["rows"] if row["kind"] == "submission"]
    assert [row["method"] for row in rows] == ["Lexical overlap"]
