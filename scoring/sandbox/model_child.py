"""The program that runs a model bundle's ``predict`` inside the sandbox (docs/model_submissions.md).

The model runner (``scoring.sandbox.model_runner``) copies this file into the jail as
``runtime/sandbox_model_child.py`` (``layout.MODEL_CHILD_FILE``), next to the copy of
``child.py`` (``runtime/sandbox_child.py``) whose seccomp filter, protocol channel, error
description and source-only import hook it reuses, and starts it as ``python -B -s
/sandbox/runtime/sandbox_model_child.py CONFIG_JSON`` (CONFIG: the bundle's directory, the entry
module, whether to install the seccomp filter). Standard library only.

Protocol, one JSON object per line:

* started ahead (``"await_bundle": true`` in CONFIG): child -> parent ``{"event": "waiting"}``
  once the interpreter is up and the filter installed, then parent -> child ``{"load": true}``
  when the bundle's directory holds the bundle (anything else, or end of input: exit 0).
* child -> parent, start-up: ``{"event": "ready", "seconds": s, "seccomp": bool,
  "seccomp_problem": str}`` once ``predict.py`` is imported, or ``{"event": "import_error" |
  "no_predict", "type", "message", "traceback"}`` and exit.
* parent -> child, per batch: ``{"batch": n, "examples": [{"id", "question", ...}, ...]}``.
* child -> parent, per batch, with ``"batch": n`` and ``"seconds"`` (inside predict): one of
  ``"predictions": [[id, prediction], ...]``, ``"error": {"type", "message", "traceback"}``,
  ``"wrong_return_type": "<what predict returned>"`` or ``"non_json": "<why>"``.

``batch_reply`` builds the reply line; the in-process runner (``python -m scoring run-model``)
calls the same function, so a bundle meets the same checks and messages there. The parent
checks every reply again (``model_contract.check_batch_reply``): once the bundle is imported,
this process is untrusted.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Mapping

try:  # in the jail: the runtime copy of scoring/sandbox/child.py, next to this file
    import sandbox_child as base
except ModuleNotFoundError:  # in the repository: the in-process runner imports this module
    from . import child as base

DETAIL_CHARS = 1000


def load_predict(code_dir: str, entry: str):
    """``(predict, None)``, or ``(None, start-up failure message)``: the bundle's directory is
    made importable (source only, after every trusted path) and its entry module imported."""
    base.add_code_dir(code_dir)
    try:
        module = importlib.import_module(entry)
    except BaseException as error:  # noqa: BLE001  (SystemExit at import is the bundle's too)
        return None, {"event": "import_error", **base.describe(error, code_dir)}
    predict = getattr(module, "predict", None)
    if not callable(predict):
        missing = AttributeError(f"{entry}.py defines no callable predict (found {type(predict).__name__})")
        return None, {"event": "no_predict", **base.describe(missing)}
    return predict, None


def _describe_value(value) -> str:
    text = type(value).__name__
    if isinstance(value, (list, tuple, set, str, bytes)):
        text += f" of length {len(value)}"
    return text


def _pairs(result) -> tuple[list | None, str]:
    """``predict``'s result as ``[[id, prediction], ...]``, or (None, what was wrong)."""
    if not isinstance(result, Mapping):
        return None, f"a {_describe_value(result)}, not a mapping"
    pairs = []
    for key, value in result.items():
        if not isinstance(key, str):
            shown = repr(key)[:40] if isinstance(key, (int, float, bool)) or key is None else ""
            return None, (f"a mapping with a {type(key).__name__} key {shown}".rstrip()
                          + " (keys must be the examples' id strings)")
        pairs.append([key, value])
    return pairs, ""


def _not_json(pairs: list) -> str:
    """Why the predictions cannot be JSON, naming the first id concerned."""
    for key, value in pairs:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as error:
            reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
            return f"the prediction for {json.dumps(key[:60])} is not a JSON value: {reason[:200]}"
    return "the predictions are not JSON values"


def batch_reply(predict, number: int, examples: list, code_dir: str | None) -> bytes:
    """Call ``predict(examples)`` and return the reply line for batch ``number`` (bytes ending
    with a newline)."""
    started = time.perf_counter()
    try:
        result = predict(examples)
        pairs, problem = _pairs(result)
    except BaseException as error:  # noqa: BLE001  (SystemExit too: it is the bundle's)
        message = {"batch": number, "error": base.describe(error, code_dir)}
        return json.dumps({**message, "seconds": time.perf_counter() - started}).encode() + b"\n"
    seconds = time.perf_counter() - started
    if pairs is None:
        message = {"batch": number, "wrong_return_type": problem[:DETAIL_CHARS]}
    else:
        message = {"batch": number, "predictions": pairs}
    message["seconds"] = seconds
    try:  # ASCII escapes: an unpaired surrogate travels and is refused by the parent's merge
        return json.dumps(message, allow_nan=False).encode() + b"\n"
    except (TypeError, ValueError, RecursionError):
        failure = {"batch": number, "non_json": _not_json(pairs or [])[:DETAIL_CHARS], "seconds": seconds}
        return json.dumps(failure).encode() + b"\n"


def _write(channel, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[channel.writer.write(view):]


def main(argv: list[str]) -> int:
    config = json.loads(argv[1])
    channel = base.Channel()
    main_pid = os.getpid()
    if config["runtime_dir"] in sys.path:
        sys.path.remove(config["runtime_dir"])
    sys.path.insert(0, config["runtime_dir"])
    seccomp_problem = base.install_seccomp() if config.get("seccomp", True) else "disabled"
    if config.get("await_bundle"):
        # Started ahead of its run (model_runner.WarmSandbox): the interpreter is up and the
        # filter installed; the bundle's directory fills while this waits for "load".
        channel.send({"event": "waiting"})
        if channel.receive() != {"load": True}:
            return 0

    started = time.perf_counter()
    predict, failure = load_predict(config["code_dir"], config["entry"])
    if os.getpid() != main_pid:  # a process forked at import time must not speak
        os._exit(0)
    if failure is not None:
        channel.send(failure)
        return 4
    channel.send({"event": "ready", "seconds": time.perf_counter() - started,
                  "seccomp": not seccomp_problem, "seccomp_problem": seccomp_problem})
    while True:
        request = channel.receive()
        if request is None:
            return 0
        line = batch_reply(predict, request["batch"], request["examples"], config["code_dir"])
        if os.getpid() != main_pid:  # a forked copy of the bundle's code: vanish quietly
            os._exit(0)
        base.reap_children()
        _write(channel, line)


if __name__ == "__main__":
    try:
        code = main(sys.argv)
    except BaseException:  # noqa: BLE001  (a protocol failure: the parent reads stderr)
        traceback.print_exc()
        code = 5
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)  # threads the bundle left running must not keep the sandbox alive
