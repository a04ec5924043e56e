"""HostedModel: the official QUACKIE wrapper over tiny random models of both kinds."""
import os
import threading

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
    singles = np.vstack([classifier.predict_proba(q, c) for q, c in zip(QUESTIONS, CONTEXTS, strict=True)])
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
    lengths = sorted(n for batch in seen for n in batch)
    assert len(lengths) == 4  # four distinct contexts
    # Batches of rows of similar token length (batch_size 2): the sorted lengths, two by two.
    # Batches may run side by side on threads, so the order they were seen in is not checked.
    by_length = sorted((sorted(batch) for batch in seen), key=max)
    assert by_length == [lengths[i:i + classifier.batch_size] for i in range(0, len(lengths), classifier.batch_size)]
    # each batch is padded to its own longest row only
    assert max(by_length[0]) < max(by_length[-1])


@pytest.fixture
def two_torch_threads():
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(1)


def test_with_two_threads_batches_run_side_by_side_with_the_same_numbers(classifier, two_torch_threads,
                                                                         monkeypatch):
    """Batches shared out to one thread per core (each running torch on one core): the same
    probabilities as one batch after another, every batch seen once from the worker threads
    with the last layer shortened, and torch's thread count as it was afterwards."""
    contexts = CONTEXTS * 3 + ["the river was high . " * 40, "Paris."]
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(len(contexts))]
    threads, first_position = [], []
    original = classifier.network.forward

    def recording(**inputs):
        threads.append(threading.current_thread().name)
        first_position.append(type(classifier._first_position[-1]).__name__)
        return original(**inputs)

    monkeypatch.setattr(classifier.network, "forward", recording)
    side_by_side = classifier.predict_proba(questions, contexts)
    assert torch.get_num_threads() == 2
    assert len(threads) == 4 and all(name.startswith("forward") for name in threads)  # 7 distinct pairs, 2 a batch
    assert set(first_position) == {"_FirstPositionLayer"}
    assert type(classifier._first_position[-1]).__name__ != "_FirstPositionLayer"  # whole again

    torch.set_num_threads(1)
    one_after_another = classifier.predict_proba(questions, contexts)
    assert len(threads) == 8 and threads[-1] == threading.current_thread().name
    np.testing.assert_allclose(side_by_side, one_after_another, atol=1e-6)
    np.testing.assert_allclose(side_by_side[:, 1], plain_classifier_p_answer(classifier, questions, contexts),
                               atol=1e-6)


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


# ------------------------------------------------------------------ fast classifier paths

def full_network_p_answer(model, questions, contexts):
    """P(answer) from the whole network, one row at a time (no batch, no fast path)."""
    values = []
    for question, context in zip(questions, contexts, strict=True):
        encoding = model.tokenizer(question, context, truncation=True, max_length=model.max_length,
                                   return_tensors="pt")
        with torch.no_grad():
            logits = model.network(**encoding).logits
        values.append(float(torch.softmax(logits, dim=-1)[0, 1]))
    return np.array(values)


