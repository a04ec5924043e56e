"""Hosted models on any device: batch sizes per model kind and device, randomness that never
comes from a device's generator, and today's CPU numbers kept (docs/quackie_models.md, "Devices").

No GPU is needed: the noise is shown to be drawn on the CPU from a generator of its own whatever
the inputs' device, and the CPU explanations are pinned to the numbers the code gave before the
batch sizes and the noise source were changed."""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import nltk  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from scoring.models import interpreters as I  # noqa: E402
from scoring.models.hosted_model import (  # noqa: E402
    BATCH_SIZES,
    default_batch_size,
    device_label,
    load_hosted_model,
)
from tests.tiny_models import build_tiny_classifier, build_tiny_qa_model  # noqa: E402

torch.set_num_threads(1)

QUESTION = "Where did the cat sit?"
CONTEXT = 'The cat sat on the mat in Paris.  It was red, "very" red. Then it rained on the road.'
SENTENCES = nltk.sent_tokenize(CONTEXT)

# What every method gave on the CPU (one torch thread, default batch sizes 8 and 2, seed 0) with
# the code before batch sizes per device and SmoothGrad's own noise generator: the CPU path must
# keep them. SHAP_10 is left out: its singular 10-row regression can turn a float-rounding
# difference between CPUs into another word weight (docs/quackie_models.md §5).
BEFORE = {
    "classification": {
        "Random": [0.0, 2.0, 1.0],
        "Gradient_sum": [1.737804837524891, 2.239696964621544, 1.7385722994804382],
        "IntegratedGradients_50_sum": [-0.23163918405771255, -0.30151738109998405, -0.1812979718670249],
        "SmoothGrad_5_sum": [0.49590000696480274, 0.669656177982688, 0.5381440743803978],
        "LIME_10_sum": [0.09166537858682329, -0.03290333848931501, -0.11474694069193117],
        "LIME_100_sum": [0.23948250442627117, 0.01904245218016175, 0.15624843032250874],
        "SHAP_100_sum": [-0.021442475168729262, -0.08799732498276519, 0.18704544365387954],
    },
    "qa": {
        "Random": [0.0, 2.0, 1.0],
        "Gradient_sum": [0.600280687212944, 0.5988562926650047, 0.9173145685344934],
        "IntegratedGradients_50_sum": [-0.03840961679816246, 0.03674701089039445, 0.21063948003575206],
        "SmoothGrad_5_sum": [0.938307948410511, 0.8584283292293549, 1.0491189509630203],
        "LIME_10_sum": [0.08572507449169874, 0.08771037530598316, -0.01623529920361948],
        "LIME_100_sum": [0.11878951394460725, 0.10110373567259545, 0.10888648585808505],
        "SHAP_100_sum": [0.10486762477624245, 0.13876187395662096, 0.08678348416884837],
    },
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("tiny")
    return {"classification": load_hosted_model(build_tiny_classifier(base / "cls", seed=3), "classification"),
            "qa": load_hosted_model(build_tiny_qa_model(base / "qa", seed=3), "qa")}


# ------------------------------------------------------------------ batch sizes

def test_batch_sizes_per_kind_and_device():
    # QA models keep the official 2 everywhere (their unmasked padding makes it matter)
    assert default_batch_size("qa") == default_batch_size("qa", "cuda") == default_batch_size("qa", "cuda:1") == 2
    # classifiers: 8 on the CPU (today's), 128 on a GPU
    assert default_batch_size("classification") == default_batch_size("classification", torch.device("cpu")) == 8
    assert default_batch_size("classification", "cuda:0") == 128
    assert default_batch_size("classification", "mps") == 8  # a device not in the table: the CPU's
    assert set(BATCH_SIZES) == {(kind, device) for kind in ("classification", "qa") for device in ("cpu", "cuda")}
    with pytest.raises(ValueError, match="kind must be one of"):
        default_batch_size("regression", "cuda")


def test_the_cpu_path_keeps_its_batch_sizes_and_says_where_it_runs(models):
    assert models["classification"].batch_size == 8 and models["qa"].batch_size == 2
    assert models["classification"].device_label == "cpu" == device_label("cpu")
    assert device_label(torch.device("meta")) == "meta"


@pytest.mark.parametrize("kind", ["classification", "qa"])
def test_the_cpu_path_keeps_todays_numbers(models, kind):
    for name, expected in BEFORE[kind].items():
        assert I.interpret(name, models[kind], QUESTION, CONTEXT, SENTENCES, seed=0) == pytest.approx(
            expected, rel=1e-4, abs=1e-6), name


# ------------------------------------------------------------------ SmoothGrad's noise

def test_the_noise_comes_from_its_own_cpu_generator_seeded_per_sample():
    shape = (5, 7, 3)
    reference = torch.normal(0.0, torch.ones(shape), generator=torch.Generator().manual_seed(11))
    torch.manual_seed(999)  # the global generator's state plays no part ...
    state = torch.get_rng_state()
    first = I.smoothgrad_noise(shape, 11)
    assert torch.equal(torch.get_rng_state(), state)  # ... and is not advanced
    torch.manual_seed(5)
    torch.rand(100)
    assert first.device.type == "cpu" and first.dtype == torch.float32
    assert torch.equal(first, reference) and torch.equal(I.smoothgrad_noise(shape, 11), first)
    assert not torch.equal(I.smoothgrad_noise(shape, 12), first)


def test_the_same_noise_reaches_inputs_on_any_device():
    """The noise is drawn before it is moved: inputs on another device get the same numbers
    (float64 stands in for a device whose tensors differ; 'meta', a device without data, shows
    the noise is moved to the inputs' device, not added on the CPU)."""
    inputs = torch.linspace(-1.0, 1.0, 12).reshape(1, 4, 3)

    def forward(x):  # gradient 2x: the attribution reads the noise back
        return (x ** 2).sum(dim=(1, 2))

    noise = I.smoothgrad_noise((I.SMOOTHGRAD_SAMPLES, 4, 3), 21)
    expected = (2 * (inputs + noise)).abs().mean(dim=0, keepdim=True)
    assert torch.allclose(I.smoothgrad(forward, inputs, 21), expected, atol=1e-6)
    wider = I.smoothgrad(forward, inputs.double(), 21)
    assert wider.dtype == torch.float64 and torch.allclose(wider.float(), expected, atol=1e-6)
    on_meta = I.smoothgrad(forward, inputs.to("meta"), 21)
    assert on_meta.device.type == "meta" and on_meta.shape == inputs.shape


def captum_smoothgrad_scores(model, question, context, seed):
    """SmoothGrad as it was computed before: captum's NoiseTunnel drawing its noise from the global
    generator of the inputs' device, seeded per sample (equal to ours on the CPU only)."""
    from captum.attr import NoiseTunnel, Saliency

    encoding, embeddings = model.encode_and_embed(question, context)
    c0 = int(model.context_start(encoding)[0])
    question_part, context_part = embeddings[:, :c0], embeddings[:, c0:].clone().requires_grad_(True)

    def forward(part):
        fixed = question_part.expand(part.shape[0], -1, -1)
        return model.predict_proba_torch(torch.cat([fixed, part], dim=1), encoding)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(I.sample_seed(seed, question))
        attributions = NoiseTunnel(Saliency(forward)).attribute(
            context_part, nt_type="smoothgrad", nt_samples=I.SMOOTHGRAD_SAMPLES, stdevs=I.SMOOTHGRAD_STDEVS, abs=True)
    return attributions.detach().sum(dim=-1)[0].double().numpy()


def autograd_smoothgrad_scores(model, question, context, seed):
    """SmoothGrad written out with torch.autograd, one noisy copy at a time, same noise."""
    encoding, embeddings = model.encode_and_embed(question, context)
    c0 = int(model.context_start(encoding)[0])
    context_part = embeddings[:, c0:]
    noise = I.smoothgrad_noise((I.SMOOTHGRAD_SAMPLES, *context_part.shape[1:]), I.sample_seed(seed, question))
    total = torch.zeros_like(context_part)
    for k in range(I.SMOOTHGRAD_SAMPLES):
        noisy = (context_part + noise[k:k + 1]).requires_grad_(True)
        p_answer = model.predict_proba_torch(torch.cat([embeddings[:, :c0], noisy], dim=1), encoding)
        total += torch.autograd.grad(p_answer.sum(), noisy)[0].abs()
    return (total / I.SMOOTHGRAD_SAMPLES).sum(dim=-1)[0].double().numpy()


@pytest.mark.parametrize("kind", ["classification", "qa"])
def test_smoothgrad_is_repeatable_and_equals_independent_computations(models, kind):
    model = models[kind]
    torch.manual_seed(1234)
    first, _ = I.token_attributions("smoothgrad", model, QUESTION, CONTEXT, seed=4)
    torch.manual_seed(4321)  # the global generator changes nothing
    again, _ = I.token_attributions("smoothgrad", model, QUESTION, CONTEXT, seed=4)
    assert (first == again).all()
    assert first == pytest.approx(captum_smoothgrad_scores(model, QUESTION, CONTEXT, 4), abs=1e-7)
    assert first == pytest.approx(autograd_smoothgrad_scores(model, QUESTION, CONTEXT, 4), rel=1e-5, abs=1e-7)
    other, _ = I.token_attributions("smoothgrad", model, QUESTION, CONTEXT, seed=5)
    assert other != pytest.approx(first, abs=1e-4)  # the seed does matter
