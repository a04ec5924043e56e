"""What a results site offers beside the boards: a benchmark's Overview, Evaluation and Terms
pages (leaderboards/benchmark_pages.py), the best score over time (leaderboards/progress.py) and
what anyone may download of an entry (leaderboards/downloads.py): its results once it is public,
its file only where the task allows it, and never gold, hidden inputs or a private part."""
import json
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.test import Client
from django.utils import timezone

from benchmark.models import InputsAccess, Phase, ReportedResult, Visibility
from leaderboards.progress import records
from submissions.models import Status, Submission
from submissions.scorers import current_scorer_version
from tests.factories import fixture_gold, gold_answers_and_evidence, logged_in, make_task, make_user

pytestmark = pytest.mark.django_db

PREDICTIONS = b'{"q1": {"answer": "a span", "evidence": "a sentence"}}'


def entry(task, user, score, *, days_ago=0, kind=Submission.PREDICTIONS, content=PREDICTIONS, **fields):
    """A scored public entry whose per-question rows give it ``score`` (overall F1)."""
    test_set = task.current_test_set()
    value = score / 100
    rows = [[value, value, value] for _ in range(test_set.n_items)]
    sub = Submission(user=user, task=task, test_set=test_set, method_name=f"System {score}", status=Status.SCORED,
                     public=True, kind=kind, scores={"answer_f1": score, "evidence_f1": score, "overall_f1": score},
                     ci={"overall_f1": [score - 1, score + 1]}, item_scores=rows, total=len(rows),
                     finished_at=timezone.now() - timedelta(days=days_ago),
                     scorer_version=current_scorer_version(task, kind), **fields)
    sub.file.save(f"upload{'.zip' if kind == Submission.MODEL else '.json'}", ContentFile(content), save=False)
    sub.save()
    return sub


# --- the best score over time --------------------------------------------------------------------

def test_the_records_are_the_entries_that_beat_every_earlier_one():
    task = make_task("expmrc-squad")
    rows = [{"kind": "submission", "rank": 3, "date": "2026-01-05", "scores": {"overall_f1": 50.0},
             "method": "B", "team": "t"},
            {"kind": "submission", "rank": 1, "date": "2026-01-09", "scores": {"overall_f1": 70.0},
             "method": "D", "team": "t"},
            {"kind": "submission", "rank": 2, "date": "2026-01-01", "scores": {"overall_f1": 60.0},
             "method": "A", "team": "t"},
            {"kind": "submission", "rank": 4, "date": "2026-01-07", "scores": {"overall_f1": 55.0},
             "method": "C", "team": "t"},
            {"kind": "submission", "rank": None, "date": "2026-01-02", "scores": {"overall_f1": 99.0},
             "method": "unranked", "team": "t"},
            {"kind": "human", "rank": None, "date": None, "scores": {"overall_f1": 90.0}, "method": "H", "team": ""}]
    assert [(r.method, r.score, r.day.isoformat()) for r in records(task, rows)] == [
        ("A", 60.0, "2026-01-01"), ("D", 70.0, "2026-01-09")]


def test_the_board_page_draws_the_best_score_over_time_from_the_stored_board():
    task = make_task("expmrc-squad")
    ReportedResult.objects.create(task=task, kind=ReportedResult.HUMAN, method="Human Performance",
                                  scores={"overall_f1": 83.6}, source="paper")
    user = make_user("alice")
    for score, days_ago in [(40.0, 9), (35.0, 6), (55.0, 3), (50.0, 1)]:
        entry(task, user, score, days_ago=days_ago)
    page = Client().get(f"/tasks/{task.slug}/").content.decode()
    start = page.index('<svg class="progress-chart"')
    chart = page[start:page.index("</svg>", start)]
    assert chart.count('<circle class="record"') == 2 and "System 40.0" in chart and "System 55.0" in chart
    assert 'class="human"' in chart and 'role="img"' in chart
    assert "rose from 40.000" in page and "to 55.000" in page


def test_a_board_without_a_ranked_entry_says_so():
    make_task("expmrc-squad")
    page = Client().get("/tasks/expmrc-squad/").content.decode()
    assert 'class="progress-chart"' not in page and "No ranked entry yet." in page


# --- a benchmark's pages --------------------------------------------------------------------------

def test_the_benchmark_pages_show_its_text_licence_rules_and_charts():
    task = make_task("expmrc-squad")
    benchmark = task.benchmark
    benchmark.overview = "First paragraph.\n\nSecond <paragraph>."
    benchmark.evaluation, benchmark.terms = "Scored by the official script.", "Be fair."
    benchmark.license, benchmark.license_url = "CC BY-SA 4.0", "https://creativecommons.org/licenses/by-sa/4.0/"
    benchmark.save()
    task.requires_code_url, task.public_predictions = True, True
    task.save()
    entry(task, make_user("alice"), 61.0)
    client = Client()
    overview = client.get(f"/benchmarks/{benchmark.slug}/overview/").content.decode()
    assert "<p>First paragraph.</p>" in overview and "Second &lt;paragraph&gt;." in overview
    assert 'rel="license noopener">CC BY-SA 4.0</a>' in overview and 'class="progress-chart"' in overview
    assert 'aria-current="page" class="current">Overview' in overview
    evaluation = client.get(f"/benchmarks/{benchmark.slug}/evaluation/").content.decode()
    assert "Scored by the official script." in evaluation and "Overall F1" in evaluation
    terms = client.get(f"/benchmarks/{benchmark.slug}/terms/").content.decode()
    rules = terms[terms.index(f'id="rules-{task.slug}"'):]
    rules = rules[:rules.index("</tr>")]
    assert "Be fair." in terms and "the URL of its code" in rules and "prediction files" in rules
    assert "the URL of its paper" not in rules and "models and code" not in rules
    boards = client.get(f"/benchmarks/{benchmark.slug}/").content.decode()
    assert f'href="/benchmarks/{benchmark.slug}/terms/"' in boards


