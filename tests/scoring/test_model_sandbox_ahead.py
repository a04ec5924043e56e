"""Sandboxes started ahead (docs/model_submissions.md, "Sandboxes started ahead"): a worker's run
leaves the next run's sandbox booted without a bundle; the next run with the same limits uses it
once, sees only its own bundle, gets the same predictions and categories as a cold run, and a
sandbox started ahead that went wrong never fails a run. Skipped without bwrap, failed then in CI
(EXPBENCH_REQUIRE_SANDBOX=1, tests/conftest.py)."""
import json
import os

import pytest

from scoring.model_bundles.build import build_reference_bundle
from scoring.sandbox import model_runner
from scoring.sandbox.cgroups import leftover_groups
from scoring.sandbox.model_contract import ModelBudget
from scoring.sandbox.model_runner import ahead_ready, discard_ahead, run_model_bundle, settle
from scoring.sandbox.uids import POOL_FIRST, POOL_SIZE
from tests.scoring.model_bundle_fixtures import BAD_BUNDLES, write_bundle

pytestmark = pytest.mark.needs_bwrap
SMALL = ModelBudget(cpu_seconds=20, memory_bytes=1 * 2**30, wall_seconds=30)
EXAMPLES = [{"id": "q1", "question": "What is the capital of France?",
             "context": "Paris is the capital of France. The Seine flows through the city."},
            {"id": "q2", "question": "Which river flows through the city?",
             "context": "Paris is the capital of France. The Seine flows through the city."}]

PROBE = """
import os, socket
def predict(examples):
    seen = {"files": sorted(os.listdir(os.path.dirname(__file__))), "uid": os.getuid()}
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1)
        seen["network"] = "open"
    except OSError as error:
        seen["network"] = type(error).__name__
    try:
        open(os.path.join(os.path.dirname(__file__), "new.txt"), "w")
        seen["bundle"] = "writable"
    except OSError as error:
        seen["bundle"] = type(error).__name__
    return {e["id"]: {"answer": json_text(seen), "evidence": ""} for e in examples}

def json_text(value):
    import json
    return json.dumps(value, sort_keys=True)
"""


@pytest.fixture(autouse=True)
def no_sandbox_ahead():
    discard_ahead()
    yield
    discard_ahead()


def ahead_sandbox():
    settle()
    return model_runner._ahead[0] if model_runner._ahead else None


def seen_by(result) -> dict:
    assert result.ok, (result.failure, result.message, result.stderr)
    return json.loads(json.loads(result.predictions_json)["q1"]["answer"])


def test_a_run_uses_the_sandbox_its_predecessor_started_once_with_identical_predictions(tmp_path):
    bundle = build_reference_bundle(tmp_path / "reference.zip")
    cold = run_model_bundle(bundle, EXAMPLES, budget=SMALL, keep_warm=True)
    assert ahead_ready(), "no sandbox was started ahead"
    warm = run_model_bundle(bundle, EXAMPLES, budget=SMALL)
    assert not cold.started_ahead and warm.started_ahead and warm.record()["started_ahead"]
    assert cold.ok and warm.ok, (warm.message, warm.stderr)
    assert warm.predictions_json == cold.predictions_json
    assert "seccomp" in warm.isolation and warm.import_seconds is not None
    assert ahead_sandbox() is None, "a sandbox started ahead serves one run"
    assert not run_model_bundle(bundle, EXAMPLES, budget=SMALL).started_ahead


def test_the_next_bundle_sees_only_itself_read_only_without_network_as_a_pool_uid(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write_bundle(tmp_path / "a", {"predict.py": PROBE, "weights_of_a.bin": "secret weights"})
    second = write_bundle(tmp_path / "b", {"predict.py": PROBE})
    run_model_bundle(first, EXAMPLES, budget=SMALL, keep_warm=True)
    result = run_model_bundle(second, EXAMPLES, budget=SMALL, keep_warm=True)
    seen = seen_by(result)
    assert result.started_ahead
    assert seen["files"] == ["predict.py"], "the bundle before it left files behind"
    assert seen["network"] in ("ConnectionRefusedError", "OSError") and seen["bundle"] in ("OSError", "PermissionError")
    assert POOL_FIRST <= seen["uid"] < POOL_FIRST + POOL_SIZE or seen["uid"] == os.getuid() != 0


@pytest.mark.parametrize("name", ["import error", "exception", "missing ids", "path traversal", "NaN"])
def test_bad_bundles_get_their_categories_in_a_sandbox_started_ahead(tmp_path, name):
    files, category = BAD_BUNDLES[name]
    good = build_reference_bundle(tmp_path / "reference.zip")
    run_model_bundle(good, EXAMPLES, budget=SMALL, keep_warm=True)
    assert ahead_ready()
    bad = run_model_bundle(write_bundle(tmp_path, files), EXAMPLES, budget=SMALL, keep_warm=True)
    assert (bad.status, bad.failure) == ("failed", category), (bad.message, bad.stderr)
    assert bad.started_ahead
    again = run_model_bundle(good, EXAMPLES, budget=SMALL)  # the bad one's successor is clean
    assert again.ok and again.started_ahead, (again.message, again.stderr)


def test_a_run_with_other_limits_starts_its_own_and_the_unused_sandbox_leaves_nothing(tmp_path):
    bundle = build_reference_bundle(tmp_path / "reference.zip")
    run_model_bundle(bundle, EXAMPLES, budget=SMALL, keep_warm=True)
    stale = ahead_sandbox()
    assert stale is not None
    other = run_model_bundle(bundle, EXAMPLES, budget=ModelBudget(cpu_seconds=10, memory_bytes=2**30, wall_seconds=20))
    assert other.ok and not other.started_ahead
    assert ahead_sandbox() is None
    assert not stale.job.root.exists(), "the unused sandbox's job directory was left"
    assert not leftover_groups(stale.job.name), "the unused sandbox's cgroups were left"


def test_a_sandbox_started_ahead_that_died_is_given_up_and_the_run_starts_its_own(tmp_path):
    bundle = build_reference_bundle(tmp_path / "reference.zip")
    run_model_bundle(bundle, EXAMPLES, budget=SMALL, keep_warm=True)
    ahead = ahead_sandbox()
    assert ahead is not None and ahead.child is not None
    ahead.child.kill()  # as if the machine killed it while it waited
    result = run_model_bundle(bundle, EXAMPLES, budget=SMALL)
    assert result.ok and not result.started_ahead, (result.message, result.stderr)
    assert not ahead.job.root.exists()
