"""What board pages say about their boards. The words of each kind (what its primary metric
means, how it ranks, the footnote, a "How to read this board" guide) are declared by the kind
itself (``benchmark.kinds``); this module picks them for a task or a benchmark and holds what
belongs to a benchmark (the average board's note and title, the papers as BibTeX). The
definitions behind each sentence are in docs/metrics.md and docs/diagnostics.md."""
import dataclasses

from django.utils.translation import gettext, gettext_noop

from benchmark import kinds
from benchmark.kinds import Wording
from benchmark.models import Benchmark, Task
from scoring.stats import TIER_PROCEDURE

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


def translated(wording: Wording) -> Wording:
    """A kind's wording in the page's language. The kinds mark their sentences with gettext_noop
    and keep them English; a sentence without a translation stays as it is, as do metric names."""
    return dataclasses.replace(
        wording, family=gettext(wording.family), metric=gettext(wording.metric), ranking=gettext(wording.ranking),
        footnote=gettext(wording.footnote), cue_note=gettext(wording.cue_note) if wording.cue_note else "",
        guide=tuple((gettext(term), gettext(meaning)) for term, meaning in wording.guide))


# scoring.stats.TIER_PROCEDURE as the catalogue knows it: scoring has no Django, so the sentence
# is marked here (tests/config/test_i18n.py checks that the two stay the same).
TIER_PROCEDURE_MARKED = gettext_noop(  # xgettext:no-python-format
    "Tier 1 is the top entry plus every entry not significantly worse than it (paired sign-flip tests on the "
    "items both define, alpha = 0.05, with a step-down studentized-range correction for comparing against the "
    "best of several, so truly equal entries are split in at most 5% of boards); the rest are tiered the same way.")


def tier_procedure() -> str:
    """How tiers are made, in the page's language."""
    return gettext(TIER_PROCEDURE)


def wording_for(task: Task) -> Wording:
    return translated(task.kind_definition.wording)


def kinds_of(tasks: list[Task]) -> list[Wording]:
    """The wording of each kind among ``tasks``, once each, in the order they first appear."""
    return [translated(kinds.get(kind).wording) for kind in dict.fromkeys(task.kind for task in tasks)]


def average_note(tasks: list[Task]) -> str:
    """Under a benchmark's average board: which metric each subset contributes, and how they are
    combined. A board whose subsets all come from one published board (ExpMRC's span and
    multiple-choice subsets) follows that board's rule; any other says what it averages in its
    own terms."""
    labels = list(dict.fromkeys(dict(task.metric_columns)[task.primary_metric] for task in tasks))
    sources = {task.kind_definition.average_source for task in tasks}
    if len(sources) == 1 and "" not in sources:
        return (gettext("Subset scores are %(metrics)s; the average is their unweighted mean, as on %(source)s.")
                % {"metrics": " / ".join(labels), "source": gettext(sources.pop())})
    return (gettext("Subset scores are each subset's primary metric (%(metrics)s); the average is their "
                    "unweighted mean.") % {"metrics": ", ".join(labels)})


def average_title(tasks: list[Task]) -> str:
    """The heading of a benchmark's average board: the unit its kinds average over (QUACKIE:
    tracks, an interpretation set with a hosted model), subsets when they differ. It names the
    subsets it covers: "all" would be untrue once one is hidden or has no test set."""
    units = {task.kind_definition.average_unit for task in tasks}
    unit = units.pop() if len(units) == 1 else "subsets"
    return (gettext("Average over %(count)s %(unit)s: %(names)s")
            % {"count": len(tasks), "unit": gettext(unit), "names": ", ".join(task.name for task in tasks)})


def average_scope(tasks: list[Task]) -> str:
    """What the average covers, stated on the page: the subsets listed here with a current test
    set (a hidden one, or one without a test set, is left out and the average changes with it),
    and, where the subsets come from a published board that averages a fixed set, whether this
    average is comparable with the published one."""
    names = ", ".join(task.name for task in tasks)
    text = (gettext("The average covers the %(count)s subsets listed here (%(names)s): a subset that is hidden or "
                    "has no current test set is left out, and the average, the human row's included, changes with "
                    "it.") % {"count": len(tasks), "names": names})
    sources = {(task.kind_definition.average_source, task.kind_definition.average_source_subsets) for task in tasks}
    if len(sources) == 1:
        source, covered = sources.pop()
        if source and covered:
            text += " " + (gettext("The published average on %(source)s covers %(covered)s; compare with it only "
                                   "when this board covers the same subsets.")
                           % {"source": gettext(source), "covered": gettext(covered)})
    return text


def bibtex_for(benchmark: Benchmark) -> str:
    return BIBTEX.get(benchmark.slug, "")
