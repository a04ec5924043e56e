"""Reconstructed test sets s1–s14 of the "Internal Skill-based Analysis" (seed 000, SPEC §9).

Pure functions over plain dicts (no Django). Input: an ExpMRC span gold dict (SQuAD v1.1 layout
plus ``evidences``; English SQuAD or Chinese CMRC 2018). For each skill :func:`build_variant`
returns a new gold dict in the same layout, so ``scoring.metrics.expmrc.score_predictions`` scores it
unchanged, in which the passage (or, for s13, the question) is perturbed and every kept gold
answer is still a span of the new passage (``context[answer_start:]`` starts with its text).
:func:`skill_gaps` turns per-item answer F1 on the original and on each variant into the
document's reading (F1 gap with a paired bootstrap CI).

Decisions (the seed's document, the original code and SPEC §9 disagree in places)
-------------------------------------------------------------------------------
* **Text units.** English: sentences from NLTK Punkt (the vendored ``punkt_tab`` model, not the
  original code's split on "."), words from NLTK's Treebank-style word tokenizer with character
  spans (so "don't" is "do" + "n't", "U.S." one token). Chinese: sentences end after 。！？
  (plus closing quotes/brackets that follow); tokens are single characters, except that runs of
  ASCII letters/digits are one token. This is jieba-free and matches the ExpMRC scorer, whose
  token for Chinese is the character.
* **"Drop" = mask.** The document says "drop"; the original code (and Sugawara et al.) replace
  each dropped token by the literal ``[UNK]`` and keep the rest of the text, whitespace included.
  We do the same: sentence and passage lengths survive and a model sees where something was.
* **Gold answers.** Each gold answer is first located in the original passage (at its
  ``answer_start``, else at the occurrence nearest to it; CMRC has answers with start -1 and 11
  that do not occur at all — those are removed). Its span is then carried through the
  perturbation and its text is re-read from the new passage, so the gold is *re-located*
  (s4, s5, s6) or *re-written consistently* (s1 antonyms and s8 numbers inside an answer change
  the answer too). For the masking skills (s2, s3, s7, s9, s9p, s10–s12, s14) a gold answer
  whose tokens are masked becomes the masked text (e.g. ``[UNK] Broncos``): a model that still
  finds the span gets the credit, as in Sugawara et al., who score the predicted *position*
  against the original text. A gold answer left with nothing but ``[UNK]``/punctuation/articles
  is removed, because any ``[UNK]`` run would then match it; a question left without gold answers
  is **dropped from the variant** and counted in ``n_dropped`` (s3 drops most questions: answers
  are content words; s14 drops the questions whose answer lies outside the kept sentences).
  For the moving skills (s4, s5, s6) a gold answer that does not survive as one contiguous span
  with its exact text is *lost* and removed the same way (a question left without gold answers is
  dropped). The F1 gap is always computed on the kept items only, original vs variant. A variant
  that keeps no question at all is reported "not applicable" (an empty gold file is not a test
  set). ``counts`` in the result gives the details (answers re-written / removed as masked /
  lost / not found).
* **Public inputs never depend on the hidden gold.** Every perturbation of the passage or the
  question is a function of the public text, the seed and the question id only; the gold decides
  nothing but which answers are scored. Where the original method shapes the text around the
  answer (s4 cuts runs of the answer's length aligned on it, s5 keeps sentences an answer crosses
  together, s6 would keep an answer's sentence untranslated), comparing the public variant with
  the original passage would show where the answer is and how long it is, so we deviate from it
  (see s4, s5, s6) and drop the questions whose answer the perturbation breaks instead. Dropped
  questions stay in the public inputs (``public``), so the published question list is the same
  for every skill and tells nothing either.
* **Evidences** are copied unchanged (the file layout requires them); skill gaps use answer F1.
* **Layout.** Kept questions stay in their article; questions of one paragraph share a paragraph
  when their perturbed passages are identical, otherwise each gets its own.
* **Randomness.** s4, s5 and s8 draw from a per-question generator seeded from
  sha256(seed, question id, skill): results do not depend on order or on other questions.
  Shuffles are a Fisher–Yates over ``random.Random.getrandbits`` (stable across Python versions).

Per skill (``[UNK]`` = the mask token)
--------------------------------------
s1  Adjectives → their WordNet antonym (``wordnet30_adjective_antonyms.tsv``). No POS tagger is
    available offline, so an *adjective* is a word whose lower-cased form is an adjective lemma of
    that table with a **direct** antonym (indirect antonyms via a satellite's head are too noisy
    without word-sense disambiguation); the first direct antonym in WordNet sense order is used,
    multiword antonyms with spaces. Comparatives/superlatives (-er/-est of such a lemma, or an
    irregular form such as better/worst/fewer) get the base-form antonym, as in the original code.
    Skipped: stop words, non-alphabetic tokens, capitalised tokens that do not start a sentence
    (proper-noun parts such as "United", "North"), and — a conservative rule-based stand-in for
    the tagger — words that are probably verbs, adverbs or nouns: (a) a short list of frequent
    homographs (``NOT_ADJECTIVES``: well, still, back, due, found, like, home, …); (b) any word
    right after "to" or a modal/"do" (``VERB_CUES``: "to open", "can close"); (c) participle forms
    (-ed, -ing, and the irregular participles of ``IRREGULAR_PARTICIPLES`` such as made, sent,
    known) unless right after a determiner or degree adverb (``ADJECTIVAL_CUES``: "the used
    car", "highly developed" flip; "was used", "he sent" do not). Remaining limit: adjectives
    after "to" ("from low to high") are missed, and some nouns/adverbs still flip ("first",
    "south"). Capitalisation of the first letter is kept.
s2  Function words (NLTK's 179 English stop words) → ``[UNK]``.
s3  Content words (tokens that are neither stop words nor punctuation) → ``[UNK]``.
s4  Words shuffled within each sentence in segments of a fixed length. **Deviation:** the
    original method cuts each sentence into runs of the answer's token count aligned on the
    answer (merging sentences an answer crosses), so the public passage would reveal the
    answer's length and narrow down its position (with several gold answers, their combined
    span). Here the segment length is fixed per language (``S4_SEGMENT_TOKENS``: 3 tokens for
    English, 5 characters for Chinese, about three words each) and the grid starts at an offset
    drawn from the question's generator. Each sentence's tokens but the last are cut into
    segments on that grid and the segments shuffled; the sentence-final token stays last, attached
    as in the original (``fix_eos``). Segments are joined by one space (Chinese: no space, except
    between two ASCII words). A gold answer that no longer reads as one contiguous span (it
    straddled a segment boundary and its segments were separated) is lost; on the SQuAD dev set
    about 70% of the questions keep an answer, on CMRC 2018 dev (character tokens, long answers)
    about 40% — the kept ones lean towards short answers.
s5  Sentence order shuffled (a non-identity permutation when there are ≥ 2 sentences); joined
    by one space (Chinese: none). **Deviation:** the original merges the sentences a gold answer
    crosses first, which would show where the answer is; here an answer that crosses sentences
    is lost (none on the SQuAD dev set, 1 answer on CMRC 2018 dev).
s6  Back-translation EN→FR→EN of every passage sentence, only when translation models are
    configured (``translation_models={"en-fr": m, "fr-en": m}``, each a local Marian model
    directory loaded with ``local_files_only=True`` or a callable ``list[str] -> list[str]``);
    otherwise status "not configured" (also when a model cannot be loaded or fails while
    translating: the note says why and the other skills are built as usual). **Deviation:**
    every sentence is replaced by its back-translation, whatever the gold; keeping a sentence
    untranslated when its answer would not survive would mark the answer's sentence. A gold
    answer whose text is not found verbatim in its sentence's back-translation is lost.
s7  Comparatives/superlatives → ``[UNK]``: more, most, similar, than, different, the irregular
    better/best/worse/worst/less/least/lesser/fewer/fewest/further/furthest/farther/farthest/
    elder/eldest, and -er/-est forms of an adjective lemma of the WordNet table (stem rules:
    doubled consonant, y→i, e-drop; the stem must be ≥ 3 letters and not a stop word; a short
    list of nouns that look like comparatives — number, matter, after, … — is excluded, and so are
    capitalised words inside a sentence: names such as "Oliver" or "Porter").
s8  Numbers → random integers in [1000, 10000], the same surface → the same number within one
    question. English: digit runs in tokens starting with a digit or a currency sign ("1990s" →
    "4821s", "1,000" → one number) and cardinal words zero…ninety, hundred, thousand, million,
    billion, trillion ("one" is left alone: without a tagger it is mostly a pronoun/determiner).
    Chinese: Arabic digit runs, and Chinese numeral runs (零〇一二两三四五六七八九十百千万亿)
    of ≥ 2 characters or followed by a classifier/unit character, not after 第 (ordinals), not
    the idioms 万一/千万/一一, and not 十分 "very", 一度 "once", 一时 "for a moment" (where the
    numeral is followed by a character that is also a classifier; 十分钟 and 三点十分 stay
    numbers).
s9  Demonstratives this, that, these, those → ``[UNK]`` (as the document says; every use,
    including complementiser "that", since there is no parser).
s9p Personal/possessive pronouns of the original code → ``[UNK]`` (the original code's s9),
    without its PRP/PRP$ check: "one" and "self" are left out (mostly not pronouns), and
    all-caps tokens ("US", "IT") are never pronouns.
s10 Causal words because, why, therefore, cause, reason, as, since → ``[UNK]``.
s11 Hypothetical words if, suppose(d/s), assume(d/s), unless, once → ``[UNK]``.
s12 Logical words not, n't, all, any, each, every, few, if, more, most, no, nor, other, same,
    some, than → ``[UNK]``.
s13 Question words other than interrogatives → ``[UNK]`` (punctuation kept). English: what,
    when, where, who, whom, whose, which, why, how ("whose" is a wh-word; the original code's
    list lacks it). Chinese: 什么时候 什么 哪里 哪儿 哪 谁 何时 几时 为什么 为何 怎么 怎样 如何
    多少 多长 多大 多久 啥 几 (longest match), but not 几 in 几乎 "almost".
s14 Keep only the passage sentence(s) most similar to the question and mask every token of the
    others. Similarity = number of the sentence's non-punctuation tokens (lower-cased, repeats
    counted) that occur among the question's tokens — words for English, characters for Chinese;
    all sentences tied at the maximum are kept (as the original code).

Chinese passages get s4, s5, s8, s13 and s14; the other skills are "not applicable".
"""
from __future__ import annotations

