"""The words each kind of board says about itself, in one place: what its primary metric means,
how it ranks, the footnote under the table and a short "How to read this board" guide.

Pages used to carry ExpMRC's words everywhere ("over questions", "Human row pinned", "as on the
official ExpMRC page"); a QUACKIE or CheckList reader then read rules that do not apply. Every
page that explains a board takes its text from :func:`wording_for`, keyed by the task kind; the
definitions behind each sentence are in docs/metrics.md and docs/diagnostics.md."""
from dataclasses import dataclass

from benchmark.models import Benchmark, Task
from scoring.stats import TIER_PROCEDURE


@dataclass(frozen=True)
class KindWording:
    kind: str
    family: str  # the benchmark family the kind comes from, as readers know it
    metric: str  # what the primary metric is, one sentence
    ranking: str  # how rows are ordered and which rows carry no rank
    footnote: str  # under the board: where reported rows come from, how the intervals are made
    guide: tuple[tuple[str, str], ...]  # "How to read this board": (term, meaning)


CI_BAR = ("CI bar", "the 95% confidence interval of the primary metric drawn on a 0–100 axis (wider when a score "
          "leaves it): the bar is the interval, the tick the score. Two entries whose bars overlap may not "
          "really differ: the tier says whether they do.")
TIER = ("Tier", "entries in one tier are not significantly worse than the tier's first entry (paired test, "
        "α = 0.05). Read the rank inside a tier as a tie.")
REPORTED = ("reported", "a number published by the dataset or method authors, not scored on this server: it has "
            "no per-item data, so no interval and no tier.")

WORDING: dict[str, KindWording] = {
    Task.SPAN: KindWording(
        kind=Task.SPAN, family="ExpMRC",
        metric="Overall F1: for each question, answer F1 × evidence F1, averaged over all questions of the test "
               "set (×100); a question without a prediction scores 0.",
        ranking="Ranked by Overall F1, highest first; equal scores share a rank. The human row is pinned on top "
                "and not ranked.",
        footnote="Scores equal the official ExpMRC evaluation script's (Cui et al., 2022). "
                 "\"reported\" rows are the ExpMRC authors' published numbers. 95% intervals: BCa bootstrap "
                 "over questions (1000 resamples).",
        guide=(("Answer F1", "token overlap (F1) between the predicted answer and the closest reference answer; "
                             "Chinese text is compared character by character."),
               ("Evidence F1", "the same overlap between the predicted evidence text and the closest reference "
                               "evidence sentence."),
               ("Overall F1", "answer F1 × evidence F1 per question, then averaged: an answer only counts as "
                              "much as the evidence that supports it. This is the ranking column."),
               CI_BAR, TIER, REPORTED),
    ),
    Task.MULTICHOICE: KindWording(
        kind=Task.MULTICHOICE, family="ExpMRC",
        metric="Overall F1: for each question, answer accuracy (1 for the right option letter, else 0) × evidence "
               "F1, averaged over all questions (×100); a question without a prediction scores 0.",
        ranking="Ranked by Overall F1, highest first; equal scores share a rank. The human row is pinned on top "
                "and not ranked.",
        footnote="Scores equal the official ExpMRC evaluation script's (Cui et al., 2022). "
                 "\"reported\" rows are the ExpMRC authors' published numbers. 95% intervals: Wilson interval "
                 "for answer accuracy, BCa bootstrap over questions (1000 resamples) for the F1 columns.",
        guide=(("Answer Acc", "share of questions whose predicted option letter is the right one."),
               ("Evidence F1", "token overlap (F1) between the predicted evidence text and the closest reference "
                               "evidence sentence; Chinese text is compared character by character."),
               ("Overall F1", "answer (right = 1, wrong = 0) × evidence F1 per question, then averaged: a right "
                              "option without supporting evidence earns nothing. This is the ranking column."),
               CI_BAR, TIER, REPORTED),
    ),
    Task.INTERPRETATION: KindWording(
        kind=Task.INTERPRETATION, family="QUACKIE",
        metric="IoU: per sample, the overlap between the sentences an interpreter scores highest and the "
               "sentence that holds the answer, averaged over the samples that did not fail (×100).",
        ranking="Ranked by IoU, highest first. A sample whose scores failed (missing, wrong length, not finite) is "
                "left out of the means, so an entry whose scores failed on more than half of the samples is listed "
                "without a rank or a tier, last, with the reason; so is an entry whose IoU is undefined.",
        footnote="IoU, HPD and SNR are the official QUACKIE metrics (Rychener et al., 2020) on the top-1 "
                 "selection (×100, 2 decimals); HPD (rank) and SNR (raw) are computed on the raw scores. "
                 "\"reported\" rows are the official QUACKIE leaderboard's published numbers. 95% intervals: "
                 "BCa bootstrap over the samples where the metric is defined (1000 resamples).",
        guide=(("IoU", "intersection over union of the selected sentences (every sentence tied at the top score) "
                       "and the answer sentence: 100 when exactly the answer sentence is selected. The ranking "
                       "column."),
               ("HPD", "highest precision for detection: 1 ÷ the number of sentences that must be read, top "
                       "scores first, to reach the answer sentence."),
               ("SNR", "signal-to-noise ratio: how far the answer sentence's score stands out from the others "
                       "(squared difference of means ÷ variance of the others); undefined when the others all "
                       "score alike."),
               ("HPD (rank), SNR (raw)", "the same two measures on the raw scores instead of the top-1 "
                                         "selection, as the QUACKIE paper describes them; they do not match the "
                                         "published numbers."),
               ("Fails / no SNR", "samples whose scores failed (left out of every mean) / samples without an "
                                  "SNR (fails included)."),
               CI_BAR, TIER, REPORTED),
    ),
    Task.CHECKLIST: KindWording(
        kind=Task.CHECKLIST, family="CheckList",
        metric="Cases passed (%): the share of the suite's test cases in which every item gets the expected "
               "answer (100 − the overall failure rate); a case with a missing prediction fails.",
        ranking="Ranked by Cases passed (%), highest first; equal scores share a rank.",
        footnote="Behavioural tests of the CheckList SQuAD suite (Ribeiro et al., 2020); its items are public, "
                 "so this board measures behaviour, not a hidden test set. The BERT-base row scores the "
                 "predictions released with the suite. 95% intervals: Wilson interval over cases.",
        guide=(("Cases passed (%)", "a case passes when all its items do: an MFT item must give the expected "
                                    "answer, an INV item the same answer as the case's original input. The "
                                    "ranking column."),
               ("Failure rates", "each entry's page breaks the failures down by capability (vocabulary, "
                                 "negation, coreference…) and by test, next to BERT-base's."),
               CI_BAR, TIER, REPORTED),
    ),
    Task.CLASSIFICATION: KindWording(
        kind=Task.CLASSIFICATION, family="Classification",
        metric="Accuracy: the share of items whose predicted label is the gold label (×100); an item without a "
               "prediction counts as wrong.",
        ranking="Ranked by accuracy, highest first; equal scores share a rank.",
        footnote="95% intervals: Wilson interval over items. Each entry's page profiles it against the "
                 "statistical cues of the test set (ICQ; Huang & Zhu, 2023).",
        guide=(("Accuracy", "share of items labelled correctly. The ranking column."),
               CI_BAR, TIER, REPORTED),
    ),
}

