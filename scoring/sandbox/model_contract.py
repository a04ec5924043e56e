"""What a model run is held to, and what it gives back (docs/model_submissions.md): the failure
categories with their two message levels, ``ModelBudget``, ``ModelRunResult``, the checks of
what ``predict`` returned for one batch (``check_batch_reply``; the sandboxed runner and the
in-process runner apply the very same function to the very same message), the merge of the
batches into JSON bytes, and the record of the environment and the hardware.

Two message levels. ``message`` is full: it may quote the child's traceback, stdout/stderr and
the ids concerned; it is shown for a run on public inputs (the smoke run) and by the local CLI.
``hidden_message`` is the category's fixed sentence (``MODEL_FAILURES``) and nothing else: a
run on hidden inputs shows only that, since anything the bundle wrote or raised can carry the
inputs it was given.
"""
from __future__ import annotations

import functools
import json
import math
import os
import platform
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from .limits import SandboxLimits
from .protocol import ProtocolViolation

# category -> the fixed, hidden-safe sentence (never anything the bundle produced).
MODEL_FAILURES = {
    "invalid_bundle": "the bundle is not an acceptable zip (size, paths, file kinds or Python source)",
    "no_predict_py": "the bundle has no predict.py at its root",
    "no_predict": "predict.py defines no callable predict(examples)",
    "import_error": "importing predict.py failed",
    "exception": "predict raised an exception",
    "wrong_return_type": "predict did not return a mapping from example id strings to predictions",
    "missing_ids": "predict returned no prediction for some examples of a batch",
    "extra_ids": "predict returned ids that are not among the examples of its batch",
    "duplicate_ids": "predict returned the same id more than once",
    "non_json": "a prediction is not a JSON value (NaN, infinity or an object JSON cannot hold)",
    "bad_prediction": "a prediction does not have the task's prediction format",
    "timeout": "the run took longer than its wall-clock budget",
    "cpu_limit": "the run used more CPU time than its budget",
    "memory": "memory limit exceeded: the run used more memory than its budget",
    "crashed": "the sandboxed process died (a signal or an exit)",
    "output_flood": "a reply was larger than the output limit",
    "protocol_error": "the sandboxed process wrote something that is not a valid reply",
}
DEVICES = ("cpu", "cuda")
DEVICE_VARIABLE = "EXPBENCH_DEVICE"   # tells predict where to run
DEFAULT_BATCH_SIZE = 32
MAX_SHOWN_IDS = 5
# Packages whose versions every run records (those installed; the bundle runs on the worker's
# own environment, so these are what it could import).
KEY_PACKAGES = ("numpy", "scipy", "scikit-learn", "torch", "transformers", "tokenizers",
                "sentencepiece", "onnxruntime", "nltk", "jieba")


