"""``python -m scoring run-model`` and ``build-bundle``: what the command line does with a model
bundle (docs/model_submissions.md, "Debugging a bundle locally"). ``scoring.cli`` parses the
arguments and prints; this module does the work and says what to print."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ..sandbox.bundle_check import BundleRefused, check_bundle
from ..sandbox.errors import SandboxUnavailable
from ..sandbox.model_contract import ModelBudget, ModelRunResult
from ..strict_json import InvalidJson, loads_json
from .build import build_bundle, build_reference_bundle
from .examples import InvalidInputs
from .pipeline import run_model

EXIT_BUNDLE_FAILED = 1


class ModelCommandError(Exception):
    """An input problem worth one line on stderr (exit status 2)."""


@dataclass
class RunOptions:
    bundle: str
    inputs: str
    prediction_format: str | None = None
    out: str | None = None
    batch_size: int = 32
    device: str = "cpu"
    sandbox: bool = False
    budget: ModelBudget | None = None
    hidden: bool = False


def read_inputs(path: str):
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise ModelCommandError(f"cannot read inputs file {path}: {error.strerror or error}") from None
    try:
        return loads_json(raw)
    except (InvalidJson, UnicodeDecodeError) as error:
        raise ModelCommandError(f"inputs file {path} is not valid JSON: {error}") from None


def run(options: RunOptions) -> tuple[int, ModelRunResult]:
    """Run the bundle; on success write the predictions (``--out`` or stdout). Returns the exit
    status and the result; the caller prints the failure (``failure_text``)."""
    if options.batch_size < 1:
        raise ModelCommandError("--batch-size must be at least 1")
    if not Path(options.bundle).is_file():
        raise ModelCommandError(f"bundle {options.bundle} is not a file")
    public_inputs = read_inputs(options.inputs)
    try:
        if options.sandbox:
            result = run_model(options.bundle, public_inputs, prediction_format=options.prediction_format,
                               batch_size=options.batch_size, gpu=options.device == "cuda",
                               budget=options.budget or ModelBudget())
        else:
            result = run_model(options.bundle, public_inputs, prediction_format=options.prediction_format,
                               in_process=True, batch_size=options.batch_size, device=options.device)
    except InvalidInputs as error:
        raise ModelCommandError(f"inputs file {options.inputs}: {error}") from None
    except SandboxUnavailable as error:
        raise ModelCommandError(f"no sandbox here: {error}") from None
    if not result.ok or result.predictions_json is None:  # an ok run has every prediction
        return EXIT_BUNDLE_FAILED, result
    data = result.predictions_json + b"\n"
    if options.out:
        try:
            Path(options.out).write_bytes(data)
        except OSError as error:
            raise ModelCommandError(f"cannot write {options.out}: {error.strerror or error}") from None
    else:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return 0, result


def failure_text(result: ModelRunResult, *, hidden: bool) -> str:
    """``error: <category>: <message>``; ``hidden``: only what a hidden run would show."""
    message = result.hidden_message if hidden else result.message
    text = f"error: {result.failure}: {message}"
    if not hidden and result.stderr.strip():
        text += f"\n--- output of the bundle (stdout and stderr) ---\n{result.stderr.rstrip()}"
    return text


def summary_text(result: ModelRunResult) -> str:
    return (f"predicted {result.total} examples in {result.batches} batches of {result.batch_size} "
            f"({result.mode}, {result.device}): {result.total_seconds:.2f} s, of which predict "
            f"{result.predict_seconds:.2f} s; bundle sha256 {result.bundle_sha256}")


def build(folder: str | None, destination: str, *, reference: bool) -> str:
    """Zip a bundle (or the reference bundle), check it, and return a one-line summary."""
    if reference == bool(folder):
        raise ModelCommandError("give a folder holding predict.py, or --reference (not both)")
    try:
        path = build_bundle(folder, destination) if folder else build_reference_bundle(destination)
    except (FileNotFoundError, NotADirectoryError) as error:
        raise ModelCommandError(str(error)) from None
    except OSError as error:
        raise ModelCommandError(f"cannot write {destination}: {error.strerror or error}") from None
    try:
        manifest = check_bundle(path)
    except BundleRefused as error:
        raise ModelCommandError(f"{destination} was written but fails the bundle check ({error.category}): "
                                f"{error}") from None
    return (f"{destination}: {manifest.size} bytes, {len(manifest.files)} files, "
            f"sha256 {manifest.sha256}")
