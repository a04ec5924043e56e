"""QUACKIE baseline interpreters (Rychener et al., 2020; docs/quackie_models.md) over a ``HostedModel``.

``interpret(name, model, question, context, sentences, seed=0)`` returns one float per frozen
sentence, higher = more important. Names follow the official ``results.json`` rows:

* ``Random``: a permutation of ``0..n-1`` (no ties), seeded per sample from ``(seed, question)``.
* ``Gradient_{sum,max}``, ``IntegratedGradients_50_{sum,max}``, ``SmoothGrad_5_{sum,max}``:
  captum ``Saliency`` (abs), ``IntegratedGradients`` (50 steps, zero baseline, Gauss-Legendre)
  and SmoothGrad as ``NoiseTunnel(Saliency)`` computes it (5 samples, stdevs 1.0, abs) w.r.t.
  the **context part** of the embeddings-module output (question part held fixed), target
  P(answer); a token's score is its attribution summed over the hidden dimension. Aliases
  without the step count (``IntegratedGradients_sum``, ``SmoothGrad_max``, ...) name the same
  functions.

Randomness never comes from a device's generator: LIME, SHAP and Random draw from numpy
generators and SmoothGrad's noise from a CPU torch generator (``smoothgrad_noise``), each
seeded per sample, so an explanation is the same on a CPU and a GPU worker up to float rounding.
* ``LIME_{10,100}_{sum,max}``: lime's ``LimeTextExplainer`` (package defaults: ``\\W+`` split,
  bag of words, kernel width 25; ``random_state`` = the per-sample seed), ``num_samples`` n,
  defaults ``labels=(1,)``, ``num_features=10``; the question is held fixed and every
  perturbation goes through the model's batched ``predict_proba`` in one call.
* ``SHAP_{10,100}_{sum,max}``: ``shap.KernelExplainer`` (identity link) over the unique
  lower-cased non-punctuation words, one column each in order of first occurrence in the context
  (not sorted; removing a feature removes all its occurrences, punctuation always stays),
  background = all words removed, ``nsamples`` n, explaining P(answer).

Token -> sentence aggregation. Gradient methods map each context token to a frozen sentence
through the tokenizer's **offset mapping**: a token belongs to the sentence whose character span
in the context contains the token's first character (else the first sentence it overlaps).
This is exact and replaces the official Biopython alignment of re-tokenised sentences; unlike
the official code, special tokens (the final [SEP]) are not added to the last sentence. LIME and
SHAP map word weights to sentences over ``nltk.word_tokenize(sentence)`` tokens: a token adds
its weight when it is a feature, by exact string (LIME), or by its original-case string against
the lower-cased feature keys (SHAP, so capitalised words add 0: the official quirk, copied).
Sentences are reduced with ``sum`` or ``max`` (an empty sentence scores 0).
"""
from __future__ import annotations

import contextlib
import hashlib
import re
import warnings
from functools import partial
from typing import Callable, Sequence

import numpy as np

from ..tokenization import NLTKWordTokenizer, word_tokenize  # vendored Punkt, tokenizers only

AGGREGATIONS = ("sum", "max")
IG_STEPS = 50
SMOOTHGRAD_SAMPLES = 5
SMOOTHGRAD_STDEVS = 1.0
PERTURBATION_SIZES = (10, 100)
SHAP_CASE_QUIRK = True  # official: original-case tokens looked up in lower-cased SHAP keys
_WORD = re.compile(r"\w", re.UNICODE)


# --------------------------------------------------------------------------- helpers