def test_a_hidden_task_is_on_no_page_of_its_benchmark_but_for_staff():
    task = make_task("expmrc-squad")
    make_task("expmrc-race")
    task.visibility = Visibility.HIDDEN
    task.save()
    for section in ("overview", "evaluation", "terms"):
        page = Client().get(f"/benchmarks/expmrc/{section}/").content.decode()
        assert "/tasks/expmrc-squad/" not in page and "/tasks/expmrc-race/" in page, section
    staff = make_user("staff")
    staff.is_staff = True
    staff.save()
    assert "/tasks/expmrc-squad/" in logged_in(staff).get("/benchmarks/expmrc/terms/").content.decode()
    assert Client().get("/benchmarks/nowhere/overview/").status_code == 404


# --- downloads -------------------------------------------------------------------------------------

def urls(sub):
    return {"results": f"/entries/{sub.pk}/results.json", "predictions": f"/entries/{sub.pk}/predictions.json",
            "files": f"/entries/{sub.pk}/files/"}


def content(response):
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_a_public_entry_gives_its_results_but_no_per_question_rows_nor_gold():
    task = make_task("expmrc-squad")
    sub = entry(task, make_user("alice"), 61.0)
    response = Client().get(urls(sub)["results"])
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    body = json.loads(response.content)
    assert body["scores"]["overall_f1"] == 61.0 and body["ci"] == {"overall_f1": [60.0, 62.0]}
    assert body["benchmark"] == task.benchmark.slug and body["code_url"] == ""
    assert "item_scores" not in body and "held_item_scores" not in body and "run_log" not in body
    answers = gold_answers_and_evidence(fixture_gold("expmrc-squad"))
    text = response.content.decode()
    assert not any(len(answer) > 8 and answer in text for answer in answers)


def test_predictions_are_downloadable_only_where_the_task_allows_it():
    task = make_task("expmrc-squad")
    sub = entry(task, make_user("alice"), 61.0)
    refused = Client().get(urls(sub)["predictions"])
    assert refused.status_code == 403 and "keep prediction files private" in refused.json()["error"]
    task.public_predictions = True
    task.save()
    given = Client().get(urls(sub)["predictions"])
    assert given.status_code == 200 and content(given) == PREDICTIONS
    assert Client().get(urls(sub)["files"]).status_code == 403  # a prediction entry has no model
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert urls(sub)["results"] in page and urls(sub)["predictions"] in page


@pytest.mark.parametrize("hide", ["private", "flagged", "hidden task", "phase not live", "not scored"])
def test_an_entry_that_is_not_public_offers_nothing(hide):
    task = make_task("expmrc-squad")
    task.public_predictions = task.public_model_files = True
    task.save()
    sub = entry(task, make_user("alice"), 61.0)
    if hide == "private":
        Submission.objects.filter(pk=sub.pk).update(public=False)
    elif hide == "flagged":
        Submission.objects.filter(pk=sub.pk).update(flag_reason="copied")
    elif hide == "hidden task":
        task.visibility = Visibility.HIDDEN
        task.save()
    elif hide == "phase not live":
        now = timezone.now()
        phase = Phase.objects.create(task=task, name="p1", starts_at=now - timedelta(days=1),
                                     ends_at=now + timedelta(days=1), live_board=False)
        Submission.objects.filter(pk=sub.pk).update(phase=phase)
    else:
        Submission.objects.filter(pk=sub.pk).update(status=Status.FAILED)
    for name, url in urls(sub).items():
        assert Client().get(url).status_code == 404, (hide, name)


def test_a_hidden_input_task_never_gives_predictions():
    task = make_task("expmrc-squad")
    task.inputs, task.public_predictions = InputsAccess.HIDDEN, True
    task.save()
    sub = entry(task, make_user("alice"), 61.0)
    response = Client().get(urls(sub)["predictions"])
    assert response.status_code == 403 and "inputs are hidden" in response.json()["error"]
    assert Client().get(urls(sub)["results"]).status_code == 200


def test_predictions_wait_until_the_private_part_is_revealed():
    task = make_task("expmrc-squad")
    task.public_predictions = True
    task.save()
    now = timezone.now()
    phase = Phase.objects.create(task=task, name="final", starts_at=now - timedelta(days=1),
                                 ends_at=now + timedelta(days=1), private_share=0.5)
    sub = entry(task, make_user("alice"), 61.0, phase=phase)
    response = Client().get(urls(sub)["predictions"])
    assert response.status_code == 403 and "phase final" in response.json()["error"]
    Phase.objects.filter(pk=phase.pk).update(closed_at=now)
    assert Client().get(urls(sub)["predictions"]).status_code == 200


def test_a_model_bundle_is_private_unless_the_task_allows_it():
    task = make_task("expmrc-squad")
    sub = entry(task, make_user("alice"), 61.0, kind=Submission.MODEL, content=b"PK\x05\x06" + b"\0" * 18)
    assert Client().get(urls(sub)["files"]).status_code == 403
    assert Client().get(urls(sub)["predictions"]).status_code == 403
    task.public_model_files = True
    task.save()
    given = Client().get(urls(sub)["files"])
    assert given.status_code == 200 and content(given).startswith(b"PK")
    assert f'filename="entry-{sub.pk}-model.zip"' in given["Content-Disposition"]
