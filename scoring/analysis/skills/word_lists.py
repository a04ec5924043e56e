"""The word lists and tables of the skills, read once at import from ``scoring/resources/skills``:
NLTK's 179 English stop words, the word lists of InDepth-Eva-MRC's skill code
(``skill_word_lists.json``), the WordNet 3.0 adjective antonyms, and the short hand-made lists
that stand in for a POS tagger or a segmenter (s1, s7, s8, s9, s13), with the word classes of
``lemminflect``'s bundled lexicon (:func:`word_classes`: which parts of speech a word can have,
out of context)."""
from __future__ import annotations

import csv
import functools
import json

from ... import RESOURCES_DIR
from .catalogue import UNK

RESOURCES = RESOURCES_DIR / "skills"


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
# s1 without a POS tagger (see s1 in scoring.analysis.skills.perturbations). Frequent words of the SQuAD dev passages
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


# s9 without a tagger (see s9 in scoring.analysis.skills.perturbations): a demonstrative is a
# pronoun when what follows cannot continue a noun phrase: punctuation or the end, an auxiliary
# or a form of "be"/"have"/"do", a preposition, a conjunction, a relative ("those who"), a few
# adverbs, or a word that can only be a verb ("these include").
PRONOUN_FOLLOWERS = frozenset({
    "is", "was", "are", "were", "be", "been", "being", "'s", "'re", "has", "have", "had", "having", "will",
    "would", "can", "could", "shall", "should", "may", "might", "must", "do", "does", "did", "'ll", "'d", "'ve",
    "of", "in", "on", "at", "for", "with", "by", "from", "to", "into", "as", "about", "than", "after", "before",
    "during", "under", "over", "through", "without", "within", "between", "against", "among", "like", "via",
    "and", "or", "but", "nor", "yet", "who", "whom", "whose", "which", "also", "alone", "too", "only",
})
# "that" before such a word is a demonstrative pronoun only where a clause can start: after
# nothing, punctuation, a conjunction, a preposition or a form of "be"/"do" ("and that was",
# "like that", "is that"). After a noun it is a relative pronoun ("the team that won").
THAT_PRONOUN_AFTER = frozenset({
    "and", "or", "but", "nor", "so", "yet", "because", "while", "although", "though", "since", "if", "when",
    "whereas", "of", "in", "on", "at", "for", "with", "by", "from", "to", "into", "as", "about", "than", "like",
    "after", "before", "under", "over", "through", "without", "despite", "is", "was", "are", "were", "be", "been",
    "do", "does", "did", "done", "'s", "all",
})
# s1: verbs after which an adjective is predicative ("was open", "became larger").
LINKING_VERBS = frozenset({
    "is", "was", "are", "were", "be", "been", "being", "'s", "'re", "become", "becomes", "became", "becoming",
    "remain", "remains", "remained", "seem", "seems", "seemed", "appear", "appears", "appeared", "stay", "stays",
    "stayed", "prove", "proved", "proves", "look", "looks", "looked", "sound", "sounds", "sounded", "feel",
    "feels", "felt", "grow", "grew", "grown", "get", "gets", "got",
})
# s1: degree adverbs, after which a word is an adjective (or an adverb of degree) ("very old").
DEGREE_ADVERBS = frozenset({
    "very", "so", "too", "quite", "rather", "fairly", "extremely", "highly", "relatively", "increasingly",
    "particularly", "especially", "less", "least", "more", "most", "much", "far", "even", "still", "slightly",
    "somewhat", "largely", "mostly", "fully", "equally", "completely", "entirely", "generally", "sufficiently",
})
# s1: what may follow a predicative adjective ("was open to", "is free of", "remained small.").
AFTER_PREDICATIVE = frozenset({
    "and", "or", "but", "nor", "than", "to", "of", "for", "in", "on", "at", "with", "from", "about", "as", "by",
    "enough", "because", "since", "when", "while", "if", "that",
})

# s4 (English): a phrase unit starts at one of these words (unless the word before it starts a
# unit too, so "in the" stays together): prepositions, subordinators, relatives, auxiliaries and
# modals, "to"; and at a determiner or possessive. Not at "of", "and", "or", which mostly join
# the parts of one noun phrase ("the Colony of Victoria", "heat and pressure").
PHRASE_OPENERS = frozenset({
    "in", "on", "at", "for", "with", "by", "from", "to", "into", "onto", "as", "about", "than", "after",
    "before", "during", "under", "over", "through", "without", "within", "between", "against", "among", "like",
    "via", "since", "until", "upon", "across", "around", "behind", "beyond", "near", "throughout", "toward",
    "towards", "despite", "but", "nor", "yet", "because", "while", "although", "though", "if",
    "when", "where", "whereas", "unless", "who", "whom", "whose", "which", "that", "is", "was", "are", "were",
    "be", "been", "being", "has", "have", "had", "will", "would", "can", "could", "shall", "should", "may",
    "might", "must", "do", "does", "did",
})
DETERMINERS = frozenset({
    "the", "a", "an", "this", "that", "these", "those", "its", "their", "his", "her", "our", "my", "your",
    "some", "many", "several", "each", "every", "no", "any", "all", "both", "most", "such",
})


@functools.cache
def _lemminflect():
    import lemminflect  # noqa: PLC0415  (loads its bundled tables, ~0.3 s: only when s1 or s9 is built)

    return lemminflect


@functools.lru_cache(maxsize=1 << 16)
def word_classes(lower: str) -> frozenset[str]:
    """The universal parts of speech a lower-cased word can have in lemminflect's lexicon, out of
    context (``{"ADJ", "NOUN"}`` for "old"); empty for an unknown word or a non-word."""
    if not lower.isalpha():
        return frozenset()
    return frozenset(pos for pos, lemmas in _lemminflect().getAllLemmas(lower).items() if lemmas)

