"""Rule-based English feature extractors for ICQ (no spaCy model, nothing downloaded).

Every extractor reads one text (an NLI hypothesis or an answer option) and returns feature keys
``"<type>\\t<value>"``. The rules are documented in ``docs/icq_features.md``; in short:

* ``word``      lower-cased lemma of every token (punctuation included); lemmas from
                ``lemminflect``'s bundled lookup table, first reading in the order
                AUX > VERB > NOUN > ADJ > ADV > PROPN, the token itself when unknown.
* ``sentiment`` VADER lexicon valence (``vaderSentiment`` package) of ADJ/ADV-like tokens;
                ``positive`` if more positive than negative tokens, ``negative`` if fewer.
* ``tense``     ``past`` > ``future`` > ``present`` from auxiliaries, modals and verb forms.
* ``negation``  a token in ``resources/icq/en_negation.txt``.
* ``ner``       a capitalised-span / number heuristic with spaCy-style labels (approximate).
* ``typo``      a lower-case word missing from symspellpy's bundled English frequency
                dictionary for which SymSpell proposes a correction within edit distance 2.
* ``overlap``   is computed by ``scoring.analysis.features`` from :func:`content_words` of both texts.

All per-text and per-token work is memoised, so repeated texts (and repeated tokens) cost a
dictionary look-up.
"""
from __future__ import annotations

import functools
import importlib.resources
import re
import threading

from . import read_table, read_word_list

FEATURE_TYPES = ("word", "sentiment", "tense", "negation", "overlap", "ner", "typo")

# --------------------------------------------------------------------------- tokens

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_TOKEN_RE = re.compile(
    r"""[^\W\d_]+(?=n't\b)          # "do" of "don't"
      | n't\b
      | '(?:s|re|ve|ll|d|m)\b       # clitics: 's 're 've 'll 'd 'm
      | \d+(?:st|nd|rd|th)\b        # 21st
      | \d+(?:[.,:/]\d+)*           # 3.5  1,000  10:30
      | [^\W\d_]+                   # words (any script)
      | \S                          # any other character on its own
    """,
    re.VERBOSE | re.IGNORECASE,
)
# The same without the clitic rules, for the (usual) text without apostrophes or "cannot".
_PLAIN_TOKEN_RE = re.compile(r"[^\W\d_]+|\d+(?:[sS][tT]|[nNrR][dD]|[tT][hH])\b|\d+(?:[.,:/]\d+)*|\S")
_NT_BASES = {"ca": "can", "wo": "will", "sha": "shall"}
_SLOW_PATH_RE = re.compile(r"['\u2019\u2018\u02bc]|cannot", re.IGNORECASE)


@functools.lru_cache(maxsize=1 << 18)
def tokenize(text: str) -> tuple[str, ...]:
    """Penn-like tokens: clitics split ("don't" -> do n't, "can't" -> can n't, "cannot" -> can not)."""
    if _SLOW_PATH_RE.search(text) is None:
        return tuple(_PLAIN_TOKEN_RE.findall(text))
    tokens: list[str] = []
    text = text.translate(_APOSTROPHES)
    for match in _TOKEN_RE.finditer(text):
        token = match.group()
        lower = token.lower()
        if lower == "cannot":
            tokens += (token[:3], token[3:])
        elif lower in _NT_BASES and text[match.end():match.end() + 3].lower() == "n't":
            tokens.append(_NT_BASES[lower] if token.islower() else _NT_BASES[lower].capitalize())
        else:
            tokens.append(token)
    return tuple(tokens)


