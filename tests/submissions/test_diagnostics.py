"""Per-submission diagnostics: computed after the score, stored as aggregates, shown on the
entry page and at /api/submissions/{id}/diagnostics/, never exposing per-question outcomes."""
import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from submissions.intake import submit_predictions
from submissions.models import DiagnosticsStatus, Submission
from submissions.tasks import compute_diagnostics, score_submission
from tests.factories import make_task_from_gold, make_user, perfect_predictions, synthetic_span_gold, upload_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored_span(tmp_path, settings, django_capture_on_commit_callbacks):
    settings.DIAGNOSTICS_PERMUTATIONS = 2000
    gold = synthetic_span_gold(70)
    task = make_task_from_gold(tmp_path, gold)
    predictions = perfect_predictions(gold)
    for i, key in enumerate(list(predictions)):
        # Nine of the ten "Why" questions wrong, one of every other type: question type matters,
        # and no group is all right or all wrong (such a group is pooled on a hidden split).
        if (i % 7 == 4) != (i < 7):
            predictions[key] = {"answer": "wrong", "evidence": "wrong"}
    user = make_user()
    sub = submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions), method_name="m")
    with django_capture_on_commit_callbacks(execute=False) as sent:
        score_submission(sub.pk)
    assert sent  # diagnostics are queued after the score is committed (with the owner's email)
    assert Submission.objects.get(pk=sub.pk).diagnostics_status == DiagnosticsStatus.QUEUED
    return sub, gold, user


def test_span_diagnostics_find_the_hard_question_type(scored_span):
    sub, gold, user = scored_span
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.DONE
    assert compute_diagnostics(sub.pk) == "skipped"  # idempotent
    body = APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").json()
    assert body["status"] == "done"
    qt = body["diagnostics"]["question_types"]
    by_variable = {t["variable"]: t for t in qt["categorical"]["tests"]}
    assert by_variable["question_type"]["significant"] is True
    why = next(t for t in qt["one_vs_rest"]["tests"] if t["group"] == "why")
    assert why["accuracy"] == 0.1 and why["significant"] is True
    properties = {p["name"]: p for p in body["diagnostics"]["linguistic_bias"]["properties"]}
    assert properties["question_words"]["bias"] > 0


def test_diagnostics_are_aggregates_only(scored_span):
    sub, gold, user = scored_span
    compute_diagnostics(sub.pk)
    text = json.dumps(APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").json())
    for qa in gold["data"][0]["paragraphs"]:
        item = qa["qas"][0]
        assert item["id"] not in text
        assert item["answers"][0]["text"] not in text and item["evidences"][0] not in text


def test_entry_page_shows_diagnostics_and_charts(scored_span):
    sub, gold, user = scored_span
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert "Diagnostics are being computed" in page and 'data-refresh="' in page
    compute_diagnostics(sub.pk)
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert 'id="categorical-tests"' in page and 'id="one-vs-rest"' in page
    assert "Linguistic bias" in page and page.count('<svg class="chart"') >= 5
    assert 'data-refresh="' not in page


def test_a_crash_in_diagnostics_keeps_the_score(scored_span, monkeypatch):
    from submissions import diagnostics

    sub, gold, user = scored_span

    def explode(*args, **kwargs):
        raise ValueError(gold["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"])

    monkeypatch.setattr(diagnostics, "span_diagnostics", explode)
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.FAILED
    stored = Submission.objects.get(pk=sub.pk)
    assert stored.status == "scored" and stored.scores["overall_f1"] > 0
    assert "token0" not in json.dumps(stored.diagnostics)


def test_private_diagnostics_are_not_public(scored_span):
    sub, gold, user = scored_span
    Submission.objects.filter(pk=sub.pk).update(public=False)
    assert APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").status_code == 404


def test_diagnostics_whose_worker_died_are_sent_again_then_given_up(scored_span, settings,
                                                                    django_capture_on_commit_callbacks):
    """A worker killed mid-diagnostics must not leave a status page refreshing forever."""
    from datetime import timedelta

    from django.utils import timezone

    from submissions import diagnostics

    sub, gold, user = scored_span
    settings.SCORING_MAX_ATTEMPTS = 2
    assert diagnostics.claim(sub.pk)  # a worker took them ... and died
    assert not diagnostics.claim(sub.pk)  # a duplicate message finds nothing to do
    assert diagnostics.reap_stuck()["diagnostics_resent"] == 0  # the lease is still live
    later = timezone.now() + timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS + 1)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert diagnostics.reap_stuck(now=later)["diagnostics_resent"] == 1
    assert len(sent) == 1
    assert Submission.objects.get(pk=sub.pk).diagnostics_status == DiagnosticsStatus.QUEUED

    assert diagnostics.claim(sub.pk)  # second run dies too
    much_later = later + timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS + 1)
    assert diagnostics.reap_stuck(now=much_later) == {"diagnostics_resent": 0, "diagnostics_failed": 1}
    failed = Submission.objects.get(pk=sub.pk)
    assert failed.diagnostics_status == DiagnosticsStatus.FAILED and failed.diagnostics_attempts == 2
    assert "stopped 2 times" in failed.diagnostics["error"]
    assert failed.status == "scored"  # the score is untouched
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert "stopped 2 times" in page and 'data-refresh="' not in page


