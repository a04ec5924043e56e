"""`manage.py build_skill_sets` on the small fixture tasks: every skill stored with its status,
listed by the API with public inputs; refused tasks exit 2; a broken translation model only
fails s6; sections of skills without a variant for good (s3, not applicable or not configured) are
accepted and reported as ignored, other sections a task cannot score are refused with the reason."""
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from benchmark.models import SkillVariant
from scoring.analysis.skills import SKILLS
from submissions.models import Status, Submission
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, token_for, upload_file
from tests.scoring.test_skills import garbage_marian_folder

pytestmark = pytest.mark.django_db


def build(slug):
    out = io.StringIO()
    call_command("build_skill_sets", "--task", slug, stdout=out)
    return out.getvalue()


def statuses(task):
    return dict(SkillVariant.objects.filter(test_set=task.current_test_set()).values_list("skill", "status"))


def test_builds_every_skill_of_a_small_task_and_the_api_lists_them():
    task = make_task("expmrc-squad")
    output = build("expmrc-squad")
    assert set(statuses(task)) == set(SKILLS)
    assert statuses(task)["s6"] == "not configured" and statuses(task)["s2"] == "ok"
    assert "  s2: ok\n" in output and "  s6: not configured (no translation models configured" in output
    assert f"expmrc-squad: {len(SKILLS)} skill sets in " in output
    assert f"  {len(SKILLS)}/{len(SKILLS)} skills built" in output  # progress lines

    listing = Client().get("/api/tasks/expmrc-squad/skills/").json()
    assert listing["build"]["status"] == "done" and listing["build"]["done"] == len(SKILLS)
    rows = {row["skill"]: row for row in listing["skills"]}
    assert [row["skill"] for row in listing["skills"]] == list(SKILLS)
    assert rows["s6"]["inputs_url"] is None and rows["s6"]["status"] == "not configured"
    inputs = Client().get(rows["s2"]["inputs_url"]).json()
    question_ids = [qa["id"] for a in inputs["data"] for p in a["paragraphs"] for qa in p["qas"]]
    assert sorted(question_ids) == ["fx-squad-1", "fx-squad-2", "fx-squad-3"]
    assert inputs["skill"] == "s2" and '"answers"' not in json.dumps(inputs)

    build("expmrc-squad")  # a rebuild replaces the variants, it does not add more
    assert SkillVariant.objects.filter(test_set=task.current_test_set()).count() == len(SKILLS)


@pytest.mark.parametrize("slug", ["no-such-task", "expmrc-race"])
def test_a_task_that_is_not_a_span_task_is_refused_with_exit_status_2(slug):
    make_task("expmrc-race")  # multiple choice: no skill sets
    with pytest.raises(CommandError, match=f"^{slug}: no span-extraction task of that name$") as refused:
        build(slug)
    assert refused.value.returncode == 2
    assert not SkillVariant.objects.exists()


def test_an_invalid_translation_model_folder_fails_only_s6(settings, tmp_path):
    pytest.importorskip("transformers", reason="loading Marian models needs transformers (optional)")
    broken = garbage_marian_folder(tmp_path / "marian")
    task = make_task("expmrc-squad")
    build("expmrc-squad")
    without_models = statuses(task)
    settings.TRANSLATION_MODELS = {"en-fr": str(broken), "fr-en": str(broken)}
    output = build("expmrc-squad")
    assert statuses(task) == without_models  # s6 "not configured", everything else as before
    note = SkillVariant.objects.get(test_set=task.current_test_set(), skill="s6").note
    assert note.startswith("translation model en-fr could not be loaded (") and "\n" not in note
    assert f"  s6: not configured ({note})" in output


def upload_skills(slug, document):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user())}")
    return api.post(f"/api/tasks/{slug}/submissions/",
                    {"file": upload_file(document), "method_name": "Skills", "kind": "skills"}, format="multipart")


def scored_skills(slug, document):
    response = upload_skills(slug, document)
    assert response.status_code == 201, response.json()
    assert score_submission(response.json()["id"]) == Status.SCORED
    return Submission.objects.get(pk=response.json()["id"])


def test_an_english_only_skill_on_a_chinese_task_is_accepted_and_reported_as_ignored():
    task = make_task("expmrc-cmrc2018")
    build("expmrc-cmrc2018")
    assert statuses(task)["s1"] == "not applicable" and statuses(task)["s13"] == "ok"
    original = perfect_predictions(fixture_gold("expmrc-cmrc2018"))
    entry = scored_skills("expmrc-cmrc2018", {"original": original, "s1": original})
    assert entry.details["ignored_sections"] == [
        {"skill": "s1", "reason": "not applicable: s1 is defined for English passages only"}]
    assert "s1" not in {name for name, gap in entry.details["skills"].items() if gap.get("gap") is not None}