def _is_wordlike(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


# --------------------------------------------------------------------------- lemmas

_POS_ORDER = ("AUX", "VERB", "NOUN", "ADJ", "ADV", "PROPN")
_lemminflect_lock = threading.Lock()


@functools.cache
def _lemminflect():
    import lemminflect  # noqa: PLC0415  (heavy: loads its bundled tables, ~0.4 s, on first use)

    return lemminflect


@functools.lru_cache(maxsize=1 << 17)
def readings(lower: str) -> dict[str, tuple[str, ...]]:
    """lemminflect's readings of a lower-cased word: {UPOS: (lemma, ...)} (empty when unknown)."""
    if not lower.isalpha():
        return {}
    with _lemminflect_lock:
        return dict(_lemminflect().getAllLemmas(lower))


@functools.lru_cache(maxsize=1 << 17)
def lemma(lower: str) -> str:
    """The lemma of a lower-cased token (the token itself for punctuation, numbers, unknowns)."""
    found = readings(lower)
    for pos in _POS_ORDER:
        if found.get(pos):
            return found[pos][0].lower()
    return lower


@functools.lru_cache(maxsize=1 << 17)
def _word_key(token: str) -> str:
    return "word\t" + lemma(token.lower())


# --------------------------------------------------------------------------- word lists

STOPWORDS = frozenset(read_word_list("en_stopwords.txt"))
NEGATION_WORDS = frozenset(read_word_list("en_negation.txt"))
GIVEN_NAMES = frozenset(read_word_list("en_given_names.txt"))
PLACES: dict[str, str] = dict((name, label) for name, label in read_table("en_places.txt"))


def content_words(text: str) -> frozenset[str]:
    """Lemmas counted by ``overlap``: not a stopword, not punctuation, not a clitic."""
    return _content_words(text)


@functools.lru_cache(maxsize=1 << 18)
def _content_words(text: str) -> frozenset[str]:
    return frozenset(filter(None, map(_content_lemma, tokenize(text))))


@functools.lru_cache(maxsize=1 << 17)
def _content_lemma(token: str) -> str | None:
    lower = token.lower()
    if lower in STOPWORDS or not _is_wordlike(lower) or "'" in lower:
        return None
    lem = lemma(lower)
    return None if lem in STOPWORDS else lem


# --------------------------------------------------------------------------- sentiment

# Words VADER scores but which are mostly not opinion adjectives/adverbs in running text.
_SENTIMENT_EXCLUDED = frozenset({"like", "no", "yes", "please", "well", "pretty", "kind", "ok", "okay"})
SENTIMENT_THRESHOLD = 0.05


@functools.cache
def vader_lexicon() -> dict[str, float]:
    """VADER's lexicon, read from the installed ``vaderSentiment`` package: {token: mean valence}."""
    text = (importlib.resources.files("vaderSentiment") / "vader_lexicon.txt").read_text(encoding="utf-8")
    lexicon = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            try:
                lexicon[parts[0]] = float(parts[1])
            except ValueError:
                continue
    return lexicon


@functools.lru_cache(maxsize=1 << 17)
def polarity(lower: str) -> int:
    """+1 / -1 for a positive / negative ADJ/ADV-like word, 0 otherwise."""
    if lower in _SENTIMENT_EXCLUDED:
        return 0
    found = readings(lower)
    if "ADJ" not in found and "ADV" not in found:
        return 0
    lexicon = vader_lexicon()
    valence = lexicon.get(lower)
    if valence is None:  # "happier" -> "happy": the ADJ/ADV lemma, never the verb's ("left" -> "leave")
        for lem in found.get("ADJ", ()) + found.get("ADV", ()):
            valence = lexicon.get(lem.lower())
            if valence is not None:
                break
    if valence is None:
        return 0
    if valence >= SENTIMENT_THRESHOLD:
        return 1
    if valence <= -SENTIMENT_THRESHOLD:
        return -1
    return 0


@functools.lru_cache(maxsize=1 << 17)
def _token_polarity(token: str) -> int:
    return polarity(token.lower())


def sentiment(tokens: tuple[str, ...]) -> str | None:
    polarities = list(map(_token_polarity, tokens))
    if not any(polarities):
        return None
    # Capitalised words after the first token are read as parts of names ("United Nations").
    score = sum(value for i, (value, token) in enumerate(zip(polarities, tokens, strict=True))
                if value and (i == 0 or token[:1].islower() or tokens[i - 1] in _SENTENCE_BREAKS))
    if score > 0:
        return "positive"
    if score < 0:
        return "negative"
    return None


# --------------------------------------------------------------------------- tense

_MODALS = frozenset({"will", "would", "shall", "should", "can", "could", "may", "might", "must",
                     "ought", "'ll", "'d"})
_CLITIC_TAGS = {"'s": frozenset({"VBZ"}), "'m": frozenset({"VBP"}), "'re": frozenset({"VBP"}),
                "'ve": frozenset({"VBP"})}
_PRESENT_BE = frozenset({"am", "is", "are", "'m", "'re"})
_SUBJECT_PRONOUNS = frozenset({"i", "you", "we", "they"})
_S_HOSTS = frozenset({"he", "she", "it", "that", "this", "there", "here", "what", "who", "where", "how"})
# A past form that is also an adjective ("tired", "excited", "used") counts as past only after
# one of these ("I tired of it", "they have used"); elsewhere it reads as an adjective.
_PAST_SUBJECTS = frozenset({"i", "you", "he", "she", "it", "we", "they", "who", "that", "which",
                            "have", "has", "had", "'ve", "'d"})


@functools.lru_cache(maxsize=1 << 17)
def verb_tags(lower: str) -> frozenset[str]:
    """Penn verb tags a lower-cased word can carry (VB VBD VBG VBN VBP VBZ, MD), from lemminflect,
    plus the marker ``SAME`` when one verb has the word as both past and base form ("put")."""
    if lower in _MODALS:
        return frozenset({"MD"})
    if lower in _CLITIC_TAGS:
        return _CLITIC_TAGS[lower]
    found = readings(lower)
    tags = set()
    lemmas = {lem.lower() for pos in ("AUX", "VERB") for lem in found.get(pos, ())}
    if lemmas:
        lm = _lemminflect()
        for lem in lemmas:
            with _lemminflect_lock:
                inflections = lm.getAllInflections(lem, upos="VERB")
            mine = {tag for tag, forms in inflections.items() if lower in forms}
            if mine & {"VBD", "VBN"} and mine & {"VB", "VBP"}:
                tags.add("SAME")
            tags |= mine
    elif lower.isalpha() and len(lower) > 4 and lower.endswith("ed") and not found:
        tags.add("VBD")  # unknown -ed word
    return frozenset(tags)


@functools.lru_cache(maxsize=1 << 17)
def _token_verb_tags(token: str) -> frozenset[str]:
    return verb_tags(token.lower())


def tense(tokens: tuple[str, ...]) -> str | None:
    all_tags = list(map(_token_verb_tags, tokens))
    if not any(all_tags):
        return None
    past = future = present = False
    for i, tags in enumerate(all_tags):
        if not tags:
            continue
        lower = tokens[i].lower()
        previous = tokens[i - 1].lower() if i else ""
        if "MD" in tags:
            future = True
        elif tags & {"VBD", "VBN"} and "SAME" not in tags:
            if "ADJ" in readings(lower) and previous not in _PAST_SUBJECTS:
                continue
            past = True
        elif lower in _PRESENT_BE or tags & {"VBZ", "VBG"}:
            if lower == "'s" and previous not in _S_HOSTS:
                continue
            present = True
        elif tags & {"VB", "VBP"} and (previous in _SUBJECT_PRONOUNS or previous == "to"):
            present = True
    if past:
        return "past"
    if future:
        return "future"
    if present:
        return "present"
    return None


# --------------------------------------------------------------------------- NER (approximate)

_TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr", "prof", "professor", "sir", "madam", "mister",
                     "uncle", "aunt", "president", "king", "queen", "captain"})