def test_lost_diagnostics_messages_are_resent_and_run_once(scored_span, settings,
                                                           django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from submissions import diagnostics

    sub, gold, user = scored_span
    later = timezone.now() + timedelta(seconds=settings.QUEUE_LEASE_SECONDS + 1)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert diagnostics.reap_stuck(now=later)["diagnostics_resent"] == 1
    assert len(sent) == 1
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.DONE
    assert compute_diagnostics(sub.pk) == "skipped"
    assert diagnostics.reap_stuck(now=later + timedelta(days=1))["diagnostics_resent"] == 0


def test_entries_scored_before_the_cue_table_get_their_icq_tests_when_it_arrives(django_capture_on_commit_callbacks):
    from benchmark.tasks import discover_cues
    from tests.factories import fixture_gold, make_task

    task = make_task("expmrc-race")
    sub = submit_predictions(user=make_user(), task=task, method_name="early",
                             uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-race"))))
    score_submission(sub.pk)
    compute_diagnostics(sub.pk)  # the cue table is still queued
    early = Submission.objects.get(pk=sub.pk)
    assert early.diagnostics_status == DiagnosticsStatus.DONE
    assert early.diagnostics["icq"]["applicable"] is False and "not finished" in early.diagnostics["icq"]["note"]

    with django_capture_on_commit_callbacks(execute=False) as sent:
        discover_cues(task.current_test_set().pk)
    assert len(sent) == 1  # the entry's diagnostics are sent again ...
    assert Submission.objects.get(pk=sub.pk).diagnostics_status == DiagnosticsStatus.QUEUED
    compute_diagnostics(sub.pk)
    icq = Submission.objects.get(pk=sub.pk).diagnostics["icq"]
    assert icq["applicable"] is True and "no reference" in icq["note"]  # ... and now read the cue table


def published_groups(diagnostics):
    """(where, label, n) of every group whose outcome the diagnostics publish."""
    qt = diagnostics.get("question_types") or {}
    for test in qt.get("categorical", {}).get("tests", []):
        for label, group in test["groups"].items():
            yield test["variable"], label, group["n"]
    for test in qt.get("one_vs_rest", {}).get("tests", []):
        yield "one-vs-rest", test["group"], test["n"]
        yield "one-vs-rest rest", test["group"], qt["n_items"] - test["n"]
    for prop in (diagnostics.get("linguistic_bias") or {}).get("properties", []):
        for subset in prop["bins"]:
            yield prop["name"], subset["label"], subset["n"]


@pytest.fixture
def scored_with_a_lone_whose(tmp_path, settings):
    """A hidden span set with one question without a wh-word ("other", answered wrongly while
    every other question is answered right: a published "other" group would give it away) and
    one "Whose" question (a group of its own in the question-type tests on a public set)."""
    from submissions.diagnostics import HIDDEN_MIN_GROUP_SIZE

    settings.DIAGNOSTICS_PERMUTATIONS = 2000
    gold = synthetic_span_gold(70)
    lone = gold["data"][0]["paragraphs"][3]["qas"][0]  # was a "Where" question
    lone["question"] = "Name the token of fact 3."
    gold["data"][0]["paragraphs"][5]["qas"][0]["question"] = "Whose token is in fact 5?"  # was "How"
    task = make_task_from_gold(tmp_path, gold)
    assert task.current_test_set().is_hidden
    predictions = perfect_predictions(gold)
    predictions[lone["id"]] = {"answer": "wrong", "evidence": "wrong"}
    # One wrong answer in every other question type, so that no published group is all right
    # (scoring.disclosure pools such groups too; this test is about the size rule).
    for i, key in enumerate(list(predictions)):
        if i in (0, 1, 2, 4, 6, 10, 12):
            predictions[key] = {"answer": "wrong", "evidence": "wrong"}
    sub = submit_predictions(user=make_user(), task=task, uploaded_file=upload_file(predictions), method_name="m")
    score_submission(sub.pk)
    return sub, HIDDEN_MIN_GROUP_SIZE


def test_hidden_set_diagnostics_publish_no_small_group(scored_with_a_lone_whose):
    sub, min_group = scored_with_a_lone_whose
    assert min_group == 5
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.DONE
    stored = Submission.objects.get(pk=sub.pk).diagnostics
    body = APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").json()
    assert body["diagnostics"] == stored
    groups = list(published_groups(stored))
    assert groups and all(n >= min_group for _, _, n in groups), [g for g in groups if g[2] < min_group]
    question_type = next(t for t in stored["question_types"]["categorical"]["tests"] if t["variable"] == "question_type")
    assert "other" not in question_type["groups"] and "whose" not in question_type["groups"]
    # The lone "other" went into the pool with the smallest type ("how", 9 questions after the
    # whose question took one), so the pool's accuracy is an aggregate of 10.
    assert question_type["pooled_groups"] == ["how", "other"]
    assert question_type["groups"]["other (small groups)"] == {"n": 10, "correct": 8, "accuracy": 0.8}
    # The tests still cover every question.
    assert sum(g["n"] for g in question_type["groups"].values()) == stored["question_types"]["n_items"] == 70
    assert question_type["p_value"] is not None
    # Both analyses publish the same question groups: were "who" 10 questions in one and 11
    # (with "whose") in the other, the difference would be the whose question's outcome.
    words = next(p for p in stored["linguistic_bias"]["properties"] if p["name"] == "question_words")
    assert {b["label"]: b["n"] for b in words["bins"]} == {k: g["n"] for k, g in question_type["groups"].items()}

    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert 'id="small-groups-note"' in page and "fewer than 5 questions" in page
    for label in ("other", "whose"):
        assert f">{label}</text>" not in page and f"<td>{label}</td>" not in page
    assert 'id="linguistic-question_words"' in page and 'id="linguistic-passage_length"' in page


def test_run_diagnostics_recomputes_one_submission_with_more_permutations(scored_with_a_lone_whose):
    import io

    from django.core.management import CommandError, call_command

    sub, _ = scored_with_a_lone_whose
    compute_diagnostics(sub.pk)
    assert Submission.objects.get(pk=sub.pk).diagnostics["question_types"]["n_permutations"] == 2000
    out = io.StringIO()
    call_command("run_diagnostics", "--submission", str(sub.pk), "--permutations", "3000", stdout=out)
    assert f"submission {sub.pk}: diagnostics stored with a budget of 3,000 permutations" in out.getvalue()
    stored = Submission.objects.get(pk=sub.pk)
    assert stored.diagnostics_status == DiagnosticsStatus.DONE
    assert stored.diagnostics["question_types"]["n_permutations"] == 3000

    for args, message in [
        (["--submission", "999999"], "no submission 999999"),
        (["--submission", str(sub.pk), "--permutations", "0"], "positive integer"),
    ]:
        with pytest.raises(CommandError, match=message):
            call_command("run_diagnostics", *args)
    Submission.objects.filter(pk=sub.pk).update(diagnostics_status=DiagnosticsStatus.RUNNING)
    with pytest.raises(CommandError, match="running in a worker"):
        call_command("run_diagnostics", "--submission", str(sub.pk))
    assert Submission.objects.get(pk=sub.pk).diagnostics["question_types"]["n_permutations"] == 3000


def test_upgrade_forgets_diagnostics_stored_before_pooling_and_the_reaper_recomputes_them(
        scored_with_a_lone_whose, django_capture_on_commit_callbacks):
    import importlib

    from django.apps import apps

    from submissions import diagnostics

    sub, min_group = scored_with_a_lone_whose
    compute_diagnostics(sub.pk)
    # What an older release stored: the lone "other" question as a group of its own.
    old = Submission.objects.get(pk=sub.pk).diagnostics
    test = next(t for t in old["question_types"]["categorical"]["tests"] if t["variable"] == "question_type")
    test["groups"]["other"] = {"n": 1, "correct": 0, "accuracy": 0.0}
    Submission.objects.filter(pk=sub.pk).update(diagnostics=old)

    migration = importlib.import_module("submissions.migrations.0006_recompute_hidden_span_diagnostics")
    migration.forget_unpooled_diagnostics(apps, None)
    importlib.import_module("submissions.migrations.0007_job_status_vocabulary").forwards(apps, None)
    forgotten = Submission.objects.get(pk=sub.pk)
    assert forgotten.diagnostics == {} and forgotten.diagnostics_status == DiagnosticsStatus.QUEUED
    assert APIClient().get(f"/api/submissions/{sub.pk}/diagnostics/").json()["diagnostics"] == {}

    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert diagnostics.reap_stuck()["diagnostics_resent"] == 1
    assert len(sent) == 1
    assert compute_diagnostics(sub.pk) == DiagnosticsStatus.DONE
    groups = list(published_groups(Submission.objects.get(pk=sub.pk).diagnostics))
    assert groups and all(n >= min_group for _, _, n in groups)


def test_upgrade_recomputes_cue_tables_against_the_prior_and_then_the_entries_icq_tests(
        django_capture_on_commit_callbacks):
    import importlib

    from django.apps import apps

    from benchmark import jobs
    from benchmark.models import TestSet
    from benchmark.tasks import discover_cues
    from submissions import diagnostics
    from tests.factories import fixture_gold, make_task

    task = make_task("expmrc-race")
    test_set_id = task.current_test_set().pk
    discover_cues(test_set_id)
    sub = submit_predictions(user=make_user(), task=task, method_name="m",
                             uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-race"))))
    score_submission(sub.pk)
    compute_diagnostics(sub.pk)

    importlib.import_module("benchmark.migrations.0009_rediscover_cues_against_the_prior") \
        .queue_cue_discovery_again(apps, None)
    importlib.import_module("submissions.migrations.0008_recompute_diagnostics_with_nulls") \
        .forget_diagnostics_without_nulls(apps, None)
    assert TestSet.objects.get(pk=test_set_id).diagnostics["icq"]["status"] == "queued"
    assert Submission.objects.get(pk=sub.pk).diagnostics == {}
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert jobs.reap_stuck()["cue_discoveries_resent"] == 1  # no heartbeat: sent on the next pass
        assert diagnostics.reap_stuck()["diagnostics_resent"] == 1
    assert len(sent) == 2
    discover_cues(test_set_id)
    cues = TestSet.objects.get(pk=test_set_id).diagnostics["icq"]["cues"]
    assert all("cueness_published" in cue and "prior" in cue for cue in cues)
    compute_diagnostics(sub.pk)
    icq = Submission.objects.get(pk=sub.pk).diagnostics["icq"]
    assert icq["applicable"] is True and all("p_value" in row for row in icq["accuracy_test"])
