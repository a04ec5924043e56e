"""Feature extractors for ICQ cue profiling (English and Chinese), offline and rule-based.

A feature key is ``"<type>\\t<value>"`` (``"word\\tnot"``, ``"tense\\tpast"``,
``"negation\\tnegation"``). Features are read from the hypothesis (NLI hypothesis or answer
option) only, except ``overlap``, which asks whether a content word of the hypothesis also
occurs in the premise. The rules are documented in ``docs/icq_features.md``.

:func:`extract` is the one entry point ``scoring.analysis.icq`` uses. Work is memoised per text (and
the premise per line, so an article shared by many questions is analysed once).
"""
from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Iterable, Sequence

from ... import RESOURCES_DIR

RESOURCES = RESOURCES_DIR / "icq"

LANGUAGES = ("en", "zh")
FEATURE_TYPES = {
    "en": ("word", "sentiment", "tense", "negation", "overlap", "ner", "typo"),
    "zh": ("word", "negation", "overlap"),
}
OVERLAP_KEY = "overlap\toverlap"
# How the features are extracted, as the pages name it: a statistical tagger (spaCy's small
# English model) was evaluated and not shipped (docs/icq_features.md, "Rule-based extractors
# versus a statistical tagger").
EXTRACTOR_METHODS = {
    "en": "rule-based, no statistical tagger: tense from lemminflect's verb forms, NER from capitalised spans "
          "with name and place lists (labels approximate), sentiment from VADER's lexicon on adjective- and "
          "adverb-like words",
    "zh": "rule-based: jieba's word segmentation, negation and overlap from word lists",
}
_MODULES = {"en": f"{__name__}.english", "zh": f"{__name__}.chinese"}  # relative: installed as expbench_scoring


def read_word_list(name: str) -> list[str]:
    """Lines of ``resources/icq/<name>``, without ``#`` comments and blank lines."""
    lines = (RESOURCES / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def read_table(name: str) -> list[tuple[str, ...]]:
    """Tab-separated rows of ``resources/icq/<name>`` (comments and blank lines skipped)."""
    return [tuple(part.strip() for part in line.split("\t")) for line in read_word_list(name)]


def split_key(key: str) -> tuple[str, str]:
    feature, _, value = key.partition("\t")
    return feature, value


def make_key(feature: str, value: str) -> str:
    return f"{feature}\t{value}"


_loaded_extractors: dict = {}


def extractor(language: str):
    """The extractor module of ``language`` ("en" or "zh"), imported on first use."""
    module = _loaded_extractors.get(language)
    if module is None:
        if language not in _MODULES:
            raise ValueError(f"unsupported language {language!r} (expected one of {', '.join(LANGUAGES)})")
        module = _loaded_extractors[language] = importlib.import_module(_MODULES[language])
    return module


def resolve_types(language: str, feature_types: Iterable[str] | None = None) -> frozenset[str]:
    """The requested feature types, checked against the language's set (all when None)."""
    if language not in FEATURE_TYPES:
        raise ValueError(f"unsupported language {language!r} (expected one of {', '.join(LANGUAGES)})")
    available = FEATURE_TYPES[language]
    if feature_types is None:
        return frozenset(available)
    if isinstance(feature_types, str):
        feature_types = [feature_types]
    requested = frozenset(feature_types)
    unknown = sorted(requested - set(available))
    if unknown:
        raise ValueError(f"feature type(s) {', '.join(unknown)} not available for language {language!r} "
                         f"(available: {', '.join(available)})")
    if not requested:
        raise ValueError("no feature types requested")
    return requested


def premise_words(language: str, premise: str) -> frozenset[str]:
    """Content words of a premise: the union over its lines (each line memoised)."""
    return _premise_words(language, premise)


@functools.lru_cache(maxsize=1 << 12)
def _premise_words(language: str, premise: str) -> frozenset[str]:
    content_words = extractor(language).content_words
    lines = premise.split("\n")
    if len(lines) == 1:
        return content_words(premise)
    return frozenset().union(*(content_words(line) for line in lines))


@functools.lru_cache(maxsize=64)
def _without_overlap(types: frozenset[str]) -> frozenset[str]:
    return types - {"overlap"}


def extract(premise: str, hypotheses: Sequence[str], *, language: str, types: frozenset[str]) -> list[frozenset[str]]:
    """Feature keys of each hypothesis (``types`` already resolved, see :func:`resolve_types`)."""
    module = _loaded_extractors.get(language) or extractor(language)
    base = _without_overlap(types)
    if base:
        text_features = module.text_features
        out = [text_features(hypothesis, base) for hypothesis in hypotheses]
    else:
        out = [frozenset()] * len(hypotheses)
    if "overlap" in types:
        words = premise_words(language, premise)
        content_words = module.content_words
        for i, hypothesis in enumerate(hypotheses):
            if not words.isdisjoint(content_words(hypothesis)):
                out[i] = out[i] | {OVERLAP_KEY}
    return out


def clear_caches() -> None:
    """Forget memoised per-text results (word lists and lexicons stay loaded)."""
    _premise_words.cache_clear()
    for name in _MODULES.values():
        module = sys.modules.get(name)
        if module is not None:
            module.clear_caches()
