"""The compare page and API (docs/diagnostics.md) on two skill submissions of one hidden span test set:
the scores with the paired p-value of the per-question scores, and the skill gaps side by side."""
import json

import pytest
from django.conf import settings
from django.test import Client
from rest_framework.test import APIClient

from benchmark import skill_sets
from benchmark.importers import import_expmrc
from benchmark.models import SkillVariant
from scoring.metrics import expmrc
from scoring.stats import paired_test
from submissions.models import Status, Submission
from submissions.tasks import score_submission
from tests.factories import make_task, make_user, perfect_predictions, token_for, upload_file

pytestmark = pytest.mark.django_db
BUILDERS = ["Ada Morrow", "Ivo Lindqvist", "Mira Okafor", "Tomas Reyes", "Lena Haas", "Piet Vogel"]
SKILLS_SUBMITTED = ("s2", "s5", "s13")


def mills_gold():
    """Six paragraphs, three questions each: 18 scored items."""
    paragraphs = []
    for p, builder in enumerate(BUILDERS):
        year = str(1801 + 7 * p)
        context = f"{builder} built the mill in {year}. The mill ground wheat for the village. It closed after a fire."
        first = context.split(". ")[0] + "."
        qas = []
        for kind, question, answer, evidence in (
                ("when", f"When was the mill of {builder.split()[0]} built?", year, first),
                ("who", "Who built the mill?", builder, first),
                ("what", "What did the mill grind?", "wheat", "The mill ground wheat for the village.")):
            qas.append({"id": f"mill-{p}-{kind}", "question": question, "evidences": [evidence],
                        "answers": [{"text": answer, "answer_start": context.index(answer)}]})
        paragraphs.append({"context": context, "qas": qas})
    return {"version": "expmrc-squad-dev", "data": [{"title": "Mills", "paragraphs": paragraphs}]}


def wrong_on_when_and_who(predictions):
    return {key: ({"answer": "the village", "evidence": value["evidence"]}
                  if key.endswith(("-when", "-who")) else value)
            for key, value in predictions.items()}


@pytest.fixture
def world(tmp_path):
    path = tmp_path / "mills.json"
    gold = mills_gold()
    path.write_text(json.dumps(gold))
    test_set, _ = import_expmrc(path, task_slug="expmrc-squad", version="v1", task_name="SQuAD", language="en")
    skill_sets.build(test_set)
    alice = make_user("alice")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(alice)}")
    variants = {v.skill: v for v in SkillVariant.objects.filter(test_set=test_set, skill__in=SKILLS_SUBMITTED)}
    assert {s: v.status for s, v in variants.items()} == dict.fromkeys(SKILLS_SUBMITTED, "ok")

    strong = {"original": perfect_predictions(gold)}
    weak = {"original": wrong_on_when_and_who(perfect_predictions(gold))}
    for skill, variant in variants.items():
        strong[skill] = perfect_predictions(variant.gold)
        weak[skill] = wrong_on_when_and_who(perfect_predictions(variant.gold))
    weak["s2"] = perfect_predictions(variants["s2"].gold)  # the weak system does better on s2
    ids = {}
    for name, content in (("Strong", strong), ("Weak", weak)):
        response = api.post("/api/tasks/expmrc-squad/submissions/",
                            {"file": upload_file(content), "method_name": name, "kind": "skills"}, format="multipart")
        assert response.status_code == 201, response.content
        assert score_submission(response.json()["id"]) == Status.SCORED
        ids[name] = response.json()["id"]
    page = Client()
    page.force_login(alice)
    return {"gold": gold, "api": api, "page": page, "ids": ids, "predictions": {"Strong": strong, "Weak": weak}}


def test_paired_p_value_is_the_sign_flip_test_of_the_per_question_scores(world):
    a, b = world["ids"]["Strong"], world["ids"]["Weak"]
    body = world["api"].get(f"/api/compare/?a={a}&b={b}").json()
    per_question = {name: [q["overall"] for q in expmrc.score_predictions(
        world["gold"], world["predictions"][name]["original"]).per_question] for name in ("Strong", "Weak")}
    expected = paired_test(per_question["Strong"], per_question["Weak"], n_resamples=settings.TIER_RESAMPLES, seed=0)
    paired = body["paired"]
    assert body["same_test_set"] and paired["applicable"] and paired["metric"] == "overall_f1"
    assert paired["p_value"] == pytest.approx(expected)
    assert paired["p_value"] < 0.01 and paired["significant"]  # 12 of 18 questions differ, all one way
    overall = next(m for m in body["metrics"] if m["metric"] == "overall_f1")
    assert overall["difference"] == pytest.approx(overall["a"] - overall["b"]) and overall["difference"] > 0
    # Symmetric, and an entry against itself is no difference at all.
    assert world["api"].get(f"/api/compare/?a={b}&b={a}").json()["paired"]["p_value"] == pytest.approx(expected)
    same = world["api"].get(f"/api/compare/?a={a}&b={a}").json()["paired"]
    assert same["p_value"] == 1.0 and not same["significant"]

    html = world["page"].get(f"/compare/?a={a}&b={b}").content.decode()
    assert f"p = {expected:.4f}" in html and "significant at 0.05" in html


def test_entries_on_different_test_sets_get_no_paired_test(world):
    other_task = make_task("expmrc-cmrc2018")
    from tests.factories import fixture_gold

    response = world["api"].post("/api/tasks/expmrc-cmrc2018/submissions/",
                                 {"file": upload_file(perfect_predictions(fixture_gold("expmrc-cmrc2018"))),
                                  "method_name": "Other"}, format="multipart")
    assert response.status_code == 201 and other_task.slug == "expmrc-cmrc2018"
    score_submission(response.json()["id"])
    body = world["api"].get(f"/api/compare/?a={world['ids']['Strong']}&b={response.json()['id']}").json()
    assert not body["same_test_set"] and not body["paired"]["applicable"]
    assert "different test sets" in body["paired"]["note"]


def test_skill_gaps_side_by_side(world):
    a, b = world["ids"]["Strong"], world["ids"]["Weak"]
    body = world["api"].get(f"/api/compare/?a={a}&b={b}").json()
    stored = {name: Submission.objects.get(pk=pk).details["skills"] for name, pk in world["ids"].items()}
    rows = {row["skill"]: row for row in body["skills"]}
    assert set(rows) == set(SKILLS_SUBMITTED)
    for skill, row in rows.items():
        assert row["a"]["gap"] == pytest.approx(stored["Strong"][skill]["gap"])
        assert row["b"]["gap"] == pytest.approx(stored["Weak"][skill]["gap"])
        assert row["a"]["name"] == row["b"]["name"] == stored["Strong"][skill]["name"]
    assert rows["s13"]["a"]["gap"] == pytest.approx(0.0)  # perfect on original and variant
    assert rows["s2"]["b"]["gap"] < 0  # the weak system did better on s2 than on the original

    html = world["page"].get(f"/compare/?a={a}&b={b}").content.decode()
    section = html[html.index('id="compare-skills"'):]
    section = section[:section.index("</section>")]
    for skill in SKILLS_SUBMITTED:
        assert f"<td>{skill} {rows[skill]['a']['name']}</td>" in section
    assert f"{rows['s2']['b']['gap']:.2f}" in section
