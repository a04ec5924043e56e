"""The perturbations that make the reconstructed test sets: one builder per skill, from a
:class:`Question` (its passage and question analysed, its gold answers located in the passage) to
the :class:`Perturbation` of its passage or question. :mod:`scoring.analysis.skills.variants` runs
them over a gold file; the decisions common to every skill are in the package docstring.

Per skill (``[UNK]`` = the mask token)
--------------------------------------
s1  Adjectives → their WordNet antonym (``wordnet30_adjective_antonyms.tsv``). No POS tagger is
    shipped (the rule-based fallback is named in the variant's ``method``), so an *adjective* is a
    word whose lower-cased form is an adjective lemma of that table with a **direct** antonym
    (indirect antonyms via a satellite's head are too noisy without word-sense disambiguation);
    the first direct antonym in WordNet sense order is used, multiword antonyms with spaces.
    Comparatives/superlatives (-er/-est of such a lemma, or an irregular form such as
    better/worst/fewer) get the base-form antonym, as in the original code. Skipped: stop words,
    non-alphabetic tokens, capitalised tokens that do not start a sentence (proper-noun parts such
    as "United", "North"), and words that are probably verbs, adverbs or nouns: (a) a short list
    of frequent homographs (``NOT_ADJECTIVES``: well, still, back, due, found, like, home, …); (b)
    any word right after "to" or a modal/"do" (``VERB_CUES``: "to open", "can close"); (c)
    participle forms (-ed, -ing, and ``IRREGULAR_PARTICIPLES`` such as made, sent, known) unless
    right after a determiner or degree adverb (``ADJECTIVAL_CUES``: "the used car", "highly
    developed" flip; "was used", "he sent" do not); (d) words that lemminflect's lexicon does not
    know as adjectives ("south"), and words it also knows as nouns, verbs or adverbs ("right",
    "later", "official") unless they stand in an adjective position: before a noun phrase ("the
    right side"), after a degree adverb, or after a linking verb with nothing nominal after them
    ("was open.", "is free of"). On the SQuAD dev set, against spaCy's small English model as a
    reference, 5.6% of the substitutions hit a non-adjective (13.2% before rule d), at the cost of
    about 15% of the adjectives left unchanged. Capitalisation of the first letter is kept.
s2  Function words (NLTK's 179 English stop words) → ``[UNK]``.
s3  Content words (tokens that are neither stop words nor punctuation) → ``[UNK]``. Built here,
    but the variant is "not applicable" (``S3_NOT_APPLICABLE`` in ``variants`` says why).
s4  Words shuffled within each sentence in phrase units cut from the text. **Deviation:** the
    original method cuts each sentence into runs of the answer's token count aligned on the
    answer (merging sentences an answer crosses), so the public passage would reveal the
    answer's length and narrow down its position. Here the units never depend on the gold:
    English units start at a preposition, subordinator, relative, auxiliary, "to" or determiner
    (``PHRASE_OPENERS``, ``DETERMINERS``; "in the" stays together; not at "of", "and", "or",
    which mostly join one noun phrase) and after punctuation (except a comma between two
    capitalised words or numbers: "Santa Clara, California"), about 3.6 words each on the SQuAD
    dev set; Chinese units are the pieces between commas, enumeration commas, semicolons and
    colons. Each sentence's units but the sentence-final token are shuffled with the question's
    generator; the final token stays last, attached as in the original (``fix_eos``). Units are
    joined by one space (Chinese: no space, except between two ASCII words). A gold answer that no
    longer reads as one contiguous span is lost, and long answers are lost more often, so the
    build then keeps the same share of questions for every answer length
    (``variants.balance_answer_lengths``). SQuAD dev: kept 69/70/70/68% of the questions with
    1/2/3/4+-word answers (before: 99/79/56/29% with a grid of 3 tokens); CMRC 2018 dev: about
    94% (before: about 40% with a grid of 5 characters, fewer the longer the answer).
s5  Sentence order shuffled (a non-identity permutation when there are ≥ 2 sentences); joined
    by one space (Chinese: none). **Deviation:** the original merges the sentences a gold answer
    crosses first, which would show where the answer is; here an answer that crosses sentences
    is lost (none on the SQuAD dev set, 1 answer on CMRC 2018 dev).
s6  Back-translation EN→FR→EN of every passage sentence (built in
    :mod:`scoring.analysis.skills.back_translation`), only when translation models are
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
s9  Demonstratives this, that, these, those → ``[UNK]`` where they are **pronouns** (rule-based
    fallback, no parser: see ``_demonstrative_pronoun``): followed by punctuation, the end of the
    sentence, an auxiliary, a preposition, a conjunction, a relative or a verb-only word; "that"
    before a word also only where a clause can start, so neither a determiner ("this bridge"), a
    complementiser ("said that it") nor a relative ("the team that won") is masked. SQuAD dev,
    against spaCy's small English model: 103 masks (89.9% precision, 86% recall on 93 pronouns;
    before: all 528 occurrences, 303 of them "that", 17.6% precision).
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
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .catalogue import EN
from .edits import Edit, Perturbation, mask_where
from .randomness import randint, shuffle
from .text import ASCII_ALNUM, Text, is_punct
from .word_lists import (
    ADJECTIVAL_CUES,
    ADJECTIVE_LEMMAS,
    AFTER_PREDICATIVE,
    CARDINAL_WORDS,
    CAUSAL_WORDS,
    COMPARATIVE_WORDS,
    DEGREE_ADVERBS,
    DEMONSTRATIVES,
    DETERMINERS,
    DIRECT_ANTONYMS,
    HYPOTHETICAL_WORDS,
    INTERROGATIVES_EN,
    INTERROGATIVES_ZH,
    IRREGULAR_COMPARATIVES,
    IRREGULAR_PARTICIPLES,
    LINKING_VERBS,
    LOGICAL_WORDS,
    NOT_ADJECTIVES,
    NOT_COMPARATIVES,
    NOT_INTERROGATIVES_ZH,
    PERSONAL_PRONOUNS,
    PHRASE_OPENERS,
    PRONOUN_FOLLOWERS,
    STOPWORDS,
    THAT_PRONOUN_AFTER,
    VERB_CUES,
    word_classes,
)

NUMBER_RANGE = (1000, 10000)
ZH_CLAUSE_MARKS = frozenset("，、；：,;:")
# How the skills that would need a POS tagger or a parser decide without one (shown with each
# variant: see the package docstring, "Fallbacks").
METHODS = {
    "s1": "rule-based fallback (no POS tagger): an adjective is a word of the WordNet antonym table that "
          "lemminflect's lexicon knows as an adjective, in an adjective position (before a noun phrase, after "
          "a degree adverb or a linking verb)",
    "s4": "words shuffled in phrase units cut from the text (English: at prepositions, subordinators, "
          "auxiliaries and determiners; Chinese: at commas, semicolons and colons), then the same share of "
          "questions kept for every answer length",
    "s9": "rule-based fallback (no POS tagger): this/that/these/those masked only as pronouns (followed by "
          "punctuation, an auxiliary, a preposition, a conjunction or a verb; \"that\" also only where a "
          "clause starts), not as determiners, complementisers or relatives",
}


@dataclass
class Question:
    id: str
    context: Text
    question: Text
    answers: list[tuple[int, int]]  # located gold spans in the original context
    rng: random.Random
    language: str


def _token_text(a: Text, i: int) -> str:
    s, e = a.tokens[i]
    return a.text[s:e]


def _is_capitalised_inside(a: Text, i: int) -> bool:
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


def _looks_like_verb_form(a: Text, i: int, word: str) -> bool:
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


def _neighbour(a: Text, i: int, step: int) -> str | None:
    """The lower-cased token before (step -1) or after (+1) token i in its sentence, else None."""
    j = i + step
    if j < 0 or j >= len(a.tokens) or a.token_sentence[j] != a.token_sentence[i]:
        return None
    return a.lower[j]


def _nominal(word: str | None) -> bool:
    """Can this next token head or continue a noun phrase ("bridge", "old", "Broncos")?"""
    if word is None or not word.isalpha() or word in STOPWORDS:
        return False
    classes = word_classes(word)
    return not classes or bool(classes & {"NOUN", "ADJ", "PROPN"})


def _in_adjective_position(a: Text, i: int, word: str) -> bool:
    """s1's stand-in for a POS tagger, after :func:`_looks_like_verb_form`: is this word an
    adjective here? A word that the lexicon knows only as an adjective is one; a word that can
    also be a noun, a verb or an adverb ("right", "later", "official") is one only before a
    noun phrase ("the right side"), after a degree adverb ("very light"), or after a linking
    verb with nothing nominal after it ("was open.", "is free of"). A word the lexicon does not
    know as an adjective ("south") is left alone, except a participle after a determiner or a
    degree adverb ("the known world", already checked)."""
    classes = word_classes(word)
    previous, following = _neighbour(a, i, -1), _neighbour(a, i, +1)
    if "ADJ" not in classes:
        participle = word.endswith(("ed", "en", "wn")) or word in IRREGULAR_PARTICIPLES
        return participle and previous in ADJECTIVAL_CUES
    if classes <= {"ADJ", "PROPN"}:
        return True
    if previous in DEGREE_ADVERBS:
        return True
    if _nominal(following):
        return True
    return previous in LINKING_VERBS and (following is None or is_punct(following) or following in AFTER_PREDICATIVE)


def _s1(q: Question) -> Perturbation:
    a = q.context
    edits = []
    for i, word in enumerate(a.lower):
        if not word.isalpha() or word in STOPWORDS or _is_capitalised_inside(a, i):
            continue
        antonym = DIRECT_ANTONYMS.get(word)
        if antonym is None:
            base = _comparative_base(word)
            antonym = DIRECT_ANTONYMS.get(base) if base else None
        if antonym is not None and not _looks_like_verb_form(a, i, word) and _in_adjective_position(a, i, word):
            edits.append(Edit(*a.tokens[i], _match_case(_token_text(a, i), antonym)))
    return Perturbation(context_edits=edits)


def _mask_skill(predicate_factory):
    def run(q: Question) -> Perturbation:
        a = q.context
        return Perturbation(context_edits=mask_where(a, predicate_factory(a)))
    return run


_s2 = _mask_skill(lambda a: lambda i: a.lower[i] in STOPWORDS)
_s3 = _mask_skill(lambda a: lambda i: a.lower[i] not in STOPWORDS and not is_punct(a.lower[i]))
_s7 = _mask_skill(lambda a: lambda i: a.lower[i] in COMPARATIVE_WORDS
                  or (_comparative_base(a.lower[i]) is not None and not _is_capitalised_inside(a, i)))


_CLAUSE_END = frozenset({".", "!", "?", ";", ":"})


def _demonstrative_pronoun(a: Text, i: int) -> bool:
    """s9 without a tagger: is this, that, these or those a pronoun here (not a determiner, a
    complementiser or a relative)? It is one when nothing nominal follows: punctuation or the
    end of the sentence, a word of ``PRONOUN_FOLLOWERS`` (auxiliaries, prepositions,
    conjunctions, relatives: "this is", "those of", "those who") or a word that can only be a
    verb ("these include"). Before a word, "that" must moreover stand where a clause can start
    (sentence start, punctuation, ``THAT_PRONOUN_AFTER``): after a noun it is a relative ("the team
    that won"); before a full stop, "!", "?", ";" or ":" it is a pronoun ("liked that.")."""
    word = a.lower[i]
    if word not in DEMONSTRATIVES:
        return False
    following = _neighbour(a, i, +1)
    verb_only = following is not None and bool(word_classes(following)) and word_classes(following) <= {"VERB", "AUX"}
    if not (following is None or is_punct(following) or following in PRONOUN_FOLLOWERS or verb_only):
        return False
    if word != "that" or following is None or following in _CLAUSE_END:
        return True  # "liked that." is a pronoun; "said that, in 1990" or 'said that "...' is not
    previous = _neighbour(a, i, -1)
    return previous is None or is_punct(previous) or previous in THAT_PRONOUN_AFTER


_s9 = _mask_skill(lambda a: lambda i: _demonstrative_pronoun(a, i))
_s9p = _mask_skill(lambda a: lambda i: a.lower[i] in PERSONAL_PRONOUNS
                   and not (len(a.lower[i]) > 1 and _token_text(a, i).isupper()))
_s10 = _mask_skill(lambda a: lambda i: a.lower[i] in CAUSAL_WORDS)
_s11 = _mask_skill(lambda a: lambda i: a.lower[i] in HYPOTHETICAL_WORDS)
_s12 = _mask_skill(lambda a: lambda i: a.lower[i] in LOGICAL_WORDS)


def _joiner(language: str, left: str, right: str) -> str:
    if language == EN:
        return " "
    return " " if ASCII_ALNUM.match(left[-1:]) and ASCII_ALNUM.match(right[:1]) else ""


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


def _place_answers(q: Question, edit_index: int, edit: Edit, pieces: Sequence[tuple[int, int]],
                   offsets: Sequence[int], out: Perturbation) -> None:
    """An edit rearranged the original ``pieces`` (character spans) to ``offsets`` inside
    ``edit.text``. Every gold answer overlapping the edit is either placed (it survives as one
    contiguous span with its exact text) or lost. The edit itself never depends on the gold."""
    def moved(offset: int) -> int | None:
        for (ps, pe), new_offset in zip(pieces, offsets, strict=True):
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


def _clause_units(a: Text, movable: list[int]) -> list[list[int]]:
    """Chinese s4 units, from the text alone: the pieces of a sentence between its commas,
    enumeration commas, semicolons and colons (the mark ends its piece)."""
    units: list[list[int]] = [[]]
    for i in movable:
        units[-1].append(i)
        if a.lower[i] in ZH_CLAUSE_MARKS:
            units.append([])
    return [unit for unit in units if unit]


def _phrase_units(a: Text, movable: list[int]) -> list[list[int]]:
    """English s4 units, from the text alone: a unit starts at a phrase opener or a determiner
    (unless the word before it is one: "in the" stays together) and after punctuation, except a
    comma between two capitalised words or numbers ("Santa Clara, California", "May 7, 2016")."""
    units: list[list[int]] = []
    for position, i in enumerate(movable):
        word = a.lower[i]
        previous = a.lower[movable[position - 1]] if position else None
        starts = not units
        if previous is not None:
            opener = word in PHRASE_OPENERS or word in DETERMINERS
            previous_opener = previous in PHRASE_OPENERS or previous in DETERMINERS
            if is_punct(previous) and not is_punct(word):
                before = a.text[slice(*a.tokens[movable[position - 2]])] if position > 1 else ""
                after = a.text[slice(*a.tokens[i])]
                starts = not (previous == "," and before[:1].isupper() | before[:1].isdigit()
                              and (after[:1].isupper() or after[:1].isdigit()))
            elif opener and not previous_opener and not is_punct(previous):
                starts = True
        if starts:
            units.append([i])
        else:
            units[-1].append(i)
    return units


def _s4(q: Question) -> Perturbation:
    a = q.context
    out = Perturbation()
    token_starts = [s for s, _ in a.tokens]
    for bs, be in a.sentences:
        token_ids = list(range(bisect.bisect_left(token_starts, bs), bisect.bisect_left(token_starts, be)))
        if len(token_ids) < 3:  # fewer than two movable tokens before the sentence-final one
            continue
        movable, final = token_ids[:-1], token_ids[-1]
        # Units cut from the text alone (never from the gold: see s4 above and "Public inputs"
        # in the package docstring).
        segments = _phrase_units(a, movable) if q.language == EN else _clause_units(a, movable)
        if len(segments) < 2:
            continue
        order = list(range(len(segments)))
        shuffle(q.rng, order)
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
        edit = Edit(a.tokens[movable[0]][0], final_span[1], new_text)
        out.context_edits.append(edit)
        _place_answers(q, len(out.context_edits) - 1, edit, spans, offsets, out)
    return out


def _s5(q: Question) -> Perturbation:
    a = q.context
    blocks = list(a.sentences)  # never merged around an answer: that would point at it
    if len(blocks) < 2:
        return Perturbation()
    order = list(range(len(blocks)))
    while order == sorted(order):  # a non-identity permutation (expected < 2 draws)
        shuffle(q.rng, order)
    spans = [blocks[k] for k in order]
    new_text, offsets = _join(q.language, [a.text[s:e] for s, e in spans])
    out = Perturbation(context_edits=[Edit(blocks[0][0], blocks[-1][1], new_text)])
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


def _s8(q: Question) -> Perturbation:
    a = q.context
    chosen: dict[str, str] = {}

    def number_for(surface: str) -> str:
        if surface not in chosen:
            chosen[surface] = str(randint(q.rng, *NUMBER_RANGE))
        return chosen[surface]

    edits = []
    if q.language == EN:
        for i, (s, e) in enumerate(a.tokens):
            word = a.text[s:e]
            if _EN_NUMBER_TOKEN.match(word):
                for m in _DIGIT_RUN.finditer(word):
                    edits.append(Edit(s + m.start(), s + m.end(), number_for(m.group())))
            elif a.lower[i] in CARDINAL_WORDS:
                edits.append(Edit(s, e, number_for(a.lower[i])))
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
            edits.append(Edit(s, e, number_for(text[s:e])))
    return Perturbation(context_edits=edits)


def _s13(q: Question) -> Perturbation:
    a = q.question
    if q.language == EN:
        return Perturbation(question_edits=mask_where(
            a, lambda i: not (a.lower[i] in INTERROGATIVES_EN or is_punct(a.lower[i]))))
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
    return Perturbation(question_edits=mask_where(
        a, lambda i: not is_punct(a.lower[i]) and a.tokens[i][0] not in kept_chars))


def _s14(q: Question) -> Perturbation:
    a = q.context
    question_tokens = {w for w in q.question.lower if not is_punct(w)}
    scores = [0] * len(a.sentences)
    for i, word in enumerate(a.lower):
        if word in question_tokens:
            scores[a.token_sentence[i]] += 1
    best = max(scores, default=0)
    keep = {k for k, score in enumerate(scores) if score == best}
    return Perturbation(context_edits=mask_where(a, lambda i: a.token_sentence[i] not in keep))


BUILDERS: dict[str, Callable[[Question], Perturbation]] = {
    "s1": _s1, "s2": _s2, "s3": _s3, "s4": _s4, "s5": _s5, "s7": _s7, "s8": _s8, "s9": _s9,
    "s9p": _s9p, "s10": _s10, "s11": _s11, "s12": _s12, "s13": _s13, "s14": _s14,
}
MASKING_SKILLS = frozenset({"s2", "s3", "s7", "s9", "s9p", "s10", "s11", "s12", "s14"})
RANDOM_SKILLS = frozenset({"s4", "s5", "s8"})
