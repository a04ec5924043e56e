"""Hosted models with the official QUACKIE wrapper interface (Rychener et al., 2020; docs/quackie_models.md).

Pure torch + transformers, no Django. A hosted model is either

* ``"classification"``: a 2-label sequence classifier, ``P = softmax(logits)``, class 1 =
  answerable, fed ``(question, context)`` in that order (QUACKIE's order), or
* ``"qa"``: an extractive QA model with start/end logits s, e over the L input positions;
  ``P(i, j) = softmax(s)_i * softmax(e)_j`` (the official single softmax over all L^2 sums
  ``s_i + e_j`` is exactly this product) and ``P(answer)`` is the mass of valid spans
  (``j >= i``) that start inside the context (``i >= c0``, c0 = first token with
  token_type_id 1). Padding is **not** masked, as officially, so a QA model's numbers depend
  slightly on how a batch is padded.

``HostedModel`` offers ``predict``, ``predict_proba`` (str or lists, batched), ``tokenizer``,
``network``, ``device`` and the differentiable ``predict_proba_torch(embeddings, input_dict)``
where ``embeddings`` replaces the output of the model's embeddings module (word + position +
token type, after its LayerNorm), which is what captum attributes to.

Speed (docs/quackie_models.md, "Forward passes"): a classifier's inputs are tokenised once,
sorted by token length and padded per batch (its padding is masked, so only the time changes);
inside ``with model.shared_forward_passes():`` a (question, context) pair is run once however
many methods ask for it, and the gradient methods share one encoding and embedding of the sample.
The device is the CPU unless asked otherwise (``choose_device``: ``EXPBENCH_MODEL_DEVICE``).
A classifier's probabilities run its encoder's last layer for the first position only (the head
reads nothing else; ``_FirstPositionLayer``), and can run through ONNX Runtime instead of torch
(``choose_runtime``: ``EXPBENCH_MODEL_RUNTIME``); either path is used only after it gave the plain
network's P(answer) on a probe batch within ``FAST_PATH_TOLERANCE``.

Why this module is long: the sandbox's jail holds a private copy of exactly the modules listed in
``scoring.sandbox.layout.RUNTIME_MODULES``, and the model a researcher's code receives must behave
there as on the workers; so the wrapper, its device and runtime choice and its fast paths (the
first-position last layer, the ONNX export and session) stay in this one file.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import os
import re
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor

# Spinning OpenMP threads make small ops 15-50x slower on 2 cores; only effective when this
# module is what first imports torch (libgomp reads it at load time).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

KINDS = ("classification", "qa")
NETWORK_KEYS = ("input_ids", "attention_mask", "token_type_ids")
MAX_TOKENS = 512
# The official baselines ran with --batch_size 2; a QA model's unmasked padding makes its
# numbers depend on the batch, so QA models keep it on every device. A classifier masks its
# padding: any batch size gives the same numbers up to float rounding, so each device gets the
# fastest measured (docs/quackie_models.md, "Batch sizes"): 8 on the CPU (batches of 8 run side
# by side, one per core), 128 on a GPU (LIME-100 on an H200: 62-95 ms a sample at 8, 47 at 32,
# 35 at 128, where one batch of 100 perturbations keeps the GPU busy instead of 13 small ones).
OFFICIAL_QA_BATCH_SIZE = 2
CLASSIFIER_BATCH_SIZE = 8
GPU_CLASSIFIER_BATCH_SIZE = 128
BATCH_SIZES = {
    ("classification", "cpu"): CLASSIFIER_BATCH_SIZE,
    ("classification", "cuda"): GPU_CLASSIFIER_BATCH_SIZE,
    ("qa", "cpu"): OFFICIAL_QA_BATCH_SIZE,
    ("qa", "cuda"): OFFICIAL_QA_BATCH_SIZE,
}
# cpu (the default), cuda, cuda:N, or auto (cuda when torch sees a GPU, else cpu); read by
# load_hosted_model when no device is passed, so a GPU worker on the models queue opts in by
# setting it in its environment and everything else stays on the CPU.
DEVICE_SETTING = "EXPBENCH_MODEL_DEVICE"
# torch (the default) or onnxruntime: what runs a classifier's probability-only forward passes
# (LIME, SHAP, predict_proba). Gradients always run in torch (autograd). ONNX Runtime measured
# no faster than torch on the development CPUs (docs/quackie_models.md §5), so it is opt-in.
RUNTIME_SETTING = "EXPBENCH_MODEL_RUNTIME"
RUNTIMES = ("torch", "onnxruntime")
DEFAULT_RUNTIME = "torch"
# Where exported ONNX files are kept when the model's own directory is not writable.
ONNX_CACHE_SETTING = "EXPBENCH_ONNX_CACHE"
ONNX_CACHE_DIRNAME = ".onnx"
ONNX_EXPORT_VERSION = "1"  # bump when the exported graph changes: old files are not reused
ONNX_OPSET = 17
# A fast path must give the plain float32 network's P(answer) within this on a probe batch
# (float rounding alone is ~1e-7), else the model keeps the plain path.
FAST_PATH_TOLERANCE = 1e-5
# Sequence classifiers whose head reads only the first position's last hidden state ([CLS] /
# <s>): their last encoder layer can be computed for that position alone.
FIRST_POSITION_HEADS = frozenset({"bert", "roberta", "xlm-roberta", "electra", "camembert"})

log = logging.getLogger(__name__)


def choose_device(preference: str | None = None, *, cuda_available: bool | None = None) -> torch.device:
    """The torch device for hosted models: ``preference``, else ``$EXPBENCH_MODEL_DEVICE``,
    else ``cpu``. ``auto`` picks ``cuda`` when a GPU is available and ``cpu`` otherwise; asking
    for ``cuda`` without one is a ``ValueError`` (a misconfigured worker should say so, not
    silently run ten times slower)."""
    raw = preference if preference is not None else os.environ.get(DEVICE_SETTING, "")
    choice = str(raw).strip().lower() or "cpu"
    if cuda_available is None:
        cuda_available = torch.cuda.is_available()
    if choice == "auto":
        return torch.device("cuda" if cuda_available else "cpu")
    if choice == "cpu":
        return torch.device("cpu")
    if re.fullmatch(r"cuda(:\d+)?", choice):
        if not cuda_available:
            raise ValueError(f"model device {choice!r} asked for, but torch sees no CUDA GPU "
                             f"(use 'auto' to fall back to the CPU)")
        return torch.device(choice)
    raise ValueError(f"model device must be cpu, cuda, cuda:N or auto, not {raw!r}")


def choose_runtime(preference: str | None = None) -> str:
    """``torch`` or ``onnxruntime``: ``preference``, else ``$EXPBENCH_MODEL_RUNTIME``, else
    ``DEFAULT_RUNTIME``. Anything else is a ``ValueError``."""
    raw = preference if preference is not None else os.environ.get(RUNTIME_SETTING, "")
    choice = str(raw).strip().lower() or DEFAULT_RUNTIME
    if choice not in RUNTIMES:
        raise ValueError(f"model runtime must be one of {', '.join(RUNTIMES)}, not {raw!r}")
    return choice


class _FirstPositionLayer(torch.nn.Module):
    """A BERT-style encoder layer computed for position 0 only.

    A sequence classifier's head reads only the first position of the last hidden state, and in
    the last layer that position depends on every position's keys and values but on no other
    position's query, attention output or feed-forward block. So the last layer computes keys
    and values for all positions and the rest for position 0: the same numbers up to float
    rounding, at about 14% fewer multiply-adds for a 6-layer model (docs/quackie_models.md §5).
    The output has length 1, which the head's ``[:, 0]`` reads as before."""

    def __init__(self, layer: torch.nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, hidden_states, attention_mask=None, *args, **kwargs):
        layer, attention = self.layer, self.layer.attention.self
        batch, length = hidden_states.shape[:2]
        size = attention.attention_head_size
        first = hidden_states[:, :1]
        query = attention.query(first).view(batch, 1, -1, size).transpose(1, 2)
        key = attention.key(hidden_states).view(batch, length, -1, size).transpose(1, 2)
        value = attention.value(hidden_states).view(batch, length, -1, size).transpose(1, 2)
        mask = attention_mask
        if mask is not None and mask.dim() == 4 and mask.shape[-2] > 1:
            mask = mask[:, :, :1]  # the query row of position 0
        # eager masks are additive floats, sdpa masks booleans (True = attend): SDPA takes both
        context = torch.nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, scale=attention.scaling)
        context = context.transpose(1, 2).reshape(batch, 1, -1)
        attended = layer.attention.output(context, first)
        return layer.output(layer.intermediate(attended), attended)


