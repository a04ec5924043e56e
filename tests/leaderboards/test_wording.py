"""Each kind of board speaks its own words (metric, ranking rule, footnote, reading guide), and
the smaller page fixes: the home table on each task's primary metric, published boards, the
QUACKIE upload help, status filter of "My submissions", upload messages for empty and binary
files, p-values, chart names and scales, 404/500 pages, language marks."""
import html
import json
import re

import pytest
from django.template.loader import render_to_string
from django.test import Client

from benchmark import kinds, quackie_tracks
from benchmark.models import Benchmark, ReportedResult, Task
from core.templatetags.expbench import grouped_bar_chart, hbar_chart, p_cell, p_value
from leaderboards import wording
from scoring.strict_json import InvalidPredictions, load_json_object
from submissions import intake
from submissions.models import Status
from submissions.tasks import score_submission
from submissions.views import present_details
from tests.factories import fixture_gold, make_task, make_tiny_track, make_user, perfect_predictions, upload_file

pytestmark = pytest.mark.django_db

EXPMRC_WORDS = ("Human row pinned", "over questions", "official ExpMRC", "covers four subsets")


def text(response):
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


@pytest.fixture(autouse=True)
def _fast(settings):
    settings.BOOTSTRAP_RESAMPLES = 200


@pytest.fixture
def published(tmp_path):
    """Two official QUACKIE boards (reported rows only, no uploads)."""
    rows = [{"dataset": "SQuAD", "classifier": "QA", "method": method, "IoU": iou, "HPD": iou + 2, "SNR": 30.0,
             "info": ""} for method, iou in (("Gradient_sum", 91.12), ("Random", 20.5))]
    rows.append({"dataset": "NYT", "classifier": "QA", "method": "Random", "IoU": 18.0, "HPD": 20.0, "SNR": 3.0,
                 "info": ""})
    path = tmp_path / "results.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return quackie_tracks.load_published_results(path)


@pytest.fixture
def checklist_board():
    benchmark = Benchmark.objects.create(slug="checklist-mrc", name="CheckList-MRC",
                                         citation="Ribeiro et al. Beyond Accuracy. ACL 2020.")
    task = Task.objects.create(benchmark=benchmark, slug="checklist-squad", name="CheckList SQuAD",
                               kind="checklist", accepts_submissions=True)
    ReportedResult.objects.create(task=task, kind="baseline", method="BERT-base (SQuAD)", team="CheckList authors",
                                  scores={"pass_rate": 45.5}, source="paper")
    return task


def test_every_kind_has_its_own_words():
    for kind, _ in kinds.choices():
        task = Task(kind=kind)
        words = wording.wording_for(task)
        primary = dict(task.metric_columns)[task.primary_metric]
        assert words.metric.startswith(primary)
        assert primary in words.ranking or primary.lower() in words.ranking.lower()
        assert any(term == primary for term, _ in words.guide), kind
        if kind not in ("span", "multichoice"):
            page_words = " ".join([words.metric, words.ranking, words.footnote, *(m for _, m in words.guide)])
            for phrase in (*EXPMRC_WORDS, "ExpMRC", "question"):
                assert phrase not in page_words, (kind, phrase)


def test_quackie_benchmark_page_speaks_quackie(published):
    response = Client().get("/benchmarks/quackie/")
    assert response.status_code == 200
    page = text(response)
    for phrase in EXPMRC_WORDS:
        assert phrase not in page
    assert "How to read the QUACKIE boards" in page and "Ranked by IoU" in page
    assert "Published: SQuAD · QA" in page and "Gradient_sum" in page and "91.12" in page
    assert "@misc{rychener2020quackie" in page


def test_checklist_benchmark_page_speaks_checklist(checklist_board):
    page = text(Client().get("/benchmarks/checklist-mrc/"))
    for phrase in EXPMRC_WORDS:
        assert phrase not in page
    assert "Cases passed (%)" in page and "How to read the CheckList boards" in page
    assert "@inproceedings{ribeiro2020checklist" in page


