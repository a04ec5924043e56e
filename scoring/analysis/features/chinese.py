"""Rule-based Chinese feature extractors for ICQ: ``word``, ``negation`` and (with the premise)
``overlap``, all on ``jieba`` words (dictionary bundled with the package, default mode, HMM on).

* ``word``      every jieba word (whitespace dropped, Latin letters lower-cased).
* ``negation``  a word in ``resources/icq/zh_negation.txt``; otherwise, unless listed in
                ``zh_negation_exceptions.txt`` (不错, 未来 ...), a word starting with a listed
                negation of 2+ characters (并非如此) or a word of at most 3 characters starting
                with 不/没/未 (不想, 没去过).
* ``overlap``   :func:`content_words` = jieba words that are neither punctuation/symbols nor in
                ``zh_stopwords.txt`` (particles, pronouns, very common function words).

See ``docs/icq_features.md``.
"""
from __future__ import annotations

import functools
import logging
import threading
import unicodedata

from . import read_word_list

FEATURE_TYPES = ("word", "negation", "overlap")

NEGATION_WORDS = frozenset(read_word_list("zh_negation.txt"))
NEGATION_EXCEPTIONS = frozenset(read_word_list("zh_negation_exceptions.txt"))
NEGATION_PREFIXES = ("不", "没", "未")
STOPWORDS = frozenset(read_word_list("zh_stopwords.txt"))
NEGATION_KEY = "negation\tnegation"
_LONG_NEGATIONS = tuple(sorted(word for word in NEGATION_WORDS if len(word) >= 2))

_lock = threading.Lock()


@functools.cache
def _tokenizer():
    import jieba  # noqa: PLC0415  (heavy: loads its dictionary; only Chinese tasks need it)

    logging.getLogger("jieba").setLevel(logging.WARNING)  # no "Building prefix dict" chatter
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


@functools.lru_cache(maxsize=1 << 18)
def tokenize(text: str) -> tuple[str, ...]:
    """jieba words of ``text`` (whitespace dropped, Latin letters lower-cased)."""
    tokenizer = _tokenizer()
    with _lock:  # jieba's Tokenizer is not documented as thread-safe
        words = tokenizer.lcut(text)
    return tuple(word.strip().lower() for word in words if word.strip())


def is_punctuation(word: str) -> bool:
    return all(unicodedata.category(ch)[0] in "PSZC" for ch in word)


def is_negation(word: str) -> bool:
    if word in NEGATION_WORDS:
        return True
    if word in NEGATION_EXCEPTIONS:
        return False
    # jieba keeps idioms and compounds whole: 并非如此, 没有人, 不想
    return word.startswith(_LONG_NEGATIONS) or (len(word) <= 3 and word.startswith(NEGATION_PREFIXES))


def content_words(text: str) -> frozenset[str]:
    return _content_words(text)


@functools.lru_cache(maxsize=1 << 18)
def _content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in tokenize(text) if w not in STOPWORDS and not is_punctuation(w))


@functools.lru_cache(maxsize=1 << 18)
def text_features(text: str, types: frozenset[str]) -> frozenset[str]:
    """Every feature of ``types`` (``overlap`` excluded) that fires in ``text``."""
    words = tokenize(text)
    keys: set[str] = set()
    if "word" in types:
        keys.update("word\t" + word for word in words)
    if "negation" in types and any(is_negation(word) for word in words):
        keys.add(NEGATION_KEY)
    return frozenset(keys)


def clear_caches() -> None:
    for cached in (tokenize, _content_words, text_features):
        cached.cache_clear()
