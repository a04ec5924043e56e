"""Re-scoring (submissions.rescoring, manage.py rescore): versioned scores, nothing lost, idempotent.
The worker's task function runs in-process here; tests/integration/test_rescore.py runs the same
through real Celery workers."""
import copy
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from benchmark.importers import import_expmrc
from benchmark.models import RankingRule
from benchmark.models import TestSet as StoredTestSet
from submissions import intake, rescoring
from submissions.models import ScoreRecord, Status, Submission
from submissions.tasks import score_submission
from tests.factories import fixture_gold, make_task, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db


def corrected_gold(tmp_path, name="v2.json"):
    """Version 2 of the SQuAD fixture: one gold answer corrected (a perfect v1 file loses points)."""
    gold = copy.deepcopy(fixture_gold("expmrc-squad"))
    qa = gold["data"][0]["paragraphs"][0]["qas"][0]
    qa["answers"] = [{"text": "the basalt cliffs", "answer_start": 0}]
    path = tmp_path / name
    path.write_text(json.dumps(gold), encoding="utf-8")
    return path


def scored(task, user, predictions, name="m", public=True):
    submission = intake.submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions),
                                           method_name=name, public=public)
    assert score_submission(submission.pk) == Status.SCORED
    return Submission.objects.get(pk=submission.pk)


def run_queued():
    """What the workers would do with every queued message."""
    for pk in Submission.objects.filter(status=Status.QUEUED).values_list("pk", flat=True):
        score_submission(pk)


def rescore(*args):
    out = StringIO()
    call_command("rescore", *args, "--timeout", "0", stdout=out)
    return out.getvalue()


def board_ids(client, slug):
    rows = client.get(f"/api/tasks/{slug}/leaderboard/").json()["rows"]
    return {row["submission_id"]: row for row in rows if row["submission_id"]}


def test_a_new_version_keeps_the_board_and_rescore_brings_entries_back_with_their_history(tmp_path):
    task = make_task("expmrc-squad")
    alice = make_user()
    entry = scored(task, alice, perfect_predictions(fixture_gold("expmrc-squad")))
    v1_scores = dict(entry.scores)
    assert entry.score_history.count() == 1 and entry.score_history.get().reason == "first score"

    v2, created = import_expmrc(corrected_gold(tmp_path), task_slug="expmrc-squad", version="v2")
    assert created and task.current_test_set().pk == v2.pk
    StoredTestSet.objects.filter(pk=v2.pk).update(change_note="one answer corrected")
    client = Client()
    assert entry.pk not in board_ids(client, "expmrc-squad")  # not on v2 yet, and says so
    assert "will return once re-scored" in client.get("/tasks/expmrc-squad/").content.decode()

    out = rescore("--task", "expmrc-squad", "--no-wait")
    assert "1 entry to re-score" in out
    entry.refresh_from_db()
    assert entry.status == Status.QUEUED and entry.rescore_test_set_id == v2.pk
    assert rescore("--task", "expmrc-squad", "--no-wait").count("(in progress)") == 1  # waited for, not re-queued
    run_queued()

    entry.refresh_from_db()
    assert entry.status == Status.SCORED and entry.test_set_id == v2.pk and entry.rescore_test_set is None
    assert entry.scores["answer_f1"] < v1_scores["answer_f1"]
    history = list(entry.score_history.order_by("scored_at", "pk"))
    assert [(h.test_set_version, h.scores["answer_f1"]) for h in history] == [
        ("v1", v1_scores["answer_f1"]), ("v2", entry.scores["answer_f1"])]
    assert history[1].reason == "re-scored: test set v1 → v2: one answer corrected"
    assert board_ids(client, "expmrc-squad")[entry.pk]["scores"]["answer_f1"] == entry.scores["answer_f1"]
    page = client.get(f"/submissions/{entry.pk}/").content.decode()
    assert "Score history" in page and "one answer corrected" in page

    # Idempotent: nothing left to do, nothing queued, no new history.
    out = rescore("--task", "expmrc-squad")
    assert "0 entries to re-score" in out and "1 up to date" in out
    assert Submission.objects.filter(status=Status.QUEUED).count() == 0
    assert entry.score_history.count() == 2


def test_a_rescore_that_fails_loses_nothing_and_the_command_says_so(tmp_path, monkeypatch):
    task = make_task("expmrc-squad")
    entry = scored(task, make_user(), perfect_predictions(fixture_gold("expmrc-squad")))
    before = dict(entry.scores)
    import_expmrc(corrected_gold(tmp_path), task_slug="expmrc-squad", version="v2")
    entry.file.storage.delete(entry.file.name)  # the stored file is gone: nothing can be re-scored
    rescore("--task", "expmrc-squad", "--no-wait")
    run_queued()
    entry.refresh_from_db()
    # Back on its v1 score (not rejected, not refunded), the failure in its history.
    assert entry.status == Status.SCORED and entry.scores == before and entry.test_set.version == "v1"
    failed = entry.score_history.order_by("-pk").first()
    assert failed.scores == {} and "re-scoring on test set v2 failed" in failed.reason
    assert intake.submissions_counted_today(entry.user, task) == 1
    # The page does not claim a place on the board the entry does not have.
    page = Client().get(f"/submissions/{entry.pk}/").content.decode()
    assert "Ranked on the public leaderboard" not in page
    assert "scored on test set v1, and the board shows v2; re-scoring on test set v2 failed" in page
    # A maintainer's script sees the failure: the command exits non-zero (the workers run in
    # the command's wait here).
    monkeypatch.setattr(rescoring, "wait", lambda targets, **kwargs: run_queued() or True)
    with pytest.raises(CommandError, match="1 re-score failed"):
        rescore("--task", "expmrc-squad", "--force")