def test_expmrc_benchmark_page_averages_its_subsets_in_expmrc_words():
    make_task("expmrc-squad")
    make_task("expmrc-race")
    page = text(Client().get("/benchmarks/expmrc/"))
    assert "Average over 2 subsets: RACE+, SQuAD" in page and "as on the official ExpMRC leaderboard" in page
    assert "The published average on the official ExpMRC leaderboard covers four subsets" in page
    assert "Overall F1" in page


def test_a_benchmark_with_one_scored_task_shows_no_average():
    make_task("expmrc-squad")
    page = text(Client().get("/benchmarks/expmrc/"))
    assert "Average over" not in page and "Boards" in page


def test_home_names_each_primary_metric_and_counts_published_rows(published):
    make_task("expmrc-squad")
    body = Client().get("/").content.decode()
    quackie_card = body[body.index(">QUACKIE<"):]
    header = re.search(r"<thead>(.*?)</thead>", quackie_card, re.S).group(1)
    assert ">IoU</th>" in header and "Overall F1" not in header
    row = re.search(r'<tr>\s*<td><a href="/tasks/quackie-published-squad-qa/">.*?</tr>', quackie_card, re.S).group(0)
    cells = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split())
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[3] == "2 published" and cells[4].startswith("Gradient_sum") and cells[5] == "91.12"
    expmrc_header = re.search(r"<thead>(.*?)</thead>", body[body.index(">ExpMRC<"):], re.S).group(1)
    assert "Overall F1" in expmrc_header


@pytest.fixture
def track(tmp_path):
    return make_tiny_track(tmp_path)


def scored_score_file(user, task, method_name):
    data = task.current_test_set().public_inputs["data"]  # the deferred field loads on access
    scores = {row["sample_id"]: [float(len(sentence)) for sentence in row["sentences"]] for row in data}
    submission = intake.submit_predictions(user=user, task=task, uploaded_file=upload_file(scores),
                                           method_name=method_name, public=True)
    score_submission(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Status.SCORED, submission.error_message
    return submission


def test_home_shows_the_best_entry_of_a_track_on_its_own_metric(track):
    entry = scored_score_file(make_user("quinn", team="Q Lab"), track.task, "Longest sentence")
    body = Client().get("/").content.decode()
    row = re.search(rf'<tr>\s*<td><a href="/tasks/{track.task.slug}/">.*?</tr>', body, re.S).group(0)
    cells = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split())
             for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[3] == "1" and cells[4] == "Longest sentence (Q Lab)"
    assert cells[5] == f"{entry.scores['iou']:.2f}" != "—"


def test_quackie_board_and_upload_form_use_quackie_words(track):
    alice = make_user("alice")
    board = text(Client().get(f"/tasks/{track.task.slug}/"))
    for phrase in EXPMRC_WORDS:
        assert phrase not in board
    assert "How to read this board" in board and "Fails / no SNR" in board
    client = Client()
    client.force_login(alice)
    form = client.get(f"/tasks/{track.task.slug}/submit/")
    page = text(form)
    assert "def interpret(model, question, context" in page and "predict_proba" in page
    assert "Tiny" in page  # the track's hosted model is named
    assert '"evidence"' not in page and "answer/evidence" not in page and "question key" not in page