def test_a_file_with_every_section_s3_and_s6_included_is_accepted_and_says_what_was_ignored():
    make_task("expmrc-squad")
    build("expmrc-squad")
    original = perfect_predictions(fixture_gold("expmrc-squad"))
    document = {"original": original, **{skill: original for skill in SKILLS}}
    entry = scored_skills("expmrc-squad", document)
    ignored = {row["skill"]: row["reason"] for row in entry.details["ignored_sections"]}
    assert ignored == {"s3": "not applicable to this task (no variant is built)",
                       "s6": "not configured on this server (no variant is built)"}
    assert entry.details["not_submitted"] == []  # every built variant was scored
    page = Client().get(f"/submissions/{entry.pk}/").content.decode()
    assert "Sections accepted but ignored (no variant to score here): s3 (not applicable" in page


@pytest.mark.parametrize("section, reason", [
    ("s99", 'section "s99" is not a skill section'),
    ("S3", 'section "S3" is not a skill section'),
])
def test_other_refused_skill_sections_say_why(section, reason):
    make_task("expmrc-squad")
    build("expmrc-squad")
    original = perfect_predictions(fixture_gold("expmrc-squad"))
    response = upload_skills("expmrc-squad", {"original": original, section: original})
    assert response.status_code == 400 and reason in response.json()["error"]


def test_skill_sections_before_the_build_are_refused_as_not_built():
    make_task("expmrc-squad")
    original = perfect_predictions(fixture_gold("expmrc-squad"))
    response = upload_skills("expmrc-squad", {"original": original, "s2": original})
    assert response.status_code == 400
    assert 'section "s2" has not been built yet for this test set' in response.json()["error"]


def test_upgrade_drops_gold_dependent_variants_and_the_reaper_rebuilds_them(django_capture_on_commit_callbacks):
    import importlib

    from django.apps import apps

    from benchmark import jobs
    from benchmark.tasks import build_skill_sets

    task = make_task("expmrc-squad")
    build("expmrc-squad")
    assert statuses(task)["s4"] == statuses(task)["s5"] == "ok"

    migration = importlib.import_module("benchmark.migrations.0006_rebuild_gold_dependent_skill_variants")
    migration.drop_gold_dependent_variants(apps, None)
    assert "s4" not in statuses(task) and "s5" not in statuses(task) and statuses(task)["s2"] == "ok"
    assert Client().get("/api/tasks/expmrc-squad/skills/s4/inputs/").status_code == 404
    assert Client().get("/api/tasks/expmrc-squad/skills/").json()["build"]["status"] == "queued"

    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert jobs.reap_stuck()["skill_builds_resent"] == 1
    assert len(sent) == 1
    build_skill_sets(task.current_test_set().pk)
    assert set(statuses(task)) == set(SKILLS) and statuses(task)["s4"] == "ok"


def test_upgrade_rebuilds_every_variant_and_rescores_skill_entries_of_the_older_scorer(
        django_capture_on_commit_callbacks):
    import importlib

    from django.apps import apps

    from benchmark import jobs
    from benchmark.tasks import build_skill_sets
    from submissions.intake import submit_predictions
    from submissions.models import Status, Submission
    from submissions.runs import claim_and_score
    from submissions.scorers import SkillsScorer

    task = make_task("expmrc-squad")
    build("expmrc-squad")
    original = perfect_predictions(fixture_gold("expmrc-squad"))
    entry = submit_predictions(user=make_user(), task=task, method_name="m", kind=Submission.SKILLS,
                               uploaded_file=upload_file({"original": original}))
    assert claim_and_score(entry.pk) == Status.SCORED
    Submission.objects.filter(pk=entry.pk).update(scorer_version="skills-1/expmrc-1")  # scored before the upgrade

    importlib.import_module("benchmark.migrations.0008_rebuild_skill_variants_masks_scored_by_position") \
        .drop_skill_variants(apps, None)
    assert statuses(task) == {}
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert jobs.reap_stuck()["skill_builds_resent"] == 1
    assert len(sent) == 1
    with django_capture_on_commit_callbacks(execute=False) as rescored:
        build_skill_sets(task.current_test_set().pk)
    # The stale entry went back to the queue (one message), and the task's boards were told (one).
    assert statuses(task)["s2"] == "ok" and len(rescored) == 2
    assert Submission.objects.get(pk=entry.pk).status == Status.QUEUED
    assert claim_and_score(entry.pk) == Status.SCORED
    assert Submission.objects.get(pk=entry.pk).scorer_version == SkillsScorer.version
