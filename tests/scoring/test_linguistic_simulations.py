"""Simulations with known truth for the linguistic-bias score (docs/diagnostics.md#linguistic-bias).

A model without bias (each question right with the same probability, independently) must get
p-values spread evenly over 0..1 and a corrected score of mean 0, while the raw score of
Wu et al. (2022) (the variance of the subset F1s) stays far above 0; a planted bias (accuracy
depends on the bin) must be found in most replications at n = 500. All draws are seeded.
"""
import functools

import numpy as np
import pytest
from scipy.stats import kstest

from scoring.analysis import linguistic
from scoring.analysis.linguistic import between_bin_test

# A synthetic property of 500 items with bins as uneven as the real ones (cf. answer length on
# SQuAD); the last three bins are below the default minimum bin size of 10 and are left out.
SIZES = (148, 148, 88, 50, 30, 15, 12, 5, 3, 1)
KEPT = 7
N = sum(SIZES)
WEIGHTS = np.array(SIZES[:KEPT]) / sum(SIZES[:KEPT])
REPLICATIONS = 400
PERMUTATIONS = 500  # p-values on a grid of 1/501, fine enough for a share below 0.05 and a KS test


def split(values):
    return dict(zip((f"bin {k}" for k in range(len(SIZES))), np.split(values, np.cumsum(SIZES)[:-1]), strict=True))


def simulate(bin_accuracy, replications, seed):
    """p-values, corrected and raw scores of ``replications`` models whose answers are right with
    probability ``bin_accuracy[k]`` in bin k, independently (F1 0 or 1)."""
    rng = np.random.default_rng(seed)
    accuracy = np.repeat(bin_accuracy, SIZES)
    p_values, corrected, raw = [], [], []
    for replication in range(replications):
        groups = split((rng.random(N) < accuracy).astype(float))
        result = between_bin_test(groups, n_permutations=PERMUTATIONS, seed=replication)
        assert result["bins_left_out"] == ["bin 7", "bin 8", "bin 9"] and result["n_analysed"] == 491
        p_values.append(result["p_value"])
        corrected.append(result["bias_corrected"])
        raw.append(np.var([values.mean() for values in groups.values()]))  # Wu et al.: every non-empty bin
    return np.array(p_values), np.array(corrected), np.array(raw)


def assert_mean_is_zero(values):
    standard_error = values.std(ddof=1) / np.sqrt(values.size)
    assert abs(values.mean()) <= 4 * standard_error, (values.mean(), standard_error)


def assert_uniform(p_values):
    share = np.mean(p_values < 0.05)
    assert 0.02 <= share <= 0.09, share
    assert kstest(p_values, "uniform").pvalue > 0.01


@pytest.mark.parametrize("accuracy", [0.55, 0.95])
def test_no_bias_gives_uniform_p_values_and_a_corrected_score_of_mean_zero(accuracy):
    p_values, corrected, raw = simulate(np.full(len(SIZES), accuracy), REPLICATIONS, seed=13)
    assert_uniform(p_values)
    assert_mean_is_zero(corrected)
    # The raw score's expectation without any bias: (K-1)/K^2 sum_k sigma^2/n_k over its K = 10
    # bins (0.0392 at 55%, 0.0075 at 95%), here 20 times the spread of the corrected mean or more.
    variance = accuracy * (1 - accuracy)
    expected_raw = (len(SIZES) - 1) / len(SIZES) ** 2 * sum(variance / n for n in SIZES)
    assert raw.mean() == pytest.approx(expected_raw, rel=0.25)
    assert raw.mean() > 20 * corrected.std(ddof=1) / np.sqrt(corrected.size)


def planted(accuracy, between_bin_sd, shape):
    """Bin accuracies: ``accuracy`` plus ``between_bin_sd`` times ``shape`` standardised (mean
    0, SD 1 with the bins weighted by size) over the bins analysed; the true corrected score is
    between_bin_sd squared. The small bins that are left out keep ``accuracy``."""
    shape = np.asarray(shape, dtype=float)
    centred = shape - np.sum(WEIGHTS * shape)
    z = centred / np.sqrt(np.sum(WEIGHTS * centred ** 2))
    bins = np.concatenate([accuracy + between_bin_sd * z, np.full(len(SIZES) - KEPT, accuracy)])
    assert 0 <= bins.min() and bins.max() <= 1
    return bins


