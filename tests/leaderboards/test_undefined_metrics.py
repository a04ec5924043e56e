"""Boards with an entry whose metrics are undefined (a QUACKIE score file where every sample is a
counted fail scores every metric null): every page, API board and CSV still answers, and the
entry is listed last, without a rank or a tier."""
import csv
import io

import pytest
from django.test import Client

from submissions.intake import submit_predictions
from submissions.models import Status, Submission
from submissions.tasks import score_submission
from tests.factories import make_tiny_track, make_user, upload_file

pytestmark = pytest.mark.django_db


def scored(task, name, predictions):
    sub = submit_predictions(user=make_user(name), task=task, method_name=name, uploaded_file=upload_file(predictions))
    score_submission(sub.pk)
    return Submission.objects.get(pk=sub.pk)


def test_an_entry_with_undefined_metrics_is_listed_unranked_and_breaks_no_page(tmp_path):
    task = make_tiny_track(tmp_path).task
    gold = task.current_test_set().gold
    # The first sentence gets the highest score everywhere: defined metrics on every sample.
    honest = scored(task, "First sentence", {sid: [1.0] + [0.0] * (len(s["sentences"]) - 1) for sid, s in gold.items()})
    nothing = scored(task, "Nothing", {})
    assert honest.status == nothing.status == Status.SCORED
    assert honest.scores["iou"] is not None and set(nothing.scores.values()) == {None}

    client = Client()
    for url in (f"/tasks/{task.slug}/", f"/benchmarks/{task.benchmark.slug}/", "/",
                f"/api/benchmarks/{task.benchmark.slug}/leaderboard/"):
        assert client.get(url).status_code == 200, url
    rows = client.get(f"/api/tasks/{task.slug}/leaderboard/").json()["rows"]
    mine = [row for row in rows if row["method"] in ("First sentence", "Nothing")]
    assert [(row["method"], row["rank"]) for row in mine] == [("First sentence", 1), ("Nothing", None)]
    assert rows[-1]["method"] == "Nothing" and rows[-1]["tier"] is None

    response = client.get(f"/tasks/{task.slug}/leaderboard.csv")
    assert response.status_code == 200
    table = {row["method"]: row for row in csv.DictReader(io.StringIO(response.content.decode("utf-8-sig")))}
    assert table["Nothing"]["rank"] == "" and table["Nothing"]["iou"] == "" and table["Nothing"]["iou_ci_low"] == ""
    assert table["First sentence"]["iou"] == f"{honest.scores['iou']:.3f}"


def test_a_quackie_entry_that_failed_on_most_samples_is_listed_without_a_rank(tmp_path):
    task = make_tiny_track(tmp_path).task
    gold = task.current_test_set().gold
    ids = sorted(gold)
    assert len(ids) >= 3
    few = ids[: (len(ids) - 1) // 2]  # fewer than half answered: the rest are counted fails
    most = ids[: len(ids) // 2 + 1]  # more than half answered
    first = {sid: [1.0] + [0.0] * (len(gold[sid]["sentences"]) - 1) for sid in ids}
    mostly_failed = scored(task, "Mostly failed", {sid: first[sid] for sid in few})
    mostly_fine = scored(task, "Mostly fine", {sid: first[sid] for sid in most})
    assert mostly_failed.details["quackie"]["fails"] > len(ids) / 2 >= mostly_fine.details["quackie"]["fails"]

    rows = Client().get(f"/api/tasks/{task.slug}/leaderboard/").json()["rows"]
    by_method = {row["method"]: row for row in rows}
    assert by_method["Mostly fine"]["rank"] == 1 and by_method["Mostly fine"]["unranked_reason"] == ""
    failed_row = by_method["Mostly failed"]
    assert failed_row["rank"] is None and failed_row["tier"] is None and rows[-1]["method"] == "Mostly failed"
    assert failed_row["unranked_reason"] == (f"not ranked: {len(ids) - len(few)} of {len(ids)} samples failed "
                                             "(more than half)")
    assert failed_row["fails"] == len(ids) - len(few) and failed_row["no_snr"] is not None
    page = Client().get(f"/tasks/{task.slug}/").content.decode()
    assert "samples failed (more than half)" in page and "more than half of the samples is listed without a rank" in page
    entry = Client().get(f"/submissions/{mostly_failed.pk}/").content.decode()
    assert f"failed: {len(ids) - len(few)} (left out of the means)" in entry and "(scored 0)" not in entry
