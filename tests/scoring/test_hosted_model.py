"""HostedModel: the official QUACKIE wrapper over tiny random models of both kinds."""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from scoring.models.hosted_model import (  # noqa: E402
    HostedModel,
    ModelLoadError,
    load_hosted_model,
    qa_answer_probability,
)
from tests.tiny_models import build_tiny_classifier, build_tiny_qa_model  # noqa: E402

torch.set_num_threads(1)

QUESTIONS = ["Where did the cat sit?", "What is the capital of France?", "Who won the game?",
             "How old was the king when he died?", "Why did it rain?"]
CONTEXTS = [
    "The cat sat on the mat. It was red. Then it rained.",
    "Paris is the capital of France. London is in England.",
    "The team won the game in 1999. The season was long and the river was high.",
    "The king was born in 1950. He died in 2000, at the age of 50.",
    "It rained because the moon was blue. " * 12,
]


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    base = tmp_path_factory.mktemp("tiny")
    return {
        "classification": build_tiny_classifier(base / "cls"),
        "qa": build_tiny_qa_model(base / "qa"),
        "qa_yes": build_tiny_qa_model(base / "qa_yes", answerable=True),
        "qa_no": build_tiny_qa_model(base / "qa_no", answerable=False),
        "cls_yes": build_tiny_classifier(base / "cls_yes", answerable=True),
        "cls_no": build_tiny_classifier(base / "cls_no", answerable=False),
    }


@pytest.fixture(scope="module")
def classifier(model_dirs):
    return load_hosted_model(model_dirs["classification"], "classification", batch_size=2)


@pytest.fixture(scope="module")
def qa_model(model_dirs):
    return load_hosted_model(model_dirs["qa"], "qa", batch_size=2)


def official_answer_probability(start, end, c0):
    """The official L x L construction: M[j, i] = s_i + e_j, one softmax over all pairs."""
    length = len(start)
    scores = np.add.outer(end, start)  # [end j, start i]
    p = np.exp(scores - scores.max())
    p /= p.sum()
    invalid = sum(p[j, i] for i in range(length) for j in range(length) if j < i)
    question_start = sum(p[j, i] for i in range(c0) for j in range(length) if j >= i)
    return 1.0 - invalid - question_start


# ------------------------------------------------------------------ QA answerability math

def test_uniform_logits_give_ten_over_sixty_four():
    p = qa_answer_probability(torch.zeros(8), torch.zeros(8), 4)
    assert float(p) == pytest.approx(10 / 64)


def test_answer_probability_matches_the_official_pair_matrix():
    rng = np.random.default_rng(1)
    for length, c0 in [(8, 4), (12, 3), (5, 5), (6, 0), (7, 7)]:
        start, end = rng.normal(size=length) * 3, rng.normal(size=length) * 3
        ours = float(qa_answer_probability(torch.tensor(start), torch.tensor(end), c0))
        assert ours == pytest.approx(official_answer_probability(start, end, c0), abs=1e-6)


def test_answer_probability_is_batched_per_row_context_start():
    rng = np.random.default_rng(2)
    start, end = rng.normal(size=(3, 9)), rng.normal(size=(3, 9))
    c0 = [2, 5, 9]
    batched = qa_answer_probability(torch.tensor(start), torch.tensor(end), torch.tensor(c0))
    for row in range(3):
        assert float(batched[row]) == pytest.approx(
            official_answer_probability(start[row], end[row], c0[row]), abs=1e-6)
    assert float(batched[2]) == 0.0  # no context token at all


# ------------------------------------------------------------------ the wrapper