def sample_seed(seed: int, question: str) -> int:
    """A 32-bit seed derived from the run seed and the question (deterministic per sample)."""
    digest = hashlib.sha256(f"{int(seed)}\x1f{question}".encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big")


def sentence_spans(context: str, sentences: Sequence[str]) -> list[tuple[int, int]]:
    """Character span of each frozen sentence in ``context``, searched left to right.

    Punkt sentences are substrings of the context; if one is not (edited whitespace), it is
    matched with any whitespace between its words; failing that it gets an empty span.
    """
    spans = []
    position = 0
    for sentence in sentences:
        start = context.find(sentence, position) if sentence else -1
        if start >= 0:
            end = start + len(sentence)
        else:
            words = sentence.split()
            match = None
            if words:
                pattern = r"\s+".join(re.escape(word) for word in words)
                match = re.compile(pattern).search(context, position)
            if match is None:
                spans.append((position, position))
                continue
            start, end = match.span()
        spans.append((start, end))
        position = end
    return spans


def token_sentence_index(offsets: Sequence[tuple[int, int]],
                         spans: Sequence[tuple[int, int]]) -> list[int]:
    """For each token's (start, end) character offsets, the sentence index or -1 (none)."""
    result = []
    for token_start, token_end in offsets:
        index = -1
        if token_end > token_start:
            for k, (start, end) in enumerate(spans):
                if start <= token_start < end:
                    index = k
                    break
            else:
                for k, (start, end) in enumerate(spans):
                    if token_start < end and token_end > start:
                        index = k
                        break
        result.append(index)
    return result


def aggregate(token_scores: Sequence[float], token_sentence: Sequence[int], n_sentences: int,
              how: str) -> list[float]:
    """Reduce token scores into ``n_sentences`` buckets by ``sum`` or ``max`` (empty -> 0)."""
    if how not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS}, not {how!r}")
    buckets: list[list[float]] = [[] for _ in range(n_sentences)]
    for score, index in zip(token_scores, token_sentence, strict=True):
        if 0 <= index < n_sentences:
            buckets[index].append(float(score))
    if how == "sum":
        return [float(sum(bucket)) for bucket in buckets]
    return [float(max(bucket, default=0.0)) for bucket in buckets]


def words_to_sentences(weights: dict[str, float], sentences: Sequence[str], how: str, *,
                       lowercase_keys: bool = False) -> list[float]:
    """Sentence scores from word weights over ``nltk.word_tokenize(sentence)`` tokens."""
    result = []
    for sentence in sentences:
        tokens = word_tokenize(sentence) if sentence.strip() else []
        if lowercase_keys and not SHAP_CASE_QUIRK:
            tokens = [token.lower() for token in tokens]
        values = [float(weights.get(token, 0.0)) for token in tokens]
        result.append(aggregate(values, [0] * len(values), 1, how)[0])
    return result


def smoothgrad_noise(shape: Sequence[int], seed: int):
    """SmoothGrad's Gaussian noise (mean 0, standard deviation ``SMOOTHGRAD_STDEVS``), float32,
    always drawn on the CPU from a generator of its own seeded with ``seed``.

    Drawn on the device of the inputs (as captum's ``NoiseTunnel`` does), the noise came from that
    device's generator: CUDA's Philox stream and the CPU's Mersenne Twister give different numbers
    for the same seed, so a board's SmoothGrad rows depended on which worker computed them. Drawn
    here and then moved, the noise is the same on every device (and the same numbers as the CPU's
    global generator seeded with ``seed``, so CPU results did not change). The global torch
    generators are neither read nor advanced."""
    import torch  # noqa: PLC0415  (heavy: gradient methods only)

    generator = torch.Generator(device="cpu").manual_seed(int(seed))
    spread = torch.full(tuple(shape), SMOOTHGRAD_STDEVS, dtype=torch.float32)
    return torch.normal(0.0, spread, generator=generator)


def smoothgrad(forward: Callable, inputs, seed: int, *, samples: int = SMOOTHGRAD_SAMPLES):
    """SmoothGrad (Smilkov et al., 2017) of ``forward`` at ``inputs`` (batch 1): the mean over
    ``samples`` noisy copies of the absolute input gradient, as captum's
    ``NoiseTunnel(Saliency).attribute(nt_type="smoothgrad", abs=True)`` computes it, with the
    noise of :func:`smoothgrad_noise` moved to the inputs' device."""
    import torch  # noqa: PLC0415  (heavy: gradient methods only)
    from captum.attr import Saliency  # noqa: PLC0415

    with torch.no_grad():
        expanded = inputs.detach().repeat_interleave(samples, dim=0)
        noise = smoothgrad_noise(expanded.shape, seed).to(device=inputs.device, dtype=inputs.dtype)
        noisy = (expanded + noise).requires_grad_(True)
    gradients = Saliency(forward).attribute(noisy, abs=True)
    # summed per sample, then times 1/n, in captum's order (so CPU numbers are unchanged)
    return gradients.view(inputs.shape[0], samples, *inputs.shape[1:]).sum(dim=1) * 1 / samples