def test_a_scorer_version_bump_marks_entries_stale_and_keeps_them_on_the_board(monkeypatch):
    task = make_task("expmrc-squad")
    entry = scored(task, make_user(), perfect_predictions(fixture_gold("expmrc-squad")))
    client = Client()
    assert board_ids(client, "expmrc-squad")[entry.pk]["stale"] is False
    from benchmark.kinds.expmrc import ExpmrcKind
    monkeypatch.setattr(ExpmrcKind, "scorer_version", "expmrc-2/test")
    row = board_ids(client, "expmrc-squad")[entry.pk]
    assert row["stale"] is True
    assert "Stale" in client.get(f"/submissions/{entry.pk}/").content.decode()
    plan = rescoring.plan([task])
    assert [t.submission_id for t in plan.targets] == [entry.pk]
    rescoring.queue_all(plan)
    # While it is re-scored the entry keeps its place with its previous score.
    row = board_ids(client, "expmrc-squad")[entry.pk]
    assert row["rescoring"] is True and row["scores"] == entry.scores
    run_queued()
    entry.refresh_from_db()
    assert entry.scorer_version == "expmrc-2/test"
    assert board_ids(client, "expmrc-squad")[entry.pk]["stale"] is False
    assert entry.score_history.order_by("-pk").first().reason == "re-scored: scorer expmrc-1/nltk-3.9.2 → expmrc-2/test"
    assert rescoring.plan([task]).targets == []


def test_report_names_score_and_rank_changes(tmp_path):
    task = make_task("expmrc-squad")
    gold = fixture_gold("expmrc-squad")
    perfect = perfect_predictions(gold)
    worse = {**perfect, "fx-squad-2": {"answer": "nothing", "evidence": "nothing"}}
    a = scored(task, make_user("a"), perfect, "A")
    b = scored(task, make_user("b"), worse, "B")
    import_expmrc(corrected_gold(tmp_path), task_slug="expmrc-squad", version="v2")
    plan = rescoring.plan([task])
    before = rescoring.ranks_before(plan)
    assert before == {a.pk: 1, b.pk: 2}
    rescoring.queue_all(plan)
    run_queued()
    text = rescoring.report(plan, rescoring.outcomes(plan.targets), before)
    assert text.startswith("re-scored: 2 (score changed: 2, unchanged: 0); failed: 0")
    assert "largest score changes" in text and f"#{a.pk} A" in text


def test_rescore_command_refuses_unknown_targets_and_lists_on_dry_run():
    with pytest.raises(CommandError, match="No task"):
        rescore("--task", "nope")
    with pytest.raises(CommandError, match="No submission"):
        rescore("--submission", "999")
    task = make_task("expmrc-squad")
    entry = scored(task, make_user(), perfect_predictions(fixture_gold("expmrc-squad")))
    out = rescore("--submission", str(entry.pk), "--force", "--dry-run")
    assert f"#{entry.pk} m" in out
    assert Submission.objects.get(pk=entry.pk).status == Status.SCORED  # a dry run changes nothing


def test_ranking_rule_one_per_system():
    task = make_task("expmrc-squad")
    user = make_user()
    perfect = perfect_predictions(fixture_gold("expmrc-squad"))
    worse = {**perfect, "fx-squad-2": {"answer": "nothing", "evidence": "nothing"}}
    best = scored(task, user, perfect, "Sys run 1")
    latest = scored(task, user, worse, "Sys run 2")
    Submission.objects.filter(pk__in=[best.pk, latest.pk]).update(system_name="Sys")
    client = Client()
    assert set(board_ids(client, "expmrc-squad")) == {best.pk, latest.pk}
    task.ranking_rule = RankingRule.BEST_PER_SYSTEM
    task.save()
    assert set(board_ids(client, "expmrc-squad")) == {best.pk}
    task.ranking_rule = RankingRule.LATEST_PER_SYSTEM
    task.save()
    assert set(board_ids(client, "expmrc-squad")) == {latest.pk}


def test_flagged_entries_leave_the_board_with_a_public_reason_and_verified_ones_are_marked():
    task = make_task("expmrc-squad")
    entry = scored(task, make_user(), perfect_predictions(fixture_gold("expmrc-squad")))
    client = Client()
    staff = make_user("maintainer")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    admin = Client()
    admin.force_login(staff)
    # The admin's bulk action (an UPDATE): the board's stored rows must follow it.
    admin.post("/admin/submissions/submission/", {"action": "verify", "_selected_action": [entry.pk]})
    assert board_ids(client, "expmrc-squad")[entry.pk]["verified"] is True
    # Flagging: a reason typed on the entry's admin page.
    entry.refresh_from_db()
    entry.flag_reason = "Trained on the test set (see the thread)."
    entry.save()
    assert entry.pk not in board_ids(client, "expmrc-squad")
    page = client.get(f"/submissions/{entry.pk}/").content.decode()
    assert "Trained on the test set" in page


def test_every_stored_score_joins_the_history():
    task = make_task("expmrc-squad")
    entry = scored(task, make_user(), perfect_predictions(fixture_gold("expmrc-squad")))
    record = ScoreRecord.objects.get(submission=entry)
    assert record.scores == entry.scores and record.test_set_version == "v1"
    assert record.scorer_version == entry.scorer_version