@pytest.mark.parametrize("kind", ["classification", "qa"])
def test_predict_proba_shapes_and_probabilities(kind, classifier, qa_model):
    model = classifier if kind == "classification" else qa_model
    assert isinstance(model, HostedModel) and model.kind == kind
    assert model.device == torch.device("cpu") and model.network is not None
    proba = model.predict_proba(QUESTIONS, CONTEXTS)
    assert proba.shape == (len(QUESTIONS), 2)
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    single = model.predict_proba(QUESTIONS[0], CONTEXTS[0])
    assert single.shape == (1, 2)
    predicted = model.predict(QUESTIONS, CONTEXTS)
    assert predicted.dtype.kind == "i" and set(predicted.tolist()) <= {0, 1}
    np.testing.assert_array_equal(predicted, (proba[:, 1] > 0.5).astype(int))
    # a fixed question against several contexts (how LIME calls it)
    fixed = model.predict_proba(QUESTIONS[0], CONTEXTS[:3])
    assert fixed.shape == (3, 2)
    assert model.predict_proba([], []).shape == (0, 2)


def test_classifier_batching_equals_one_by_one(classifier):
    batched = classifier.predict_proba(QUESTIONS, CONTEXTS)
    singles = np.vstack([classifier.predict_proba(q, c) for q, c in zip(QUESTIONS, CONTEXTS)])
    np.testing.assert_allclose(batched, singles, atol=1e-5)
    assert batched[:, 1].std() > 1e-3  # the tiny random classifier does react to its input


def test_qa_single_sample_equals_the_math_on_the_network_logits(qa_model):
    question, context = QUESTIONS[1], CONTEXTS[1]
    encoding = qa_model.tokenizer(question, context, return_tensors="pt")
    with torch.no_grad():
        out = qa_model.network(**encoding)
    c0 = encoding["token_type_ids"][0].tolist().index(1)
    expected = official_answer_probability(out.start_logits[0].double().numpy(),
                                           out.end_logits[0].double().numpy(), c0)
    assert qa_model.predict_proba(question, context)[0, 1] == pytest.approx(expected, abs=1e-5)


def test_qa_padding_is_not_masked(qa_model):
    """As officially: a short sample padded in a batch gets (slightly) different numbers."""
    short = qa_model.predict_proba(QUESTIONS[0], CONTEXTS[0])[0, 1]
    padded = qa_model.predict_proba([QUESTIONS[0], QUESTIONS[4]], [CONTEXTS[0], CONTEXTS[4]])
    assert padded[0, 1] != pytest.approx(short, abs=1e-7)


@pytest.mark.parametrize("name,kind,expected", [
    ("qa_yes", "qa", 1), ("qa_no", "qa", 0),
    ("cls_yes", "classification", 1), ("cls_no", "classification", 0)])
def test_tiny_models_can_be_steered(model_dirs, name, kind, expected):
    model = load_hosted_model(model_dirs[name], kind)
    assert model.predict(QUESTIONS, CONTEXTS).tolist() == [expected] * len(QUESTIONS)


def test_tiny_model_directory_is_small(model_dirs):
    size = sum(path.stat().st_size for path in model_dirs["qa"].iterdir())
    assert size < 1_000_000


def test_n_tokens_counts_special_tokens_without_truncating(classifier):
    tokenizer = classifier.tokenizer
    assert classifier.n_tokens("Who?", "Paris.") == len(tokenizer.encode("Who?", "Paris."))
    assert classifier.n_tokens("Who?", "Paris.") == 7  # [CLS] who ? [SEP] paris . [SEP]
    long_context = "the river was high . " * 200
    assert classifier.n_tokens("Who?", long_context) > 512
    # the model still runs on it (truncated to 512 for inference)
    assert classifier.predict_proba("Who?", long_context).shape == (1, 2)


@pytest.mark.parametrize("kind", ["classification", "qa"])
def test_predict_proba_torch_is_differentiable_and_consistent(kind, classifier, qa_model):
    model = classifier if kind == "classification" else qa_model
    question, context = QUESTIONS[2], CONTEXTS[2]
    encoding = model.encode(question, context)
    embeddings = model.embed(encoding).clone().requires_grad_(True)
    p = model.predict_proba_torch(embeddings, encoding)
    assert p.shape == (1,)
    expected = model.predict_proba(question, context)[0, 1]
    assert float(p[0].detach()) == pytest.approx(expected, abs=1e-5)
    p.sum().backward()
    assert embeddings.grad is not None
    assert torch.isfinite(embeddings.grad).all() and embeddings.grad.abs().sum() > 0
    # a batch of embeddings against a single input_dict is broadcast
    batch = torch.cat([embeddings.detach(), embeddings.detach() * 0.5])
    assert model.predict_proba_torch(batch, encoding).shape == (2,)


