"""Interpreter code submissions (docs/sandbox.md) through Django: upload validation, refusal without a
sandbox, a real sandboxed run with progress, per-sample failures counted as QUACKIE fails, the
run's lease kept alive (and given up when lost), unsafe hosted model directories refused."""
import io
import logging
import os
import py_compile
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from scoring import sandbox
from scoring.sandbox import availability
from submissions import code_runs, intake, lifecycle
from submissions.models import ErrorCategory, Status, Submission
from submissions.tasks import run_code_submission
from tests.factories import make_tiny_track, make_user, token_for, upload_file
from tests.tiny_models import build_tiny_classifier

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


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory):
    """The tiny hosted classifier, built once for the module: the sandbox only reads it."""
    return build_tiny_classifier(tmp_path_factory.mktemp("tiny-classifier") / "clf", answerable=True)


@pytest.fixture
def track(tmp_path, tiny_classifier):
    return make_tiny_track(tmp_path, model_dir=tiny_classifier)


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
    # One question answered right: a run whose every sample fails is a failed run, not fails.
    samples = code_runs.public_samples(track.task.current_test_set())
    target = samples[0]["question"]
    code = (f"def interpret(model, question, context, sentences):\n"
            f"    return [1.0] * len(sentences) if question == {target!r} else [1.0]\n").encode()
    sub = scored_run(api, track, code)
    multi = sum(1 for s in samples if s["n_sentences"] > 1 and s["question"] != target)
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
    # Some samples fail, not all: a run whose every sample fails is itself a failure (below).
    target = code_runs.public_samples(track.task.current_test_set())[0]["question"]
    code = (f"def interpret(model, question, context, sentences):\n"
            f"    if question == {target!r}:\n"
            f"        raise RuntimeError('boom: ' + question)\n"
            f"    return [float(len(s)) for s in sentences]\n").encode()
    sub = scored_run(api, track, code)
    example = sub.details["sandbox"]["first_failures"]["exception"]
    assert example["sample_id"] in sub.test_set.gold
    assert "RuntimeError: boom: " in example["detail"] and 'line 3, in interpret' in example["detail"]
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



# --------------------------------------------------------------------------- "Hard to break"

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"
HARMLESS = b"def interpret(model, question, context, sentences):\n    return [float(len(s)) for s in sentences]\n"


