"""Reconstructed test sets s1–s14 of the "Internal Skill-based Analysis" of InDepth-Eva-MRC
(Wu et al., CIKM 2022), and the skill gaps they measure; the user-facing summary is
docs/diagnostics.md#skill-based-reconstructed-sets.

Pure functions over plain dicts (no Django). Input: an ExpMRC span gold dict (SQuAD v1.1 layout
plus ``evidences``; English SQuAD or Chinese CMRC 2018). For each skill :func:`build_variant`
returns a new gold dict in the same layout, so ``scoring.metrics.expmrc.score_predictions`` scores it
unchanged, in which the passage (or, for s13, the question) is perturbed and every kept gold
answer is still a span of the new passage (``context[answer_start:]`` starts with its text).
:func:`skill_gaps` turns per-item answer F1 on the original and on each variant into the
reading of InDepth-Eva-MRC's analysis strategy (F1 gap with a paired bootstrap CI).

"The original code" below is the skill code published with InDepth-Eva-MRC (its ``Skill``
package, adapted from Sugawara et al., AAAI 2020); "the document" is its "Analysis Principles".

Decisions (where the document and the original code disagree or say nothing)
----------------------------------------------------------------------------
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
  the answer too). For the masking skills (s2, s7, s9, s9p, s10–s12, s14) a gold answer whose
  tokens are masked is kept as its masked span (e.g. ``[UNK] Broncos``), and each paragraph of
  the variant records its ``masks`` (where each mask is and what it hides; hidden gold only).
  A gold answer left with nothing but ``[UNK]``/punctuation/articles is removed, and a question
  left without gold answers is **dropped from the variant** and counted in ``n_dropped`` (s14
  drops the questions whose answer lies outside the kept sentences). For the moving skills
  (s4, s5, s6) a gold answer that does not survive as one contiguous span with its exact text is
  *lost* and removed the same way; s4 then keeps the same share of questions for every answer
  length (long answers are lost more often). The F1 gap is always computed on the kept items
  only, original vs variant. A variant that keeps no question at all is reported "not
  applicable" (an empty gold file is not a test set). ``counts`` in the result gives the details.
* **Scoring: masks never earn credit.** A variant is scored with :func:`score_variant`, not with
  the plain ExpMRC scorer (which would read ``[UNK]`` as a word ``unk`` matching every mask: the
  constant answer "[UNK] [UNK]" scored 19 F1 on s2 and 62 on s3). Answers are scored by position
  against the original text, as in Sugawara et al. (2020): the gold is the original answer; a
  prediction that is only masks scores 0; a prediction found in the variant passage where it
  reads one way once its masks are put back is scored as that original text; anything else
  has its masks removed (see :mod:`scoring.analysis.skills.scorer`).
* **s3 is "not applicable".** With every content word masked a gold answer keeps only its
  function words, and ExpMRC predictions carry no offsets to score a position by; the note says
  why (``S3_NOT_APPLICABLE`` in :mod:`scoring.analysis.skills.variants`).
* **Fallbacks.** No POS tagger or parser is shipped: s1 (adjectives), s4 (phrase units) and s9
  (demonstrative pronouns) use rules and lemminflect's word-class lexicon; each variant names
  its method in ``method`` (and at the end of its ``note``).
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

Per skill: see :mod:`scoring.analysis.skills.perturbations` (s6: also ``back_translation``).

Modules, each importing only modules listed before it: ``catalogue`` (SKILLS, the mask token,
languages, statuses), ``scorer`` (score_variant), ``word_lists``, ``text`` (sentences and
tokens), ``randomness``, ``edits``, ``perturbations`` (the builders of s1–s14 but s6),
``back_translation`` (s6, Marian models), ``variants`` (build_variant, build_all,
public_inputs), ``gaps`` (skill_gaps) and ``command`` (``python -m scoring skills``). Callers use
the names below, ``from scoring.analysis import skills; skills.build_all(...)``.
"""
from __future__ import annotations

from .back_translation import Translator, marian_translator
from .catalogue import (
    EN,
    GROUP_LABELS,
    GROUP_QUERY,
    GROUP_READING,
    GROUP_REASONING,
    NOT_APPLICABLE,
    NOT_CONFIGURED,
    OK,
    READING_LARGE,
    READING_ROBUST,
    READING_SHORTCUT,
    SKILLS,
    UNK,
    ZH,
)
from .gaps import skill_gaps
from .scorer import (
    MISSING_ORIGINAL,
    kept_references,
    original_item_f1_on_kept,
    parse_section,
    read_sections,
    score_variant,
    strip_masks,
)
from .variants import build_all, build_variant, public_inputs

__all__ = [
    "EN", "GROUP_LABELS", "GROUP_QUERY", "GROUP_READING", "GROUP_REASONING", "NOT_APPLICABLE",
    "NOT_CONFIGURED", "OK", "READING_LARGE", "READING_ROBUST", "READING_SHORTCUT", "SKILLS", "UNK", "ZH",
    "Translator", "build_all", "build_variant", "kept_references", "marian_translator", "original_item_f1_on_kept",
    "public_inputs", "score_variant", "skill_gaps",
    "strip_masks", "MISSING_ORIGINAL", "parse_section", "read_sections",
]