def test_the_classifier_runs_its_last_layer_for_the_first_position_only(classifier):
    """The head reads position 0 only: the last layer computed for it alone gives the same
    probabilities and gradients, and the network itself is left whole."""
    layers = classifier.network.bert.encoder.layer
    original = layers[-1]
    assert classifier._first_position is layers  # BERT: supported, and it passed the probe
    from scoring.models import hosted_model as hm

    seen, lengths = [], []  # positions out of the layer before the last, and out of the last
    hooks = [layers[-2].register_forward_hook(lambda _m, _a, output: seen.append(output.shape[1])),
             original.output.register_forward_hook(lambda _m, _a, output: lengths.append(output.shape[1]))]
    try:
        fast = classifier.predict_proba(QUESTIONS, CONTEXTS)[:, 1]
    finally:
        for hook in hooks:
            hook.remove()
    assert lengths and set(lengths) == {1} and min(seen) > 1
    np.testing.assert_allclose(fast, full_network_p_answer(classifier, QUESTIONS, CONTEXTS), atol=1e-6)
    assert layers[-1] is original and not isinstance(layers[-1], hm._FirstPositionLayer)
    with torch.no_grad():  # the public network still gives every position's hidden state
        out = classifier.network(**classifier.encode(QUESTIONS[0], CONTEXTS[0]), output_hidden_states=True)
    assert out.hidden_states[-1].shape[1] > 1
    # gradients through the shortened last layer equal those of the whole network
    encoding = classifier.encode(QUESTIONS[2], CONTEXTS[2])
    grads = []
    for first_position in (classifier._first_position, None):
        classifier._first_position = first_position
        embeddings = classifier.embed(encoding).clone().requires_grad_(True)
        classifier.predict_proba_torch(embeddings, encoding).sum().backward()
        grads.append(embeddings.grad)
    classifier._first_position = layers
    torch.testing.assert_close(grads[0], grads[1], atol=1e-6, rtol=1e-4)


def test_qa_models_and_unknown_heads_keep_the_whole_network(qa_model, model_dirs):
    from scoring.models.hosted_model import first_position_layers

    assert qa_model._first_position is None
    model = load_hosted_model(model_dirs["classification"], "classification")
    model.network.config.model_type = "distilbert"  # a head this shortcut does not know
    assert first_position_layers(model.network) is None


def test_choose_runtime(monkeypatch):
    from scoring.models.hosted_model import RUNTIME_SETTING, choose_runtime

    monkeypatch.delenv(RUNTIME_SETTING, raising=False)
    assert choose_runtime() == "torch"
    monkeypatch.setenv(RUNTIME_SETTING, " ONNXRuntime ")
    assert choose_runtime() == "onnxruntime"
    assert choose_runtime("torch") == "torch"  # explicit wins
    with pytest.raises(ValueError, match="torch, onnxruntime"):
        choose_runtime("tensorrt")


def test_onnx_runtime_gives_the_float_networks_probabilities_and_is_cached(tmp_path, monkeypatch):
    """Exported once per model checksum next to the model, reused by the next load, and within
    FAST_PATH_TOLERANCE of the float32 torch network (measured ~1e-7)."""
    from scoring.models import hosted_model as hm

    directory = build_tiny_classifier(tmp_path / "cls", seed=5)
    model = load_hosted_model(directory, "classification", runtime="onnxruntime", batch_size=3)
    assert model.runtime == "onnxruntime" and model._onnx.path.parent == directory / ".onnx"
    contexts = CONTEXTS + ["the river was high . " * 200, "Paris."]
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(len(contexts))]
    through_onnx = model.predict_proba(questions, contexts)[:, 1]
    np.testing.assert_allclose(through_onnx, full_network_p_answer(model, questions, contexts),
                               atol=hm.FAST_PATH_TOLERANCE)
    assert through_onnx.std() > 1e-3
    exported = list((directory / ".onnx").glob("*.onnx"))
    assert len(exported) == 1

    def no_export(*_args, **_kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(hm, "export_classifier_onnx", no_export)
    again = load_hosted_model(directory, "classification", runtime="onnxruntime")
    assert again._onnx.path == exported[0]
    # other weights: another checksum, so the old export is not reused
    monkeypatch.undo()
    other = build_tiny_classifier(tmp_path / "cls", seed=6)
    assert load_hosted_model(other, "classification", runtime="onnxruntime")._onnx.path != exported[0]


def test_onnx_batches_run_side_by_side_in_one_thread_sessions_with_the_same_numbers(tmp_path, two_torch_threads,
                                                                                   monkeypatch):
    """With two threads, ONNX Runtime's batches go to worker threads that each run a one-thread
    session of the same export (made once, kept): the probabilities of one batch after another."""
    from scoring.models import hosted_model as hm

    directory = build_tiny_classifier(tmp_path / "cls", seed=5)
    model = load_hosted_model(directory, "classification", runtime="onnxruntime", batch_size=2)
    assert model._onnx.threads == 2
    contexts = CONTEXTS * 3 + ["the river was high . " * 40, "Paris."]
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(len(contexts))]
    runs = []
    original = hm.OnnxClassifier.logits

    def recording(session, arrays):
        runs.append((session.threads, threading.current_thread().name))
        return original(session, arrays)

    monkeypatch.setattr(hm.OnnxClassifier, "logits", recording)
    side_by_side = model.predict_proba(questions, contexts)
    assert len(runs) == 4  # 7 distinct pairs, 2 a batch
    assert all(threads == 1 and name.startswith("forward") for threads, name in runs)
    one_thread = model._onnx.one_thread()
    model.predict_proba(questions, contexts[::-1])
    assert model._onnx.one_thread() is one_thread and one_thread.path == model._onnx.path

    torch.set_num_threads(1)
    one_after_another = model.predict_proba(questions, contexts)
    assert runs[-1] == (2, threading.current_thread().name)  # the wide session, on the caller's thread
    np.testing.assert_allclose(side_by_side, one_after_another, atol=1e-6)
    np.testing.assert_allclose(side_by_side[:, 1], full_network_p_answer(model, questions, contexts),
                               atol=hm.FAST_PATH_TOLERANCE)