def make_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def unchecked_pyc(source: Path) -> bytes:
    """``source`` compiled to an unchecked-hash .pyc: Python loads it without any source check."""
    with tempfile.TemporaryDirectory() as directory:
        target = Path(directory) / "compiled.pyc"
        py_compile.compile(str(source), str(target), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        return target.read_bytes()


def sandbox_children() -> set[int]:
    """Child processes of this (the worker) process."""
    children: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children |= {int(pid) for pid in (task / "children").read_text().split()}
    return children


@pytest.fixture
def jobs(monkeypatch):
    """The job directories of the runs the worker makes (the real runner, observed), to check
    that none is left behind; and this process's children before, to check none outlives a run."""
    seen: list[str] = []
    real = sandbox.run_interpreter

    def observed(*args, **kwargs):
        result = real(*args, **kwargs)
        seen.append(result.job)
        return result

    monkeypatch.setattr(sandbox, "run_interpreter", observed)
    return seen, sandbox_children()


def assert_nothing_left(jobs) -> None:
    seen, children = jobs
    assert seen, "the runner never ran"
    for name in filter(None, seen):
        assert not (Path(tempfile.gettempdir()) / name).exists(), f"job directory {name} was left behind"
    assert not sandbox_children() - children, "a sandbox process outlived the run"


def run_failed(api, track, code: bytes, name: str = "interpreter.py") -> Submission:
    response = upload(api, track, code, name=name)
    assert response.status_code == 201, response.content
    assert run_code_submission(response.json()["id"]) == Status.FAILED
    return Submission.objects.get(pk=response.json()["id"])


@needs_bwrap
def test_a_run_whose_every_sample_fails_is_code_failed_and_counts(api, track, jobs):
    """It used to end `scored` and rank on the public board with nothing but fails."""
    code = b"def interpret(model, question, context):\n    raise RuntimeError('nothing works')\n"
    sub = run_failed(api, track, code)
    n = len(code_runs.public_samples(sub.test_set))
    assert sub.error_category == ErrorCategory.CODE_FAILED, sub.error_message
    summary, first = sub.error_message.split("\n\n", 1)
    assert summary == f"all_samples_failed: every sample failed: {n} exception"
    # The owner debugs from the first failing sample's traceback, not from a count alone.
    assert first.startswith("The first failing sample, ") and "(exception):\nRuntimeError: nothing works" in first
    assert "in interpret" in first, first
    assert intake.submissions_counted_today(sub.user, sub.task) == 1  # the sender's own fault
    board = Client().get(f"/tasks/{track.task.slug}/leaderboard.csv")
    assert board.status_code == 200 and "Mine" not in board.content.decode()  # nothing ranks
    assert_nothing_left(jobs)
    assert scored_run(api, track, HARMLESS).status == Status.SCORED


@needs_bwrap
def test_a_run_of_timeouts_stops_early_as_code_failed_and_counts(api, track, jobs, settings):
    """Five of five samples timing out used to restart four times, take 202 s and end `scored`."""
    settings.SANDBOX_SAMPLE_SECONDS = 2
    code = b"import time\ndef interpret(model, question, context):\n    time.sleep(3600)\n"
    started = time.monotonic()
    sub = run_failed(api, track, code)
    n = len(code_runs.public_samples(sub.test_set))
    assert n > 3
    assert sub.error_category == ErrorCategory.CODE_FAILED, sub.error_message
    assert sub.error_message.startswith("too_many_timeouts: interpret ran longer than the per-sample limit of 2 s "
                                        "on 3 samples in a row; the run was stopped after 3 of "), sub.error_message
    assert time.monotonic() - started < 3 * (2 + 60)  # three timeouts, not one per sample
    assert intake.submissions_counted_today(sub.user, sub.task) == 1
    assert_nothing_left(jobs)
    settings.SANDBOX_SAMPLE_SECONDS = 30
    assert scored_run(api, track, HARMLESS).status == Status.SCORED


ONE_CHECK_CASES = {
    "file-folder clash": ({"interpreter.py": HARMLESS, "lib": b"x", "lib/helper.py": b"x = 1\n"},
                          "zip entry 'lib' is a file, but other entries use it as a folder (e.g. 'lib/helper.py')"),
    "256-byte name": ({"interpreter.py": HARMLESS, "n" * 252 + ".txt": b"x"},
                      "a file or folder name is 256 bytes long; the limit is 255 bytes"),
    "4097-byte path": ({"interpreter.py": HARMLESS, "/".join(["d" * 200] * 20) + "/" + "e" * 77: b"x"},
                       "its path is 4097 bytes long; the limit is 1024 bytes"),
    "hidden __pycache__": ({"interpreter.py": HARMLESS,
                            "__pycache__/interpreter.cpython-311.pyc": unchecked_pyc(FIXTURES / "bytecode_payload.py")},
                           "__pycache__ folders are refused"),
    "source-less .pyc": ({"interpreter.py": b"import helper\n" + HARMLESS,
                          "helper.pyc": unchecked_pyc(FIXTURES / "bytecode_payload.py")},
                         "zip entry 'helper.pyc': compiled Python bytecode (.pyc) is refused"),
    "extension module": ({"interpreter.py": HARMLESS, "fast.cpython-311-x86_64-linux-gnu.so": b"\x7fELF"},
                         "native code (.cpython-311-x86_64-linux-gnu.so) is refused"),
    "shipped scoring/models/hosted_model.py": (
        {"interpreter.py": HARMLESS, "scoring/__init__.py": b"", "scoring/models/__init__.py": b"",
         "scoring/models/hosted_model.py": (FIXTURES / "shadow_hosted_model.py").read_bytes()},
        "the top-level module name 'scoring' is the sandbox runner's own"),
    "shipped scoring/__init__.py": ({"interpreter.py": HARMLESS,
                                     "scoring/__init__.py": (FIXTURES / "shadow_scoring_init.py").read_bytes()},
                                    "the top-level module name 'scoring' is the sandbox runner's own"),
    "standard-library name": ({"interpreter.py": b"import json\n" + HARMLESS, "json.py": b"x = 1\n"},
                              "the top-level module name 'json' is a standard-library module"),
}


@pytest.mark.parametrize("case", list(ONE_CHECK_CASES))
def test_what_would_fail_or_run_unchecked_at_run_time_is_refused_at_upload(api, track, settings, case):
    """Each of these used to be accepted at upload and then fail every run as `scorer_error`
    (clash, long names) or run something other than the checked source (bytecode, a shadowed
    trusted module). Refused now, with the reason, costing no quota."""
    settings.SANDBOX = "none"  # refused before any run: no sandbox needed to show it
    files, message = ONE_CHECK_CASES[case]
    response = upload(api, track, make_zip(files), name="method.zip")
    assert response.status_code == 400, response.content
    assert message in response.json()["error"]
    sub = Submission.objects.get()
    assert sub.status == Status.REJECTED and sub.error_category == ErrorCategory.INVALID_INPUT
    assert intake.submissions_counted_today(sub.user, sub.task) == 0
    assert upload(api, track, make_zip({"interpreter.py": HARMLESS}), name="method.zip").status_code == 201


@needs_bwrap
def test_an_honest_zip_that_expands_80_fold_is_accepted_and_runs(api, track, jobs):
    """The run used to re-check the stored zip against 10x its own size (24 KB for this
    2.4 KB zip) instead of the upload limit: accepted, then every run failed as `scorer_error`."""
    data = make_zip({"interpreter.py": HARMLESS, "vocabulary.txt": b"the cat sat on the mat\n" * 34_830})
    assert 2_000 < len(data) < 3_000 and 800_000 < 23 * 34_830 < 810_000
    response = upload(api, track, data, name="method.zip")
    assert response.status_code == 201, response.content
    assert run_code_submission(response.json()["id"]) == Status.SCORED
    assert Submission.objects.get(pk=response.json()["id"]).details["sandbox"]["sample_failures"] == {}
    assert_nothing_left(jobs)


def test_stored_code_that_fails_the_upload_check_is_code_failed_not_scorer_error(api, track, jobs, settings):
    """The run applies the upload's check (same function, same limits) before unpacking: code
    stored before a check existed fails as the submission's own `invalid_code`, never a
    refunded `scorer_error` a maintainer retries forever."""
    settings.SANDBOX = "none"
    response = upload(api, track, make_zip({"interpreter.py": HARMLESS}), name="method.zip")
    assert response.status_code == 201, response.content
    sub = Submission.objects.get(pk=response.json()["id"])
    Path(sub.file.path).write_bytes(make_zip({
        "interpreter.py": HARMLESS,
        "__pycache__/interpreter.cpython-311.pyc": unchecked_pyc(FIXTURES / "bytecode_payload.py")}))
    assert run_code_submission(sub.pk) == Status.FAILED
    sub.refresh_from_db()
    assert sub.error_category == ErrorCategory.CODE_FAILED
    assert sub.error_message.startswith("invalid_code: the stored code does not pass the upload check: ")
    assert "__pycache__ folders are refused" in sub.error_message
    assert_nothing_left(jobs)


@needs_bwrap
def test_a_rescore_runs_the_interpreter_again_in_the_sandbox(api, track):
    """Interpreter code is re-scored like a file: queued by the re-score, run in the sandbox
    again, its new score joins its history (same inputs here, so the same numbers)."""
    from submissions import rescoring

    sub = scored_run(api, track, FIRST_SENTENCE)
    plan = rescoring.plan([track.task], [sub.pk], force=True)
    assert rescoring.queue_all(plan) == 1
    assert run_code_submission(sub.pk) == Status.SCORED
    sub.refresh_from_db()
    history = list(sub.score_history.order_by("pk"))
    assert len(history) == 2 and history[1].scores == history[0].scores == sub.scores
    assert history[1].reason == "re-scored (same test set and scorer)"
    assert sub.attempts == 2 and sub.details["sandbox"]["mode"] == "bwrap"
