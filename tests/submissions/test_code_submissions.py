"""Interpreter code submissions (docs/sandbox.md) through Django: upload validation, refusal without a
sandbox, a real sandboxed run with progress, per-sample failures counted as QUACKIE fails, the
run's lease kept alive (and given up when lost), unsafe hosted model directories refused."""
import logging

import pytest
from django.test import Client
from rest_framework.test import APIClient

from scoring import sandbox
from scoring.sandbox import availability
from submissions import code_runs, lifecycle
from submissions.models import ErrorCategory, Status, Submission
from submissions.tasks import run_code_submission
from tests.factories import make_tiny_track, make_user, token_for, upload_file

pytestmark = pytest.mark.django_db
needs_bwrap = pytest.mark.needs_bwrap  # tests/conftest.py: skipped without bwrap, failed in CI

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
    from scoring.metrics import quackie

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
    # The owner reads the tracebacks of their own code on the page and in the API; nobody else
    # does, though the entry is public.
    owner = Client()
    owner.force_login(sub.user)
    page = owner.get(f"/submissions/{sub.pk}/").content.decode()
    assert "RuntimeError: boom: " in page and "First <code>exception</code>" in page
    assert "first_failures" in api.get(f"/api/submissions/{sub.pk}/").json()["details"]["sandbox"]
    assert sub.public and sub.status == "scored"
    page = Client().get(f"/submissions/{sub.pk}/").content.decode()
    assert "RuntimeError" not in page and "First <code>exception</code>" not in page and "Sandbox run" in page
    shown = APIClient().get(f"/api/submissions/{sub.pk}/").json()["details"]["sandbox"]
    assert "first_failures" not in shown and shown["sample_failures"] == sub.details["sandbox"]["sample_failures"]


SEGFAULT_ON = '''
import ctypes
def interpret(model, question, context, sentences):
    if question == {question!r}:
        ctypes.string_at(0)  # SIGSEGV: the whole sandboxed process dies
    return [float(len(s)) for s in sentences]
'''


@pytest.fixture
def fresh_probe():
    sandbox.sandbox_available.cache_clear()
    yield
    sandbox.sandbox_available.cache_clear()


def claimed(api, track, settings):
    """A code submission claimed by a worker (RUNNING), uploaded without needing bwrap."""
    settings.SANDBOX = "none"
    response = upload(api, track, FIRST_SENTENCE)
    assert response.status_code == 201, response.content
    return lifecycle.start_run(response.json()["id"])


def test_the_web_form_refuses_code_when_no_sandbox_is_available(track, monkeypatch, fresh_probe):
    real_tool = availability.find_tool  # the real probe runs, on a machine where bwrap is missing
    monkeypatch.setattr(availability, "find_tool",
                        lambda name: None if name == "bwrap" else real_tool(name))
    client = Client()
    client.force_login(make_user())
    response = client.post(f"/tasks/{track.task.slug}/submit/", {
        "kind": "code", "method_name": "Mine", "public": "on",
        "file": upload_file(GOOD, name="interpreter.py")})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Code submissions are disabled on this server: no sandbox is available" in page
    assert "bubblewrap (bwrap) is not installed" in page and "Submit a score file instead." in page
    assert not Submission.objects.exists()


def test_an_oversized_upload_is_refused_before_it_is_read(api, track, settings):
    settings.SANDBOX = "none"
    settings.CODE_MAX_BYTES = 40
    response = upload(api, track, GOOD)
    assert response.status_code == 400
    assert response.json()["error"] == f"interpreter.py: {len(GOOD)} bytes; the limit is 40 bytes"
    sub = Submission.objects.get()
    assert sub.status == Status.REJECTED and sub.sha256 == ""  # never read, so never hashed


def test_progress_of_a_running_code_submission_shows_on_the_page_and_api(api, track, settings):
    sub = claimed(api, track, settings)
    assert sub.status == Status.RUNNING
    assert lifecycle.heartbeat(sub, details={"progress": {"done": 1, "total": 3}})
    owner = Client()
    owner.force_login(sub.user)
    page = owner.get(f"/submissions/{sub.pk}/").content.decode()
    assert '<p id="progress">1 / 3 samples interpreted in the sandbox.</p>' in page
    body = api.get(f"/api/submissions/{sub.pk}/").json()
    assert body["status"] == "running" and body["details"]["progress"] == {"done": 1, "total": 3}