@pytest.mark.parametrize("accuracy, between_bin_sd, shape", [
    # 55% right, accuracy rising steadily over the bins from 45% to 85% (SD 10 F1 points between
    # bins, Cohen's f = 0.10 / sqrt(0.55 * 0.45) = 0.20).
    (0.55, 0.10, range(KEPT)),
    # 95% right overall: 97% on the three largest bins, falling to 75% on the rarest ones (SD 5
    # points, f = 0.05 / sqrt(0.95 * 0.05) = 0.23).
    (0.95, 0.05, [0, 0, 0, -1, -2, -3, -4]),
])
def test_a_planted_bias_is_found_at_n_500(accuracy, between_bin_sd, shape):
    p_values, corrected, _ = simulate(planted(accuracy, between_bin_sd, shape), 200, seed=7)
    assert np.mean(p_values < 0.05) >= 0.8
    # The corrected score is unbiased for the true between-bin variance under a bias too.
    assert corrected.mean() == pytest.approx(between_bin_sd ** 2, rel=0.15)


# ---------------------------------------------------------------- the whole analysis, real properties

SYLLABLES = ("ka", "lo", "mi", "ter", "sun", "bra", "del", "fo", "a", "in")
QUESTION_WORDS = ("What", "Which", "Who", "When", "Where", "How", "Why", "Name")
QUESTION_WORD_SHARES = (0.5, 0.08, 0.12, 0.06, 0.06, 0.12, 0.03, 0.03)


def synthetic_items(rng, n=500):
    """Made-up English-like passages of 2 to 11 sentences over a Zipf-distributed vocabulary,
    questions led by a wh-word (or none), answers of 1 to 12 words: every property of
    ``linguistic_bias`` gets real, uneven bins."""
    vocabulary = np.array(["".join(rng.choice(SYLLABLES, size=rng.choice([1, 2, 3, 4], p=[0.55, 0.3, 0.1, 0.05])))
                           for _ in range(5000)])
    zipf = np.cumsum(1.0 / np.arange(1, vocabulary.size + 1) ** 0.8)

    def draw(size):
        return " ".join(vocabulary[np.searchsorted(zipf, rng.random(size) * zipf[-1])])

    questions = rng.choice(QUESTION_WORDS, size=n, p=QUESTION_WORD_SHARES)
    return [{
        "question": f"{question} is the {draw(1)}?",
        "context": " ".join(draw(rng.integers(6, 30)).capitalize() + "." for _ in range(rng.integers(2, 12))),
        "answers": [draw(min(12, rng.geometric(0.4)))],
    } for question in questions]


@pytest.fixture
def memoised_text_measures(monkeypatch):
    """The same passages are measured in every replication: remember their words and grades (same
    values, a fraction of the time)."""
    monkeypatch.setattr(linguistic, "words", functools.lru_cache(maxsize=None)(linguistic.words))
    monkeypatch.setattr(linguistic, "flesch_kincaid_grade",
                        functools.lru_cache(maxsize=None)(linguistic.flesch_kincaid_grade))


def run_analysis(items, correct, replication):
    result = linguistic.linguistic_bias([{**item, "f1": float(right)} for item, right in zip(items, correct, strict=True)],
                                        n_permutations=100, seed=replication)
    return {prop["name"]: prop for prop in result["properties"]}


@pytest.mark.parametrize("accuracy", [0.55, 0.95])
def test_no_bias_through_the_whole_analysis(accuracy, memoised_text_measures):
    rng = np.random.default_rng(2022)
    items = synthetic_items(rng)
    runs = [run_analysis(items, rng.random(len(items)) < accuracy, replication) for replication in range(200)]
    names = list(runs[0])
    assert all(runs[0][name]["n_analysed"] >= 400 and runs[0][name]["p_value"] is not None for name in names)
    assert any(runs[0][name]["bins_left_out"] for name in names)  # the minimum bin size is at work
    assert_uniform(np.array([run[name]["p_value"] for run in runs for name in names]))
    for name in names:
        corrected = np.array([run[name]["bias_corrected"] for run in runs])
        raw = np.array([run[name]["bias"] for run in runs])
        assert_mean_is_zero(corrected)
        assert raw.mean() > 20 * corrected.std(ddof=1) / np.sqrt(corrected.size), name


def test_a_planted_passage_length_bias_through_the_whole_analysis(memoised_text_measures):
    rng = np.random.default_rng(2023)
    items = synthetic_items(rng)
    # Right 70% of the time on passages under 100 words, 50% on longer ones.
    short = np.array([len(linguistic.words(item["context"])) < 100 for item in items])
    runs = [run_analysis(items, rng.random(len(items)) < np.where(short, 0.7, 0.5), replication)
            for replication in range(100)]
    assert np.mean([run["passage_length"]["p_value"] < 0.05 for run in runs]) >= 0.8
    # Question words have nothing to do with it.
    assert np.mean([run["question_words"]["p_value"] < 0.05 for run in runs]) <= 0.12