def test_loading_errors(tmp_path, model_dirs):
    with pytest.raises(ValueError):
        load_hosted_model(model_dirs["classification"], "regression")
    with pytest.raises(ModelLoadError):
        load_hosted_model(tmp_path / "nothing-here", "qa")
    from transformers import AutoModelForSequenceClassification

    three = AutoModelForSequenceClassification.from_pretrained(
        model_dirs["classification"], num_labels=3, local_files_only=True,
        ignore_mismatched_sizes=True)
    three.save_pretrained(tmp_path / "three")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / "three" / name).write_bytes((model_dirs["classification"] / name).read_bytes())
    with pytest.raises(ModelLoadError, match="2 labels"):
        load_hosted_model(tmp_path / "three", "classification")


def test_default_batch_sizes_follow_the_kind(model_dirs):
    # QA: the official baselines' --batch_size 2 (unmasked padding makes it matter)
    assert load_hosted_model(model_dirs["qa"], "qa").batch_size == 2
    assert load_hosted_model(model_dirs["classification"], "classification").batch_size == 8
    assert load_hosted_model(model_dirs["qa"], "qa", batch_size=5).batch_size == 5


# ------------------------------------------------------------------ the fast path vs the plain one

def plain_classifier_p_answer(model, questions, contexts):
    """What a researcher writes: one tokenizer call padded to the longest text, one forward."""
    encoding = model.tokenizer(questions, contexts, padding=True, truncation=True,
                               max_length=model.max_length, return_tensors="pt")
    with torch.no_grad():
        logits = model.network(**encoding).logits
    return torch.softmax(logits.float(), dim=-1)[:, 1].double().numpy()


def test_classifier_fast_path_equals_one_plain_padded_call(classifier):
    """Sorted by token length, padded per batch, duplicates run once: the same probabilities as
    one call padded to the longest text (tolerance: float rounding)."""
    contexts = CONTEXTS + [CONTEXTS[1], "the river was high . " * 200, "Paris.", CONTEXTS[0]]
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(len(contexts))]
    fast = classifier.predict_proba(questions, contexts)
    plain = plain_classifier_p_answer(classifier, questions, contexts)
    np.testing.assert_allclose(fast[:, 1], plain, atol=1e-6)
    np.testing.assert_allclose(fast[:, 0], 1.0 - plain, atol=1e-6)
    assert fast[:, 1].std() > 1e-3


def test_classifier_batches_hold_similar_lengths_and_duplicates_run_once(classifier, monkeypatch):
    seen = []
    original = classifier.network.forward

    def recording(**inputs):
        seen.append(inputs["attention_mask"].sum(dim=1).tolist())
        return original(**inputs)

    monkeypatch.setattr(classifier.network, "forward", recording)
    contexts = [CONTEXTS[4], CONTEXTS[0], CONTEXTS[4], CONTEXTS[1], CONTEXTS[0], CONTEXTS[2]]
    classifier.predict_proba(QUESTIONS[0], contexts)
    lengths = [n for batch in seen for n in batch]
    assert len(lengths) == 4  # four distinct contexts
    assert lengths == sorted(lengths)  # in order of token length, two per batch (batch_size 2)
    assert all(len(batch) <= classifier.batch_size for batch in seen)
    # each batch is padded to its own longest row only
    assert max(seen[0]) < max(seen[-1])