def test_the_lease_is_renewed_by_time_as_well_as_by_progress(api, track, settings):
    sub = claimed(api, track, settings)
    now = [1000.0]
    keeper = code_runs.LeaseKeeper(sub, interval=60, clock=lambda: now[0])

    def stored():
        row = Submission.objects.get(pk=sub.pk)
        return row.details["progress"], row.lease_expires_at

    before = stored()
    keeper(1, 1000)  # neither 1% of the samples nor a minute: no database write
    assert stored() == before
    now[0] += 61  # a slow run: a minute later, one more sample
    keeper(2, 1000)
    progress, lease = stored()
    assert progress == {"done": 2, "total": 1000} and lease > before[1]
    keeper(12, 1000)  # 1% more: renewed again without waiting
    assert stored()[0] == {"done": 12, "total": 1000}


@needs_bwrap
def test_a_run_that_lost_its_lease_stops_and_stores_nothing(api, track, settings, caplog):
    settings.SANDBOX = "bwrap"
    response = upload(api, track, FIRST_SENTENCE)
    sub = lifecycle.start_run(response.json()["id"])
    # The reaper takes the run away (as when a worker looked dead): the lease expired.
    Submission.objects.filter(pk=sub.pk).update(lease_expires_at=sub.started_at)
    assert lifecycle.reap_stuck()["scoring_resent"] == 1
    with caplog.at_level(logging.WARNING):
        assert code_runs.run(sub) is False
    messages = [r.getMessage() for r in caplog.records]
    assert any("lost its lease; sandbox run stopped" in m for m in messages), messages
    assert not any("result discarded" in m for m in messages)  # it never ran to the end
    row = Submission.objects.get(pk=sub.pk)
    assert row.status == Status.QUEUED and row.scores == {}
    assert row.details["progress"]["done"] == 0


def test_a_hosted_model_directory_exposing_server_data_is_refused(api, track, settings, caplog):
    sub = claimed(api, track, settings)
    model = track.hosted_model
    model.path = str(settings.MEDIA_ROOT.parent)  # holds the uploads of every researcher
    model.save()
    with caplog.at_level(logging.ERROR):
        assert code_runs.run(sub) is True
    row = Submission.objects.get(pk=sub.pk)
    assert row.status == Status.FAILED and row.error_category == ErrorCategory.SCORER_ERROR
    assert "hosted model directory would expose server data" in row.error_message
    assert str(settings.MEDIA_ROOT) not in row.error_message  # the path is for the log only
    assert any("would expose" in r.getMessage() and str(settings.MEDIA_ROOT) in r.getMessage()
               for r in caplog.records)


@needs_bwrap
def test_a_crash_on_one_sample_is_a_quackie_fail_not_a_failed_submission(api, track):
    questions = [s["question"] for s in code_runs.public_samples(track.task.current_test_set())]
    target = questions[len(questions) // 2]
    sub = scored_run(api, track, SEGFAULT_ON.format(question=target).encode())
    crashed = questions.count(target)
    assert sub.details["sandbox"]["sample_failures"] == {"crashed": crashed}
    assert sub.details["quackie"]["fails"] == crashed
    assert sub.details["progress"] == {"done": len(questions), "total": len(questions)}
    assert "SIGSEGV" in sub.details["sandbox"]["first_failures"]["crashed"]["detail"]


FORGED_START_UP = b'''
import gc
# The protocol pipe is in this process: forge a start-up line whose "seconds" is null.
channel = next(o for o in gc.get_objects() if type(o).__name__ == "Channel")
channel.writer.write(b'{"event": "ready", "seconds": null, "sentences": false}\\n')
def interpret(model, question, context):
    return [1.0]
'''


@needs_bwrap
def test_a_forged_protocol_line_is_the_submissions_own_failure_and_counts(api, track):
    """It used to raise TypeError out of the runner: refunded as scorer_error, so a user could
    upload past the quota. Now it is the code's own failure, charged to its quota."""
    from submissions import intake

    response = upload(api, track, FORGED_START_UP)
    assert run_code_submission(response.json()["id"]) == Status.FAILED
    sub = Submission.objects.get(pk=response.json()["id"])
    assert sub.error_category == ErrorCategory.CODE_FAILED, sub.error_message
    assert sub.error_message.startswith("protocol_error: ") and "'seconds'" in sub.error_message
    assert intake.submissions_counted_today(sub.user, sub.task) == 1
    assert scored_run(api, track, GOOD).status == Status.SCORED  # the next honest run works
