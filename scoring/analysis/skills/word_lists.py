"""The word lists and tables of the skills, read once at import from ``scoring/resources/skills``:
NLTK's 179 English stop words, the word lists of InDepth-Eva-MRC's skill code
(``skill_word_lists.json``), the WordNet 3.0 adjective antonyms, and the short hand-made lists
that stand in for a POS tagger or a segmenter (s1, s7, s8, s13)."""
from __future__ import annotations

import csv
import json

from scoring import RESOURCES_DIR
from scoring.analysis.skills.catalogue import UNK

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