def first_position_layers(network) -> torch.nn.ModuleList | None:
    """The encoder's layer list when the last layer can run for the first position only (a
    known classifier head, BERT-style layers, eager or sdpa attention), else None."""
    config = network.config
    if getattr(config, "model_type", None) not in FIRST_POSITION_HEADS:
        return None
    if getattr(config, "_attn_implementation", None) not in ("eager", "sdpa", None):
        return None
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        return None
    layers = getattr(getattr(network.base_model, "encoder", None), "layer", None)
    if not isinstance(layers, torch.nn.ModuleList) or not len(layers):
        return None
    last = layers[-1]
    attention = getattr(getattr(last, "attention", None), "self", None)
    needed = [getattr(attention, name, None) for name in ("query", "key", "value", "attention_head_size",
                                                          "scaling")]
    needed += [getattr(getattr(last, "attention", None), "output", None),
               getattr(last, "intermediate", None), getattr(last, "output", None)]
    return layers if all(item is not None for item in needed) else None


@contextlib.contextmanager
def _last_layer_first_position_only(layers: torch.nn.ModuleList | None):
    """Within the block the network's last layer runs for position 0 only (nothing if None)."""
    if layers is None:
        yield
        return
    original = layers[-1]
    layers[-1] = _FirstPositionLayer(original)
    try:
        yield
    finally:
        layers[-1] = original