@contextlib.contextmanager
def _seeded_numpy(seed: int):
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def _unique_predict(model, question: str, texts: Sequence[str]) -> np.ndarray:
    """``model.predict_proba(question, texts)``, batched; a classifier computes each distinct
    text once. A QA model gets every text, in order, as officially: its padding is not masked,
    so removing duplicates would change which texts share a batch, and so the numbers."""
    if getattr(model, "kind", None) == "qa":
        texts = [str(text) for text in texts]
        return model.predict_proba(question, texts) if texts else np.zeros((0, 2))
    first: dict[str, int] = {}
    inverse = [first.setdefault(str(text), len(first)) for text in texts]
    if not first:
        return np.zeros((0, 2))
    return model.predict_proba(question, list(first))[inverse]


# --------------------------------------------------------------------------- methods

def random_scores(model, question, context, sentences, *, seed=0) -> list[float]:
    rng = np.random.default_rng(sample_seed(seed, question))
    return [float(value) for value in rng.permutation(len(sentences))]


def token_attributions(method: str, model, question: str, context: str, *, seed: int = 0):
    """(scores, offsets) for the context tokens: captum attribution summed over hidden dims.

    ``method`` is ``gradient``, ``integrated_gradients`` or ``smoothgrad``."""
    import torch  # noqa: PLC0415  (heavy: gradient methods only)
    from captum.attr import IntegratedGradients, Saliency  # noqa: PLC0415

    encoding, embeddings = model.encode_and_embed(question, context)
    sequence_ids = encoding.sequence_ids(0)
    offsets = encoding["offset_mapping"][0].tolist()
    c0 = int(model.context_start(encoding)[0])
    question_part = embeddings[:, :c0]
    context_part = embeddings[:, c0:].clone().requires_grad_(True)

    def forward(context_embeddings):
        fixed = question_part.expand(context_embeddings.shape[0], -1, -1)
        return model.predict_proba_torch(torch.cat([fixed, context_embeddings], dim=1), encoding)

    if context_part.shape[1] == 0:
        attributions = context_part
    elif method == "gradient":
        attributions = Saliency(forward).attribute(context_part, abs=True)
    elif method == "integrated_gradients":
        attributions = IntegratedGradients(forward).attribute(
            context_part, baselines=torch.zeros_like(context_part), n_steps=IG_STEPS,
            internal_batch_size=max(2, model.batch_size))
    elif method == "smoothgrad":
        attributions = smoothgrad(forward, context_part, sample_seed(seed, question))
    else:
        raise ValueError(f"unknown gradient method {method!r}")
    token_scores = attributions.detach().sum(dim=-1)[0].double().cpu().numpy()
    positions = range(c0, c0 + len(token_scores))
    context_offsets = [tuple(offsets[p]) if sequence_ids[p] == 1 else (0, 0) for p in positions]
    return token_scores, context_offsets


def gradient_explanation(method: str, model, question, context, sentences, *, seed=0):
    """Token attributions by ``method``, ready to be reduced per sentence by ``sum`` or ``max``."""
    token_scores, offsets = token_attributions(method, model, question, context, seed=seed)
    index = token_sentence_index(offsets, sentence_spans(context, sentences))
    return lambda how: aggregate(token_scores, index, len(sentences), how)


def lime_word_weights(model, question: str, context: str, n_samples: int, *,
                      seed: int = 0) -> dict[str, float]:
    """LIME weights of the (at most 10) selected words for label 1 = answerable."""
    from lime.lime_text import LimeTextExplainer  # noqa: PLC0415  (heavy: LIME only)

    if not _WORD.search(context):
        return {}
    explainer = LimeTextExplainer(random_state=sample_seed(seed, question))
    explanation = explainer.explain_instance(
        context, lambda texts: _unique_predict(model, question, texts), num_samples=n_samples)
    return {word: float(weight) for word, weight in explanation.as_list(label=1)}