import bisect
import csv
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from nltk.tokenize import NLTKWordTokenizer
from nltk.tokenize.punkt import PunktTokenizer

import scoring.tokenization  # noqa: F401  (puts the vendored Punkt model first on nltk.data.path)
from scoring import RESOURCES_DIR
from scoring.metrics import expmrc
from scoring.stats import bootstrap_ci

RESOURCES = RESOURCES_DIR / "skills"
UNK = "[UNK]"
NUMBER_RANGE = (1000, 10000)
# s4 segment length in tokens (Chinese: characters), fixed per language, never the answer's.
S4_SEGMENT_TOKENS = {"en": 3, "zh": 5}

READING_LARGE = "large gap = relies on the skill"
READING_SHORTCUT = "small gap = shortcut"
READING_ROBUST = "small gap = robust"
GROUP_READING, GROUP_REASONING, GROUP_QUERY = "reading", "reasoning", "reasoning_with_query"
GROUP_LABELS = {GROUP_READING: "Reading", GROUP_REASONING: "Reasoning",
                GROUP_QUERY: "Reasoning with the query"}

OK, NOT_APPLICABLE, NOT_CONFIGURED = "ok", "not applicable", "not configured"
EN, ZH = "en", "zh"


def _skill(name, skill, method, group, reading, languages):
    return {"name": name, "skill": skill, "method": method, "group": group, "reading": reading,
            "languages": frozenset(languages)}


