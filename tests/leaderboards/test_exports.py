"""CSV exports of the boards (leaderboards/exports.py): readable by Excel (UTF-8 with a byte order
mark, so Chinese names survive), safe to open (no cell runs as a formula), the task board with its
significance tiers and p-values as on the board, the benchmark's average board, and nothing of a
task the visitor may not see."""
import csv
import io

import pytest
from django.test import Client
from rest_framework.test import APIClient

from benchmark.models import Task, Visibility
from submissions.intake import submit_predictions
from submissions.tasks import score_submission
from tests.factories import (
    fixture_gold,
    logged_in,
    make_task,
    make_task_from_gold,
    make_user,
    perfect_predictions,
    synthetic_span_gold,
    upload_file,
)

pytestmark = pytest.mark.django_db

CHINESE = "哈工大讯飞联合实验室 BERT-wwm"
FORMULA = '=HYPERLINK("http://evil.example","x")'
BOM = b"\xef\xbb\xbf"


def scored(task, user, predictions, method):
    sub = submit_predictions(user=user, task=task, uploaded_file=upload_file(predictions), method_name=method)
    score_submission(sub.pk)
    return sub


def read_csv(response):
    """The rows as a spreadsheet would read them: the mark tells the encoding and is not data."""
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    assert response.content.startswith(BOM)
    return list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))


def assert_no_formula(rows):
    assert not any(value.startswith(("=", "+", "@", "\t", "\r")) for row in rows for value in row.values() if value)


def test_the_task_csv_has_the_boards_tiers_and_p_values_and_chinese_names(tmp_path, settings):
    settings.SUBMISSIONS_PER_DAY = 10
    gold = synthetic_span_gold(60)
    task = make_task_from_gold(tmp_path, gold)
    perfect = perfect_predictions(gold)
    half = {key: value for i, (key, value) in enumerate(perfect.items()) if i % 2 == 0}
    almost = {key: value for i, (key, value) in enumerate(perfect.items()) if i != 7}
    scored(task, make_user("hfl", team="哈工大"), perfect, CHINESE)
    scored(task, make_user("mallory", team="@SUM(A1:A9)"), almost, FORMULA)
    scored(task, make_user("carol"), half, "Half")

    rows = read_csv(Client().get(f"/tasks/{task.slug}/leaderboard.csv"))
    board = {row["method"]: row for row in APIClient().get(f"/api/v1/tasks/{task.slug}/leaderboard/").json()["results"]}
    by_method = {row["method"]: row for row in rows}
    assert by_method[CHINESE]["team"] == "哈工大"
    assert by_method["'" + FORMULA]["team"] == "'@SUM(A1:A9)"
    assert_no_formula(rows)
    # Three tiers of evidence, as on the board: the leader, one not significantly worse, one clearly worse.
    assert [by_method[m]["tier"] for m in (CHINESE, "'" + FORMULA, "Half")] == ["1", "1", "2"]
    for method, row in board.items():
        exported = by_method["'" + method if method == FORMULA else method]
        assert exported["tier"] == ("" if row["tier"] is None else str(row["tier"])), method
        for column in ("p_vs_above", "p_vs_leader", "p_adjusted"):
            value = row.get(column)
            assert (None if exported[column] == "" else float(exported[column])) == value, (method, column)
    assert float(by_method["Half"]["p_vs_above"]) < 0.001  # not rounded away to 0.000


def test_the_benchmark_csv_is_the_average_board_linked_from_its_page():
    squad, cmrc = make_task("expmrc-squad"), make_task("expmrc-cmrc2018")
    hfl, mallory = make_user("hfl", team="哈工大"), make_user("mallory", team="+cmd|' /C calc'!A0")
    for task in (squad, cmrc):
        scored(task, hfl, perfect_predictions(fixture_gold(task.slug)), CHINESE)
        scored(task, mallory, {}, FORMULA)  # an empty file: 0 everywhere, still averaged

    page = Client().get("/benchmarks/expmrc/").content.decode()
    assert 'href="/benchmarks/expmrc/leaderboard.csv"' in page
    response = Client().get("/benchmarks/expmrc/leaderboard.csv")
    rows = read_csv(response)
    assert 'filename="expmrc-average-leaderboard.csv"' in response["Content-Disposition"]
    board = APIClient().get("/api/v1/benchmarks/expmrc/leaderboard/").json()
    assert list(rows[0]) == ["rank", "method", "team", "kind", "reported", *board["tasks"], "average"]
    assert [(row["rank"], row["method"], row["team"], row["average"]) for row in rows] == [
        ("1", CHINESE, "哈工大", "100.000"), ("2", "'" + FORMULA, "'+cmd|' /C calc'!A0", "0.000")]
    assert [rows[0][slug] for slug in board["tasks"]] == ["100.000", "100.000"]
    assert_no_formula(rows)


def test_hidden_tasks_stay_hidden_in_both_exports():
    squad, cmrc = make_task("expmrc-squad"), make_task("expmrc-cmrc2018")
    user = make_user("hfl")
    for task in (squad, cmrc):
        scored(task, user, perfect_predictions(fixture_gold(task.slug)), "System")
    staff = make_user("maintainer")
    staff.is_staff = True
    staff.save()
    assert "expmrc-cmrc2018" in read_csv(Client().get("/benchmarks/expmrc/leaderboard.csv"))[0]

    # A bulk update sends no signal: the stored average board still names the task, as it does
    # for the moment between hiding a task and the worker recomputing the board.
    Task.objects.filter(pk=cmrc.pk).update(visibility=Visibility.HIDDEN)
    assert Client().get("/tasks/expmrc-cmrc2018/leaderboard.csv").status_code == 404
    # Nor its average: with the squad column it would give the hidden task's score away.
    stale = Client().get("/benchmarks/expmrc/leaderboard.csv")
    assert stale.status_code == 503 and stale["Retry-After"]
    assert b"expmrc-cmrc2018" not in stale.content
    assert read_csv(logged_in(staff).get("/tasks/expmrc-cmrc2018/leaderboard.csv"))[0]["method"] == "System"
    assert "expmrc-cmrc2018" in read_csv(logged_in(staff).get("/benchmarks/expmrc/leaderboard.csv"))[0]

    # Once the board is recomputed (the save sends boards_changed) the task is out of the average.
    cmrc.refresh_from_db()
    cmrc.save()
    assert list(read_csv(Client().get("/benchmarks/expmrc/leaderboard.csv"))[0]) == [
        "rank", "method", "team", "kind", "reported", "expmrc-squad", "average"]