TIERS = "Tiers: " + TIER_PROCEDURE

# The papers that define a benchmark, as BibTeX (the same facts as CITATION.cff).
BIBTEX: dict[str, str] = {
    "expmrc": """@article{cui2022expmrc,
  title   = {{ExpMRC}: Explainability Evaluation for Machine Reading Comprehension},
  author  = {Cui, Yiming and Liu, Ting and Che, Wanxiang and Chen, Zhigang and Wang, Shijin},
  journal = {Heliyon},
  volume  = {8},
  number  = {4},
  pages   = {e09290},
  year    = {2022},
  doi     = {10.1016/j.heliyon.2022.e09290}
}""",
    "quackie": """@misc{rychener2020quackie,
  title         = {{QUACKIE}: A {NLP} Classification Task With Ground Truth Explanations},
  author        = {Rychener, Yves and Renard, Xavier and Seddah, Djam{\\'e} and Frossard, Pascal
                   and Detyniecki, Marcin},
  year          = {2020},
  eprint        = {2012.13190},
  archivePrefix = {arXiv}
}""",
    "checklist-mrc": """@inproceedings{ribeiro2020checklist,
  title     = {Beyond Accuracy: Behavioral Testing of {NLP} Models with {CheckList}},
  author    = {Ribeiro, Marco Tulio and Wu, Tongshuang and Guestrin, Carlos and Singh, Sameer},
  booktitle = {Proceedings of the 58th Annual Meeting of the Association for Computational Linguistics},
  pages     = {4902--4912},
  year      = {2020}
}""",
}


def wording_for(kind: str) -> KindWording:
    return WORDING[kind]


def kinds_of(tasks: list[Task]) -> list[KindWording]:
    """The wording of each kind among ``tasks``, once each, in the order they first appear."""
    return [WORDING[kind] for kind in dict.fromkeys(task.kind for task in tasks)]


def average_note(tasks: list[Task]) -> str:
    """Under a benchmark's average board: which metric each subset contributes, and how they are
    combined. Only an ExpMRC-style board (span and multiple-choice subsets) follows the official
    ExpMRC page; any other benchmark says what it averages in its own terms."""
    labels = list(dict.fromkeys(dict(task.metric_columns)[task.primary_metric] for task in tasks))
    if {task.kind for task in tasks} <= {Task.SPAN, Task.MULTICHOICE}:
        return (f"Subset scores are {' / '.join(labels)}; the average is their unweighted mean, as on the official "
                "ExpMRC leaderboard.")
    return (f"Subset scores are each subset's primary metric ({', '.join(labels)}); the average is their "
            "unweighted mean.")


def average_title(tasks: list[Task]) -> str:
    """The heading of a benchmark's average board: QUACKIE averages over tracks (an
    interpretation set with a hosted model), the others over subsets."""
    unit = "tracks" if all(task.kind == Task.INTERPRETATION for task in tasks) else "subsets"
    return f"Average over all {len(tasks)} {unit}"


def bibtex_for(benchmark: Benchmark) -> str:
    return BIBTEX.get(benchmark.slug, "")
