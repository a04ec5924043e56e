"""Skill gaps under the null, with known truth: a system whose answers do not change (the same span
on the original and on the variant, read as the variant passage reads) has no gap, for every
skill built, because both sides are scored against the same kept references
(``scoring.analysis.skills.kept_references``). The passages are self-made; several questions
have a second, long reference that some variants break up or cut off (s4, s5, s14) while they
keep the question with the short one: scored against all references on the original side, such
questions gave a spurious gap."""
import random

import pytest

from scoring.analysis import skills
from scoring.metrics import expmrc

SENTENCES = [
    "The old bridge over the {name} river was built in {year} because the river flooded every spring.",
    "If the water rises, this bridge closes and {person} waits with her two dogs.",
    "{person} crossed it later; she was happier than before and larger crowds followed.",
    "That crossing took {minutes} minutes, not an hour, and the town did not complain.",
]
NAMES = ["Avon", "Derwent", "Tamar", "Exe", "Wye", "Tees", "Ouse", "Nene"]
PEOPLE = ["Anna", "Maria", "Lena", "Sofia", "Clara", "Ida"]


def synthetic_gold(n_paragraphs=24, seed=3):
    """Span questions with a short answer and, for half of them, a second, long reference: one
    running over a sentence boundary (what shuffles break) or in another sentence (what s14 cuts)."""
    rng = random.Random(seed)
    data = []
    for i in range(n_paragraphs):
        values = {"name": rng.choice(NAMES), "year": str(1800 + rng.randrange(150)), "person": rng.choice(PEOPLE),
                  "minutes": str(10 + rng.randrange(80))}
        context = " ".join(sentence.format(**values) for sentence in SENTENCES)
        person_later = context.index(f"{values['person']} crossed it later")
        questions = [
            ("When was the old bridge built?", (values["year"], None), f"{values['year']} because the river flooded"),
            ("Who crossed it later, happier than before?", (values["person"], person_later),
             f"{values['person']} waits with her two dogs"),
            ("How long did that crossing take?", (f"{values['minutes']} minutes", None), None),
            ("Why was the bridge built?", ("the river flooded every spring", None),
             "river flooded every spring. If the water rises"),
        ]
        qas = []
        for k, (question, (short, start), long) in enumerate(questions):
            answers = [{"text": short, "answer_start": context.index(short) if start is None else start}]
            if long and (i + k) % 2 == 0:
                answers.append({"text": long, "answer_start": context.index(long)})
            qas.append({"id": f"p{i}-q{k}", "question": question, "answers": answers,
                        "evidences": [context.split(". ")[0]]})
        data.append({"title": f"t{i}", "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": "expmrc-squad-synthetic", "data": data}


def answers_of(gold):
    return {qa["id"]: [a["text"] for a in qa["answers"]]
            for article in gold["data"] for p in article["paragraphs"] for qa in p["qas"]}


def read_back(variant_gold):
    """The variant's answers read back as the original text (masks put back by position)."""
    out = {}
    for article in variant_gold["data"]:
        for paragraph in article["paragraphs"]:
            context, masks = paragraph["context"], paragraph.get("masks") or []
            for qa in paragraph["qas"]:
                out[qa["id"]] = [skills.scorer.restore(context, masks, a["answer_start"],
                                                       a["answer_start"] + len(a["text"])) for a in qa["answers"]]
    return out


def unchanged_system(gold, variant_gold, seed):
    """(original predictions, variant predictions) of a system whose answers do not change: per
    question the short reference, its first word, the long reference or an unrelated phrase, the
    same text on both sides, except where the variant rewrote that reference (s1 antonyms, s8
    numbers): there the same span reads as rewritten, and the system answers it so."""
    rng = random.Random(seed)
    variant_answers = read_back(variant_gold)
    original, variant = {}, {}
    for key, references in answers_of(gold).items():
        choice = rng.choices(["short", "first word", "long", "wrong"], weights=[4, 2, 2, 2])[0]
        index = 1 if choice == "long" and len(references) > 1 else 0
        original_text = references[index]
        kept = variant_answers.get(key)
        variant_text = original_text
        if kept is not None and original_text not in kept and len(kept) == len(references):
            variant_text = kept[index]  # rewritten by the variant, every reference kept: the same span
        texts = [(original, original_text), (variant, variant_text)] if kept is not None else [(original, original_text)]
        for side, text in texts:
            answer = {"first word": text.split()[0], "wrong": "an unrelated phrase"}.get(choice, text)
            side[key] = {"answer": answer, "evidence": "x"}
    return original, variant


@pytest.fixture(scope="module")
def built():
    gold = synthetic_gold()
    return gold, {name: result for name, result in skills.build_all(gold, seed=0).items() if result["status"] == "ok"}


def gaps_for(gold, variants, seed, *, kept_both_sides=True):
    variant_f1, original_by_skill = {}, {}
    plain = {}
    for name, result in variants.items():
        original, variant = unchanged_system(gold, result["gold"], seed)
        plain[name] = {q["key"]: q["answer"] for q in expmrc.score_predictions(gold, original).per_question}
        variant_f1[name] = {q["key"]: q["answer"] for q in skills.score_variant(result["gold"], variant).per_question}
        if kept_both_sides:
            original_by_skill[name] = skills.original_item_f1_on_kept(gold, original, {name: result["gold"]})[name]
        else:
            original_by_skill[name] = plain[name]
    return skills.skill_gaps({}, variant_f1, seed=seed, n_resamples=200, original_by_skill=original_by_skill)


def test_references_are_dropped_by_some_variants(built):
    """The set-up has what the test is about: questions kept with fewer references."""
    gold, variants = built
    originals = answers_of(gold)
    fewer = {name: sum(len(kept) < len(originals[key]) for key, kept in
                       skills.kept_references(gold, result["gold"]).items())
             for name, result in variants.items()}
    assert fewer["s4"] > 0 and fewer["s5"] > 0 and fewer["s14"] > 0, fewer
    assert fewer["s2"] == 0  # a masking skill that keeps every answer (read back) drops none


def test_unchanged_answers_give_no_gap_on_any_skill(built):
    """Null simulation over 8 systems: for every built skill the gap's 95% CI holds 0 in every
    run (the gap is exactly 0: both sides see the same span against the same references)."""
    gold, variants = built
    assert {"s1", "s2", "s4", "s5", "s8", "s13", "s14"} <= set(variants)
    misses = {name: 0 for name in variants}
    for seed in range(8):
        for name, gap in gaps_for(gold, variants, seed).items():
            misses[name] += not (gap["ci_low"] <= 0.0 <= gap["ci_high"])
            assert gap["gap"] == pytest.approx(0.0, abs=1e-9), (name, seed, gap)
    assert misses == {name: 0 for name in variants}


def test_scoring_the_original_against_every_reference_would_show_a_gap(built):
    """The fault this guards against: the original side against all references gives the skills
    that drop references a positive gap for a system whose answers did not change, with s14's CI
    excluding 0 (the page would read "relies on" a skill the system never used)."""
    gold, variants = built
    biased = gaps_for(gold, variants, seed=0, kept_both_sides=False)
    assert biased["s14"]["gap"] > 0 and biased["s14"]["ci_low"] > 0
    assert biased["s5"]["gap"] > 0
