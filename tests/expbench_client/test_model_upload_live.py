"""A model bundle larger than any prediction file, sent by ``expbench submit-model`` to the real
server (Django's WSGI application in a thread): accepted through the API, streamed on both
sides (Django spools it to a temporary file; the memory of this process, client and server
together, stays a few MiB), stored byte for byte with its declarations; a bundle over the
task's own limit is a 413 the client shows. Runs in a few seconds (a 60 MB bundle on loopback)."""
import hashlib
import os
import tracemalloc
from types import SimpleNamespace
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from django.core.files.uploadedfile import TemporaryUploadedFile
from django.core.wsgi import get_wsgi_application

from benchmark.models import Task
from core import jobs
from expbench_client.cli import main
from expbench_client.multipart import UPLOAD_PIECE
from submissions import intake
from submissions.models import Status, Submission
from tests.factories import make_task, make_user, token_for

from .local_server import running
from .test_submit_model import make_bundle

BUNDLE_BYTES = 60 * 2**20


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture
def server(settings, transactional_db, tmp_path, monkeypatch):
    """(base URL, token, the tasks sent to the broker, the type of each upload the intake got)."""
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    (tmp_path / "spool").mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "spool")
    # The upload asks whether a sandbox can run the bundle later; nothing runs in this test.
    settings.SANDBOX = "none"
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    for name in ("EXPBENCH_URL", "EXPBENCH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    sent, uploads = [], []
    # The run is sent to a broker no worker reads here: noted instead of written to var/broker.
    monkeypatch.setattr(jobs, "current_app", SimpleNamespace(send_task=lambda name, **kw: sent.append(name)))
    submit_model = intake.submit_model

    def noting_the_upload(*, uploaded_file, **fields):
        uploads.append(type(uploaded_file))
        return submit_model(uploaded_file=uploaded_file, **fields)

    monkeypatch.setattr(intake, "submit_model", noting_the_upload)
    make_task("expmrc-squad")
    token = token_for(make_user("alice"))
    with running(make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=QuietHandler)) as url:
        yield url, token, sent, uploads


def test_a_60_mb_bundle_is_accepted_streamed_and_stored_whole(server, settings, tmp_path, capsys):
    url, token, sent, uploads = server
    bundle = make_bundle(tmp_path / "model.zip", weights_bytes=BUNDLE_BYTES)
    assert bundle.stat().st_size > settings.SUBMISSION_MAX_BYTES + 2**20  # over the prediction-file limit
    tracemalloc.start()
    try:
        code = main(["--url", url, "--token", token, "submit-model", "expmrc-squad", str(bundle),
                     "--method", "Big model", "--dev-set-use", "part", "--external-data", "NewsQA",
                     "--paper-url", "https://paper.example/big"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = capsys.readouterr().out
    assert code == 0, out
    submission = Submission.objects.get()
    assert out.startswith(f"submitted #{submission.pk} to expmrc-squad (queued, ")
    assert submission.kind == Submission.MODEL and submission.status == Status.QUEUED
    assert (submission.dev_set_use, submission.external_data, submission.paper_url) == (
        "part", "NewsQA", "https://paper.example/big")
    digest = hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert submission.size == bundle.stat().st_size and submission.sha256 == digest
    with submission.file.open("rb") as stored:
        assert hashlib.file_digest(stored, "sha256").hexdigest() == digest
    assert uploads == [TemporaryUploadedFile]  # Django spooled it to disk, not into memory
    assert os.listdir(settings.FILE_UPLOAD_TEMP_DIR) == []  # and removed its spool file afterwards
    assert sent[-1] == "submissions.tasks.run_model_submission"  # queued for a worker
    # Client and server share this process: together they held a few pieces, not the bundle.
    assert peak < 12 * UPLOAD_PIECE, f"peak {peak / 2**20:.1f} MiB for a {BUNDLE_BYTES / 2**20:.0f} MiB bundle"


def test_a_bundle_over_the_task_limit_is_a_413_the_client_shows(server, tmp_path, capsys):
    url, token, sent, uploads = server
    Task.objects.filter(slug="expmrc-squad").update(model_max_bytes=60 * 2**20)
    bundle = make_bundle(tmp_path / "model.zip", weights_bytes=62 * 2**20)
    code = main(["--url", url, "--token", token, "submit-model", "expmrc-squad", str(bundle), "--method", "Too big"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("error: too large for the server (HTTP 413): The request body is ")
    assert f"a model bundle at most {60 * 2**20:,}" in err and err.endswith("; nothing was stored\n")
    assert uploads == [] and not Submission.objects.exists()
