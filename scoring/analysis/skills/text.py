"""Text units of the skills: passages and questions cut into sentences and tokens, as character
spans. English: NLTK Punkt sentences (the vendored ``punkt_tab`` model) and Treebank-style words;
Chinese: sentences end after 。！？, tokens are characters except runs of ASCII letters/digits (see
"Text units" in the package docstring)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...tokenization import NLTKWordTokenizer, PunktTokenizer  # vendored Punkt, tokenizers only
from .catalogue import EN

_PUNKT = PunktTokenizer("english")
_WORDS = NLTKWordTokenizer()
_ZH_TOKEN = re.compile(r"[A-Za-z0-9]+|\S")
_ZH_SENTENCE_END = re.compile(r"[。！？]+[”’」』）》\"')]*")
ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")


def is_punct(token: str) -> bool:
    return not any(ch.isalnum() for ch in token)


@dataclass(frozen=True)
class Text:
    """A passage or question cut into sentences and tokens, all as character spans."""
    text: str
    sentences: tuple[tuple[int, int], ...]
    tokens: tuple[tuple[int, int], ...]
    token_sentence: tuple[int, ...]  # sentence index of each token
    lower: tuple[str, ...]
    sentence_first_token: frozenset[int]  # indices of tokens that start a sentence


def _zh_sentence_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in _ZH_SENTENCE_END.finditer(text):
        spans.append((start, match.end()))
        start = match.end()
    spans.append((start, len(text)))
    out = []
    for s, e in spans:  # strip surrounding whitespace; drop empty pieces
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((s, e))
    return out


def analyse(text: str, language: str, split_sentences: bool = True) -> Text:
    if language == EN:
        sentences = list(_PUNKT.span_tokenize(text)) if split_sentences else [(0, len(text))]
    else:
        sentences = _zh_sentence_spans(text) if split_sentences else [(0, len(text))]
    tokens: list[tuple[int, int]] = []
    token_sentence: list[int] = []
    first: set[int] = set()
    for index, (s, e) in enumerate(sentences):
        piece = text[s:e]
        spans = (_WORDS.span_tokenize(piece) if language == EN
                 else ((m.start(), m.end()) for m in _ZH_TOKEN.finditer(piece)))
        starting = True
        for a, b in spans:
            if starting:
                first.add(len(tokens))
                starting = False
            tokens.append((s + a, s + b))
            token_sentence.append(index)
    return Text(text, tuple(sentences), tuple(tokens), tuple(token_sentence),
                tuple(text[a:b].lower() for a, b in tokens), frozenset(first))


class Analyses(dict):
    """Passage analyses shared by the skills of one build (freed with it: no global cache)."""

    def passage(self, text: str, language: str) -> Text:
        key = (text, language)
        found = self.get(key)
        if found is None:
            found = self[key] = analyse(text, language)
        return found
