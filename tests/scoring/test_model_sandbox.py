"""Model bundles run in the bubblewrap sandbox (docs/model_submissions.md): the same categories
and predictions as in process, the budget (time, CPU, memory), the jail (no network, read-only
bundle, no gold), hidden-safe feedback. Skipped without bwrap, failed then in CI
(EXPBENCH_REQUIRE_SANDBOX=1, tests/conftest.py)."""
import json

import pytest

from scoring.model_bundles.build import build_reference_bundle
from scoring.model_bundles.pipeline import run_model
from scoring.sandbox import SandboxUnavailable
from scoring.sandbox.limits import SandboxLimits
from scoring.sandbox.model_contract import MODEL_FAILURES, ModelBudget
from scoring.sandbox.model_runner import _ModelJob, _Sandbox, run_model_bundle
from scoring.sandbox.uids import POOL_FIRST, POOL_SIZE
from tests.scoring.model_bundle_fixtures import BAD_BUNDLES, MULTICHOICE_INPUTS, SECRET, SPAN_INPUTS, write_bundle

pytestmark = pytest.mark.needs_bwrap
SMALL = ModelBudget(cpu_seconds=20, memory_bytes=1 * 2**30, wall_seconds=30)
# Categories whose full message holds no traceback (tracebacks name the bundle's path, which
# differs between the jail and this process): the message must be the same word for word.
SAME_MESSAGE = {"missing ids", "extra ids", "duplicate ids", "list returned", "integer keys", "wrong shape", "NaN",
                "a set", "no predict.py", "path traversal"}


@pytest.mark.parametrize("name", sorted(BAD_BUNDLES))
def test_every_bad_input_has_the_same_category_and_message_in_the_sandbox(tmp_path, name):
    files, category = BAD_BUNDLES[name]
    bundle = write_bundle(tmp_path, files)
    sandboxed = run_model(bundle, SPAN_INPUTS, budget=SMALL)
    in_process = run_model(bundle, SPAN_INPUTS, in_process=True)
    assert (sandboxed.status, sandboxed.failure) == ("failed", category), (sandboxed.message, sandboxed.stderr)
    if name in SAME_MESSAGE:
        assert sandboxed.message == in_process.message


def test_sandboxed_and_in_process_predictions_are_identical_and_repeat(tmp_path):
    bundle = build_reference_bundle(tmp_path / "reference.zip")
    first = run_model(bundle, MULTICHOICE_INPUTS, budget=SMALL, batch_size=1)
    second = run_model(bundle, MULTICHOICE_INPUTS, budget=SMALL, batch_size=1)
    here = run_model(bundle, MULTICHOICE_INPUTS, in_process=True, batch_size=1)
    assert first.ok, first.message
    assert first.predictions_json == second.predictions_json == here.predictions_json
    assert first.batches == 2 and first.mode == "bwrap" and "seccomp" in first.isolation
    assert first.bundle_sha256 == here.bundle_sha256
    assert first.import_seconds is not None and first.startup_seconds is not None
    assert first.hardware["memory_budget_bytes"] == SMALL.memory_bytes


def test_predict_sees_no_network_no_gold_a_read_only_bundle_and_its_device(tmp_path):
    probe = """
import os, socket
def predict(examples):
    seen = {}
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
    seen["device"] = os.environ.get("EXPBENCH_DEVICE")
    seen["keys"] = sorted({key for example in examples for key in example})
    seen["uid"] = os.getuid()
    return {e["id"]: {"answer": json_text(seen), "evidence": ""} for e in examples}

def json_text(value):
    import json
    return json.dumps(value, sort_keys=True)
"""
    result = run_model_bundle(write_bundle(tmp_path, {"predict.py": probe}),
                              [{"id": "a", "question": "q", "context": "c"}], budget=SMALL)
    assert result.ok, (result.message, result.stderr)
    seen = json.loads(json.loads(result.predictions_json)["a"]["answer"])
    assert seen["network"] in ("ConnectionRefusedError", "OSError") and seen["bundle"] in ("OSError", "PermissionError")
    assert seen["device"] == "cpu" and seen["keys"] == ["context", "id", "question"]
    assert POOL_FIRST <= seen["uid"] < POOL_FIRST + POOL_SIZE or seen["uid"] == __import__("os").getuid() != 0


def test_a_run_over_its_wall_clock_budget_is_a_timeout(tmp_path):
    bundle = write_bundle(tmp_path, {"predict.py": "import time\ndef predict(examples):\n    time.sleep(60)\n"})
    result = run_model_bundle(bundle, [{"id": "a"}], budget=ModelBudget(wall_seconds=2))
    assert result.failure == "timeout" and result.total_seconds < 20
    assert "wall-clock budget of 2 s during batch 0" in result.message


def test_a_run_over_its_cpu_budget_is_stopped(tmp_path):
    bundle = write_bundle(tmp_path, {"predict.py": "def predict(examples):\n    while True:\n        pass\n"})
    result = run_model_bundle(bundle, [{"id": "a"}], budget=ModelBudget(cpu_seconds=1, wall_seconds=60))
    assert result.failure == "cpu_limit", result.message


def test_a_run_over_its_memory_budget_is_memory(tmp_path):
    source = f"""
def predict(examples):
    print("{SECRET}")
    hoard = []
    while True:
        hoard.append(bytearray(50 * 2**20))
"""
    result = run_model_bundle(write_bundle(tmp_path, {"predict.py": source}), [{"id": "a"}],
                              budget=ModelBudget(memory_bytes=256 * 2**20, wall_seconds=60))
    assert result.failure == "memory", (result.message, result.stderr)
    assert SECRET in result.stderr
    feedback = json.dumps(result.feedback(hidden=True))
    assert SECRET not in feedback and MODEL_FAILURES["memory"] in feedback


def test_hidden_feedback_of_a_sandboxed_run_carries_no_output_or_exception_text(tmp_path):
    source = (f"import sys\nprint('{SECRET}')\nsys.stderr.write('{SECRET}')\n"
              f"def predict(examples):\n    raise ValueError(examples[0]['context'] + '{SECRET}')\n")
    result = run_model(write_bundle(tmp_path, {"predict.py": source}), SPAN_INPUTS, budget=SMALL)
    assert result.failure == "exception"
    assert SECRET in result.message and SECRET in result.stderr  # the smoke run's full log
    hidden = json.dumps(result.feedback(hidden=True))
    assert SECRET not in hidden and "capital of France" not in hidden


def test_a_gpu_run_without_gpu_device_nodes_is_refused_not_run_on_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr("scoring.sandbox.model_runner.gpu_device_nodes", lambda: ())
    with pytest.raises(SandboxUnavailable, match="no /dev/nvidia"):
        run_model_bundle(build_reference_bundle(tmp_path / "r.zip"), [{"id": "a"}], gpu=True)


def test_a_gpu_run_passes_the_driver_library_path_into_the_jail(monkeypatch):
    """The jail starts from an empty environment and has no ld.so.cache: the CUDA driver's
    libraries are found through the worker's LD_LIBRARY_PATH, passed on for GPU runs only."""
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64")
    job = _ModelJob()
    try:
        gpu = _Sandbox(job, SandboxLimits(), "bwrap", "cuda", ("/dev/nvidia0",), True, False).environment()
        cpu = _Sandbox(job, SandboxLimits(), "bwrap", "cpu", (), True, False).environment()
    finally:
        job.cleanup()
    assert gpu["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64" and gpu["EXPBENCH_DEVICE"] == "cuda"
    assert "LD_LIBRARY_PATH" not in cpu and cpu["EXPBENCH_DEVICE"] == "cpu"