_ORG_SUFFIXES = frozenset({"company", "corporation", "inc", "ltd", "co", "university", "college",
                           "school", "institute", "association", "society", "club", "bank", "group",
                           "organization", "organisation", "foundation", "museum", "library",
                           "hospital", "council", "committee", "department", "ministry", "agency",
                           "union", "party", "team", "times", "news", "press", "airlines"})
_FAC_SUFFIXES = frozenset({"street", "road", "avenue", "bridge", "airport", "station", "tower",
                           "building", "square", "hall", "stadium"})
_LOC_SUFFIXES = frozenset({"river", "lake", "mountain", "mountains", "ocean", "sea", "island",
                           "islands", "valley", "desert", "park", "forest", "bay", "beach", "city",
                           "county", "state", "province"})
_MONTHS = frozenset({"january", "february", "march", "april", "may", "june", "july", "august",
                     "september", "october", "november", "december"})
_WEEKDAYS = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"})
_DATE_WORDS = frozenset({"today", "yesterday", "tomorrow"})
_DATE_NOUNS = frozenset({"week", "month", "year", "weekend", "summer", "winter", "spring", "autumn",
                         "fall", "century", "decade"})
_TIME_PREFIXES = frozenset({"this", "that", "every", "last", "yesterday", "tomorrow"})
_TIME_NOUNS = frozenset({"morning", "afternoon", "evening", "night"})
_ORDINAL_WORDS = frozenset({"first", "second", "third", "fourth", "fifth", "sixth", "seventh",
                            "eighth", "ninth", "tenth", "eleventh", "twelfth", "twentieth",
                            "hundredth", "thousandth"})
