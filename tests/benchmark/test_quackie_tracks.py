"""QUACKIE tracks end to end inside Django: interpretation set import, hosted model, inclusion
flags with a real (tiny) transformers model, public inputs without GT, score files, built-in
baselines and the published boards."""
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from benchmark import quackie_tracks
from benchmark.models import Task, Track
from scoring.tiny_models import build_tiny_classifier
from submissions.models import Submission
from submissions.tasks import score_submission
from tests.factories import make_user, token_for, upload_file

pytestmark = pytest.mark.django_db
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SQUAD_V2 = Path(__file__).resolve().parents[1] / "fixtures" / "quackie" / "squad_v2_small.json"


@pytest.fixture
def track(tmp_path):
    iset, created = quackie_tracks.import_quackie(SQUAD_V2, name="small", version="1")
    assert created and iset.stats["unanswerable"] == 1
    model_dir = build_tiny_classifier(tmp_path / "clf", answerable=True)
    model = quackie_tracks.register_model(slug="tiny", name="Tiny", kind="classification", path=model_dir)
    track = quackie_tracks.create_track(iset, model)
    assert track.task.slug == "quackie-small-tiny" and track.status == Track.PENDING
    progress = []
    included = quackie_tracks.compute_inclusion(track, batch_size=2, progress=lambda d, t: progress.append((d, t)))
    assert included == iset.n_samples and progress[-1] == (iset.n_samples, iset.n_samples)
    track.refresh_from_db()
    assert track.status == Track.READY and track.n_included == included
    return track


def api_for(user):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return api


def test_inputs_are_the_included_samples_without_ground_truth(track):
    body = APIClient().get(f"/api/tasks/{track.task.slug}/inputs/").json()
    assert all(set(row) == {"sample_id", "question", "context", "sentences"} for row in body["data"])
    assert "gt_candidates" not in json.dumps(body)
    assert len(body["data"]) == track.n_included


def test_a_model_that_says_unanswerable_includes_nothing(tmp_path):
    iset, _ = quackie_tracks.import_quackie(SQUAD_V2, name="small", version="1")
    model = quackie_tracks.register_model(slug="never", name="Never", kind="classification",
                                          path=build_tiny_classifier(tmp_path / "never", answerable=False))
    track = quackie_tracks.create_track(iset, model)
    assert quackie_tracks.compute_inclusion(track) == 0
    track.refresh_from_db()
    assert track.exclusions["predicted_unanswerable"] == iset.n_samples


def test_score_file_submission_counts_wrong_lengths_as_fails(track):
    api = api_for(make_user())
    inputs = APIClient().get(f"/api/tasks/{track.task.slug}/inputs/").json()["data"]
    scores = {row["sample_id"]: [float(i) for i in range(len(row["sentences"]))] for row in inputs}
    first = inputs[0]["sample_id"]
    scores[first] = scores[first] + [0.0]  # wrong length: a counted fail, not an invalid file
    response = api.post(f"/api/tasks/{track.task.slug}/submissions/",
                        {"file": upload_file(scores), "method_name": "Last sentence"}, format="multipart")
    assert response.status_code == 201, response.content
    score_submission(response.json()["id"])
    detail = api.get(f"/api/submissions/{response.json()['id']}/").json()
    assert detail["status"] == "scored"
    assert detail["details"]["quackie"]["fails"] == 1
    assert set(detail["scores"]) == {"iou", "hpd", "snr", "hpd_rank", "snr_raw"}
    assert 0 <= detail["scores"]["iou"] <= 100
    rows = APIClient().get(f"/api/tasks/{track.task.slug}/leaderboard/").json()["rows"]
    assert rows[0]["fails"] == 1 and rows[0]["method"] == "Last sentence"


@pytest.mark.parametrize("content, expected", [
    (b'{"nope": [1, 2]}', "nope"),
    (b'{"q-mat": [1, NaN, 2]}', "finite"),
    (b'{"q-mat": "high"}', "q-mat"),
])
def test_invalid_score_files_are_refused_precisely(track, content, expected):
    api = api_for(make_user())
    response = api.post(f"/api/tasks/{track.task.slug}/submissions/",
                        {"file": upload_file(content), "method_name": "bad"}, format="multipart")
    assert response.status_code == 400 and expected in response.json()["error"]


def test_builtin_baselines_appear_as_baseline_rows(track):
    out = io.StringIO()
    call_command("run_quackie_baselines", "--track", track.task.slug, "--methods", "Random", "Gradient_sum",
                 "Gradient_max", stdout=out)
    assert "Random" in out.getvalue() and "Gradient_max" in out.getvalue()
    rows = APIClient().get(f"/api/tasks/{track.task.slug}/leaderboard/").json()["rows"]
    assert {row["method"] for row in rows} == {"Random", "Gradient_sum", "Gradient_max"}
    assert all(row["fails"] == 0 for row in rows), rows
    assert all(row["baseline"] and not row["reported"] and row["ci"] for row in rows)
    page = APIClient().get(f"/tasks/{track.task.slug}/").content.decode()
    assert "built-in baseline" in page and 'id="track"' in page


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_builtin_baselines_run_as_code_through_the_sandbox(track):
    out = io.StringIO()
    call_command("run_quackie_baselines", "--track", track.task.slug, "--methods", "Gradient_sum",
                 "--sandbox", stdout=out)
    assert "sandbox bwrap" in out.getvalue(), out.getvalue()
    sub = Submission.objects.get(task=track.task, method_name="Gradient_sum")
    assert sub.kind == Submission.CODE and sub.status == "scored"
    assert sub.details["progress"] == {"done": track.n_included, "total": track.n_included}
    assert sub.details["sandbox"]["sample_failures"] == {}
    # Same numbers as the in-process baseline on the same samples.
    call_command("run_quackie_baselines", "--track", track.task.slug, "--methods", "Gradient_sum",
                 stdout=io.StringIO())
    in_process = Submission.objects.get(task=track.task, method_name="Gradient_sum",
                                        kind=Submission.PREDICTIONS)
    assert sub.scores == pytest.approx(in_process.scores, abs=1e-6)
    rows = APIClient().get(f"/api/tasks/{track.task.slug}/leaderboard/").json()["rows"]
    assert any(row["baseline"] and row["method"] == "Gradient_sum" for row in rows)


def test_published_boards_hold_the_official_rows_as_reported(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps([
        {"dataset": "SQuAD", "classifier": "QA", "method": "Gradient_sum", "IoU": 91.12, "HPD": 93.01, "SNR": 35.5,
         "info": "https://example.org/saliency"},
        {"dataset": "SQuAD", "classifier": "QA", "method": "Random", "IoU": 24.64, "HPD": 40.28, "SNR": 36.0,
         "info": ""},
    ]))
    boards = quackie_tracks.load_published_results(results)
    task = boards[("SQuAD", "QA")]
    assert task.slug == "quackie-published-squad-qa" and not task.accepts_submissions
    rows = APIClient().get(f"/api/tasks/{task.slug}/leaderboard/").json()["rows"]
    assert [(r["rank"], r["method"], r["reported"], r["scores"]["iou"]) for r in rows] == [
        (1, "Gradient_sum", True, 91.12), (2, "Random", True, 24.64)]
    page = APIClient().get(f"/tasks/{task.slug}/").content.decode()
    assert "91.12" in page and "reported" in page
    assert Task.objects.get(slug=task.slug).metric_decimals == 2
