"""The skill catalogue: the 14 skills of InDepth-Eva-MRC (Wu et al., CIKM 2022) plus s9p, with
their group, expected reading and languages, and the names every module of the package shares
(mask token, languages, build statuses). See docs/diagnostics.md#skill-based-reconstructed-sets.
"""
from __future__ import annotations

UNK = "[UNK]"  # what a dropped token becomes ("drop" = mask, see the package docstring)
EN, ZH = "en", "zh"

READING_LARGE = "large gap = relies on the skill"
READING_SHORTCUT = "small gap = shortcut"
READING_ROBUST = "small gap = robust"
GROUP_READING, GROUP_REASONING, GROUP_QUERY = "reading", "reasoning", "reasoning_with_query"
GROUP_LABELS = {GROUP_READING: "Reading", GROUP_REASONING: "Reasoning",
                GROUP_QUERY: "Reasoning with the query"}

OK, NOT_APPLICABLE, NOT_CONFIGURED = "ok", "not applicable", "not configured"


def _skill(name, skill, method, group, reading, languages):
    return {"name": name, "skill": skill, "method": method, "group": group, "reading": reading,
            "languages": frozenset(languages)}


# Skill texts from the "Analysis Principles" of InDepth-Eva-MRC (Wu et al., CIKM 2022); groups
# from its figure (reading s1–s6, reasoning s7–s12, reasoning with the query s13–s14); readings
# from its analysis strategy.
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