def lime_explanation(n_samples: int, model, question, context, sentences, *, seed=0):
    weights = lime_word_weights(model, question, context, n_samples, seed=seed)
    return lambda how: words_to_sentences(weights, sentences, how)


def _word_occurrences(context: str, sentences: Sequence[str]) -> list[tuple[int, int]]:
    """Character spans of the non-punctuation NLTK word tokens of the context, in order."""
    tokenizer = NLTKWordTokenizer()
    spans: list[tuple[int, int]] = []
    for (start, end) in sentence_spans(context, sentences):
        text = context[start:end]
        try:
            pieces = list(tokenizer.span_tokenize(text))
        except ValueError:  # tokens that cannot be aligned back to the text
            pieces = [match.span() for match in re.finditer(r"\w+", text)]
        spans.extend((start + a, start + b) for a, b in pieces if _WORD.search(text[a:b]))
    return spans


def shap_word_weights(model, question: str, context: str, sentences: Sequence[str],
                      n_samples: int, *, seed: int = 0) -> dict[str, float]:
    """Kernel SHAP values of P(answer) for the unique lower-cased words of the context, keyed by
    word in order of first occurrence (the order of the explainer's columns)."""
    with warnings.catch_warnings():  # shap's import warns about matplotlib colormap APIs
        warnings.simplefilter("ignore")
        import shap  # noqa: PLC0415  (heavy: SHAP only)

    occurrences = _word_occurrences(context, sentences)
    # one column per distinct word in order of first occurrence (sentence, then word order), as
    # officially; the column order decides which words the seeded sampler masks together
    features = list(dict.fromkeys(context[a:b].lower() for a, b in occurrences))
    if not features:
        return {}
    feature_index = {word: i for i, word in enumerate(features)}
    # context = gaps[0] word_0 gaps[1] word_1 ... gaps[-1]; gaps (punctuation, spaces) stay
    gaps, words, previous = [], [], 0
    for a, b in occurrences:
        gaps.append(context[previous:a])
        words.append(feature_index[context[a:b].lower()])
        previous = b
    gaps.append(context[previous:])

    def text_for(mask: np.ndarray) -> str:
        parts = []
        for gap, word, (a, b) in zip(gaps, words, occurrences, strict=False):
            parts.append(gap)
            if mask[word] > 0.5:
                parts.append(context[a:b])
        parts.append(gaps[-1])
        return "".join(parts)

    def f(matrix: np.ndarray) -> np.ndarray:
        matrix = np.atleast_2d(matrix)
        return _unique_predict(model, question, [text_for(row) for row in matrix])[:, 1]

    from sklearn.exceptions import ConvergenceWarning  # noqa: PLC0415  (heavy: LIME/SHAP only)

    m = len(features)
    with _seeded_numpy(sample_seed(seed, question)), warnings.catch_warnings():
        # with few samples LARS warns about degenerate regressors and the final regression
        # about a singular system (it then uses least squares): expected at n = 10
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="Linear regression equation is singular")
        explainer = shap.KernelExplainer(f, np.zeros((1, m)), link="identity")
        values = explainer.shap_values(np.ones((1, m)), nsamples=n_samples, silent=True)
    values = np.asarray(values, dtype=float).reshape(-1)[:m]
    return {word: float(values[i]) for word, i in feature_index.items()}


def shap_explanation(n_samples: int, model, question, context, sentences, *, seed=0):
    weights = shap_word_weights(model, question, context, sentences, n_samples, seed=seed)
    return lambda how: words_to_sentences(weights, sentences, how, lowercase_keys=True)


def random_explanation(model, question, context, sentences, *, seed=0):
    scores = random_scores(model, question, context, sentences, seed=seed)
    return lambda how: scores


# --------------------------------------------------------------------------- registry

# An explanation is the expensive part (model calls); sum/max is a cheap reduction of it, so
# the two rows of a family can share one explanation (``interpret_many``).
EXPLANATIONS: dict[str, Callable] = {
    "Random": random_explanation,
    "Gradient": partial(gradient_explanation, "gradient"),
    f"IntegratedGradients_{IG_STEPS}": partial(gradient_explanation, "integrated_gradients"),
    f"SmoothGrad_{SMOOTHGRAD_SAMPLES}": partial(gradient_explanation, "smoothgrad"),
    **{f"LIME_{n}": partial(lime_explanation, n) for n in PERTURBATION_SIZES},
    **{f"SHAP_{n}": partial(shap_explanation, n) for n in PERTURBATION_SIZES},
}

