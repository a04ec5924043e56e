"""Simulations with a known truth for the skill variants and their scoring: systems
whose skill gap is known in advance, scored with ``score_variant`` and ``skill_gaps`` as the server
scores a skills submission. A synthetic gold whose passages carry every feature the skills
perturb (adjectives, function words, comparatives, numbers, demonstrative and personal pronouns,
causal, hypothetical and logical words), with answers that the masking skills partly mask."""
import pytest

from scoring.analysis.skills import OK, SKILLS, UNK, build_all, score_variant, skill_gaps
from scoring.analysis.skills.perturbations import BUILDERS
from scoring.analysis.skills.variants import carried_text
from scoring.metrics import expmrc

NAMES = ["Anna", "Bruno", "Chen", "Dora", "Emil", "Farah", "Goran", "Hana"]


def synthetic_gold(n_paragraphs=30):
    paragraphs = []
    for i in range(n_paragraphs):
        name = NAMES[i % len(NAMES)]
        context = (f"The old bridge of Town{i} was built in {1800 + i} because the river flooded every spring. "
                   f"If the water rises, it closes, and that is why the mayor of Town{i} watches it. "
                   f"This was decided by {name}, who was happier than before. "
                   f"More than {20 + i} workers are not needed since each of them costs {100 + i} dollars.")
        answers = {
            "who": ("Who decided it?", name),
            "when": ("When was the bridge built?", f"in {1800 + i}"),
            "many": ("How many workers are not needed?", f"More than {20 + i} workers"),
            "why": ("Why was the bridge built?", "because the river flooded every spring"),
            "what": ("What is old?", f"The old bridge of Town{i}"),
        }
        paragraphs.append({"context": context, "qas": [
            {"id": f"p{i:02d}-{key}", "question": question, "evidences": [context.split(". ")[0] + "."],
             "answers": [{"text": text, "answer_start": context.index(text)}]}
            for key, (question, text) in answers.items()]})
    return {"version": "expmrc-squad-dev", "data": [{"title": "Synthetic", "paragraphs": paragraphs}]}


GOLD = synthetic_gold()


@pytest.fixture(scope="module")
def variants():
    results = build_all(GOLD, seed=0)
    assert {s for s, r in results.items() if r["status"] != OK} == {"s3", "s6"}  # not applicable, not configured
    return {skill: result for skill, result in results.items() if result["status"] == OK}


def questions(gold):
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield paragraph["context"], qa


def predicted_span(context, qa, k):
    """An imperfect system: the gold span, one word longer or shorter on either side, by item."""
    start = qa["answers"][0]["answer_start"]
    end = start + len(qa["answers"][0]["text"])
    if k % 4 == 1:  # one more word on the right
        following = context.find(" ", end + 1)
        end = following if following > 0 else end
    elif k % 4 == 2:  # one more word on the left
        start = context.rfind(" ", 0, start - 1) + 1
    elif k % 4 == 3 and " " in qa["answers"][0]["text"]:  # one word less on the left
        start = context.index(" ", start) + 1
    return start, end


def per_item(score):
    return {q["key"]: q["answer"] for q in score.per_question}


def answers(gold, texts):
    return {qa["id"]: {"answer": texts(context, qa), "evidence": qa["evidences"][0]} for context, qa in questions(gold)}


@pytest.mark.parametrize("constant", [f"{UNK} {UNK}", UNK, f"{UNK.lower()} {UNK} , the", f"{UNK}{UNK}"])
def test_a_constant_mask_scores_zero_on_every_variant(variants, constant):
    predictions = answers(GOLD, lambda context, qa: constant)
    assert expmrc.score_predictions(GOLD, predictions).answer == 0.0
    for skill, result in variants.items():
        assert score_variant(result["gold"], predictions).answer == 0.0, skill


def test_the_gold_spans_carried_through_each_variant_show_no_gap(variants):
    original = per_item(expmrc.score_predictions(GOLD, answers(GOLD, lambda context, qa: qa["answers"][0]["text"])))
    variant_f1 = {}
    for skill, result in variants.items():
        def texts(context, qa, skill=skill):
            start = qa["answers"][0]["answer_start"]
            carried = carried_text(context, qa, skill, (start, start + len(qa["answers"][0]["text"])))
            return qa["answers"][0]["text"] if carried is None else carried
        variant_f1[skill] = per_item(score_variant(result["gold"], answers(GOLD, texts)))
    gaps = skill_gaps(original, variant_f1, seed=0)
    assert set(gaps) == set(variants)
    for skill, gap in gaps.items():
        assert gap["n"] == variants[skill]["n_items"] > 0, skill
        assert (gap["gap"], gap["ci_low"], gap["ci_high"]) == (0.0, 0.0, 0.0), skill