def test_qa_path_keeps_the_callers_order_and_batches(qa_model):
    """A QA model's numbers depend on the batch (unmasked padding): the same as encoding the
    caller's order batch by batch, as the official code does."""
    questions, contexts = QUESTIONS * 2, CONTEXTS[::-1] * 2
    expected = []
    for start in range(0, len(questions), qa_model.batch_size):
        encoding = qa_model.tokenizer(questions[start:start + 2], contexts[start:start + 2],
                                      padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            out = qa_model.network(**encoding)
        c0 = qa_model.context_start(encoding)
        expected.extend(qa_answer_probability(out.start_logits, out.end_logits, c0).tolist())
    np.testing.assert_allclose(qa_model.predict_proba(questions, contexts)[:, 1], expected,
                               atol=1e-6)


def test_shared_forward_passes_run_each_pair_once(model_dirs):
    model = load_hosted_model(model_dirs["classification"], "classification", batch_size=3)
    forwarded = []
    original = model._classifier_forward
    model._classifier_forward = lambda pairs: (forwarded.extend(pairs), original(pairs))[1]
    alone = model.predict_proba(QUESTIONS[0], CONTEXTS)
    with model.shared_forward_passes():
        first = model.predict_proba(QUESTIONS[0], CONTEXTS[:3])
        with model.shared_forward_passes():  # a nested block joins the outer one
            second = model.predict_proba(QUESTIONS[0], CONTEXTS[::-1])
        encoded = model.encode_and_embed(QUESTIONS[0], CONTEXTS[0])
        assert model.encode_and_embed(QUESTIONS[0], CONTEXTS[0]) is encoded
    assert [c for _, c in forwarded] == CONTEXTS + CONTEXTS[:3] + CONTEXTS[3:][::-1]
    np.testing.assert_allclose(first, alone[:3], atol=1e-6)
    np.testing.assert_allclose(second, alone[::-1], atol=1e-6)
    # after the block nothing is kept
    model.predict_proba(QUESTIONS[0], CONTEXTS[:1])
    assert len(forwarded) == len(CONTEXTS) * 2 + 1
    assert model.encode_and_embed(QUESTIONS[0], CONTEXTS[0]) is not encoded


def test_embed_stops_after_the_embeddings_module(classifier):
    encoding = classifier.encode(QUESTIONS[1], CONTEXTS[1])
    layers_run = []
    handle = classifier.network.bert.encoder.layer[0].register_forward_hook(
        lambda *_: layers_run.append(1))
    try:
        embeddings = classifier.embed(encoding)
    finally:
        handle.remove()
    assert layers_run == []
    with torch.no_grad():
        full = classifier.network(**classifier.network_inputs(encoding), output_hidden_states=True)
    torch.testing.assert_close(embeddings, full.hidden_states[0])


# ------------------------------------------------------------------ device choice

def test_choose_device_defaults_to_the_cpu(monkeypatch):
    from scoring.models.hosted_model import DEVICE_SETTING, choose_device

    monkeypatch.delenv(DEVICE_SETTING, raising=False)
    assert choose_device(cuda_available=True) == torch.device("cpu")
    assert choose_device("auto", cuda_available=True) == torch.device("cuda")
    assert choose_device("auto", cuda_available=False) == torch.device("cpu")
    assert choose_device(" CUDA:1 ", cuda_available=True) == torch.device("cuda:1")
    monkeypatch.setenv(DEVICE_SETTING, "auto")
    assert choose_device(cuda_available=True) == torch.device("cuda")
    assert choose_device(cuda_available=False) == torch.device("cpu")
    assert choose_device("cpu", cuda_available=True) == torch.device("cpu")  # explicit wins
    monkeypatch.setenv(DEVICE_SETTING, "")
    assert choose_device(cuda_available=True) == torch.device("cpu")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        choose_device("cuda", cuda_available=False)
    with pytest.raises(ValueError, match="cpu, cuda, cuda:N or auto"):
        choose_device("tpu", cuda_available=True)


def test_loading_follows_the_device_setting(model_dirs, monkeypatch):
    from scoring.models.hosted_model import DEVICE_SETTING

    monkeypatch.setenv(DEVICE_SETTING, "auto")
    model = load_hosted_model(model_dirs["classification"], "classification")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert model.device.type == expected
    assert next(model.network.parameters()).device.type == expected
