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
"""
from __future__ import annotations

import contextlib
import os
import re

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
# numbers depend on the batch, so QA models default to it. A classifier masks its padding:
# any batch size gives the same numbers, a larger one is faster.
OFFICIAL_QA_BATCH_SIZE = 2
CLASSIFIER_BATCH_SIZE = 8
# cpu (the default), cuda, cuda:N, or auto (cuda when torch sees a GPU, else cpu); read by
# load_hosted_model when no device is passed, so a GPU worker on the models queue opts in by
# setting it in its environment and everything else stays on the CPU.
DEVICE_SETTING = "EXPBENCH_MODEL_DEVICE"


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


class _EmbeddingsCaptured(Exception):
    """Raised by a forward hook to stop the network once the embeddings module has run."""


def default_batch_size(kind: str) -> int:
    return OFFICIAL_QA_BATCH_SIZE if kind == "qa" else CLASSIFIER_BATCH_SIZE


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
                 path: str | None = None):
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

    def __repr__(self) -> str:
        return f"HostedModel(kind={self.kind!r}, path={self.path!r})"

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
            p_answer = self._classifier_p_answer(list(zip(q_list, c_list)))
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
        computed = dict(zip(missing, self._classifier_forward(missing))) if missing else {}
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
        p_answer = np.zeros(len(pairs), dtype=np.float64)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                index = order[start:start + self.batch_size]
                inputs = self._pad({key: [features[key][i] for i in index] for key in keys})
                logits = self.network(**inputs).logits
                p_answer[index] = torch.softmax(logits.float(), dim=-1)[:, 1].double().cpu().numpy()
        return p_answer

    def _pad(self, rows: dict[str, list[list[int]]]) -> dict[str, torch.Tensor]:
        """Tensors of the rows padded to the longest, on the tokenizer's padding side, with the
        values ``tokenizer(..., padding=True)`` would use (pad id, pad token type, mask 0)."""
        longest = max(len(ids) for ids in rows["input_ids"])
        fill = {"input_ids": self.tokenizer.pad_token_id or 0, "attention_mask": 0,
                "token_type_ids": getattr(self.tokenizer, "pad_token_type_id", 0) or 0}
        left = getattr(self.tokenizer, "padding_side", "right") == "left"
        tensors = {}
        for key, values in rows.items():
            padded = [([fill[key]] * (longest - len(v)) + v) if left else (v + [fill[key]] * (longest - len(v)))
                      for v in values]
            tensors[key] = torch.tensor(padded, dtype=torch.long, device=self.device)
        return tensors

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
        try:
            outputs = self.network(**inputs)
        finally:
            handle.remove()
        if self.kind == "classification":
            return torch.softmax(outputs.logits.float(), dim=-1)[:, 1]
        c0 = self.context_start(input_dict)
        if c0.shape[0] == 1 and batch > 1:
            c0 = c0.expand(batch)
        return qa_answer_probability(outputs.start_logits, outputs.end_logits, c0)


def load_hosted_model(path, kind: str, *, device=None, batch_size: int | None = None) -> HostedModel:
    """Load a local model directory as a ``HostedModel`` (never downloads). ``batch_size``
    defaults to :func:`default_batch_size` (2 for QA models, as the official baselines);
    ``device`` to :func:`choose_device` (the CPU unless ``EXPBENCH_MODEL_DEVICE`` says
    otherwise)."""
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
    if batch_size is None:
        batch_size = default_batch_size(kind)
    device = choose_device(device) if not isinstance(device, torch.device) else device
    return HostedModel(tokenizer, network, kind, device=device, batch_size=batch_size,
                       path=str(path))

