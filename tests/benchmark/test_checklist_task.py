"""The CheckList task on the server: a suite imported as public items, downloaded with stable
ids, predictions uploaded and scored with failure rates per test and capability beside BERT's,
shown on the entry page and compared side by side."""
import json
import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from benchmark.importers import import_checklist
from submissions.tasks import score_submission
from tests.factories import make_user, token_for, upload_file
from tests.scoring.test_checklist import inv, mft

pytestmark = pytest.mark.django_db
COMPARISON = "A is COMP than B. Who is more / less COMP?"  # one of the 24 tests: BERT fails 20.0%


@pytest.fixture
def suite_task(tmp_path):
    suite = {"tests": [mft(COMPARISON, "eq", [["A", "B"], ["C"]], capability="Vocabulary"),
                       inv("Typos in the question", "inv", [2, 3], capability="Robustness")]}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite))
    test_set, created = import_checklist(path, task_slug="checklist-small", version="1")
    assert created and test_set.n_items == 8
    return test_set.task


@pytest.fixture
def api():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user())}")
    return client


def section(html, start, end):
    """The part of a page from ``start`` to the next ``end``."""
    html = html[html.index(start):]
    return html[:html.index(end)]


def row_cells(table_html, first_cell):
    """Text of the cells of the table row whose first cell is ``first_cell``."""
    for row in re.findall(r"<tr>(.*?)</tr>", table_html, flags=re.S):
        cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in {table_html}")


def upload(api, predictions, name="System"):
    return api.post("/api/tasks/checklist-small/submissions/",
                    {"file": upload_file(predictions), "method_name": name}, format="multipart")


def test_items_are_public_with_stable_ids_and_no_labels(suite_task):
    assert suite_task.kind == "checklist" and not suite_task.current_test_set().is_hidden
    body = json.dumps(Client().get("/api/tasks/checklist-small/inputs/").json())
    ids = [f"t0-c0-i{i}" for i in range(2)] + ["t0-c1-i0"] + [f"t1-c0-i{i}" for i in range(2)] + \
          [f"t1-c1-i{i}" for i in range(3)]
    assert all(f'"{item_id}"' in body for item_id in ids)
    assert '"label"' not in body
    page = Client().get("/tasks/checklist-small/").content.decode()
    assert "Public test set" in page and "8 items" in page


def test_predictions_are_scored_per_test_and_capability_beside_bert(suite_task, api):
    predictions = {"t0-c0-i0": "A", "t0-c0-i1": "B",  # MFT case 0 passes
                   "t0-c1-i0": "X",  # MFT case 1 fails
                   "t1-c0-i0": "x", "t1-c0-i1": "x",  # INV case 0: same answer, passes
                   "t1-c1-i0": "y", "t1-c1-i1": "z", "t1-c1-i2": "y"}  # INV case 1 changes, fails
    response = upload(api, predictions)
    assert response.status_code == 201, response.content
    submission_id = response.json()["id"]
    score_submission(submission_id)
    body = api.get(f"/api/submissions/{submission_id}/").json()
    assert body["status"] == "scored" and body["scores"]["pass_rate"] == pytest.approx(50.0)
    detail = Client().get(f"/submissions/{submission_id}/").content.decode()
    assert 'id="checklist-results"' in detail and "Typos in the question" in detail
    from submissions.models import Submission

    details = Submission.objects.get(pk=submission_id).details["checklist"]
    by_name = {t["name"]: t for t in details["tests"]}
    assert by_name[COMPARISON]["failure_rate"] == pytest.approx(50.0)
    assert by_name[COMPARISON]["bert_failure_rate"] == 20.0
    assert by_name["Typos in the question"]["bert_failure_rate"] is None  # not one of the 24
    assert {c["capability"]: c["failure_rate"] for c in details["capabilities"]} == {
        "Vocabulary": pytest.approx(50.0), "Robustness": pytest.approx(50.0)}
    assert {c["capability"]: c["bert_failure_rate"] for c in details["capabilities"]} == {
        "Vocabulary": 20.0, "Robustness": None}
    # The entry page shows each capability's failure rate with BERT's beside it, as a table
    # and as a second chart on the same 0-100 scale.
    capabilities = section(detail, 'id="checklist-capabilities"', "</table>")
    assert row_cells(capabilities, "Vocabulary") == ["Vocabulary", "1", "2", "1", "50.0", "20.0"]
    assert row_cells(capabilities, "Robustness") == ["Robustness", "1", "2", "1", "50.0", "—"]
    assert "By capability: BERT-base (reference)" in detail
    bert_chart = section(detail, "By capability: BERT-base (reference)", "</svg>")
    assert ">Vocabulary<" in bert_chart and ">20.0<" in bert_chart and "Robustness" not in bert_chart
    rows = api.get("/api/tasks/checklist-small/leaderboard/").json()["rows"]
    assert [row["method"] for row in rows if not row["reported"]] == ["System"]

    # A second entry missing an item: its case is "not answered" and counts as failed.
    second = dict(predictions, **{"t0-c1-i0": "C"})
    del second["t1-c0-i1"]
    other_id = upload(api, second, name="Other").json()["id"]
    score_submission(other_id)
    other = api.get(f"/api/submissions/{other_id}/").json()
    assert other["scores"]["pass_rate"] == pytest.approx(50.0)  # MFT now 2/2, INV 0/2
    compare = Client().get(f"/api/compare/?a={submission_id}&b={other_id}").json()
    assert "checklist" in compare, compare.keys()
    by_capability = {row["capability"]: row for row in compare["checklist"]["capabilities"]}
    assert by_capability["Vocabulary"]["a"] == {"failure_rate": pytest.approx(50.0), "bert_failure_rate": 20.0}
    assert by_capability["Vocabulary"]["b"]["failure_rate"] == pytest.approx(0.0)
    assert by_capability["Robustness"]["b"] == {"failure_rate": pytest.approx(100.0), "bert_failure_rate": None}
    page = Client().get(f"/compare/?a={submission_id}&b={other_id}").content.decode()
    assert 'id="compare-checklist"' in page
    compared = section(page, 'id="compare-checklist-capabilities"', "</table>")
    assert row_cells(compared, "Vocabulary") == ["Vocabulary", "50.0", "0.0", "20.0"]
    assert row_cells(compared, "Robustness") == ["Robustness", "50.0", "100.0", "—"]


@pytest.mark.parametrize("predictions, expected", [
    ({"t9-c0-i0": "A"}, "t9-c0-i0"),
    ({"t0-c0-i0": 3}, "t0-c0-i0"),
])
def test_bad_prediction_files_are_refused_with_the_offending_id(suite_task, api, predictions, expected):
    response = upload(api, predictions)
    assert response.status_code == 400 and expected in response.json()["error"]