def test_imperfect_spans_masked_the_same_way_show_no_gap(variants):
    """The reviewer's case: spans that overlap the gold only partly, returned on each variant
    masked (or substituted) exactly as the variant does it. Scoring the mask as a word gave a
    false s2 gap of +0.45 F1 on the SQuAD dev set; read by position there is none."""
    index = {qa["id"]: k for k, (_, qa) in enumerate(questions(GOLD))}

    def original_text(context, qa):
        start, end = predicted_span(context, qa, index[qa["id"]])
        return context[start:end]

    original = per_item(expmrc.score_predictions(GOLD, answers(GOLD, original_text)))
    assert 0.5 < sum(original.values()) / len(original) < 1.0  # imperfect indeed
    variant_f1 = {}
    for skill in ("s1", "s2", "s7", "s8", "s9", "s9p", "s10", "s11", "s12", "s13", "s14"):
        def texts(context, qa, skill=skill):
            return carried_text(context, qa, skill, predicted_span(context, qa, index[qa["id"]]))
        variant_f1[skill] = per_item(score_variant(variants[skill]["gold"], answers(GOLD, texts)))
    for skill, gap in skill_gaps(original, variant_f1, seed=0).items():
        assert abs(gap["gap"]) < 1.0 and gap["ci_low"] <= 0.0 <= gap["ci_high"], (skill, gap)


def test_a_system_failing_exactly_on_masked_answers_shows_the_planted_gap(variants):
    original = per_item(expmrc.score_predictions(GOLD, answers(GOLD, lambda context, qa: qa["answers"][0]["text"])))
    planted, variant_f1 = {}, {}
    for skill in ("s2", "s7", "s9", "s9p", "s10", "s11", "s12", "s14"):
        gold = variants[skill]["gold"]
        masked = {qa["id"] for _, qa in questions(gold) if UNK in qa["answers"][0]["text"]}
        planted[skill] = 100.0 * len(masked) / variants[skill]["n_items"]
        predictions = answers(gold, lambda context, qa, masked=masked: "" if qa["id"] in masked
                              else qa["answers"][0]["text"])
        variant_f1[skill] = per_item(score_variant(gold, predictions))
    gaps = skill_gaps(original, variant_f1, seed=0)
    assert planted["s2"] > 30 and planted["s12"] > 10 and planted["s9"] == 0  # masked answers exist
    for skill, gap in gaps.items():
        assert gap["gap"] == pytest.approx(planted[skill]), skill
        if planted[skill]:
            assert gap["ci_low"] > 0, skill


def test_the_same_masked_text_elsewhere_reads_as_what_it_hides_there():
    # "[UNK] river" occurs once: it reads as "the river". "[UNK] water" and "[UNK] river" are
    # read back to their own originals; a span that is only masks earns nothing.
    result = build_all(GOLD, seed=0)["s2"]
    paragraph = result["gold"]["data"][0]["paragraphs"][0]
    qa = next(qa for qa in paragraph["qas"] if qa["id"] == "p00-why")
    assert qa["answers"][0]["text"] == f"{UNK} {UNK} river flooded every spring"
    assert {"text": "because the river flooded every spring"} not in qa["answers"]
    gold = {"version": result["gold"]["version"], "data": [{"title": "", "paragraphs": [{**paragraph, "qas": [qa]}]}]}
    for prediction, expected in ((f"{UNK} river flooded every spring", 2 * 4 / 5 / (4 / 5 + 1)),
                                 (f"{UNK} {UNK} river flooded every spring", 1.0),
                                 ("river flooded", 2 * 1 * 0.4 / 1.4), (f"{UNK} {UNK}", 0.0)):
        score = score_variant(gold, {qa["id"]: {"answer": prediction, "evidence": ""}})
        assert score.per_question[0]["answer"] == pytest.approx(expected), prediction


def test_skills_are_all_covered():
    assert set(BUILDERS) == set(SKILLS) - {"s6"}