def test_a_board_row_starts_a_comparison():
    task = make_task("expmrc-squad")
    alice = make_user("alice")
    entry = intake.submit_predictions(user=alice, task=task, method_name="Mine", public=True,
                                      uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    score_submission(entry.pk)
    body = Client().get("/tasks/expmrc-squad/").content.decode()
    assert f'href="/compare/?a={entry.pk}"' in body
    compare = text(Client().get("/compare/"))
    assert "Entry numbers" in compare and "/submissions/12/" in compare


def test_my_submissions_leaves_rejected_uploads_out_unless_asked():
    task = make_task("expmrc-squad")
    alice = make_user("alice")
    good = intake.submit_predictions(user=alice, task=task, method_name="Good one", public=True,
                                     uploaded_file=upload_file(perfect_predictions(fixture_gold("expmrc-squad"))))
    score_submission(good.pk)
    bad = intake.submit_predictions(user=alice, task=task, method_name="Broken one", public=True,
                                    uploaded_file=upload_file(b""))
    assert bad.status == Status.REJECTED
    client = Client()
    client.force_login(alice)
    default = text(client.get("/submissions/"))
    assert "Good one" in default and "Broken one" not in default and "1 rejected upload" in default
    assert "100.000 Overall F1" in default
    rejected = text(client.get("/submissions/?status=rejected"))
    assert "Broken one" in rejected and "Good one" not in rejected
    assert "Good one" in text(client.get("/submissions/?status=all"))
    assert "Broken one" not in text(client.get("/submissions/?status=nonsense"))


@pytest.mark.parametrize("raw, message", [
    (b"", "prediction file is empty"),
    (b" \n\t", "prediction file is empty (it holds only white space)"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "this looks like a PNG image"),
    (b"PK\x03\x04\x14\x00\x00\x00\x08\x00\xff", "this looks like a ZIP archive"),
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3", "this looks like a PDF document"),
    (b"%PDF-1.7\n", "this looks like a PDF document"),  # ASCII only: refused by the JSON parser
])
def test_empty_and_binary_uploads_say_what_they_are(raw, message):
    with pytest.raises(InvalidPredictions) as refused:
        load_json_object(raw, max_bytes=1000, expected="{}")
    assert message in str(refused.value)
    assert "Expecting value" not in str(refused.value) and "invalid byte" not in str(refused.value)


def test_p_values_never_read_zero():
    assert p_value(0.0002) == "p < 0.001" and p_value(0.0421) == "p = 0.042" and p_value(0.0004, 4) == "p = 0.0004"
    assert p_value(0.0) == "p < 0.001" and p_value(None) == "p = —"
    assert p_cell(0.00001) == "<0.0001" and p_cell(0.5) == "0.5000" and p_cell(None) == "—"


def test_charts_are_named_and_keep_their_labels():
    long_label = "s9p Personal pronouns dropped"
    chart = hbar_chart([{"l": long_label, "v": 1.3}, {"l": "什么", "v": -2.0}], "l", "v", None, signed=True,
                       title="Reasoning")
    assert 'role="img"' in chart and f'aria-label="Reasoning: {long_label} 1.3; 什么 -2.0"' in chart
    assert f">{long_label}</text>" in chart
    grouped = grouped_bar_chart({"p": {"right": 0.25}, "r": {"right": 0.5}}, "p,r", "Predicted,Reference")
    assert 'aria-label="Predicted, Reference: right Predicted 0.25, Reference 0.50"' in grouped


def bar_widths(chart):
    return [float(w) for w in re.findall(r'<rect x="[^"]+" y="[^"]+" width="([^"]+)" height="16"', chart)]


def test_skill_charts_of_one_page_share_one_scale():
    details = present_details({"skills": {
        "s1": {"skill": "s1", "name": "Antonym substitution", "group": "reading", "gap": 1.3},
        "s7": {"skill": "s7", "name": "Comparatives dropped", "group": "reasoning", "gap": 72.9}}})
    assert details["skill_scale"] == 72.9
    small, large = (hbar_chart(group["rows"], "label", "gap", details["skill_scale"], signed=True)
                    for group in details["skill_groups"])
    assert bar_widths(small)[0] < bar_widths(large)[0] / 40  # 1.3 draws ~1/56 as long as 72.9


def test_error_pages_carry_the_site_header():
    response = Client().get("/tasks/no-such-task/")
    assert response.status_code == 404
    page = text(response)
    assert "Page not found" in page and "Leaderboards" in page and "Log in" in page and "Sign up" in page
    server_error = render_to_string("500.html")
    assert "Something went wrong" in server_error and 'href="/"' in server_error and "favicon.svg" in server_error


def test_chinese_task_pages_mark_their_language():
    for slug in ("expmrc-c3", "expmrc-squad"):
        ReportedResult.objects.create(task=make_task(slug), kind="human", method="Human Performance", team="Authors",
                                      scores={"answer_acc": 95.3, "answer_f1": 90.0, "evidence_f1": 95.7,
                                              "overall_f1": 91.1}, source="paper")
    assert re.search(r'<td lang="zh">\s*Human Performance', Client().get("/tasks/expmrc-c3/").content.decode())
    assert 'lang="zh"' not in Client().get("/tasks/expmrc-squad/").content.decode()