def test_onnx_export_goes_to_the_cache_setting_when_the_model_directory_is_read_only(tmp_path, monkeypatch):
    from scoring.models.hosted_model import ONNX_CACHE_SETTING

    directory = build_tiny_classifier(tmp_path / "cls")
    monkeypatch.setenv(ONNX_CACHE_SETTING, str(tmp_path / "cache"))
    model = load_hosted_model(directory, "classification", runtime="onnxruntime")
    assert model._onnx.path.parent == tmp_path / "cache"
    assert not (directory / ".onnx").exists()


def test_the_runtime_setting_applies_to_cpu_classifiers_only(model_dirs, monkeypatch):
    from scoring.models.hosted_model import RUNTIME_SETTING

    monkeypatch.setenv(RUNTIME_SETTING, "onnxruntime")
    assert load_hosted_model(model_dirs["qa"], "qa").runtime == "torch"  # a worker-wide setting
    assert load_hosted_model(model_dirs["classification"], "classification").runtime == "onnxruntime"
    with pytest.raises(ValueError, match="classifiers on the CPU"):
        load_hosted_model(model_dirs["qa"], "qa", runtime="onnxruntime")


def test_explanations_through_onnx_runtime_stay_within_the_stated_tolerance(model_dirs):
    """docs/quackie_models.md §5: LIME_100 and SHAP_100 word weights within 1e-4 of the plain
    float32 torch network (first-position shortcut off), and the same top sentence."""
    from scoring.models import interpreters

    plain = load_hosted_model(model_dirs["classification"], "classification", runtime="torch")
    plain._first_position = None
    fast = load_hosted_model(model_dirs["classification"], "classification", runtime="onnxruntime")
    question = "Where did the cat sit?"
    context = "The cat sat on the mat in Paris. It was red, very red. Then it rained on the road."
    sentences = ["The cat sat on the mat in Paris.", "It was red, very red.", "Then it rained on the road."]
    for seed in (0, 1, 2):
        lime = [interpreters.lime_word_weights(m, question, context, 100, seed=seed) for m in (plain, fast)]
        shap = [interpreters.shap_word_weights(m, question, context, sentences, 100, seed=seed)
                for m in (plain, fast)]
        for ours, theirs in (lime, shap):
            assert set(ours) == set(theirs)
            assert max(abs(ours[w] - theirs[w]) for w in ours) <= 1e-4
            assert max(abs(v) for v in ours.values()) > 1e-3  # the model reacts: the check means something
        for method in ("LIME_100_sum", "SHAP_100_sum"):
            a, b = (interpreters.interpret(method, m, question, context, sentences, seed=seed) for m in (plain, fast))
            assert int(np.argmax(a)) == int(np.argmax(b))
