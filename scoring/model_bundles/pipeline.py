"""A model run from a test set's public inputs to parsed predictions, in one call: examples
(``examples.model_examples``), the run (sandboxed ``run_model_bundle`` or ``run_in_process``),
then the task's strict parser on the returned JSON bytes (``examples.parse_model_predictions``);
a parser refusal is the run's ``bad_prediction``. The CLI and the worker call this same function.
"""
from __future__ import annotations

from ..metrics.expmrc import DEFAULT_MAX_BYTES
from ..sandbox.model_contract import ModelFailure, ModelRunResult
from ..sandbox.model_runner import run_model_bundle
from ..strict_json import InvalidPredictions
from .examples import detect_format, model_examples, parse_model_predictions
from .in_process import run_in_process


def read_predictions(result: ModelRunResult, prediction_format: str, examples: list[dict], *,
                     max_prediction_bytes: int = DEFAULT_MAX_BYTES) -> ModelRunResult:
    """Parse a successful run's ``predictions_json`` as the task parses an uploaded file and
    store them in ``result.predictions``; a refusal fails the run with ``bad_prediction``."""
    if not result.ok or result.predictions_json is None:
        return result
    try:
        result.predictions = parse_model_predictions(prediction_format, result.predictions_json, examples,
                                                     max_bytes=max_prediction_bytes)
    except InvalidPredictions as error:
        result.fail(ModelFailure("bad_prediction", f"the predictions do not have the {prediction_format} "
                                                   f"prediction format: {error}"))
    return result


def run_model(bundle_path, public_inputs, *, prediction_format: str | None = None, in_process: bool = False,
              max_prediction_bytes: int = DEFAULT_MAX_BYTES, **options) -> ModelRunResult:
    """Run a bundle on a test set's public inputs and parse its predictions. ``options`` go to
    ``run_model_bundle`` (budget, batch_size, mode, gpu, progress, interrupt, require_cgroups,
    max_bytes, max_unpacked_bytes) or, ``in_process``, to ``run_in_process`` (batch_size,
    device, max_bytes, max_unpacked_bytes). Raises ``examples.InvalidInputs`` for inputs that
    are not of the format, and what the runner raises (``SandboxUnavailable``)."""
    examples = model_examples(public_inputs, prediction_format)
    chosen = prediction_format or detect_format(public_inputs)
    runner = run_in_process if in_process else run_model_bundle
    result = runner(bundle_path, examples, **options)
    return read_predictions(result, chosen, examples, max_prediction_bytes=max_prediction_bytes)