_NUMBER_WORDS = frozenset({"one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                           "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                           "seventeen", "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty",
                           "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "million",
                           "billion", "dozen"})
_CURRENCY_SYMBOLS = frozenset({"$", "£", "€", "¥"})
_MONEY_UNITS = frozenset({"dollar", "dollars", "cent", "cents", "pound", "pounds", "euro", "euros",
                          "yuan", "yen", "rmb"})
_QUANTITY_UNITS = frozenset({"km", "kilometer", "kilometers", "kilometre", "kilometres", "mile",
                             "miles", "meter", "meters", "metre", "metres", "kg", "kilogram",
                             "kilograms", "gram", "grams", "ton", "tons", "tonnes", "foot", "feet",
                             "inch", "inches", "litre", "litres", "liter", "liters", "degrees",
                             "cm", "mm", "hectares", "acres"})
_SENTENCE_BREAKS = frozenset({".", "!", "?", '"', "'", ":", ";", "(", "-", "\u201c", "\u201d"})
_YEAR_RE = re.compile(r"1[5-9]\d\d|20\d\d")
_ORDINAL_RE = re.compile(r"\d+(?:st|nd|rd|th)", re.IGNORECASE)


_DATE_NAMES = _WEEKDAYS | _MONTHS


def _is_capitalised(token: str) -> bool:
    return token[:1].isupper() and token.isalpha()


def _number_label(lowers: list[str], i: int) -> str:
    token = lowers[i]
    nxt = lowers[i + 1] if i + 1 < len(lowers) else ""
    previous = lowers[i - 1] if i else ""
    if nxt in ("%", "percent") or (nxt == "per" and i + 2 < len(lowers) and lowers[i + 2] == "cent"):
        return "PERCENT"
    if previous in _CURRENCY_SYMBOLS or nxt in _MONEY_UNITS:
        return "MONEY"
    if nxt in _QUANTITY_UNITS:
        return "QUANTITY"
    if token[0].isdigit():
        if ":" in token or nxt in ("am", "pm", "o'clock"):
            return "TIME"
        if _ORDINAL_RE.fullmatch(token):
            return "ORDINAL"
        if _YEAR_RE.fullmatch(token):
            return "DATE"
    return "CARDINAL"


@functools.lru_cache(maxsize=1 << 17)
def _may_start_entity(token: str) -> bool:
    lower = token.lower()
    return (token[:1].isdigit() or token[:1].isupper() or lower in _NUMBER_WORDS or lower in _ORDINAL_WORDS
            or lower in _WEEKDAYS or lower in _DATE_WORDS or lower in ("last", "next", "this", "tonight")
            or lower in _TIME_PREFIXES)


def entity_labels(tokens: tuple[str, ...]) -> set[str]:
    triggers = list(map(_may_start_entity, tokens))
    if not any(triggers):
        return set()
    lowers = [token.lower() for token in tokens]
    labels: set[str] = set()
    n = len(tokens)
    i = 0
    while i < n:
        if not triggers[i]:
            i += 1
            continue
        token, lower = tokens[i], lowers[i]
        nxt = lowers[i + 1] if i + 1 < n else ""
        if token[0].isdigit() or lower in _NUMBER_WORDS:
            labels.add(_number_label(lowers, i))
        elif lower in _ORDINAL_WORDS:
            labels.add("ORDINAL")
        elif lower in _WEEKDAYS or lower in _DATE_WORDS or (lower in _MONTHS and _is_capitalised(token)):
            labels.add("DATE")
        elif lower in ("last", "next", "this") and nxt in _DATE_NOUNS:
            labels.add("DATE")
            i += 1
        elif lower == "tonight" or (lower in _TIME_PREFIXES and nxt in _TIME_NOUNS):
            labels.add("TIME")
        elif _is_capitalised(token) and lower not in STOPWORDS:
            j = i + 1
            while j < n and lowers[j] not in _DATE_NAMES and (
                    _is_capitalised(tokens[j])
                    or (lowers[j] == "of" and j + 1 < n and _is_capitalised(tokens[j + 1]))):
                j += 1
            label = _span_label(tokens, lowers, i, j)
            if label:
                labels.add(label)
            i = j
            continue
        i += 1
    return labels