class ModelFailure(Exception):
    """Ends a model run: ``category`` is a ``MODEL_FAILURES`` key, ``message`` the full text."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category = category
        self.message = message


@dataclass
class ModelBudget:
    """What one run may use: CPU seconds (all its processes together), memory (bytes, the
    whole sandbox) and wall-clock seconds (start-up included)."""

    cpu_seconds: float = 3600
    memory_bytes: int = 4 * 2**30
    wall_seconds: float = 1800

    def limits(self, *, gpu: bool = False) -> SandboxLimits:
        """The sandbox limits that enforce this budget. RLIMIT_AS is the memory budget on CPU
        (it also bounds a run where cgroups are not available); with a GPU it is lifted, since
        the CUDA driver reserves far more address space than it uses, and the cgroup alone
        bounds memory."""
        cpu = max(1, math.ceil(self.cpu_seconds))
        return SandboxLimits(
            address_space=2**46 if gpu else int(self.memory_bytes), cpu_seconds=cpu,
            cpu_budget_seconds=float(self.cpu_seconds), memory_bytes=int(self.memory_bytes),
            total_seconds=float(self.wall_seconds), startup_seconds=float(self.wall_seconds),
            per_sample_seconds=float(self.wall_seconds), open_files=256 if gpu else 64,
            output_bytes=16 * 2**20)


@dataclass
class ModelRunResult:
    """What a model run produced. ``predictions_json``: the merged predictions as JSON bytes
    (ids in the examples' order), for the task's strict parser; None when the run failed."""

    status: str = "ok"                         # "ok" | "failed"
    failure: str | None = None                 # MODEL_FAILURES key
    message: str = ""                          # full: may quote the bundle's output
    stderr: str = ""                           # the bundle's stdout and stderr (capped), full only
    predictions_json: bytes | None = None
    predictions: dict | None = None            # parsed by the task's format (set by the caller)
    total: int = 0                             # examples
    done: int = 0                              # examples predicted before the run ended
    batches: int = 0
    batch_size: int = DEFAULT_BATCH_SIZE
    bundle_sha256: str = ""
    device: str = "cpu"
    mode: str = "bwrap"                        # "bwrap" | "none" | "in-process"
    isolation: list[str] = field(default_factory=list)
    environment: dict = field(default_factory=dict)
    hardware: dict = field(default_factory=dict)
    total_seconds: float = 0.0                 # the whole run, job set-up included
    startup_seconds: float | None = None       # launch -> predict.py imported
    import_seconds: float | None = None        # importing predict.py (measured by the child)
    predict_seconds: float = 0.0               # inside predict, all batches (measured by the child)
    batch_seconds: list[float] = field(default_factory=list)   # parent wall clock per batch
    cpu_seconds: float = 0.0
    started_ahead: bool = False                # the sandbox was started before the run (keep_warm)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def hidden_message(self) -> str:
        """The category's fixed sentence: all a run on hidden inputs may show."""
        return MODEL_FAILURES.get(self.failure or "", "") if self.failure else ""

    def fail(self, failure: ModelFailure) -> None:
        self.status, self.failure, self.message = "failed", failure.category, failure.message
        self.predictions_json = self.predictions = None

    def feedback(self, *, hidden: bool) -> dict:
        """What the submitter may see: on hidden inputs the status, category, its fixed
        sentence and the figures of the run, never output, messages or ids."""
        common = {"status": self.status, "failure": self.failure, "total": self.total,
                  "done": self.done, "total_seconds": round(self.total_seconds, 3),
                  "bundle_sha256": self.bundle_sha256, "device": self.device}
        if hidden:
            return {**common, "message": self.hidden_message}
        return {**common, "message": self.message, "stderr": self.stderr}

    def record(self) -> dict:
        """What an entry stores about its run (no predictions, no output)."""
        keys = ("status", "failure", "total", "batches", "batch_size", "bundle_sha256", "device",
                "mode", "isolation", "environment", "hardware", "total_seconds", "startup_seconds",
                "import_seconds", "predict_seconds", "cpu_seconds", "started_ahead")
        return {key: value for key, value in asdict(self).items() if key in keys}


# --------------------------------------------------------------------------- examples and batches

def check_examples(examples: list[dict]) -> list[str]:
    """The ids of ``examples`` (flat records with a string ``id``), which must be unique; a
    ValueError is the caller's fault (the platform's inputs), never the bundle's."""
    ids = []
    for position, example in enumerate(examples):
        if not isinstance(example, dict) or not isinstance(example.get("id"), str):
            raise ValueError(f"example {position} is not a record with a string id")
        ids.append(example["id"])
    if len(set(ids)) != len(ids):
        raise ValueError("example ids must be unique")
    return ids


def batches(examples: list[dict], batch_size: int) -> list[list[dict]]:
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    return [examples[start:start + batch_size] for start in range(0, len(examples), batch_size)]


def _ids_shown(ids: list[str]) -> str:
    shown = ", ".join(json.dumps(value[:60]) for value in ids[:MAX_SHOWN_IDS])
    return shown + (f" and {len(ids) - MAX_SHOWN_IDS} more" if len(ids) > MAX_SHOWN_IDS else "")


def _first_non_finite(value, depth: int = 0) -> bool:
    """Whether a decoded JSON value holds NaN or an infinity (Python's json reads them)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if depth > 200:
        return False
    if isinstance(value, list):
        return any(_first_non_finite(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return any(_first_non_finite(item, depth + 1) for item in value.values())
    return False


def _error_text(error: dict) -> str:
    summary = f"{error['type']}: {error['message']}"
    trace = error["traceback"].rstrip()
    return summary + (f"\n{trace}" if trace and trace != summary else "")


def check_batch_reply(reply: dict, number: int, batch_ids: list[str]) -> tuple[dict, float]:
    """The predictions of batch ``number`` from the child's reply, as ``({id: prediction},
    seconds in predict)``, or ``ModelFailure``. ``reply`` is an untrusted decoded line:
    anything but the messages of ``model_child.batch_reply`` is a ``ProtocolViolation``."""
    if not isinstance(reply, dict) or reply.get("batch") != number or type(reply.get("batch")) is not int:
        raise ProtocolViolation(f"a reply for another batch arrived while batch {number} was expected")
    kinds = [key for key in ("predictions", "error", "wrong_return_type", "non_json") if key in reply]
    if len(kinds) != 1 or set(reply) != {"batch", "seconds", kinds[0]}:
        raise ProtocolViolation(f"the reply for batch {number} is not one of the protocol's messages")
    seconds = reply["seconds"]
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not 0 <= seconds <= 86_400:  # NaN fails this too
        raise ProtocolViolation(f"the reply for batch {number} has no valid seconds")
    kind, value = kinds[0], reply[kinds[0]]
    if kind == "error":
        if not isinstance(value, dict) or set(value) != {"type", "message", "traceback"} \
                or not all(isinstance(item, str) for item in value.values()):
            raise ProtocolViolation(f"the error reply for batch {number} is malformed")
        error = {key: item[:4000] for key, item in value.items()}
        category = "memory" if error["type"] == "MemoryError" else "exception"
        raise ModelFailure(category, f"predict raised {_error_text(error)}")
    if kind in ("wrong_return_type", "non_json"):
        if not isinstance(value, str):
            raise ProtocolViolation(f"the reply for batch {number} is malformed")
        detail = value[:1000]
        if kind == "wrong_return_type":
            raise ModelFailure(kind, f"predict returned {detail}; it must return a mapping "
                                     '{"<example id>": <prediction>} for the examples of its batch')
        raise ModelFailure(kind, f"batch {number}: {detail}")
    if not isinstance(value, list):
        raise ProtocolViolation(f"the predictions of batch {number} are not a list of pairs")
    predictions: dict = {}
    duplicates: list[str] = []
    for pair in value:
        if not isinstance(pair, list) or len(pair) != 2:
            raise ProtocolViolation(f"the predictions of batch {number} are not a list of pairs")
        key, prediction = pair
        if not isinstance(key, str):
            shown = json.dumps(key)[:40] if isinstance(key, (int, float, bool)) or key is None else type(key).__name__
            raise ModelFailure("wrong_return_type", f"predict returned the key {shown} ({type(key).__name__}); "
                                                    "keys must be the examples' id strings")
        if key in predictions:
            duplicates.append(key)
        predictions[key] = prediction
    if duplicates:
        raise ModelFailure("duplicate_ids", f"batch {number}: predict returned {_ids_shown(duplicates)} "
                                            "more than once")
    expected = set(batch_ids)
    extra = [key for key in predictions if key not in expected]
    if extra:
        raise ModelFailure("extra_ids", f"batch {number}: predict returned {len(extra)} id(s) not among "
                                        f"the examples of its batch: {_ids_shown(extra)}")
    missing = [key for key in batch_ids if key not in predictions]
    if missing:
        raise ModelFailure("missing_ids", f"batch {number}: predict returned no prediction for "
                                          f"{len(missing)} of its {len(batch_ids)} examples: {_ids_shown(missing)}")
    bad = [key for key, prediction in predictions.items() if _first_non_finite(prediction)]
    if bad:
        raise ModelFailure("non_json", f"batch {number}: the predictions for {_ids_shown(bad)} hold NaN or "
                                       "an infinity, which JSON cannot hold")
    return predictions, float(seconds)


def merged_json(ids: list[str], predictions: dict) -> bytes:
    """The predictions of every batch as one JSON object in the examples' order: the bytes the
    task's strict parser reads, as it reads an uploaded prediction file."""
    try:
        return json.dumps({key: predictions[key] for key in ids}, ensure_ascii=False,
                          allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as error:
        raise ModelFailure("non_json", f"the predictions cannot be written as JSON ({error})") from None


# --------------------------------------------------------------------------- what the run ran on

@functools.lru_cache(maxsize=1)
def _environment() -> tuple:
    packages = {}
    for name in KEY_PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return tuple(packages.items())


def environment() -> dict:
    """Python and the key packages installed (the environment the bundle runs in; read once
    per process, as a worker's installation does not change under it)."""
    packages = dict(_environment())
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "platform": f"{platform.system()} {platform.machine()}", "packages": packages,
            "executable": os.path.basename(sys.executable)}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def gpu_models() -> list[str]:
    """The NVIDIA GPUs the driver lists (``/proc/driver/nvidia/gpus/*/information``)."""
    models = []
    for information in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        try:
            for line in information.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("Model:"):
                    models.append(line.partition(":")[2].strip())
        except OSError:
            continue
    return models


def hardware(limits: SandboxLimits | None, device: str) -> dict:
    record: dict[str, Any] = {"cpu": _cpu_model(), "cpus": os.cpu_count(), "memory_bytes": _memory_bytes(),
                              "device": device}
    if limits is not None:
        record["cpu_cores_allowed"] = limits.cpu_cores
        record["memory_budget_bytes"] = limits.memory_bytes
    if device == "cuda":
        record["gpus"] = gpu_models()
    return record
