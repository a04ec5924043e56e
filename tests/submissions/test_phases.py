"""Phases (docs/phases.md): uploads only inside a window, with the phase's quotas; a board that is
not live keeps the phase's entries off until the phase is closed; a private part whose outcomes
no page, answer or statistic shows before the reveal, then the whole test set."""
import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from benchmark.models import Phase
from submissions import phases
from submissions.models import ScoreRecord, Status, Submission
from submissions.runs import claim_and_score
from tests.factories import api_for, make_task_from_gold, make_user, synthetic_span_gold, upload_file

pytestmark = pytest.mark.django_db
N_QUESTIONS = 60


@pytest.fixture
def task(tmp_path):
    return make_task_from_gold(tmp_path, synthetic_span_gold(N_QUESTIONS))


def add_phase(task, *, starts=-1, ends=1, **fields):
    now = timezone.now()
    return Phase.objects.create(task=task, name=fields.pop("name", "Test"), starts_at=now + timedelta(days=starts),
                                ends_at=now + timedelta(days=ends), **fields)


def answers(right):
    """Predictions right on the questions ``right`` (a set of indices), wrong elsewhere."""
    return {f"syn-{i:04d}": ({"answer": f"token{i}", "evidence": f"Fact {i} holds because token{i} was seen."}
                             if i in right else {"answer": "nothing", "evidence": "nothing at all"})
            for i in range(N_QUESTIONS)}


def upload(user, task, predictions, name="Mine"):
    return api_for(user).post(f"/api/v1/tasks/{task.slug}/submissions/",
                              {"file": upload_file(predictions), "method_name": name, "public": "true"},
                              format="multipart")


def board_methods(task):
    return [row["method"] for row in Client().get(f"/api/v1/tasks/{task.slug}/leaderboard/").json()["results"]]


def close(phase):
    Phase.objects.filter(pk=phase.pk).update(ends_at=timezone.now() - timedelta(seconds=1))
    return phases.close_ended_phases()


def test_uploads_are_taken_only_while_a_phase_is_open(task):
    add_phase(task, name="Dev", starts=-10, ends=-5)
    upcoming = add_phase(task, name="Test", starts=2, ends=4)
    refused = upload(make_user(), task, answers(set()))
    assert refused.status_code == 403 and refused.json()["type"].endswith("/problems/outside-phase/")
    assert "'Dev'" in refused.json()["detail"] and "(ended)" in refused.json()["detail"]
    assert f"{upcoming.starts_at:%Y-%m-%d %H:%M}" in refused.json()["detail"]
    assert not Submission.objects.exists()
    Phase.objects.filter(pk=upcoming.pk).update(starts_at=timezone.now() - timedelta(hours=1))
    accepted = upload(make_user("bob"), task, answers(set()))
    assert accepted.status_code == 201 and Submission.objects.get().phase == upcoming
    listed = Client().get(f"/api/v1/tasks/{task.slug}/").json()["phases"]
    assert [(p["name"], p["open"]) for p in listed] == [("Dev", False), ("Test", True)]


def test_a_phase_total_quota_is_charged_across_days(task):
    add_phase(task, daily_quota=5, total_quota=2)
    user = make_user()
    assert upload(user, task, answers(set())).status_code == 201
    assert upload(user, task, answers({1})).status_code == 201
    third = upload(user, task, answers({2}))
    assert third.status_code == 429 and "Phase limit reached: 2 submissions" in third.json()["detail"]
    quota = api_for(user).get(f"/api/v1/tasks/{task.slug}/quota/").json()
    assert quota["phase_limit"] == 2 and quota["phase_used"] == 2 and quota["remaining"] == 0


def test_a_board_that_is_not_live_shows_the_phase_entries_once_it_is_closed(task):
    phase = add_phase(task, live_board=False)
    entry = upload(make_user(), task, answers(set(range(30)))).json()["id"]
    assert claim_and_score(entry) == Status.SCORED
    assert "Mine" not in board_methods(task)
    assert "Mine" not in Client().get(f"/tasks/{task.slug}/leaderboard.csv").content.decode()
    assert close(phase) == {"closed": 1, "revealed": 0}
    assert "Mine" in board_methods(task)
    assert phases.close_ended_phases() == {"closed": 0, "revealed": 0}  # closing happens once