def _span_label(tokens, lowers, start: int, end: int) -> str | None:
    previous = lowers[start - 1] if start else ""
    titled = previous in _TITLES or (previous == "." and start >= 2 and lowers[start - 2] in _TITLES)
    initial = not titled and (start == 0 or previous in _SENTENCE_BREAKS)
    words = tokens[start:end]
    if words[0].lower() in _TITLES:
        return "PERSON" if len(words) > 1 else None
    text = " ".join(words)
    last = words[-1].lower()
    if titled:
        return "PERSON"
    if text in PLACES:
        return PLACES[text]
    if last in _ORG_SUFFIXES and len(words) > 1:
        return "ORG"
    if last in _FAC_SUFFIXES and len(words) > 1:
        return "FAC"
    if last in _LOC_SUFFIXES and len(words) > 1:
        return "LOC"
    if words[0] in GIVEN_NAMES:
        return "PERSON"
    if words[0].isupper() and 2 <= len(words[0]) <= 5 and len(words) == 1:
        return "ORG"
    if initial and len(words) == 1:
        return None  # an ordinary word capitalised at the start of a sentence
    return "MISC"


# --------------------------------------------------------------------------- typos

TYPO_MAX_EDIT_DISTANCE = 2
_DICTIONARY_FILE = "frequency_dictionary_en_82_765.txt"
_symspell_lock = threading.Lock()


@functools.cache
def dictionary_words() -> frozenset[str]:
    """The words of symspellpy's bundled English frequency dictionary (read from the package)."""
    text = (importlib.resources.files("symspellpy") / _DICTIONARY_FILE).read_text(encoding="utf-8")
    return frozenset(line.split(" ", 1)[0] for line in text.splitlines() if line)


@functools.cache
def _symspell():
    from symspellpy import SymSpell  # noqa: PLC0415  (heavy: only the spelling feature needs it)

    speller = SymSpell(max_dictionary_edit_distance=TYPO_MAX_EDIT_DISTANCE, prefix_length=7)
    path = importlib.resources.files("symspellpy") / _DICTIONARY_FILE
    with importlib.resources.as_file(path) as real_path:
        if not speller.load_dictionary(str(real_path), term_index=0, count_index=1):
            raise RuntimeError(f"symspellpy could not load its bundled dictionary {_DICTIONARY_FILE}")
    return speller


@functools.lru_cache(maxsize=1 << 16)
def is_typo(token: str) -> bool:
    """A lower-case alphabetic word of 3+ letters, not in the dictionary, with a close correction.

    Capitalised words, numbers, punctuation and clitics are exempt by construction.
    """
    if len(token) < 3 or not token.isascii() or not token.isalpha() or not token.islower():
        return False
    if token in dictionary_words():
        return False
    from symspellpy import Verbosity  # noqa: PLC0415  (as above)

    with _symspell_lock:
        suggestions = _symspell().lookup(token, Verbosity.TOP, max_edit_distance=TYPO_MAX_EDIT_DISTANCE)
    return any(s.term != token and s.distance > 0 for s in suggestions)


# --------------------------------------------------------------------------- all features

NEGATION_KEY = "negation\tnegation"


@functools.lru_cache(maxsize=1 << 17)
def _is_negation(token: str) -> bool:
    return token.lower() in NEGATION_WORDS
TYPO_KEY = "typo\ttypo"


@functools.lru_cache(maxsize=1 << 18)
def text_features(text: str, types: frozenset[str]) -> frozenset[str]:
    """Every feature of ``types`` (``overlap`` excluded) that fires in ``text``."""
    tokens = tokenize(text)
    keys: set[str] = set()
    if "word" in types:
        keys.update(map(_word_key, tokens))
    if "negation" in types and any(map(_is_negation, tokens)):
        keys.add(NEGATION_KEY)
    if "sentiment" in types:
        value = sentiment(tokens)
        if value:
            keys.add("sentiment\t" + value)
    if "tense" in types:
        value = tense(tokens)
        if value:
            keys.add("tense\t" + value)
    if "ner" in types:
        keys.update("ner\t" + label for label in entity_labels(tokens))
    if "typo" in types and any(map(is_typo, tokens)):
        keys.add(TYPO_KEY)
    return frozenset(keys)


def clear_caches() -> None:
    for cached in (tokenize, _content_words, text_features):
        cached.cache_clear()


def clear_all_caches() -> None:
    """Also forget the per-token results (lemmas, polarities, verb tags, typo verdicts)."""
    clear_caches()
    for cached in (readings, lemma, _word_key, _is_negation, _content_lemma, polarity, _token_polarity, verb_tags,
                   _token_verb_tags, _may_start_entity, is_typo):
        cached.cache_clear()
