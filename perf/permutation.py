"""Question-type permutation test: sequential scoring.analysis.permutation vs scipy.stats.permutation_test.

Run: .venv/bin/python perf/permutation.py [--resamples 100000] [--repeats 3] [--agreement 1000]

Data: the 501 questions of the ExpMRC SQuAD dev set (../shared/data/expmrc) when present, else
501 synthetic questions over the same 9 question types. The correctness vectors are synthetic
and seeded: several tables whose p-values cover the whole range, chosen so that most sit near the
decision, where a sequential test cannot stop early and is slowest: one far below the threshold
(p ~ 0), tables at about 0.5, 0.8, 1, 1.25 and 2 times the threshold, one at p ~ 0.05 and one far
above (p ~ 0.3). A table is picked for a target when a first estimate of its p (plain numpy,
20,000 draws, another seed) lands within 15% of it; the p-values the sides then compute are
printed per table.

All sides compute the size-weighted TVD the report decides with, 1/2 sum_i (n_i / N) |acc_i - acc_all|
over question types (ours computes Luo's (2022) unweighted TVD beside it from the same draws), and
decide "significant" when p < 0.05 / 3 (the report's Bonferroni threshold over its three
categorical tests), with a budget of --resamples resamples:
  - ours: categorical_test, sequential (the default): multivariate hypergeometric counts in looks
    of 1,000, 2,000, 4,000, ... draws, stopping once the decision is settled (at most 0.001
    probability of a decision other than the full budget's); the cache of stopping bounds is
    cleared before every repeat, so their computation is timed too;
  - the peer, scipy: permutation_test on one sample, the items' 0/1 correctness, with the
    question types held fixed by the statistic, permutation_type="pairings" (the correctness
    values are re-paired with the items, which is exactly shuffling the group labels with group
    sizes fixed), vectorized=True, alternative="greater", in batches of 10,000 resamples to bound
    memory (O(batch x items)), with the full budget: it has no stopping rule;
  - plain numpy with the full budget: rng.multivariate_hypergeometric(sizes, K, size=B), the TVD
    and a count, three lines (what categorical_test(sequential=False) does, in blocks).
Each side runs --repeats times per table and counts its median time. Per table the script checks
that the p-values agree within 4 standard errors of their difference (each is a Monte Carlo
estimate with its own draws) and that the decisions agree wherever scipy's p is more than 4 of its
standard errors from the threshold (closer, two honest estimates may fall on either side). It
prints each table, the ratio on the tables near the threshold alone, the ratio to plain numpy on
the line before last and `ratio: <scipy seconds / our seconds>`, summed over all tables, last.

--agreement N (off by default, ~2 minutes for 1,000): N simulated tables over the same question
types with per-type accuracies 0.8 + s z (z standard normal per type, s uniform in [0, 0.12], so
the p-values spread over [0, 1] and many fall near the threshold). For each table the categorical
test and the one-vs-rest tests run twice with the same seed, sequential and with the full budget
(--agreement-budget); it prints the share of identical decisions, and the draws used.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
SQUAD_DEV = REPO.parent / "shared" / "data" / "expmrc" / "expmrc-squad-dev.json"
sys.path.insert(0, str(REPO))

from scoring.analysis.permutation import (  # noqa: E402  (after the path set-up above)
    DEFAULT_EPSILON,
    categorical_test,
    one_vs_rest_tests,
    stopping_bounds,
)
from scoring.analysis.question_types import question_type  # noqa: E402

SEED = 2024
ALPHA = 0.05
# The report's categorical threshold: Bonferroni over question type, question and context length.
THRESHOLD = ALPHA / 3
# Mildly different accuracies per type: a realistic model, not a planted strong effect.
ACCURACY = {"what": 0.79, "how": 0.77, "who": 0.86, "which": 0.76, "where": 0.80, "when": 0.87,
            "why": 0.66, "whom": 0.80, "whose": 0.80, "other": 0.75}
SYNTHETIC_SHARES = {"what": 0.55, "how": 0.14, "who": 0.10, "which": 0.06, "where": 0.05, "when": 0.04,
                    "why": 0.03, "whom": 0.01, "other": 0.02}
# Spread of per-type accuracies in the agreement simulation (see the docstring).
MAX_EFFECT = 0.12


def question_types(rng: np.random.Generator) -> tuple[list[str], str]:
    if SQUAD_DEV.exists():
        gold = json.loads(SQUAD_DEV.read_text(encoding="utf-8"))
        questions = [qa["question"] for article in gold["data"] for paragraph in article["paragraphs"]
                     for qa in paragraph["qas"]]
        return [question_type(q) for q in questions], f"ExpMRC SQuAD dev questions ({SQUAD_DEV.name})"
    names = list(SYNTHETIC_SHARES)
    shares = np.array(list(SYNTHETIC_SHARES.values()))
    return list(rng.choice(names, size=501, p=shares / shares.sum())), "synthetic questions"


def timed(function, repeats: int, before=None) -> tuple[float, object]:
    """Median seconds over the repeats, and the last result."""
    seconds = []
    result = None
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), result


def agreement(groups: list[str], tables: int, budget: int) -> None:
    names = sorted(set(groups))
    codes = np.array([names.index(g) for g in groups])
    rng = np.random.default_rng(SEED + 7)
    categorical_agree = one_vs_rest_agree = one_vs_rest_total = near = 0
    draws_categorical, draws_one_vs_rest = [], []
    start = time.perf_counter()
    for table in range(tables):
        accuracy = np.clip(0.8 + rng.uniform(0, MAX_EFFECT) * rng.standard_normal(len(names)), 0.02, 0.98)
        correct = (rng.random(len(groups)) < accuracy[codes]).astype(int)
        seq = categorical_test(groups, correct, n_permutations=budget, seed=table, threshold=THRESHOLD)
        full = categorical_test(groups, correct, n_permutations=budget, seed=table, threshold=THRESHOLD,
                                sequential=False)
        categorical_agree += (seq["p_value"] < THRESHOLD) == (full["p_value"] < THRESHOLD)
        near += THRESHOLD / 2 <= full["p_value"] <= 2 * THRESHOLD
        draws_categorical.append(seq["draws"])
        seq_tests = one_vs_rest_tests(groups, correct, n_permutations=budget, seed=table, alpha=ALPHA)["tests"]
        full_tests = one_vs_rest_tests(groups, correct, n_permutations=budget, seed=table, alpha=ALPHA,
                                       sequential=False)["tests"]
        for a, b in zip(seq_tests, full_tests, strict=True):
            one_vs_rest_agree += a["significant"] == b["significant"]
            draws_one_vs_rest.append(a["draws"])
        one_vs_rest_total += len(seq_tests)
    print(f"agreement on {tables:,} simulated tables (budget {budget:,}, epsilon {DEFAULT_EPSILON}, same seeds; "
          f"{near} tables with the full-budget p within [t/2, 2t]; {time.perf_counter() - start:.0f} s):")
    print(f"  categorical: {categorical_agree}/{tables} = {categorical_agree / tables:.4f} identical decisions; "
          f"draws median {statistics.median(draws_categorical):,.0f}, mean {np.mean(draws_categorical):,.0f}, "
          f"full budget in {sum(d == budget for d in draws_categorical)} tables")
    print(f"  one-vs-rest: {one_vs_rest_agree}/{one_vs_rest_total} = {one_vs_rest_agree / one_vs_rest_total:.4f} "
          f"identical decisions; draws median {statistics.median(draws_one_vs_rest):,.0f}, "
          f"mean {np.mean(draws_one_vs_rest):,.0f}")


# Target p-values of the timed tables, as multiples of THRESHOLD (see the docstring); None: the
# ends of the range, matched by a bound instead of a 15% window.
TARGETS = (("far below", None), ("t/2", 0.5), ("0.8 t", 0.8), ("t", 1.0), ("1.25 t", 1.25), ("2 t", 2.0),
           ("p ~ 0.05", 0.05 / THRESHOLD), ("far above", None))
NEAR = {"0.8 t", "t", "1.25 t"}


class Sides:
    """The question types as the three sides need them."""

    def __init__(self, groups: list[str]) -> None:
        self.groups = groups
        self.names = sorted(set(groups))
        self.codes = np.array([self.names.index(g) for g in groups])
        labels = np.asarray(groups)
        self.one_hot = (labels[:, None] == np.asarray(self.names)[None, :]).astype(float)  # items x types
        self.sizes = self.one_hot.sum(axis=0)
        self.int_sizes = self.sizes.astype(np.int64)

    def tvd_of(self, correct: np.ndarray):
        overall = correct.mean()  # the same under every permutation

        def tvd(outcome, axis):
            # outcome: (..., items) batch of permuted correctness vectors
            accuracy = np.moveaxis(outcome, axis, -1) @ self.one_hot / self.sizes
            return 0.5 * (np.abs(accuracy - overall) * self.sizes).sum(axis=-1) / self.sizes.sum()

        return tvd

    def numpy_p(self, correct: np.ndarray, resamples: int, seed: int) -> float:
        overall, observed = correct.mean(), float(self.tvd_of(correct)(correct.astype(float), 0))
        counts = np.random.default_rng(seed).multivariate_hypergeometric(self.int_sizes, int(correct.sum()),
                                                                         size=resamples)
        null = 0.5 * np.abs(counts - self.int_sizes * overall).sum(axis=1) / self.int_sizes.sum()
        return (1 + np.count_nonzero(null >= observed - 1e-12)) / (1 + resamples)


def pick_tables(sides: Sides, rng: np.random.Generator) -> list[tuple[str, np.ndarray, float]]:
    """(target name, correctness vector, first estimate of p) per target, in TARGETS order."""
    wanted = dict(TARGETS)
    found: dict[str, tuple[np.ndarray, float]] = {}
    for attempt in range(20_000):
        if len(found) == len(wanted):
            break
        effect = rng.uniform(0, MAX_EFFECT)
        accuracy = np.clip(0.8 + effect * rng.standard_normal(len(sides.names)), 0.02, 0.98)
        correct = (rng.random(len(sides.groups)) < accuracy[sides.codes]).astype(int)
        p = sides.numpy_p(correct, 20_000, seed=attempt)
        for name, multiple in wanted.items():
            if name in found:
                continue
            hit = (p < 1e-4 if name == "far below" else 0.25 <= p <= 0.4 if name == "far above"
                   else abs(p / (multiple * THRESHOLD) - 1) <= 0.15)
            if hit:
                found[name] = (correct, p)
                break
    missing = [name for name in wanted if name not in found]
    assert not missing, f"no table found for {missing}"
    return [(name, *found[name]) for name, _ in TARGETS]


def time_table(sides: Sides, correct: np.ndarray, resamples: int, repeats: int) -> dict:
    """The three sides on one table: median seconds, p-values, standard errors, draws."""
    groups = sides.groups
    our_seconds, ours = timed(lambda: categorical_test(groups, correct, n_permutations=resamples, seed=SEED,
                                                       threshold=THRESHOLD), repeats, stopping_bounds.cache_clear)
    tvd = sides.tvd_of(correct)
    scipy_seconds, reference = timed(lambda: stats.permutation_test(
        (correct.astype(float),), tvd, permutation_type="pairings", vectorized=True, n_resamples=resamples,
        batch=10_000, alternative="greater", rng=np.random.default_rng(SEED + 1)), repeats)
    numpy_seconds, p_numpy = timed(lambda: sides.numpy_p(correct, resamples, SEED + 2), repeats)
    assert math.isclose(ours["statistic"], reference.statistic, rel_tol=1e-12), (ours["statistic"], reference.statistic)
    p_scipy = float(reference.pvalue)
    se_full = math.sqrt(p_scipy * (1 - p_scipy) / resamples)
    se_difference = math.sqrt(ours["p_value_se"] ** 2 + se_full ** 2)
    assert abs(ours["p_value"] - p_scipy) < 4 * se_difference + 1 / ours["draws"], "p-values disagree"
    decisions = {"ours": ours["p_value"] < THRESHOLD, "scipy": p_scipy < THRESHOLD, "numpy": p_numpy < THRESHOLD}
    borderline = abs(p_scipy - THRESHOLD) <= 4 * se_full
    assert borderline or len(set(decisions.values())) == 1, f"decisions differ: {decisions}"
    return {"ours": our_seconds, "scipy": scipy_seconds, "numpy": numpy_seconds, "p_ours": ours["p_value"],
            "p_scipy": p_scipy, "p_numpy": p_numpy, "draws": ours["draws"], "borderline": borderline,
            "same": len(set(decisions.values())) == 1, "chi2": ours["p_value_chi_square"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=100_000, help="budget per test (default 100,000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--agreement", type=int, default=0, metavar="N", help="simulate N tables (default: skip)")
    parser.add_argument("--agreement-budget", type=int, default=100_000)
    args = parser.parse_args()
    resamples, repeats = args.resamples, args.repeats

    rng = np.random.default_rng(SEED)
    groups, source = question_types(rng)
    sides = Sides(groups)
    tables = pick_tables(sides, np.random.default_rng(SEED + 3))
    print(f"data: {len(groups)} items from {source}, {len(sides.names)} question types, {len(tables)} synthetic "
          f"correctness tables (seed {SEED}); budget {resamples:,} resamples, threshold t = {THRESHOLD:.5f}, "
          f"median of {repeats} repeats per side and table")
    print(f"{'table':>10} {'p first':>8} {'p ours':>8} {'p scipy':>8} {'draws':>8} {'ours s':>8} {'scipy s':>8} "
          f"{'numpy s':>8}  decision")
    results = []
    for name, correct, first in tables:
        row = time_table(sides, correct, resamples, repeats)
        results.append((name, row))
        decision = "significant" if row["p_ours"] < THRESHOLD else "not significant"
        note = "" if row["same"] else " (sides differ: p within 4 SE of t)"
        print(f"{name:>10} {first:8.5f} {row['p_ours']:8.5f} {row['p_scipy']:8.5f} {row['draws']:8,} "
              f"{row['ours']:8.4f} {row['scipy']:8.4f} {row['numpy']:8.4f}  {decision}{note}")

    def total(side: str, names: set[str] | None = None) -> float:
        return sum(row[side] for name, row in results if names is None or name in names)

    if args.agreement:
        agreement(groups, args.agreement, args.agreement_budget)
    near_ours = total("ours", NEAR)
    print(f"near the threshold only ({', '.join(sorted(NEAR))}): scipy / ours = "
          f"{total('scipy', NEAR) / near_ours:.1f}x, numpy / ours = {total('numpy', NEAR) / near_ours:.1f}x")
    print(f"vs plain numpy sampling with the full budget, all tables: {total('numpy') / total('ours'):.1f}x")
    print(f"ratio: {total('scipy') / total('ours'):.1f}")


if __name__ == "__main__":
    main()