def model_checksum(path) -> str:
    """sha256 over the files that define a saved network (config and weights), names included."""
    digest = hashlib.sha256()
    path = Path(path)
    files = sorted(p for p in path.iterdir() if p.is_file() and (
        p.name == "config.json" or p.suffix in (".safetensors", ".bin")))
    for file in files:
        digest.update(file.name.encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def onnx_cache_dirs(model_dir) -> list[Path]:
    """Where an exported ONNX file is looked for, in order: ``$EXPBENCH_ONNX_CACHE`` if set, the
    model directory's ``.onnx/``, and ``~/.cache/expbench/onnx``."""
    dirs = []
    if os.environ.get(ONNX_CACHE_SETTING):
        dirs.append(Path(os.environ[ONNX_CACHE_SETTING]))
    dirs.append(Path(model_dir) / ONNX_CACHE_DIRNAME)
    dirs.append(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "expbench" / "onnx")
    return dirs


class _LogitsOnly(torch.nn.Module):
    """The network with positional inputs and the logits as its one output (for the export)."""

    def __init__(self, network, keys: tuple[str, ...]):
        super().__init__()
        self.network, self.keys = network, keys

    def forward(self, *tensors):
        return self.network(**dict(zip(self.keys, tensors, strict=True))).logits


class OnnxClassifier:
    """A classifier's logits from an ONNX Runtime session: few intra-op threads, sequential
    execution, no spinning threads (the 2-core rule of OMP_WAIT_POLICY=PASSIVE)."""

    def __init__(self, path: Path, keys: tuple[str, ...], *, threads: int):
        import onnxruntime  # noqa: PLC0415  (optional; only when this runtime is asked for)

        self.threads = max(1, int(threads))
        self._one_thread: OnnxClassifier | None = None
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.path, self.keys = path, keys
        self.session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def logits(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(["logits"], {key: arrays[key] for key in self.keys})[0]

    def one_thread(self) -> "OnnxClassifier":
        """A session of the same file that computes on its caller's thread alone, for batches
        run side by side: concurrent runs of one session are safe, but runs sharing a session's
        pool of several threads wait for each other (LIME-100 on 6 samples: slower than one
        batch after another)."""
        if self.threads == 1:
            return self
        if self._one_thread is None:
            self._one_thread = OnnxClassifier(self.path, self.keys, threads=1)
        return self._one_thread


def export_classifier_onnx(network, keys: tuple[str, ...], example: dict[str, torch.Tensor],
                           target: Path) -> Path:
    """Export a copy of the classifier (eval mode, last layer for the first position only when
    supported) to ``target`` with dynamic batch and length; written to a temporary file and
    renamed, so a concurrent reader never sees half a file. ``example`` must contain padding:
    the trace keeps the attention mask only if the example uses it."""
    exported = copy.deepcopy(network).cpu().eval()
    layers = first_position_layers(exported)
    if layers is not None:
        layers[-1] = _FirstPositionLayer(layers[-1])
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(suffix=".onnx.part", dir=target.parent)
    os.close(handle)
    try:
        axes = {key: {0: "batch", 1: "length"} for key in keys}
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer warnings about Python values in the graph
            torch.onnx.export(_LogitsOnly(exported, keys), tuple(example[key].cpu() for key in keys), scratch,
                              input_names=list(keys), output_names=["logits"],
                              dynamic_axes={**axes, "logits": {0: "batch"}}, opset_version=ONNX_OPSET,
                              dynamo=False)
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)
    return target


class _EmbeddingsCaptured(Exception):
    """Raised by a forward hook to stop the network once the embeddings module has run."""


def default_batch_size(kind: str, device=None) -> int:
    """The batch size of ``BATCH_SIZES`` for a model kind on a device (a ``torch.device`` or its
    name; None = the CPU). A device type not in the table gets the CPU's size."""
    device_type = torch.device(device).type if device is not None else "cpu"
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    return BATCH_SIZES.get((kind, device_type), BATCH_SIZES[(kind, "cpu")])


def device_label(device) -> str:
    """The device as people read it: ``cpu``, or the GPU's torch name and model name
    (``cuda:0, NVIDIA H200``): stored with the built-in baseline rows and shown on the board."""
    device = torch.device(device)
    if device.type != "cuda":
        return device.type
    index = device.index if device.index is not None else 0
    try:
        return f"cuda:{index}, {torch.cuda.get_device_name(index)}"
    except (RuntimeError, AssertionError):  # torch without CUDA: the torch name alone
        return f"cuda:{index}"


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' progress bars and info/warning logs (loading, saving) for a while."""
    from transformers.utils import logging as hf_logging  # noqa: PLC0415  (heavy: see load_hosted_model)

    bars = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


class ModelLoadError(ValueError):
    """The path does not hold a usable model of the requested kind."""


def qa_answer_probability(start_logits: torch.Tensor, end_logits: torch.Tensor,
                          context_start) -> torch.Tensor:
    """P(answer) per row from (N, L) start/end logits and each row's first context index c0.

    ``sum over i >= c0, j >= i of softmax(s)_i softmax(e)_j`` (padding included, not masked).
    Differentiable. Uniform logits with L=8, c0=4 give 10/64.
    """
    start_logits = torch.as_tensor(start_logits)
    end_logits = torch.as_tensor(end_logits)
    if start_logits.dim() == 1:
        start_logits, end_logits = start_logits[None], end_logits[None]
    length = start_logits.shape[-1]
    p_start = torch.softmax(start_logits.float(), dim=-1)
    p_end = torch.softmax(end_logits.float(), dim=-1)
    # tail[i] = sum_{j >= i} p_end[j]
    tail = torch.flip(torch.cumsum(torch.flip(p_end, dims=[-1]), dim=-1), dims=[-1])
    c0 = torch.as_tensor(context_start, device=start_logits.device).reshape(-1, 1)
    in_context = torch.arange(length, device=start_logits.device)[None, :] >= c0
    return (p_start * tail * in_context).sum(dim=-1).clamp(0.0, 1.0)


def _as_lists(questions, contexts) -> tuple[list[str], list[str]]:
    q_list = [questions] if isinstance(questions, str) else list(questions)
    c_list = [contexts] if isinstance(contexts, str) else list(contexts)
    if len(q_list) == 1 and len(c_list) > 1:  # a fixed question against many contexts
        q_list = q_list * len(c_list)
    elif len(c_list) == 1 and len(q_list) > 1:
        c_list = c_list * len(q_list)
    if len(q_list) != len(c_list):
        raise ValueError(f"{len(q_list)} questions but {len(c_list)} contexts")
    return q_list, c_list


class HostedModel:
    """The official QUACKIE model interface around a local transformers model."""

    def __init__(self, tokenizer, network, kind: str, *, device=None, batch_size: int = 8,
                 path: str | None = None, runtime: str | None = "torch"):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
        self.kind = kind
        self.tokenizer = tokenizer
        self.device = device if isinstance(device, torch.device) else choose_device(device)
        self.network = network.to(self.device).eval()
        self.batch_size = max(1, int(batch_size))
        self.path = path
        max_positions = getattr(network.config, "max_position_embeddings", MAX_TOKENS) or MAX_TOKENS
        self.max_length = min(MAX_TOKENS, int(max_positions))
        self._shared: dict | None = None  # see shared_forward_passes
        # Fast classifier paths, each kept only if it passes the probe (_setup_fast_paths).
        self._first_position: torch.nn.ModuleList | None = None
        self._onnx: OnnxClassifier | None = None
        self.runtime = "torch"
        # The setting applies where it can (classifiers on the CPU); asked for by argument where
        # it cannot, it is an error, as a device that is not there.
        wanted = choose_runtime(runtime)
        if wanted == "onnxruntime" and (kind != "classification" or self.device.type != "cpu"):
            if runtime is not None:
                raise ValueError(f"the onnxruntime runtime runs classifiers on the CPU, not a {kind} "
                                 f"model on {self.device}")
            wanted = "torch"
        if kind == "classification":
            self._setup_fast_paths(wanted)

    def __repr__(self) -> str:
        return f"HostedModel(kind={self.kind!r}, path={self.path!r}, runtime={self.runtime!r})"

    @property
    def device_label(self) -> str:
        """``cpu`` or, on a GPU, ``cuda:0, NVIDIA H200`` (see :func:`device_label`)."""
        return device_label(self.device)

    # ------------------------------------------------------------------ fast classifier paths

    def _network_keys(self) -> tuple[str, ...]:
        """The tokenizer outputs the network takes, in NETWORK_KEYS order."""
        probe = self.tokenizer("a", "b")
        return tuple(key for key in NETWORK_KEYS if probe.get(key) is not None)

    def _probe_batches(self) -> list[dict[str, np.ndarray]]:
        """Inputs the fast paths are checked on: a padded batch of three lengths, one row alone."""
        question = "where is the answer to this question"
        contexts = ["it is here .", "the answer is in the second sentence of this short text , "
                    "which is longer than the first one .", "no ."]
        features = self.tokenizer([question] * len(contexts), contexts, truncation=True,
                                  max_length=self.max_length, padding=False)
        keys = self._network_keys()
        rows = {key: [list(features[key][i]) for i in range(len(contexts))] for key in keys}
        return [self._pad_arrays(rows), self._pad_arrays({key: rows[key][:1] for key in keys})]

    def _plain_logits(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        with torch.inference_mode():
            inputs = {key: torch.from_numpy(value).to(self.device) for key, value in arrays.items()}
            return self.network(**inputs).logits.float().cpu().numpy()

    def _setup_fast_paths(self, runtime: str) -> None:
        """Keep the first-position last layer and (if asked for) ONNX Runtime only where they
        give the plain network's P(answer) on the probe within FAST_PATH_TOLERANCE."""
        probes = self._probe_batches()
        expected = [_p_answer(self._plain_logits(batch)) for batch in probes]

        def agrees(logits_of) -> bool:
            return all(float(np.max(np.abs(_p_answer(logits_of(batch)) - want))) <= FAST_PATH_TOLERANCE
                       for batch, want in zip(probes, expected, strict=True))

        layers = first_position_layers(self.network)
        if layers is not None:
            self._first_position = layers
            if not agrees(self._torch_logits):
                log.warning("%s: the first-position last layer disagrees with the network; not used", self.path)
                self._first_position = None
        if runtime == "onnxruntime":
            self._onnx = self._load_onnx(probes[0])
            if not agrees(self._onnx.logits):
                self._onnx = None
                raise ModelLoadError(f"{self.path}: the ONNX export disagrees with the network by more than "
                                     f"{FAST_PATH_TOLERANCE:g} on P(answer); use the torch runtime")
            self.runtime = "onnxruntime"

    def _load_onnx(self, example: dict[str, np.ndarray]) -> "OnnxClassifier":
        """The session of this network's ONNX export: the cached file if one exists (keyed by
        the model's checksum, the export version and the torch/transformers versions), else a
        new export into the first writable cache directory."""
        try:
            import onnxruntime  # noqa: F401,PLC0415  (optional dependency)
        except ImportError as error:
            raise ModelLoadError("the onnxruntime runtime needs the onnxruntime package "
                                 "(pip install onnxruntime onnx)") from error
        if self.path is None:
            raise ModelLoadError("the onnxruntime runtime needs a model loaded from a directory")
        import transformers  # noqa: PLC0415  (heavy: loaded by now anyway)

        key = hashlib.sha256("\0".join([model_checksum(self.path), ONNX_EXPORT_VERSION, torch.__version__,
                                         transformers.__version__]).encode()).hexdigest()[:32]
        keys = tuple(example)
        threads = torch.get_num_threads()
        for directory in onnx_cache_dirs(self.path):
            if (directory / f"{key}.onnx").is_file():
                return OnnxClassifier(directory / f"{key}.onnx", keys, threads=threads)
        tensors = {name: torch.from_numpy(value) for name, value in example.items()}
        failures = []
        for directory in onnx_cache_dirs(self.path):
            try:
                target = export_classifier_onnx(self.network, keys, tensors, directory / f"{key}.onnx")
            except OSError as error:  # not writable: try the next place
                failures.append(f"{directory}: {error.strerror or error}")
                continue
            return OnnxClassifier(target, keys, threads=threads)
        raise ModelLoadError(f"{self.path}: nowhere to write the ONNX export ({'; '.join(failures)})")

    def _torch_logits(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        with _last_layer_first_position_only(self._first_position):
            return self._network_logits(arrays)

    def _network_logits(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """One batch through the network as it stands (inference mode is per thread: set here)."""
        with torch.inference_mode():
            inputs = {key: torch.from_numpy(value).to(self.device) for key, value in arrays.items()}
            return self.network(**inputs).logits.float().cpu().numpy()

    def _classifier_logits(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """Logits of one padded batch through the model's fastest checked path."""
        if self._onnx is not None:
            return self._onnx.logits(arrays)
        return self._torch_logits(arrays)

    @contextlib.contextmanager
    def shared_forward_passes(self):
        """Inside the block, forward passes are shared between callers: a classifier computes
        P(answer) of a (question, context) pair once (its padding is masked, so the value does
        not depend on the batch it was computed in), and ``encode_and_embed`` runs once per
        pair. Meant for one sample's explanations by several methods (``interpret_many``);
        nested blocks share the outer one. Outside a block nothing is kept."""
        if self._shared is not None:
            yield
            return
        self._shared = {"p_answer": {}, "embedded": {}}
        try:
            yield
        finally:
            self._shared = None

    # ------------------------------------------------------------------ tokenization

    def encode(self, questions, contexts, *, offsets: bool = False):
        """Tokenizer output for (question, context) pairs as torch tensors on the device."""
        q_list, c_list = _as_lists(questions, contexts)
        encoding = self.tokenizer(q_list, c_list, padding=True, truncation=True,
                                  max_length=self.max_length, return_tensors="pt",
                                  return_offsets_mapping=offsets)
        return encoding.to(self.device)

    def n_tokens(self, question: str, context: str) -> int:
        """``len(tokenizer.encode(question, context))``, special tokens included, untruncated."""
        return len(self.tokenizer(question, context, truncation=False, verbose=False)["input_ids"])

    def context_start(self, input_dict) -> torch.Tensor:
        """Per row, the first context index c0 (first token_type_id 1; else sequence id 1)."""
        input_ids = input_dict["input_ids"]
        token_type_ids = input_dict.get("token_type_ids") if hasattr(input_dict, "get") else None
        if token_type_ids is not None and bool((token_type_ids == 1).any()):
            ones = token_type_ids == 1
        elif hasattr(input_dict, "sequence_ids"):
            rows = [[sid == 1 for sid in input_dict.sequence_ids(i)] for i in range(len(input_ids))]
            ones = torch.tensor(rows, dtype=torch.bool, device=input_ids.device)
        else:
            raise ValueError("cannot locate the context: no token_type_ids and no sequence ids")
        length = ones.shape[-1]
        first = torch.where(ones.any(dim=-1), ones.float().argmax(dim=-1),
                            torch.full((ones.shape[0],), length, device=ones.device))
        return first

    @staticmethod
    def network_inputs(input_dict) -> dict:
        return {key: input_dict[key] for key in NETWORK_KEYS
                if key in input_dict and input_dict[key] is not None}

    # ------------------------------------------------------------------ probabilities

    def _answer_probability(self, outputs, input_dict) -> torch.Tensor:
        if self.kind == "classification":
            return torch.softmax(outputs.logits.float(), dim=-1)[:, 1]
        return qa_answer_probability(outputs.start_logits, outputs.end_logits,
                                     self.context_start(input_dict))

    def predict_proba(self, questions, contexts) -> np.ndarray:
        """(N, 2) array ``[P(no answer), P(answer)]``, computed in batches of ``batch_size``.

        A classifier computes each distinct pair once, in batches of similar token length
        padded to their own longest; a QA model gets the pairs in the caller's order, padded
        per batch, as officially (its unmasked padding makes the numbers depend on the batch)."""
        q_list, c_list = _as_lists(questions, contexts)
        result = np.zeros((len(q_list), 2), dtype=np.float64)
        if not q_list:
            return result
        if self.kind == "classification":
            p_answer = self._classifier_p_answer(list(zip(q_list, c_list, strict=True)))
        else:
            p_answer = self._qa_p_answer(q_list, c_list)
        result[:, 1] = p_answer
        result[:, 0] = 1.0 - p_answer
        return result

    def _qa_p_answer(self, q_list: list[str], c_list: list[str]) -> np.ndarray:
        p_answer = np.zeros(len(q_list), dtype=np.float64)
        with torch.inference_mode():
            for start in range(0, len(q_list), self.batch_size):
                stop = start + self.batch_size
                encoding = self.encode(q_list[start:stop], c_list[start:stop])
                outputs = self.network(**self.network_inputs(encoding))
                p_answer[start:stop] = self._answer_probability(outputs, encoding).double().cpu().numpy()
        return p_answer

    def _classifier_p_answer(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        known = self._shared["p_answer"] if self._shared is not None else {}
        missing = list(dict.fromkeys(pair for pair in pairs if pair not in known))
        computed = dict(zip(missing, self._classifier_forward(missing), strict=True)) if missing else {}
        if self._shared is not None:
            known.update(computed)
        return np.array([computed[pair] if pair in computed else known[pair] for pair in pairs],
                        dtype=np.float64)

    def _classifier_forward(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """P(answer) per pair: tokenised once, sorted by token length, padded per batch."""
        features = self.tokenizer([q for q, _ in pairs], [c for _, c in pairs], truncation=True,
                                  max_length=self.max_length, padding=False)
        keys = [key for key in NETWORK_KEYS if features.get(key) is not None]
        lengths = [len(ids) for ids in features["input_ids"]]
        order = sorted(range(len(pairs)), key=lengths.__getitem__)
        batches = [order[start:start + self.batch_size] for start in range(0, len(order), self.batch_size)]

        def padded(index: list[int]) -> dict[str, np.ndarray]:
            return self._pad_arrays({key: [features[key][i] for i in index] for key in keys})

        p_answer = np.zeros(len(pairs), dtype=np.float64)
        streams = torch.get_num_threads()
        if streams > 1 and len(batches) > 1 and self.device.type == "cpu":
            side_by_side = self._logits_side_by_side([padded(i) for i in batches], streams)
            for index, logits in zip(batches, side_by_side, strict=True):
                p_answer[index] = _p_answer(logits)
            return p_answer
        for index in batches:
            p_answer[index] = _p_answer(self._classifier_logits(padded(index)))
        return p_answer

    def _logits_side_by_side(self, batches: list[dict[str, np.ndarray]], streams: int) -> list[np.ndarray]:
        """Logits of each padded batch, the batches shared out to ``streams`` threads that each
        compute on one core, rather than each batch split across the cores. A batch of 8
        short texts is too small to keep two cores busy (every operation ends at a barrier
        where one thread waits for the other, longer still when another process takes a
        core); whole batches side by side keep them busier: LIME-100 took 0.95 s a sample
        instead of 1.07 on 2 idle cores through torch, with the same numbers up to float
        rounding (docs/quackie_models.md §5).
        Through ONNX Runtime every thread runs a one-thread session. Torch takes its thread
        count at a thread's first operation, so the pool is new each call, started after the
        count is set to 1, and the count is restored afterwards."""
        if self._onnx is not None:
            session = self._onnx.one_thread()
            with ThreadPoolExecutor(streams, thread_name_prefix="forward") as pool:
                return list(pool.map(session.logits, batches))
        torch.set_num_threads(1)
        try:
            with _last_layer_first_position_only(self._first_position), \
                    ThreadPoolExecutor(streams, thread_name_prefix="forward") as pool:
                return list(pool.map(self._network_logits, batches))
        finally:
            torch.set_num_threads(streams)

    def _pad_arrays(self, rows: dict[str, list[list[int]]]) -> dict[str, np.ndarray]:
        """int64 arrays of the rows padded to the longest, on the tokenizer's padding side, with
        the values ``tokenizer(..., padding=True)`` would use (pad id, pad token type, mask 0)."""
        longest = max(len(ids) for ids in rows["input_ids"])
        fill = {"input_ids": self.tokenizer.pad_token_id or 0, "attention_mask": 0,
                "token_type_ids": getattr(self.tokenizer, "pad_token_type_id", 0) or 0}
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        arrays = {}
        for key, values in rows.items():
            array = np.full((len(values), longest), fill[key], dtype=np.int64)
            for row, value in enumerate(values):
                if value:
                    if left:
                        array[row, longest - len(value):] = value
                    else:
                        array[row, :len(value)] = value
            arrays[key] = array
        return arrays

    def predict(self, questions, contexts) -> np.ndarray:
        """0/1 ints: 1 where P(answer) > 0.5 (argmax for the classifier)."""
        return (self.predict_proba(questions, contexts)[:, 1] > 0.5).astype(int)

    # ------------------------------------------------------------------ gradients

    @property
    def embeddings_module(self) -> torch.nn.Module:
        module = getattr(self.network.base_model, "embeddings", None)
        if module is None:
            raise ModelLoadError(f"{type(self.network).__name__} has no embeddings module")
        return module

    def embed(self, input_dict) -> torch.Tensor:
        """The embeddings module's output for ``input_dict`` (no gradient). The network is
        stopped right after its embeddings module: the rest of the forward pass is not needed."""
        captured = []

        def capture(_module, _args, output):
            captured.append(output)
            raise _EmbeddingsCaptured

        handle = self.embeddings_module.register_forward_hook(capture)
        try:
            with torch.no_grad():
                self.network(**self.network_inputs(input_dict))
        except _EmbeddingsCaptured:
            pass
        finally:
            handle.remove()
        return captured[0].detach()

    def encode_and_embed(self, question: str, context: str):
        """``(encoding with offsets, embed(encoding))`` of one pair; computed once per pair
        inside ``shared_forward_passes`` (the gradient methods of a sample all start here)."""
        key = (question, context)
        if self._shared is not None and key in self._shared["embedded"]:
            return self._shared["embedded"][key]
        encoding = self.encode(question, context, offsets=True)
        result = (encoding, self.embed(encoding))
        if self._shared is not None:
            self._shared["embedded"][key] = result
        return result

    def predict_proba_torch(self, embeddings: torch.Tensor, input_dict) -> torch.Tensor:
        """Differentiable P(answer), shape (B,), with ``embeddings`` (B, L, H) used in place of
        the embeddings module's output. ``input_dict`` (tokenizer output) supplies the attention
        mask / token types and the context start; rows of batch 1 are broadcast to B."""
        batch = embeddings.shape[0]
        inputs = {}
        for key, value in self.network_inputs(input_dict).items():
            if value.shape[0] == 1 and batch > 1:
                value = value.expand(batch, *value.shape[1:])
            inputs[key] = value
        handle = self.embeddings_module.register_forward_hook(
            lambda _module, _args, _output: embeddings)
        # a classifier's last layer runs for the first position only (its gradient is the same)
        first_position = self._first_position if self.kind == "classification" else None
        try:
            with _last_layer_first_position_only(first_position):
                outputs = self.network(**inputs)
        finally:
            handle.remove()
        if self.kind == "classification":
            return torch.softmax(outputs.logits.float(), dim=-1)[:, 1]
        c0 = self.context_start(input_dict)
        if c0.shape[0] == 1 and batch > 1:
            c0 = c0.expand(batch)
        return qa_answer_probability(outputs.start_logits, outputs.end_logits, c0)


def _p_answer(logits: np.ndarray) -> np.ndarray:
    """softmax(logits)[:, 1] in float64 from float32 logits (as torch.softmax(float) would)."""
    logits = np.asarray(logits, dtype=np.float32)
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (shifted[:, 1] / shifted.sum(axis=-1)).astype(np.float64)


def load_hosted_model(path, kind: str, *, device=None, batch_size: int | None = None,
                      runtime: str | None = None) -> HostedModel:
    """Load a local model directory as a ``HostedModel`` (never downloads). ``batch_size``
    defaults to :func:`default_batch_size` for the kind and device (2 for QA models everywhere,
    as the official baselines; 8 for classifiers on the CPU, 128 on a GPU);
    ``device`` to :func:`choose_device` (the CPU unless ``EXPBENCH_MODEL_DEVICE`` says
    otherwise); ``runtime`` to :func:`choose_runtime` (torch unless ``EXPBENCH_MODEL_RUNTIME``
    says onnxruntime; classifiers only)."""
    # transformers takes seconds to import: only a process that loads a model pays for it.
    from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification, AutoTokenizer  # noqa: PLC0415

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    path = Path(path)
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{path}: no config.json (not a saved transformers model)")
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if not getattr(tokenizer, "is_fast", False):
            raise ModelLoadError(f"{path}: a fast tokenizer (offset mapping) is required")
        auto = (AutoModelForSequenceClassification if kind == "classification"
                else AutoModelForQuestionAnswering)
        network = auto.from_pretrained(path, local_files_only=True)
    if kind == "classification" and network.config.num_labels != 2:
        raise ModelLoadError(f"{path}: a classification model needs 2 labels, "
                             f"not {network.config.num_labels}")
    device = choose_device(device) if not isinstance(device, torch.device) else device
    if batch_size is None:
        batch_size = default_batch_size(kind, device)
    return HostedModel(tokenizer, network, kind, device=device, batch_size=batch_size,
                       path=str(path), runtime=runtime)

