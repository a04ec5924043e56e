"""Interpreter code submissions (SPEC §7) through Django: upload validation, refusal without a
sandbox, a real sandboxed run with progress, per-sample failures counted as QUACKIE fails."""
import logging
import shutil

import pytest
from rest_framework.test import APIClient

from scoring import sandbox
from submissions.models import ErrorCategory, Status, Submission
from submissions.tasks import run_code_submission
from tests.factories import make_tiny_track, make_user, token_for, upload_file

pytestmark = pytest.mark.django_db
needs_bwrap = pytest.mark.skipif(not shutil.which("bwrap"),
                                 reason="bubblewrap (bwrap) is not installed; .ci/run installs it")

GOOD = b'''
def interpret(model, question, context):
    import nltk  # the frozen sentences are NLTK Punkt sentences
    n = len(context.split(". "))
    return [float(i) for i in range(n)]
'''

FIRST_SENTENCE = b'''
import re
def interpret(model, question, context, sentences=None):
    # Uses the model (batched predict_proba) to prove the wrapper works inside the sandbox.
    p = model.predict_proba([question], [context])[0][1]
    parts = [s for s in re.split(r"(?<=[.!?])\\s+", context.strip()) if s]
    return [p] + [0.0] * (len(parts) - 1)
'''


@pytest.fixture
def track(tmp_path):
    return make_tiny_track(tmp_path)


@pytest.fixture
def api():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(make_user())}")
    return client


def upload(api, track, content, name="interpreter.py"):
    return api.post(f"/api/tasks/{track.task.slug}/submissions/",
                    {"file": upload_file(content, name=name), "method_name": "Mine", "kind": "code"},
                    format="multipart")


def scored_run(api, track, code):
    """Upload ``code``, run it in the sandbox as the worker would, return the scored entry."""
    response = upload(api, track, code)
    assert response.status_code == 201, response.content
    assert run_code_submission(response.json()["id"]) == Status.SCORED
    return Submission.objects.get(pk=response.json()["id"])


def test_syntax_errors_are_refused_with_the_line(api, track):
    response = upload(api, track, b"def interpret(model, question, context):\n    return [1,\n")
    assert response.status_code == 400 and "line" in response.json()["error"]
    response = upload(api, track, b"def explain(a, b, c):\n    return []\n")
    assert response.status_code == 400 and "interpret" in response.json()["error"]


def test_code_is_refused_when_no_sandbox_is_available(api, track, monkeypatch):
    monkeypatch.setattr(sandbox, "sandbox_available", lambda mode=None: (False, "bwrap is not installed"))
    response = upload(api, track, GOOD)
    assert response.status_code == 503
    assert "no sandbox" in response.json()["error"] and "bwrap is not installed" in response.json()["error"]
    assert not Submission.objects.exists()


def test_code_only_for_quackie_tracks(api):
    from tests.factories import make_task

    make_task("expmrc-squad")
    response = api.post("/api/tasks/expmrc-squad/submissions/",
                        {"file": upload_file(GOOD, name="i.py"), "method_name": "x", "kind": "code"},
                        format="multipart")
    assert response.status_code == 400 and "QUACKIE" in response.json()["error"]


@needs_bwrap
def test_sandboxed_run_scores_and_reports_progress(api, track):
    sub = scored_run(api, track, FIRST_SENTENCE)
    assert sub.details["progress"] == {"done": track.n_included, "total": track.n_included}
    assert sub.details["sandbox"]["mode"] == "bwrap"
    assert set(sub.scores) == {"iou", "hpd", "snr", "hpd_rank", "snr_raw"}
    page = APIClient().get(f"/submissions/{sub.pk}/").content.decode()
    assert "Sandbox run" in page


@needs_bwrap
def test_wrong_lengths_are_counted_fails_not_a_crash(api, track):
    sub = scored_run(api, track, b"def interpret(model, question, context):\n    return [1.0]\n")
    multi = sum(1 for s in sub.test_set.gold.values() if len(s["sentences"]) > 1)
    assert sub.details["quackie"]["fails"] == multi > 0
    assert sub.details["sandbox"]["sample_failures"].get("wrong_length") == multi


@needs_bwrap
def test_an_import_error_fails_the_submission_with_a_readable_category(api, track):
    response = upload(api, track, b"import no_such_module_here\ndef interpret(model, question, context):\n    return []\n")
    assert run_code_submission(response.json()["id"]) == Status.FAILED
    sub = Submission.objects.get(pk=response.json()["id"])
    assert sub.error_category == ErrorCategory.CODE_FAILED and "import_error" in sub.error_message
    assert "no_such_module_here" in sub.error_message


def test_sandbox_none_runs_with_a_loud_warning(api, track, settings, caplog):
    settings.SANDBOX = "none"
    response = upload(api, track, FIRST_SENTENCE)
    assert response.status_code == 201, response.content
    with caplog.at_level(logging.WARNING):
        assert run_code_submission(response.json()["id"]) == Status.SCORED
    assert any("WITHOUT a sandbox" in r.getMessage() for r in caplog.records)


@needs_bwrap
def test_the_interpreter_receives_the_frozen_public_sentences(api, track):
    from scoring import quackie

    code = b"def interpret(model, question, context, sentences):\n    return [float(len(s)) for s in sentences]\n"
    sub = scored_run(api, track, code)
    assert sub.details["sandbox"]["sample_failures"] == {}
    expected = quackie.score(sub.test_set.gold, {sample_id: [float(len(s)) for s in entry["sentences"]]
                                                 for sample_id, entry in sub.test_set.gold.items()})
    assert sub.scores["iou"] == pytest.approx(100 * expected["IoU"])
    assert sub.scores["hpd"] == pytest.approx(100 * expected["HPD"])


@needs_bwrap
def test_the_first_failure_of_each_kind_is_shown_to_debug_with(api, track):
    code = b"def interpret(model, question, context):\n    raise RuntimeError('boom: ' + question)\n"
    sub = scored_run(api, track, code)
    example = sub.details["sandbox"]["first_failures"]["exception"]
    assert example["sample_id"] in sub.test_set.gold
    assert "RuntimeError: boom: " in example["detail"] and 'line 2, in interpret' in example["detail"]
    page = APIClient().get(f"/submissions/{sub.pk}/").content.decode()
    assert "RuntimeError: boom: " in page and "First <code>exception</code>" in page
