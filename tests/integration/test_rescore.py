"""A maintainer's corrected test set, through real processes (the embedded stack: gunicorn, Celery
workers, beat): import v2 of a demo test set, run ``manage.py rescore``; the entry comes back on
the board with its v2 numbers and its v1 score in its history, and a second run changes nothing.
It uses the CMRC 2018 task, which the other tests of the shared stack only look at."""
import json

import pytest

from .conftest import FIXTURE_EXPMRC, SHARED_EXPMRC

pytestmark = pytest.mark.integration

SLUG = "expmrc-cmrc2018"


def sample():
    path = SHARED_EXPMRC / "sample_submission" / "cmrc2018.json"
    if path.exists():
        return path.read_bytes()
    from tests.factories import perfect_predictions
    return json.dumps(perfect_predictions(json.loads(
        (FIXTURE_EXPMRC / "expmrc-cmrc2018-dev.json").read_text(encoding="utf-8")))).encode()


def corrected(path):
    """The demo's CMRC 2018 set with every answer of the first paragraph replaced: a corrected v2."""
    source = SHARED_EXPMRC / "expmrc-cmrc2018-dev.json"
    if not source.exists():
        source = FIXTURE_EXPMRC / "expmrc-cmrc2018-dev.json"
    gold = json.loads(source.read_text(encoding="utf-8"))
    paragraph = gold["data"][0]["paragraphs"][0]
    for qa in paragraph["qas"]:
        qa["answers"] = [{"text": paragraph["context"][:12], "answer_start": 0}]
    path.write_text(json.dumps(gold), encoding="utf-8")
    return path


def test_import_v2_rescore_and_rescore_again(embedded_stack, tmp_path):
    stack = embedded_stack
    token = stack.create_user("rescored-researcher", "integration-pw-1")
    status, body = stack.upload(token, SLUG, sample(), method_name="Sample system")
    assert status == 201, body
    v1 = stack.wait_for(body["id"], token)
    assert v1["status"] == "scored"
    v1_version = stack.board(SLUG)["test_set_version"]

    result = stack.manage("import_expmrc", str(corrected(tmp_path / "cmrc-v2.json")), "--task",
                          SLUG, "--version", "v2-corrected", "--note", "first paragraph re-annotated")
    assert result.returncode == 0, result.stderr
    assert f"manage.py rescore --task {SLUG}" in result.stdout
    board = stack.board(SLUG, until=lambda b: b["test_set_version"] == "v2-corrected")
    assert body["id"] not in [row["submission_id"] for row in board["rows"]]

    rescore = stack.manage("rescore", "--task", SLUG, "--timeout", "120")
    assert rescore.returncode == 0, rescore.stderr
    out = rescore.stdout
    assert "1 entry to re-score" in out and "progress: 1/1 done" in out, out
    assert "re-scored: 1 (score changed: 1, unchanged: 0); failed: 0" in out, out
    assert "largest score changes" in out

    board = stack.board(SLUG, until=lambda b: any(r["submission_id"] == body["id"] for r in b["rows"]))
    row = next(row for row in board["rows"] if row["submission_id"] == body["id"])
    assert row["scores"]["answer_f1"] != v1["scores"]["answer_f1"] and not row["stale"]
    status, entry = stack.request("GET", f"/api/v1/submissions/{body['id']}/", token=token)
    assert entry["test_set_version"] == "v2-corrected" and entry["attempts"] == 2
    status, page = stack.request("GET", f"/submissions/{body['id']}/")
    assert v1_version in page and "first paragraph re-annotated" in page

    again = stack.manage("rescore", "--task", SLUG, "--timeout", "60")
    assert again.returncode == 0, again.stderr
    assert "0 entries to re-score, 0 already being re-scored, 1 up to date" in again.stdout
    status, entry = stack.request("GET", f"/api/v1/submissions/{body['id']}/", token=token)
    assert entry["attempts"] == 2  # scored once per version, never twice