# The official row names, in the order of the published table (the canonical baseline list),
# each mapped to (explanation family, aggregation); Random has no aggregation.
_ROWS: dict[str, tuple[str, str]] = {"Random": ("Random", "sum")}
for _family in EXPLANATIONS:
    if _family != "Random":
        for _how in AGGREGATIONS:
            _ROWS[f"{_family}_{_how}"] = (_family, _how)
BASELINE_METHODS: tuple[str, ...] = tuple(_ROWS)
ALIASES: dict[str, str] = {}
for _how in AGGREGATIONS:
    ALIASES[f"IntegratedGradients_{_how}"] = f"IntegratedGradients_{IG_STEPS}_{_how}"
    ALIASES[f"SmoothGrad_{_how}"] = f"SmoothGrad_{SMOOTHGRAD_SAMPLES}_{_how}"


def _row_interpreter(family: str, how: str) -> Callable:
    def interpreter(model, question, context, sentences, *, seed=0):
        return EXPLANATIONS[family](model, question, context, sentences, seed=seed)(how)

    interpreter.__name__ = f"{family}_{how}"
    return interpreter


INTERPRETERS: dict[str, Callable] = {name: _row_interpreter(*_ROWS[name]) for name in _ROWS}
for _alias, _target in ALIASES.items():
    INTERPRETERS[_alias] = INTERPRETERS[_target]


def canonical_name(name: str) -> str:
    """The official row name for an interpreter name or alias; ``KeyError`` if unknown."""
    name = ALIASES.get(name, name)
    if name not in INTERPRETERS:
        raise KeyError(f"unknown interpreter {name!r}; known: {', '.join(BASELINE_METHODS)}")
    return name


def interpret(name: str, model, question: str, context: str, sentences: Sequence[str], *,
              seed: int = 0) -> list[float]:
    """One score per frozen sentence (higher = more important) by the named baseline."""
    scores = INTERPRETERS[canonical_name(name)](model, question, context, list(sentences),
                                                seed=seed)
    result = [float(value) for value in scores]
    if len(result) != len(sentences):
        raise AssertionError(f"{name}: {len(result)} scores for {len(sentences)} sentences")
    return result  # a NaN (never expected) is left for the scorer to count as a fail


def family_of(name: str) -> str:
    """The explanation family of an interpreter name (``LIME_100_max`` -> ``LIME_100``)."""
    return _ROWS[canonical_name(name)][0]


def interpret_many(names: Sequence[str], model, question: str, context: str,
                   sentences: Sequence[str], *, seed: int = 0) -> dict[str, list[float]]:
    """``{name: interpret(name, ...)}`` with one explanation per family: the ``sum`` and ``max``
    rows of LIME, SHAP and the gradient methods share their model calls (same numbers as
    calling ``interpret`` per name, at about half the cost). A ``HostedModel`` also shares
    forward passes between families (``shared_forward_passes``): the unperturbed and emptied
    contexts and any perturbed text two methods both ask for are run once, and the gradient
    methods share one encoding and embedding of the sample: a shared probability equals the
    unshared one to float rounding, which SHAP_10's singular 10-row regression can amplify into
    a different word weight (docs/quackie_models.md §5)."""
    sentences = list(sentences)
    explained: dict[str, Callable] = {}
    result = {}
    sharing = getattr(model, "shared_forward_passes", None)
    with sharing() if sharing is not None else contextlib.nullcontext():
        for name in names:
            family = _ROWS[canonical_name(name)][0]
            if family not in explained:
                explained[family] = EXPLANATIONS[family](model, question, context, sentences,
                                                         seed=seed)
    for name in names:
        family, how = _ROWS[canonical_name(name)]
        scores = [float(value) for value in explained[family](how)]
        if len(scores) != len(sentences):
            raise AssertionError(f"{name}: {len(scores)} scores for {len(sentences)} sentences")
        result[name] = scores
    return result