def test_the_private_part_is_held_until_the_phase_ends_then_revealed(task):
    phase = add_phase(task, private_share=0.5, split_seed=3)
    gold = task.current_test_set()
    mask = phases.private_mask(phase, gold, N_QUESTIONS)
    public = {i for i in range(N_QUESTIONS) if not mask[i]}
    # Right on every public question, wrong on every private one: before the reveal the entry
    # shows 100 and nothing that depends on the private outcomes.
    entry_id = upload(make_user(), task, answers(public)).json()["id"]
    assert claim_and_score(entry_id) == Status.SCORED
    entry = Submission.objects.get(pk=entry_id)
    assert entry.scores["overall_f1"] == pytest.approx(100.0) and len(entry.item_scores) == N_QUESTIONS // 2
    assert len(entry.held_item_scores) == N_QUESTIONS and entry.diagnostics_status == ""
    shown = json.dumps([
        api_for(entry.user).get(f"/api/v1/submissions/{entry_id}/").json(),
        Client().get(f"/api/v1/tasks/{task.slug}/leaderboard/").json(),
    ])
    assert "held_item_scores" not in shown and '"overall_f1": 100.0' in shown.replace("100.00000000000001", "100.0")
    # Another entry right everywhere ties with it on the public part: nothing tells them apart.
    other = upload(make_user("bob"), task, answers(set(range(N_QUESTIONS))), name="Perfect").json()["id"]
    claim_and_score(other)
    rows = {row["method"]: row for row in Client().get(f"/api/v1/tasks/{task.slug}/leaderboard/").json()["results"]}
    assert rows["Mine"]["scores"] == rows["Perfect"]["scores"] and rows["Mine"]["rank"] == rows["Perfect"]["rank"]
    assert rows["Mine"]["p_vs_leader"] in (None, 1.0)

    # An entry made outside the phase covers the whole test set: no paired test with a held one.
    outside = Submission.objects.create(user=make_user("carol"), task=task, test_set=gold, method_name="Outside",
                                        status=Status.SCORED, scores={"overall_f1": 50.0},
                                        item_scores=[[1.0, 1.0, 1.0]] * N_QUESTIONS, public=True)
    compared = Client().get(f"/api/v1/compare/?a={entry_id}&b={outside.pk}")
    assert compared.status_code == 200 and compared.json()["paired"]["applicable"] is False
    assert Client().get(f"/api/v1/compare/?a={entry_id}&b={other}").json()["paired"]["applicable"] is True
    outside.delete()

    assert close(phase) == {"closed": 1, "revealed": 2}
    revealed = Submission.objects.get(pk=entry_id)
    assert revealed.held_item_scores is None and len(revealed.item_scores) == N_QUESTIONS
    assert revealed.scores["overall_f1"] == pytest.approx(50.0)  # half the questions right
    assert revealed.details["split"]["private"]["overall_f1"] == pytest.approx(0.0)
    assert revealed.details["split"]["public"]["overall_f1"] == pytest.approx(100.0)
    assert ScoreRecord.objects.filter(submission_id=entry_id, reason__contains="revealed").exists()
    assert revealed.diagnostics_status == "queued"  # waited for the whole test set
    methods = board_methods(task)
    assert methods.index("Perfect") < methods.index("Mine")


def test_phases_are_declared_in_a_benchmark_file(tmp_path):
    from benchmark import config_file

    gold = tmp_path / "squad.json"
    gold.write_text(json.dumps(synthetic_span_gold(10)), encoding="utf-8")
    text = f"""
benchmarks:
  - slug: shared-task
    name: A shared task
    tasks:
      - slug: st-squad
        name: SQuAD
        kind: span
        test_sets: [{{path: {gold}, importer: expmrc, split: test, version: "1"}}]
        phases:
          - {{name: Dev, starts_at: "2026-11-01T00:00:00Z", ends_at: "2026-11-20T00:00:00Z", daily_quota: 3}}
          - {{name: Test, starts_at: "2026-12-01T00:00:00+08:00", ends_at: "2026-12-08T00:00:00Z",
              total_quota: 5, live_board: false, private_share: 0.5, split_seed: 11}}
"""
    path = tmp_path / "b.yaml"
    path.write_text(text, encoding="utf-8")
    config_file.load(path, data_root=tmp_path, log=lambda line: None)
    test = Phase.objects.get(task__slug="st-squad", name="Test")
    assert test.starts_at.isoformat() == "2026-11-30T16:00:00+00:00" and test.private_share == 0.5
    assert not test.live_board and test.total_quota == 5
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace('ends_at: "2026-11-20T00:00:00Z"', 'ends_at: "2026-10-20T00:00:00Z"')
                   .replace('"2026-12-08T00:00:00Z"', '"2026-12-08 00:00"'), encoding="utf-8")
    with pytest.raises(config_file.ConfigError) as refused:
        config_file.read(bad)
    assert "must end after it starts" in str(refused.value) and "time zone" in str(refused.value)