# Skill texts from seed 000's document; groups from its figure (reading s1–s6, reasoning s7–s12,
# reasoning with the query s13–s14); readings from its analysis strategy.
SKILLS: dict[str, dict] = {
    "s1": _skill("Antonym substitution", "Understanding the adjectives",
                 "Replace adjectives in the passage with their antonyms", GROUP_READING, READING_LARGE, {EN}),
    "s2": _skill("Function words dropped", "Recognizing function words",
                 "Drop function words in the passage", GROUP_READING, READING_LARGE, {EN}),
    "s3": _skill("Content words dropped", "Recognizing content words",
                 "Drop content words in the passage", GROUP_READING, READING_LARGE, {EN}),
    "s4": _skill("Sentence words shuffled",
                 "Understanding grammatical rules and vocabulary organization of sentences",
                 "Randomly shuffle the words in each passage sentence", GROUP_READING, READING_LARGE, {EN, ZH}),
    "s5": _skill("Sentence order shuffled", "Understanding the sequence of events in the context",
                 "Randomly shuffle the order of the sentences in the passage", GROUP_READING, READING_LARGE,
                 {EN, ZH}),
    "s6": _skill("Back-translation", "Reading and understanding the texts against robustness",
                 "Translate the passage from English to French and back to English", GROUP_READING,
                 READING_ROBUST, {EN}),
    "s7": _skill("Comparatives dropped", "Detecting and understanding the comparison relationship",
                 "Drop all comparative and superlative words in the passage", GROUP_REASONING,
                 READING_LARGE, {EN}),
    "s8": _skill("Random numbers", "Performing basic numerical calculations",
                 "Replace numerical expressions in the passage with random numbers", GROUP_REASONING,
                 READING_LARGE, {EN, ZH}),
    "s9": _skill("Demonstratives dropped",
                 "Detecting and understanding all occurrences of demonstrative pronouns",
                 "Drop all demonstrative pronouns (this, that, these, those) in the passage",
                 GROUP_REASONING, READING_LARGE, {EN}),
    "s9p": _skill("Personal pronouns dropped",
                  "Detecting and understanding personal pronouns (the original code's s9)",
                  "Drop all personal and possessive pronouns in the passage", GROUP_REASONING,
                  READING_LARGE, {EN}),
    "s10": _skill("Causal words dropped",
                  "Performing explicit causal reasoning rather than focusing on causal words",
                  "Drop all causal words in the passage", GROUP_REASONING, READING_LARGE, {EN}),
    "s11": _skill("Hypothetical words dropped",
                  "Performing hypothetical reasoning rather than focusing on hypothetical words",
                  "Drop all hypothetical words in the passage", GROUP_REASONING, READING_LARGE, {EN}),
    "s12": _skill("Logical words dropped",
                  "Performing explicit logical reasoning rather than focusing on logical words",
                  "Drop all explicit logical words in the passage", GROUP_REASONING, READING_LARGE, {EN}),
    "s13": _skill("Interrogatives only", "Reasoning questions rather than focusing on the interrogative word",
                  "Drop words other than interrogatives (wh-words and how) in the question", GROUP_QUERY,
                  READING_SHORTCUT, {EN, ZH}),
    "s14": _skill("Most similar sentence only",
                  "Reasoning with the whole passage rather than focusing on explicit sentences",
                  "Keep only the passage sentence most similar to the question", GROUP_QUERY,
                  READING_SHORTCUT, {EN, ZH}),
}

# --------------------------------------------------------------------------- word lists


def _read_word_lists() -> dict:
    return json.loads((RESOURCES / "skill_word_lists.json").read_text(encoding="utf-8"))


_LISTS = _read_word_lists()
STOPWORDS = frozenset(
    line.strip() for line in (RESOURCES / "nltk_english_stopwords_179.txt").read_text(encoding="utf-8").splitlines()
    if line.strip()
)
CAUSAL_WORDS = frozenset(_LISTS["causal_words"])
HYPOTHETICAL_WORDS = frozenset(_LISTS["hypothetical_words"])
LOGICAL_WORDS = frozenset(_LISTS["logical_words"])
COMPARATIVE_WORDS = frozenset(_LISTS["comparative_words"])
DEMONSTRATIVES = frozenset(_LISTS["corrected_demonstrative_pronouns"])
PERSONAL_PRONOUNS = frozenset(_LISTS["pronouns_as_implemented"]) - {"one", "self"}
INTERROGATIVES_EN = frozenset(_LISTS["interrogatives"]) | {"whose"}
# Longest first, so "什么时候" wins over "什么" and "哪儿" over "哪".
INTERROGATIVES_ZH = tuple(sorted(
    ("什么时候", "什么", "哪里", "哪儿", "哪", "谁", "何时", "几时", "为什么", "为何", "怎么", "怎样", "如何",
     "多少", "多长", "多大", "多久", "啥", "几"), key=len, reverse=True))
# Words that start like an interrogative but are not one: 几乎 = "almost".
NOT_INTERROGATIVES_ZH = ("几乎",)
assert _LISTS["unk_token"] == UNK

IRREGULAR_COMPARATIVES = {
    "better": "good", "best": "good", "worse": "bad", "worst": "bad", "less": "little",
    "least": "little", "lesser": "little", "fewer": "few", "fewest": "few", "further": "far",
    "furthest": "far", "farther": "far", "farthest": "far", "elder": "old", "eldest": "old",
}
# Words ending in -er/-est whose stem happens to be an adjective lemma but which are (almost)
# never comparatives: found on the SQuAD dev passages, kept short on purpose.
NOT_COMPARATIVES = frozenset({
    "after", "number", "numbers", "matter", "founder", "layer", "modest", "offer", "owner", "inner",
    "upper", "outer", "latter", "former", "over", "under", "never", "ever", "other", "either",
    "rather", "whether", "together", "interest", "honest", "forest", "west", "east",
})
# s1 without a POS tagger (see the module docstring). Frequent words of the SQuAD dev passages
# that the WordNet table lists as adjectives but that are mostly adverbs, prepositions, nouns
# or verbs there: "as well as", "still", "came back", "due to", "was found", "like", "at home".
NOT_ADJECTIVES = frozenset({
    "well", "still", "back", "due", "found", "like", "home", "side", "surface", "even", "present",
    "live", "half", "top", "near", "outside", "inside",
})
# Irregular past participles that are adjective lemmas of the table ("made", "sent", "known").
IRREGULAR_PARTICIPLES = frozenset({
    "born", "bound", "broken", "cut", "found", "frozen", "known", "left", "lost", "made", "paid", "sent",
    "shut", "sold", "spoken", "stuck", "swept", "sworn", "understood", "won", "worn", "written",
})
# A word right after these is a verb ("to open", "can close"); "have" is left out because
# "has many", "had little" are frequent and its participles are caught as participles.
VERB_CUES = frozenset({"to", "will", "would", "can", "could", "shall", "should", "may", "might", "must",
                       "do", "does", "did", "'ll", "'d"})
# Words after which a participle is used as an adjective ("the known world", "less developed").
# Not this/that/those: mostly pronouns or "that" clauses there ("this made", "that supported").
ADJECTIVAL_CUES = frozenset({
    "a", "an", "the", "its", "their", "his", "her", "our", "my", "your", "some", "any", "no", "every",
    "each", "very", "so", "too", "quite", "rather", "more", "most", "less", "least", "highly", "fully",
    "newly",
})
CARDINAL_WORDS = frozenset(
    "zero two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand million billion trillion".split()
)


