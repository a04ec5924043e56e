"""A model bundle run in this process, exactly as the sandbox runs it but without the jail:
``python -m scoring run-model`` for researchers debugging a bundle, and the in-process side of
``perf/model_run.py``.

The same bundle check and unpacking (``bundle_check.extract_bundle``), the same import
(``model_child.load_predict``), the same batches, the same reply line per batch
(``model_child.batch_reply``) decoded by the same bounded reader and checked by the same
function (``model_contract.check_batch_reply``), the same merge: a bundle that passes here
passes the sandbox's checks, with the same messages when it does not. What the sandbox adds
(no network, read-only filesystem, the CPU, memory and wall-clock budget) is not enforced
here. ``predict``'s prints go to stderr, as in the sandbox.
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from ..sandbox.bundle_check import (
    DEFAULT_BUNDLE_MAX_BYTES,
    DEFAULT_MAX_UNPACKED_BYTES,
    BundleRefused,
    bundle_sha256,
    extract_bundle,
)
from ..sandbox.child_process import OutputFlood
from ..sandbox.layout import MODEL_ENTRY_MODULE
from ..sandbox.model_child import batch_reply, load_predict
from ..sandbox.model_contract import (
    DEFAULT_BATCH_SIZE,
    DEVICE_VARIABLE,
    DEVICES,
    ModelBudget,
    ModelFailure,
    ModelRunResult,
    batches,
    check_batch_reply,
    check_examples,
    environment,
    hardware,
    merged_json,
)
from ..sandbox.model_runner import startup_failure
from ..sandbox.protocol import ProtocolViolation, decode


@contextlib.contextmanager
def _bundle_imported(code_dir: str, device: str):
    """While the bundle runs: its device in the environment, prints on stderr; afterwards its
    directory leaves ``sys.path`` and its modules ``sys.modules`` (a second bundle imports its
    own ``predict``)."""
    before = set(sys.modules)
    previous = os.environ.get(DEVICE_VARIABLE)
    os.environ[DEVICE_VARIABLE] = device
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if previous is None:
            os.environ.pop(DEVICE_VARIABLE, None)
        else:
            os.environ[DEVICE_VARIABLE] = previous
        while code_dir in sys.path:
            sys.path.remove(code_dir)
        sys.path_importer_cache.pop(code_dir, None)
        for name in set(sys.modules) - before:
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if name == MODEL_ENTRY_MODULE or module_file.startswith(code_dir + os.sep):
                del sys.modules[name]


def run_in_process(bundle_path, examples: list[dict], *, batch_size: int = DEFAULT_BATCH_SIZE,
                   device: str = "cpu", max_bytes: int = DEFAULT_BUNDLE_MAX_BYTES,
                   max_unpacked_bytes: int = DEFAULT_MAX_UNPACKED_BYTES) -> ModelRunResult:
    """Run the bundle's ``predict`` on ``examples`` here; the same ``ModelRunResult`` as
    ``run_model_bundle`` (``mode="in-process"``, no ``stderr``: it went to this process's)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}")
    ids = check_examples(examples)
    output_limit = ModelBudget().limits(gpu=device == "cuda").output_bytes
    result = ModelRunResult(total=len(examples), batch_size=batch_size, mode="in-process", device=device,
                            environment=environment(), hardware=hardware(None, device))
    parts = batches(examples, batch_size)
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="expbench-model-") as job:
        code_dir = os.path.join(job, "code")
        try:
            try:
                manifest = extract_bundle(bundle_path, code_dir, max_bytes=max_bytes,
                                          max_unpacked_bytes=max_unpacked_bytes)
            except BundleRefused as error:
                result.bundle_sha256 = bundle_sha256(bundle_path) if Path(bundle_path).is_file() else ""
                raise ModelFailure(error.category, str(error)) from None
            result.bundle_sha256 = manifest.sha256
            with _bundle_imported(code_dir, device):
                _run(code_dir, parts, ids, result, output_limit)
        except ModelFailure as failure:
            result.fail(failure)
    result.total_seconds = time.monotonic() - began
    return result


def _run(code_dir: str, parts: list[list[dict]], ids: list[str], result: ModelRunResult, output_limit: int) -> None:
    started = time.monotonic()
    clock = time.perf_counter()
    predict, failure = load_predict(code_dir, MODEL_ENTRY_MODULE)
    if failure is not None:
        raise startup_failure(failure)
    result.import_seconds = time.perf_counter() - clock
    result.startup_seconds = time.monotonic() - started
    predictions: dict = {}
    for number, batch in enumerate(parts):
        when = f"during batch {number} ({result.done} of {result.total} examples done)"
        sent = time.monotonic()
        line = batch_reply(predict, number, batch, code_dir)[:-1]
        try:
            if len(line) > output_limit:  # as the sandbox's reader refuses it
                raise OutputFlood(f"a reply of {len(line)} bytes (limit {output_limit})")
            batch_predictions, seconds = check_batch_reply(decode(line), number,
                                                           [example["id"] for example in batch])
        except OutputFlood as error:
            raise ModelFailure("output_flood", f"{error} {when}") from None
        except ProtocolViolation as error:
            raise ModelFailure("protocol_error", f"{error} ({when})") from None
        predictions.update(batch_predictions)
        result.batch_seconds.append(time.monotonic() - sent)
        result.predict_seconds += seconds
        result.batches += 1
        result.done += len(batch)
    result.predictions_json = merged_json(ids, predictions)
