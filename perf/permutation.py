"""Question-type permutation test: scoring.analysis.permutation vs scipy.stats.permutation_test.

Run: .venv/bin/python perf/permutation.py [--resamples 100000]

Data: the 501 questions of the ExpMRC SQuAD dev set (../shared/data/expmrc) when present, else
501 synthetic questions over the same 9 question types; either way the correctness vector is
synthetic and seeded (~80% correct, with mild per-type differences so the p-value is neither
~0 nor ~1 and the Monte Carlo comparison means something).

Both sides compute Luo (2022)'s statistic, TVD = 1/2 sum_i |acc_i - acc_all| over question types,
with the same number of resamples:
  - ours: categorical_test draws the correct counts per group as multivariate hypergeometric;
  - scipy: permutation_test on one sample, the items' 0/1 correctness, with the question types
    held fixed by the statistic, permutation_type="pairings" (the correctness values are
    re-paired with the items, which is exactly shuffling the group labels with group sizes
    fixed), vectorized=True, alternative="greater", in batches of 10,000 resamples to bound
    memory (O(batch x items)). ("independent" with one sample per type would be the other
    natural encoding, but scipy needs >= 2 items per sample and SQuAD dev has one "whose"
    question.)
Both p-values are (1 + #{null >= observed}) / (1 + B). The script asserts they agree within 4
standard errors of the difference of two independent Monte Carlo estimates and prints
`ratio: <scipy seconds / our seconds>` as its last line.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
SQUAD_DEV = REPO.parent / "shared" / "data" / "expmrc" / "expmrc-squad-dev.json"
sys.path.insert(0, str(REPO))

from scoring.analysis.permutation import categorical_test  # noqa: E402  (after the path set-up above)
from scoring.analysis.question_types import question_type  # noqa: E402

SEED = 2024
# Mildly different accuracies per type: a realistic model, not a planted strong effect.
ACCURACY = {"what": 0.79, "how": 0.77, "who": 0.86, "which": 0.76, "where": 0.80, "when": 0.87,
            "why": 0.66, "whom": 0.80, "whose": 0.80, "other": 0.75}
SYNTHETIC_SHARES = {"what": 0.55, "how": 0.14, "who": 0.10, "which": 0.06, "where": 0.05, "when": 0.04,
                    "why": 0.03, "whom": 0.01, "other": 0.02}


def question_types(rng: np.random.Generator) -> tuple[list[str], str]:
    if SQUAD_DEV.exists():
        gold = json.loads(SQUAD_DEV.read_text(encoding="utf-8"))
        questions = [qa["question"] for article in gold["data"] for paragraph in article["paragraphs"]
                     for qa in paragraph["qas"]]
        return [question_type(q) for q in questions], f"ExpMRC SQuAD dev questions ({SQUAD_DEV.name})"
    names = list(SYNTHETIC_SHARES)
    shares = np.array(list(SYNTHETIC_SHARES.values()))
    return list(rng.choice(names, size=501, p=shares / shares.sum())), "synthetic questions"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=100_000)
    args = parser.parse_args()
    resamples = args.resamples

    rng = np.random.default_rng(SEED)
    groups, source = question_types(rng)
    correct = (rng.random(len(groups)) < np.array([ACCURACY[g] for g in groups])).astype(int)
    names = sorted(set(groups))
    print(f"data: {len(groups)} items from {source}, {len(names)} question types, "
          f"{correct.mean():.1%} correct (synthetic, seed {SEED}); {resamples:,} resamples each")

    start = time.perf_counter()
    ours = categorical_test(groups, correct, n_permutations=resamples, seed=SEED)
    our_seconds = time.perf_counter() - start

    labels = np.asarray(groups)
    one_hot = (labels[:, None] == np.asarray(names)[None, :]).astype(float)  # items x types
    sizes = one_hot.sum(axis=0)
    overall = correct.mean()  # the same under every permutation

    def tvd(outcome, axis):
        # outcome: (..., items) batch of permuted correctness vectors
        accuracy = np.moveaxis(outcome, axis, -1) @ one_hot / sizes
        return 0.5 * np.abs(accuracy - overall).sum(axis=-1)

    start = time.perf_counter()
    reference = stats.permutation_test((correct.astype(float),), tvd, permutation_type="pairings", vectorized=True,
                                       n_resamples=resamples, batch=10_000, alternative="greater",
                                       rng=np.random.default_rng(SEED + 1))
    scipy_seconds = time.perf_counter() - start

    assert math.isclose(ours["statistic"], reference.statistic, rel_tol=1e-12), (ours["statistic"], reference.statistic)
    p_ours, p_scipy = ours["p_value"], float(reference.pvalue)
    se_ours = math.sqrt(p_ours * (1 - p_ours) / resamples)
    se_scipy = math.sqrt(p_scipy * (1 - p_scipy) / resamples)
    se_difference = math.sqrt(se_ours ** 2 + se_scipy ** 2)
    difference = abs(p_ours - p_scipy)
    print(f"observed TVD: {ours['statistic']:.6f} (scipy {reference.statistic:.6f})")
    print(f"ours : {our_seconds:8.3f} s   p = {p_ours:.5f} +- {se_ours:.5f} (Monte Carlo SE)")
    print(f"scipy: {scipy_seconds:8.3f} s   p = {p_scipy:.5f} +- {se_scipy:.5f} (Monte Carlo SE)")
    print(f"|difference| = {difference:.5f} = {difference / se_difference:.2f} SE of the difference (must be < 4)")
    assert difference < 4 * se_difference + 1 / resamples, "p-values disagree beyond Monte Carlo error"

    start = time.perf_counter()
    million = categorical_test(groups, correct, n_permutations=1_000_000, seed=SEED)
    print(f"ours with 1,000,000 permutations (Luo 2022's number): {time.perf_counter() - start:.3f} s, "
          f"p = {million['p_value']:.5f}")
    print(f"ratio: {scipy_seconds / our_seconds:.1f}")


if __name__ == "__main__":
    main()