def _read_antonyms() -> tuple[dict[str, str], frozenset[str]]:
    """(lemma -> first direct antonym, every adjective lemma) from the WordNet 3.0 table."""
    direct: dict[str, str] = {}
    lemmas: set[str] = set()
    with open(RESOURCES / "wordnet30_adjective_antonyms.tsv", encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        header = next(rows)
        assert header[:2] == ["lemma", "direct_antonyms"], header
        for row in rows:
            lemma = row[0]
            lemmas.add(lemma)
            antonyms = [a for a in row[1].split(",") if a] if len(row) > 1 else []
            if antonyms:
                direct[lemma] = antonyms[0].replace("_", " ")
    return direct, frozenset(lemmas)


DIRECT_ANTONYMS, ADJECTIVE_LEMMAS = _read_antonyms()

# --------------------------------------------------------------------------- tokenisation

_PUNKT = PunktTokenizer("english")
_WORDS = NLTKWordTokenizer()
_ZH_TOKEN = re.compile(r"[A-Za-z0-9]+|\S")
_ZH_SENTENCE_END = re.compile(r"[。！？]+[”’」』）》\"')]*")
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")


def _is_punct(token: str) -> bool:
    return not any(ch.isalnum() for ch in token)


@dataclass(frozen=True)
class _Text:
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


def _analyse(text: str, language: str, split_sentences: bool = True) -> _Text:
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
    return _Text(text, tuple(sentences), tuple(tokens), tuple(token_sentence),
                 tuple(text[a:b].lower() for a, b in tokens), frozenset(first))


class _Analyses(dict):
    """Passage analyses shared by the skills of one build (freed with it: no global cache)."""

    def passage(self, text: str, language: str) -> _Text:
        key = (text, language)
        found = self.get(key)
        if found is None:
            found = self[key] = _analyse(text, language)
        return found


# --------------------------------------------------------------------------- randomness


def _rng(seed: int, question_id: str, skill: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x1f{question_id}\x1f{skill}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def _below(rng: random.Random, n: int) -> int:
    """Uniform integer in [0, n) by rejection on getrandbits (stable across Python versions)."""
    if n <= 1:
        return 0
    bits = (n - 1).bit_length()
    while True:
        value = rng.getrandbits(bits)
        if value < n:
            return value


def _shuffle(rng: random.Random, items: list) -> None:
    for i in range(len(items) - 1, 0, -1):
        j = _below(rng, i + 1)
        items[i], items[j] = items[j], items[i]


def _randint(rng: random.Random, low: int, high: int) -> int:
    return low + _below(rng, high - low + 1)


# --------------------------------------------------------------------------- edits


@dataclass
class _Edit:
    start: int
    end: int
    text: str


@dataclass
class _Perturbation:
    context_edits: list[_Edit] = field(default_factory=list)
    question_edits: list[_Edit] = field(default_factory=list)
    # answer index -> (context edit index, offset of the unchanged answer inside the edit's new text)
    placed: dict[int, tuple[int, int]] = field(default_factory=dict)
    # answers the perturbation broke (no longer one contiguous, unchanged span): not scored
    lost: set[int] = field(default_factory=set)


def _apply(text: str, edits: Sequence[_Edit]) -> tuple[str, list[int]]:
    """Apply sorted, non-overlapping edits; return the new text and each edit's new start."""
    out, new_starts, position, length = [], [], 0, 0
    for edit in edits:
        if edit.start < position or edit.end < edit.start:
            raise AssertionError("edits must be sorted and must not overlap")
        out.append(text[position:edit.start])
        length += edit.start - position
        new_starts.append(length)
        out.append(edit.text)
        length += len(edit.text)
        position = edit.end
    out.append(text[position:])
    return "".join(out), new_starts


class _SpanMap:
    """Carries character offsets of the original text through a list of edits. A boundary
    inside an edited region snaps outwards to the whole replacement."""

    def __init__(self, edits: Sequence[_Edit], new_starts: Sequence[int]):
        self.edits = edits
        self.new_starts = new_starts
        self.starts = [e.start for e in edits]
        self.ends = [e.end for e in edits]
        self.shift = [0]  # cumulative length change of the first k edits
        for e in edits:
            self.shift.append(self.shift[-1] + len(e.text) - (e.end - e.start))

    def start(self, offset: int) -> int:
        k = bisect.bisect_right(self.starts, offset) - 1  # last edit starting at or before offset
        if k >= 0 and offset < self.ends[k]:
            return self.new_starts[k]
        return offset + self.shift[k + 1]

    def end(self, offset: int) -> int:
        k = bisect.bisect_left(self.starts, offset) - 1  # last edit starting before offset
        if k >= 0 and offset <= self.ends[k]:
            return self.new_starts[k] + len(self.edits[k].text)
        return offset + self.shift[k + 1]


def _mask_tokens(analysis: _Text, token_indices: Iterable[int]) -> list[_Edit]:
    return [_Edit(*analysis.tokens[i], UNK) for i in sorted(set(token_indices))]


def _mask_where(analysis: _Text, predicate: Callable[[int], bool]) -> list[_Edit]:
    return _mask_tokens(analysis, (i for i in range(len(analysis.tokens)) if predicate(i)))


# --------------------------------------------------------------------------- skills


@dataclass
class _Question:
    id: str
    context: _Text
    question: _Text
    answers: list[tuple[int, int]]  # located gold spans in the original context
    rng: random.Random
    language: str


def _token_text(a: _Text, i: int) -> str:
    s, e = a.tokens[i]
    return a.text[s:e]


def _is_capitalised_inside(a: _Text, i: int) -> bool:
    word = _token_text(a, i)
    return word[:1].isupper() and i not in a.sentence_first_token


def _comparative_base(word: str) -> str | None:
    """Base adjective of a (lower-case) comparative/superlative, else None."""
    if word in IRREGULAR_COMPARATIVES:
        return IRREGULAR_COMPARATIVES[word]
    if word in NOT_COMPARATIVES or not word.isalpha():
        return None
    for suffix in ("est", "er"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stem = word[: -len(suffix)]
            candidates = [stem, stem + "e"]
            if len(stem) > 2 and stem[-1] == stem[-2]:
                candidates.append(stem[:-1])
            if stem.endswith("i"):
                candidates.append(stem[:-1] + "y")
            for base in candidates:
                if len(base) >= 3 and base not in STOPWORDS and base in ADJECTIVE_LEMMAS:
                    return base
    return None


def _match_case(original: str, replacement: str) -> str:
    if len(original) > 1 and original.isupper():
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _looks_like_verb_form(a: _Text, i: int, word: str) -> bool:
    """s1's stand-in for a POS tagger: is this adjective-lemma token probably not an adjective?
    Conservative on purpose: a missed adjective costs less than a flipped verb."""
    if word in NOT_ADJECTIVES:
        return True
    previous = a.lower[i - 1] if i > 0 and i not in a.sentence_first_token else ""
    if previous in VERB_CUES:  # "to open", "can close", "did free"
        return True
    participle = (word in IRREGULAR_PARTICIPLES or (len(word) >= 4 and word.endswith("ed"))
                  or (len(word) >= 5 and word.endswith("ing")))
    # A participle reads as an adjective only after a determiner or a degree adverb
    # ("the used car", "highly developed"), not after a noun or a form of "be" ("was used").
    return participle and previous not in ADJECTIVAL_CUES


def _s1(q: _Question) -> _Perturbation:
    a = q.context
    edits = []
    for i, word in enumerate(a.lower):
        if not word.isalpha() or word in STOPWORDS or _is_capitalised_inside(a, i):
            continue
        antonym = DIRECT_ANTONYMS.get(word)
        if antonym is None:
            base = _comparative_base(word)
            antonym = DIRECT_ANTONYMS.get(base) if base else None
        if antonym is not None and not _looks_like_verb_form(a, i, word):
            edits.append(_Edit(*a.tokens[i], _match_case(_token_text(a, i), antonym)))
    return _Perturbation(context_edits=edits)


def _mask_skill(predicate_factory):
    def run(q: _Question) -> _Perturbation:
        a = q.context
        return _Perturbation(context_edits=_mask_where(a, predicate_factory(a)))
    return run


_s2 = _mask_skill(lambda a: lambda i: a.lower[i] in STOPWORDS)
_s3 = _mask_skill(lambda a: lambda i: a.lower[i] not in STOPWORDS and not _is_punct(a.lower[i]))
_s7 = _mask_skill(lambda a: lambda i: a.lower[i] in COMPARATIVE_WORDS
                  or (_comparative_base(a.lower[i]) is not None and not _is_capitalised_inside(a, i)))
_s9 = _mask_skill(lambda a: lambda i: a.lower[i] in DEMONSTRATIVES)
_s9p = _mask_skill(lambda a: lambda i: a.lower[i] in PERSONAL_PRONOUNS
                   and not (len(a.lower[i]) > 1 and _token_text(a, i).isupper()))
_s10 = _mask_skill(lambda a: lambda i: a.lower[i] in CAUSAL_WORDS)
_s11 = _mask_skill(lambda a: lambda i: a.lower[i] in HYPOTHETICAL_WORDS)
_s12 = _mask_skill(lambda a: lambda i: a.lower[i] in LOGICAL_WORDS)


def _joiner(language: str, left: str, right: str) -> str:
    if language == EN:
        return " "
    return " " if _ASCII_ALNUM.match(left[-1:]) and _ASCII_ALNUM.match(right[:1]) else ""


def _join(language: str, pieces: Sequence[str]) -> tuple[str, list[int]]:
    """Join pieces with the language's separator; return the text and each piece's offset."""
    out, offsets, length = [], [], 0
    for index, piece in enumerate(pieces):
        if index:
            sep = _joiner(language, pieces[index - 1], piece)
            out.append(sep)
            length += len(sep)
        offsets.append(length)
        out.append(piece)
        length += len(piece)
    return "".join(out), offsets


def _place_answers(q: _Question, edit_index: int, edit: _Edit, pieces: Sequence[tuple[int, int]],
                   offsets: Sequence[int], out: _Perturbation) -> None:
    """An edit rearranged the original ``pieces`` (character spans) to ``offsets`` inside
    ``edit.text``. Every gold answer overlapping the edit is either placed (it survives as one
    contiguous span with its exact text) or lost. The edit itself never depends on the gold."""
    def moved(offset: int) -> int | None:
        for (ps, pe), new_offset in zip(pieces, offsets):
            if ps <= offset < pe:
                return new_offset + offset - ps
        return None  # white space between pieces, rewritten by the join

    for k, (s, e) in enumerate(q.answers):
        if not (s < edit.end and edit.start < e):
            continue
        new_start, new_last = moved(s), moved(e - 1)
        if (new_start is not None and new_last is not None
                and edit.text[new_start:new_last + 1] == q.context.text[s:e]):
            out.placed[k] = (edit_index, new_start)
        else:
            out.lost.add(k)


def _s4(q: _Question) -> _Perturbation:
    a = q.context
    out = _Perturbation()
    width = S4_SEGMENT_TOKENS[q.language]
    token_starts = [s for s, _ in a.tokens]
    for bs, be in a.sentences:
        token_ids = list(range(bisect.bisect_left(token_starts, bs), bisect.bisect_left(token_starts, be)))
        movable, final = token_ids[:-1], token_ids[-1] if token_ids else None
        if len(movable) < 2:
            continue
        # A grid of equal segments at a random origin: drawn from the question id, never from
        # the gold (see the module docstring).
        origin = _below(q.rng, width)
        cuts = [0] + list(range(origin or width, len(movable), width)) + [len(movable)]
        segments = [movable[low:high] for low, high in zip(cuts, cuts[1:]) if high > low]
        if len(segments) < 2:
            continue
        order = list(range(len(segments)))
        _shuffle(q.rng, order)
        spans = [(a.tokens[segments[k][0]][0], a.tokens[segments[k][-1]][1]) for k in order]
        pieces = [a.text[s:e] for s, e in spans]
        new_text, offsets = _join(q.language, pieces)
        final_span = a.tokens[final]
        # The sentence-final token stays last, attached as in the original ("spring.").
        glued = final_span[0] == a.tokens[final - 1][1]
        separator = "" if glued else _joiner(q.language, pieces[-1], a.text[final_span[0]:final_span[1]])
        spans.append(final_span)
        offsets.append(len(new_text) + len(separator))
        new_text += separator + a.text[final_span[0]:final_span[1]]
        edit = _Edit(a.tokens[movable[0]][0], final_span[1], new_text)
        out.context_edits.append(edit)
        _place_answers(q, len(out.context_edits) - 1, edit, spans, offsets, out)
    return out


def _s5(q: _Question) -> _Perturbation:
    a = q.context
    blocks = list(a.sentences)  # never merged around an answer: that would point at it
    if len(blocks) < 2:
        return _Perturbation()
    order = list(range(len(blocks)))
    while order == sorted(order):  # a non-identity permutation (expected < 2 draws)
        _shuffle(q.rng, order)
    spans = [blocks[k] for k in order]
    new_text, offsets = _join(q.language, [a.text[s:e] for s, e in spans])
    out = _Perturbation(context_edits=[_Edit(blocks[0][0], blocks[-1][1], new_text)])
    _place_answers(q, 0, out.context_edits[0], spans, offsets, out)
    return out


_EN_NUMBER_TOKEN = re.compile(r"^[$€£¥]?\d")
_DIGIT_RUN = re.compile(r"\d+(?:[.,]\d+)*")
_ZH_DIGIT_RUN = re.compile(r"[0-9０-９]+(?:[.,．][0-9０-９]+)*")
_ZH_NUMERAL_RUN = re.compile(r"[零〇一二两三四五六七八九十百千万亿]+")
_ZH_IDIOMS = frozenset({"万一", "千万", "一一"})
# A numeral plus a classifier that is a word of its own: 十分 "very", 一度 "once, for a time",
# 一时 "for a moment". 十分钟 (ten minutes) and clock times (三点十分) stay numbers.
_ZH_NOT_NUMBERS = frozenset({"十分", "一度", "一时"})
_ZH_CLASSIFIERS = frozenset(
    "年月日号个位名人次种项件条张部本册卷届座家所岁天周时分秒倍米元角场局集季章节首篇款台辆架艘只头匹层颗份批组队支股度期代"
)


def _s8(q: _Question) -> _Perturbation:
    a = q.context
    chosen: dict[str, str] = {}

    def number_for(surface: str) -> str:
        if surface not in chosen:
            chosen[surface] = str(_randint(q.rng, *NUMBER_RANGE))
        return chosen[surface]

    edits = []
    if q.language == EN:
        for i, (s, e) in enumerate(a.tokens):
            word = a.text[s:e]
            if _EN_NUMBER_TOKEN.match(word):
                for m in _DIGIT_RUN.finditer(word):
                    edits.append(_Edit(s + m.start(), s + m.end(), number_for(m.group())))
            elif a.lower[i] in CARDINAL_WORDS:
                edits.append(_Edit(s, e, number_for(a.lower[i])))
    else:
        text = a.text
        found = [(m.start(), m.end()) for m in _ZH_DIGIT_RUN.finditer(text)]
        for m in _ZH_NUMERAL_RUN.finditer(text):
            s, e = m.span()
            run = m.group()
            if s > 0 and text[s - 1] == "第":
                continue
            if (run + text[e:e + 1] in _ZH_NOT_NUMBERS and text[e + 1:e + 2] != "钟"
                    and not (s > 0 and text[s - 1] == "点")):
                continue
            if (len(run) >= 2 and run not in _ZH_IDIOMS) or text[e:e + 1] in _ZH_CLASSIFIERS:
                found.append((s, e))
        for s, e in sorted(found):
            edits.append(_Edit(s, e, number_for(text[s:e])))
    return _Perturbation(context_edits=edits)


def _s13(q: _Question) -> _Perturbation:
    a = q.question
    if q.language == EN:
        return _Perturbation(question_edits=_mask_where(
            a, lambda i: not (a.lower[i] in INTERROGATIVES_EN or _is_punct(a.lower[i]))))
    kept_chars: set[int] = set()
    text = a.text
    position = 0
    while position < len(text):
        skip = next((word for word in NOT_INTERROGATIVES_ZH if text.startswith(word, position)), None)
        if skip:
            position += len(skip)
            continue
        for word in INTERROGATIVES_ZH:  # longest first
            if text.startswith(word, position):
                kept_chars.update(range(position, position + len(word)))
                position += len(word)
                break
        else:
            position += 1
    return _Perturbation(question_edits=_mask_where(
        a, lambda i: not _is_punct(a.lower[i]) and a.tokens[i][0] not in kept_chars))


def _s14(q: _Question) -> _Perturbation:
    a = q.context
    question_tokens = {w for w in q.question.lower if not _is_punct(w)}
    scores = [0] * len(a.sentences)
    for i, word in enumerate(a.lower):
        if word in question_tokens:
            scores[a.token_sentence[i]] += 1
    best = max(scores, default=0)
    keep = {k for k, score in enumerate(scores) if score == best}
    return _Perturbation(context_edits=_mask_where(a, lambda i: a.token_sentence[i] not in keep))


_BUILDERS: dict[str, Callable[[_Question], _Perturbation]] = {
    "s1": _s1, "s2": _s2, "s3": _s3, "s4": _s4, "s5": _s5, "s7": _s7, "s8": _s8, "s9": _s9,
    "s9p": _s9p, "s10": _s10, "s11": _s11, "s12": _s12, "s13": _s13, "s14": _s14,
}
_MASKING = frozenset({"s2", "s3", "s7", "s9", "s9p", "s10", "s11", "s12", "s14"})
_RANDOM = frozenset({"s4", "s5", "s8"})

# --------------------------------------------------------------------------- s6 back-translation

Translator = Callable[[list[str]], list[str]]


def marian_translator(model_dir: str | Path, *, batch_size: int = 16, max_new_tokens: int = 256) -> Translator:
    """A translator over a local transformers Marian model directory (never downloads)."""
    import torch  # optional dependencies, imported lazily
    from transformers import MarianMTModel, MarianTokenizer

    tokenizer = MarianTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    model = MarianMTModel.from_pretrained(str(model_dir), local_files_only=True).eval()
    positions = int(getattr(model.config, "max_position_embeddings", 512))
    max_length = min(int(tokenizer.model_max_length), positions)
    new_tokens = min(max_new_tokens, positions - 1)

    def translate(texts: list[str]) -> list[str]:
        out: list[str] = []
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(texts[start:start + batch_size], return_tensors="pt", padding=True,
                              truncation=True, max_length=max_length)
            with torch.inference_mode():
                generated = model.generate(**batch, max_new_tokens=new_tokens, num_beams=1,
                                           do_sample=False)
            out.extend(tokenizer.batch_decode(generated, skip_special_tokens=True))
        return out

    return translate


def _translator(spec) -> Translator:
    return spec if callable(spec) else marian_translator(Path(spec))


def _resolve_translation(translation_models) -> tuple[Translator, Translator] | str:
    """(en→fr, fr→en) translators, or the reason s6 is not configured."""
    if not translation_models:
        return "no translation models configured (translation_models={'en-fr': ..., 'fr-en': ...})"
    missing = [k for k in ("en-fr", "fr-en") if not translation_models.get(k)]
    if missing:
        return f"translation model(s) {', '.join(missing)} not configured"
    forward, backward = translation_models["en-fr"], translation_models["fr-en"]
    for key, spec in (("en-fr", forward), ("fr-en", backward)):
        if not callable(spec) and not Path(spec).is_dir():
            return f"translation model {key}: directory not found"
        if not callable(spec):
            missing_files = _missing_marian_files(Path(spec))
            if missing_files:
                return (f"translation model {key}: not a Marian model directory "
                        f"(missing {', '.join(missing_files)})")
    translators = []
    for key, spec in (("en-fr", forward), ("fr-en", backward)):
        try:
            translators.append(_translator(spec))
        except ImportError as exc:
            return f"translation models configured but not loadable ({exc.name or exc} is not installed)"
        except Exception as exc:  # noqa: BLE001 - whatever the loader raises, only s6 is affected
            return f"translation model {key} could not be loaded ({_describe(exc)})"
    return translators[0], translators[1]


def _missing_marian_files(directory: Path) -> list[str]:
    """Files a saved Marian model and tokenizer need that ``directory`` lacks: a clear note
    instead of whatever error the loader would raise half-way."""
    missing = [name for name in ("config.json", "source.spm", "target.spm", "vocab.json")
               if not (directory / name).is_file()]
    if not any((directory / name).is_file() for name in ("model.safetensors", "pytorch_model.bin")):
        missing.append("model.safetensors or pytorch_model.bin")
    return missing


def _describe(exc: Exception) -> str:
    """One readable line for a note: the error's type and the first line of its message."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"


def _back_translations(gold: dict, translators: tuple[Translator, Translator], analyses: _Analyses) -> dict[str, str]:
    sentences: dict[str, None] = {}
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            a = analyses.passage(paragraph["context"], EN)
            for s, e in a.sentences:
                sentences.setdefault(a.text[s:e])
    texts = list(sentences)
    if not texts:
        return {}
    forward, backward = translators
    french = list(forward(texts))
    english = list(backward(french))
    if len(french) != len(texts) or len(english) != len(texts):
        raise ValueError("a translator returned a different number of sentences than it was given")
    return {src: str(bt).strip() or src for src, bt in zip(texts, english)}


def _s6_factory(table: Mapping[str, str]):
    def run(q: _Question) -> _Perturbation:
        a = q.context
        out = _Perturbation()
        for s, e in a.sentences:  # every sentence, whatever the gold (see the module docstring)
            original = a.text[s:e]
            translated = table.get(original, original)
            if translated == original:
                continue
            edit_index = len(out.context_edits)
            out.context_edits.append(_Edit(s, e, translated))
            for k, (answer_start, answer_end) in enumerate(q.answers):
                if not (answer_start < e and s < answer_end):
                    continue
                inside = s <= answer_start and answer_end <= e
                found = translated.find(a.text[answer_start:answer_end]) if inside else -1
                if found < 0:
                    out.lost.add(k)
                else:
                    out.placed[k] = (edit_index, found)
        return out
    return run


# --------------------------------------------------------------------------- variants


def _locate(context: str, text: str, start) -> tuple[int, int] | None:
    if not text:
        return None
    if isinstance(start, int) and start >= 0 and context.startswith(text, start):
        return start, start + len(text)
    best = None
    position = context.find(text)
    while position >= 0:
        if best is None or (isinstance(start, int) and abs(position - start) < abs(best - start)):
            best = position
        position = context.find(text, position + 1)
    return None if best is None else (best, best + len(text))


def _informative(text: str) -> bool:
    """Does the (possibly masked) answer keep a token the scorer counts, other than [UNK]?"""
    return bool(expmrc.normalize_tokens(expmrc.mixed_segmentation(text.replace(UNK, " "))))


def _check_span_gold(gold: dict) -> None:
    if expmrc.task_kind(gold) != expmrc.SPAN:
        raise ValueError("skill variants need a span-extraction gold (SQuAD / CMRC 2018 layout)")
    expmrc.check_gold(gold)


def _result(skill, status, gold=None, n_items=0, n_changed=0, n_dropped=0, note="", counts=None) -> dict:
    return {"skill": skill, "status": status, "gold": gold, "n_items": n_items, "n_changed": n_changed,
            "n_dropped": n_dropped, "note": note, "counts": counts or {}, "public": None}


def build_variant(gold: dict, skill: str, *, language: str = EN, seed: int = 0,
                  translation_models: Mapping | None = None) -> dict:
    """One reconstructed test set. Returns {"skill", "status", "gold", "n_items", "n_changed",
    "n_dropped", "note", "counts", "public"}; ``gold`` is None unless status is "ok". ``public``
    holds every question of the original (dropped ones too, with their perturbed passage): serve
    its ``public_inputs`` and accept predictions for all its ids, so the inputs never reveal
    which questions were dropped; only ``gold``'s questions are scored. Status is "not
    applicable" for a skill not defined for ``language`` and when every question is dropped,
    "not configured" for s6 without translation models."""
    if skill not in SKILLS:
        raise ValueError(f"unknown skill {skill!r}; known: {', '.join(SKILLS)}")
    _check_arguments(gold, language)
    return _variant(gold, skill, language, seed, translation_models, _Analyses())


def _check_arguments(gold: dict, language: str) -> None:
    if language not in (EN, ZH):
        raise ValueError(f"language must be 'en' or 'zh', not {language!r}")
    _check_span_gold(gold)


def _variant(gold: dict, skill: str, language: str, seed: int, translation_models, analyses: _Analyses) -> dict:
    if language not in SKILLS[skill]["languages"]:
        return _result(skill, NOT_APPLICABLE, note=f"{skill} is defined for English passages only")
    if skill == "s6":
        resolved = _resolve_translation(translation_models)
        if isinstance(resolved, str):
            return _result(skill, NOT_CONFIGURED, note=resolved)
        try:
            table = _back_translations(gold, resolved, analyses)
        except Exception as exc:  # noqa: BLE001 - a failing model must not stop the other skills
            return _result(skill, NOT_CONFIGURED, note=f"translation failed ({_describe(exc)})")
        builder = _s6_factory(table)
    else:
        builder = _BUILDERS[skill]
    return _build(gold, skill, builder, language=language, seed=seed, analyses=analyses)


def _build(gold: dict, skill: str, builder, *, language: str, seed: int, analyses: _Analyses) -> dict:
    counts = {"questions": 0, "kept": 0, "changed": 0, "dropped_answer_masked": 0, "dropped_answer_lost": 0,
              "dropped_answer_not_found": 0, "answers_rewritten": 0, "answers_masked": 0, "answers_lost": 0,
              "answers_not_found": 0}
    data, public_data = [], []
    for article in gold["data"]:
        new_paragraphs, public_paragraphs = [], []
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            context_analysis = analyses.passage(context, language)
            grouped: dict[str, list[dict]] = {}
            public_grouped: dict[str, list[dict]] = {}
            for qa in paragraph["qas"]:
                counts["questions"] += 1
                located, texts = [], []
                for answer in qa["answers"]:
                    span = _locate(context, answer["text"], answer.get("answer_start"))
                    if span is None:
                        counts["answers_not_found"] += 1
                        continue
                    located.append(span)
                    texts.append(answer["text"])
                question = _Question(
                    id=qa["id"], context=context_analysis,
                    question=_analyse(qa["question"], language, split_sentences=False),
                    answers=located, rng=_rng(seed, qa["id"], skill), language=language)
                perturbation = builder(question)
                new_context, new_starts = _apply(context, perturbation.context_edits)
                new_question, _ = _apply(qa["question"], perturbation.question_edits)
                # Every question is public, scored or not: leaving a dropped one out of the
                # inputs would tell which hidden answers the perturbation masked or moved.
                public_grouped.setdefault(new_context, []).append({"id": qa["id"], "question": new_question})
                if not located:
                    counts["dropped_answer_not_found"] += 1
                    continue
                span_map = _SpanMap(perturbation.context_edits, new_starts)
                answers, n_lost = [], 0
                for k, (s, e) in enumerate(located):
                    if k in perturbation.lost:
                        n_lost += 1
                        continue
                    if k in perturbation.placed:
                        edit_index, offset = perturbation.placed[k]
                        ns = new_starts[edit_index] + offset
                        ne = ns + (e - s)
                    else:
                        ns, ne = span_map.start(s), span_map.end(e)
                    text = new_context[ns:ne]
                    if ne <= ns:
                        counts["answers_not_found"] += 1
                        continue
                    if skill in _MASKING and UNK in text and not _informative(text):
                        counts["answers_masked"] += 1
                        continue
                    if text != texts[k]:
                        counts["answers_rewritten"] += 1
                    answers.append({"text": text, "answer_start": ns})
                counts["answers_lost"] += n_lost
                if not answers:
                    counts["dropped_answer_lost" if n_lost else "dropped_answer_masked"] += 1
                    continue
                counts["kept"] += 1
                if new_context != context or new_question != qa["question"]:
                    counts["changed"] += 1
                new_qa = {"id": qa["id"], "question": new_question, "answers": answers,
                          "evidences": list(qa.get("evidences", []))}
                grouped.setdefault(new_context, []).append(new_qa)
            for new_context, qas in grouped.items():
                new_paragraph = {"id": paragraph["id"]} if "id" in paragraph else {}
                new_paragraph.update({"context": new_context, "qas": qas})
                new_paragraphs.append(new_paragraph)
            for new_context, qas in public_grouped.items():
                public_paragraph = {"id": paragraph["id"]} if "id" in paragraph else {}
                public_paragraph.update({"context": new_context, "qas": qas})
                public_paragraphs.append(public_paragraph)
        if new_paragraphs:
            data.append({"title": article.get("title", ""), "paragraphs": new_paragraphs})
        if public_paragraphs:
            public_data.append({"title": article.get("title", ""), "paragraphs": public_paragraphs})
    dropped = counts["dropped_answer_masked"] + counts["dropped_answer_lost"] + counts["dropped_answer_not_found"]
    note = (f"{counts['kept']} of {counts['questions']} questions kept, {counts['changed']} perturbed; "
            f"{dropped} dropped ({counts['dropped_answer_masked']} with every gold answer masked, "
            f"{counts['dropped_answer_lost']} with every gold answer broken up, "
            f"{counts['dropped_answer_not_found']} with no gold answer found in the passage); "
            f"gold answers: {counts['answers_rewritten']} re-written, {counts['answers_masked']} removed as masked, "
            f"{counts['answers_lost']} removed as broken up, "
            f"{counts['answers_not_found']} not found in the original passage")
    if not counts["kept"]:  # an empty gold file is not a test set (the scorer refuses it)
        return _result(skill, NOT_APPLICABLE, None, 0, 0, dropped, "every question dropped: " + note, counts)
    variant = {"version": gold["version"], "skill": skill, "data": data}
    result = _result(skill, OK, variant, counts["kept"], counts["changed"], dropped, note, counts)
    result["public"] = {"version": gold["version"], "skill": skill, "data": public_data}
    return result


def build_all(gold: dict, *, language: str = EN, seed: int = 0, translation_models: Mapping | None = None,
              progress: Callable[[int, int], None] | None = None) -> dict[str, dict]:
    """Every skill's variant, in SKILLS order; ``progress(done, total)`` after each skill.
    Passages are analysed (sentences, tokens) once for all skills."""
    _check_arguments(gold, language)
    analyses = _Analyses()
    results = {}
    total = len(SKILLS)
    for done, skill in enumerate(SKILLS, start=1):
        results[skill] = _variant(gold, skill, language, seed, translation_models, analyses)
        if progress is not None:
            progress(done, total)
    return results


def public_inputs(variant_gold: dict) -> dict:
    """Titles, contexts, question ids and questions only: the ExpMRC whitelist, plus the skill."""
    from scoring.metrics.expmrc import public_inputs as expmrc_public_inputs

    out = expmrc_public_inputs(variant_gold)
    if "skill" in variant_gold:
        out = {"version": out["version"], "skill": variant_gold["skill"], "data": out["data"]}
    return out


# --------------------------------------------------------------------------- gaps


def skill_gaps(original_item_f1: Mapping[str, float], variant_item_f1: Mapping[str, Mapping[str, float]], *,
               n_resamples: int = 1000, seed: int = 0) -> dict:
    """Per skill: answer F1 on the variant and of the original on the same items, the gap
    (original − variant) on the 0–100 scale with a 95% paired bootstrap CI, the reading.

    Inputs are per-item F1 in 0..1 keyed by question id (e.g. the ``answer`` of
    ``score_predictions(...).per_question``). Only items present in both count; ``n_unmatched``
    reports variant items missing from the original."""
    out = {}
    for skill in sorted(variant_item_f1, key=lambda s: list(SKILLS).index(s) if s in SKILLS else len(SKILLS)):
        if skill not in SKILLS:
            raise ValueError(f"unknown skill {skill!r}")
        items = variant_item_f1[skill]
        keys = [k for k in items if k in original_item_f1]
        meta = SKILLS[skill]
        entry = {"skill": skill, "name": meta["name"], "group": meta["group"], "reading": meta["reading"],
                 "n": len(keys), "n_unmatched": len(items) - len(keys)}
        if not keys:
            entry.update({"variant_f1": None, "original_f1": None, "gap": None, "ci_low": None, "ci_high": None})
        else:
            original = np.fromiter((original_item_f1[k] for k in keys), dtype=float, count=len(keys))
            variant = np.fromiter((items[k] for k in keys), dtype=float, count=len(keys))
            differences = 100.0 * (original - variant)
            low, high = bootstrap_ci(differences, n_resamples=n_resamples, seed=seed)
            entry.update({
                "variant_f1": float(100.0 * variant.mean()),
                "original_f1": float(100.0 * original.mean()),
                "gap": float(differences.mean()),
                "ci_low": low,
                "ci_high": high,
            })
        out[skill] = entry
    return out
