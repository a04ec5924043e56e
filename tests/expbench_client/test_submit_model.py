"""``expbench submit-model`` against a stand-in server: the bundle is streamed from disk (pieces
of at most UPLOAD_PIECE bytes, never joined; the client's memory does not grow with the bundle),
its progress is shown on a terminal only, the declarations are sent, a 413 is one clear line,
the log of a failed run on the public sample is printed, and a task whose inputs are hidden
refuses ``inputs`` with the server's own words."""
import email.parser
import email.policy
import io
import json
import os
import tracemalloc
import zipfile

import pytest

from expbench_client.cli import main
from expbench_client.client import Client
from expbench_client.errors import ExitCode
from expbench_client.multipart import UPLOAD_PIECE, UploadBody, UploadUnreadable
from expbench_client.progress import UploadMeter

from .local_server import JsonHandler, serve
from .test_too_large import refusing_server

TOKEN = "t" * 40
CREATED = {"id": 7, "task": "hidden-squad", "kind": "model", "method_name": "M", "status": "queued", "public": False}


@pytest.fixture(autouse=True)
def _no_saved_config(monkeypatch, tmp_path):
    monkeypatch.setenv("EXPBENCH_CONFIG", str(tmp_path / "config.json"))
    for name in ("EXPBENCH_URL", "EXPBENCH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def make_bundle(path, weights_bytes=0):
    """A bundle whose root holds predict.py, and ``weights_bytes`` of random (incompressible)
    weights, written in pieces so that building a big one does not hold it in memory either."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("predict.py", "def predict(examples):\n    return {e['id']: '' for e in examples}\n")
        if weights_bytes:
            with archive.open("weights.bin", "w", force_zip64=True) as weights:
                for start in range(0, weights_bytes, UPLOAD_PIECE):
                    weights.write(os.urandom(min(UPLOAD_PIECE, weights_bytes - start)))
    return path


def form_of(body: bytes, content_type: str) -> dict:
    """{field: text or (filename, bytes)} of a multipart/form-data body."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    form = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        filename = part.get_filename()
        data = part.get_payload(decode=True)
        form[name] = (filename, data) if filename else data.decode()
    return form


class Recorder(JsonHandler):
    """Keeps the last upload's headers and form; answers ``CREATED``, or ``answers[path]``."""

    uploads: list = []
    answers: dict = {}

    def do_POST(self):
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        type(self).uploads.append({"headers": dict(self.headers), "form": form_of(body, self.headers["Content-Type"])})
        status, payload = type(self).answers.get(self.path, (201, CREATED))
        self.answer(status, payload, {"Content-Type": "application/problem+json"} if status >= 400 else None)

    def do_GET(self):
        status, payload = type(self).answers.get(self.path.split("?")[0], (404, {"detail": "Not found."}))
        self.answer(status, payload, {"Content-Type": "application/problem+json"} if status >= 400 else None)


class Discarding(JsonHandler):
    """Reads the body in 64 KiB pieces and keeps only its size, so that a measure of the memory
    of this process is the client's own."""

    received: list = []

    def do_POST(self):
        left, total = int(self.headers["Content-Length"]), 0
        while left:
            data = self.rfile.read(min(65536, left))
            if not data:
                break
            left -= len(data)
            total += len(data)
        type(self).received.append(total)
        self.answer(201, CREATED)

    def do_GET(self):
        self.answer(404, {"detail": "Not found."})


def recorder(answers=None):
    return type("Recording", (Recorder,), {"uploads": [], "answers": answers or {}})


# --- the body ---------------------------------------------------------------------------------
def test_the_body_comes_in_pieces_that_make_the_form_and_its_announced_length(tmp_path):
    bundle = make_bundle(tmp_path / "model.zip", weights_bytes=3 * UPLOAD_PIECE + 17)
    seen = []
    body = UploadBody({"method_name": "Sys", "kind": "model"}, "file", bundle,
                      on_progress=lambda sent, total: seen.append((sent, total)))
    pieces = list(body)
    assert all(len(piece) <= UPLOAD_PIECE for piece in pieces) and len(pieces) >= 6
    assert sum(map(len, pieces)) == body.length == len(body)
    assert seen[-1] == (body.length, body.length) and [s for s, _ in seen] == sorted(s for s, _ in seen)
    form = form_of(b"".join(pieces), body.content_type)  # joined here only to check the format
    assert form["method_name"] == "Sys" and form["kind"] == "model"
    assert form["file"] == ("model.zip", bundle.read_bytes())


def test_a_body_is_an_iterator_never_a_bytes_object(tmp_path):
    """What urllib is handed: an iterable of pieces (http.client sends each as it comes), not
    bytes; so it never asks for the whole body at once."""
    body = UploadBody({}, "file", make_bundle(tmp_path / "model.zip"))
    with pytest.raises(TypeError):
        memoryview(body)
    assert not hasattr(body, "read")  # not file-like either: http.client would read it 8 KiB at a time


def test_a_file_that_shrinks_while_it_is_sent_is_an_error_not_a_short_body(tmp_path):
    bundle = make_bundle(tmp_path / "model.zip", weights_bytes=2 * UPLOAD_PIECE)
    pieces = iter(UploadBody({}, "file", bundle))
    next(pieces), next(pieces)
    bundle.write_bytes(b"x")
    with pytest.raises(UploadUnreadable, match="got shorter"):
        list(pieces)


def test_the_client_memory_does_not_grow_with_the_bundle(tmp_path):
    bundle = make_bundle(tmp_path / "model.zip", weights_bytes=50 * 2**20)
    handler = type("Counting", (Discarding,), {"received": []})
    with serve(handler) as url:
        tracemalloc.start()
        try:
            code = main(["--url", url, "--token", TOKEN, "submit-model", "hidden-squad", str(bundle),
                         "--method", "Big", "--json"])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert code == 0
    assert handler.received == [UploadBody({"method_name": "Big", "kind": "model"}, "file", bundle).length]
    # 50 MB sent; the client held about one piece (1 MiB) at a time.
    assert peak < 4 * UPLOAD_PIECE, f"peak {peak / 2**20:.1f} MiB"


# --- the command --------------------------------------------------------------------------------
def test_declarations_and_the_entry_options_are_sent(tmp_path, capsys):
    handler = recorder()
    bundle = make_bundle(tmp_path / "model.zip")
    with serve(handler) as url:
        code = main(["--url", url, "--token", TOKEN, "submit-model", "hidden-squad", str(bundle), "--method", "Sys",
                     "--dev-set-use", "part", "--external-data", "NewsQA", "--code-url", "https://code.example/x",
                     "--paper-url", "https://paper.example/y", "--public"])
    assert code == 0
    upload = handler.uploads[-1]
    assert upload["form"] == {"method_name": "Sys", "kind": "model", "public": "true", "dev_set_use": "part",
                              "external_data": "NewsQA", "code_url": "https://code.example/x",
                              "paper_url": "https://paper.example/y", "file": ("model.zip", bundle.read_bytes())}
    assert int(upload["headers"]["Content-Length"]) > bundle.stat().st_size
    assert "Transfer-Encoding" not in upload["headers"]
    assert capsys.readouterr().out.startswith("submitted #7 to hidden-squad (queued, private)")


def test_submit_takes_the_declarations_too_and_sends_none_unless_given(tmp_path):
    handler = recorder()
    predictions = tmp_path / "predictions.json"
    predictions.write_text("{}")
    with serve(handler) as url:
        assert main(["--url", url, "--token", TOKEN, "submit", "expmrc-squad", str(predictions), "--method", "M"]) == 0
        assert main(["--url", url, "--token", TOKEN, "submit", "expmrc-squad", str(predictions), "--method", "M",
                     "--dev-set-use", "whole", "--external-data", "TriviaQA"]) == 0
    plain, declared = (upload["form"] for upload in handler.uploads)
    assert plain == {"method_name": "M", "kind": "predictions", "file": ("predictions.json", b"{}")}
    assert declared["dev_set_use"] == "whole" and declared["external_data"] == "TriviaQA"


def test_a_folder_or_a_bundle_without_predict_py_is_refused_before_sending(tmp_path, capsys):
    nested = tmp_path / "nested.zip"
    with zipfile.ZipFile(nested, "w") as archive:
        archive.writestr("my_model/predict.py", "def predict(examples): return {}\n")
    not_zip = tmp_path / "model.zip"
    not_zip.write_text("not a zip")
    handler = recorder()
    with serve(handler) as url:
        for path, said in ((nested, "has no predict.py at its root (it has my_model/predict.py"),
                           (not_zip, "is not a zip file"), (tmp_path, "is a directory")):
            assert main(["--url", url, "--token", TOKEN, "submit-model", "t", str(path), "--method", "M"]) == 2
            assert said in capsys.readouterr().err
    assert handler.uploads == []


def test_progress_is_a_line_rewritten_on_a_terminal_and_nothing_otherwise():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    ticks = iter(range(100))
    terminal = Terminal()
    meter = UploadMeter(terminal, "model.zip", clock=lambda: float(next(ticks)), every=0.0)
    for sent in (1_000_000, 2_500_000, 4_000_000):
        meter.update(sent, 4_000_000)
    meter.finish()
    lines = terminal.getvalue().split("\r")[1:]
    assert lines[0].startswith("uploading model.zip: 1.0 of 4.0 MB (25%)  1.0 MB/s")
    assert lines[-1] == "uploading model.zip: 4.0 of 4.0 MB (100%)  1.3 MB/s\n"
    for quiet in (UploadMeter(io.StringIO(), "m.zip"), UploadMeter(Terminal(), "m.zip", quiet=True)):
        quiet.update(5, 10)
        quiet.finish()
        assert quiet.stream.getvalue() == ""


def test_progress_of_a_real_upload_shows_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    bundle = make_bundle(tmp_path / "model.zip", weights_bytes=3 * UPLOAD_PIECE)
    with serve(recorder()) as url:
        monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
        assert main(["--url", url, "--token", TOKEN, "submit-model", "t", str(bundle), "--method", "M"]) == 0
        shown = capsys.readouterr().err
        assert shown.startswith("\ruploading model.zip: ") and "(100%)" in shown and shown.endswith("\n")
        assert main(["--url", url, "--token", TOKEN, "submit-model", "t", str(bundle), "--method", "M",
                     "--json"]) == 0
        assert capsys.readouterr().err == ""


def test_a_413_is_one_clear_line_and_exit_2(tmp_path, capsys):
    bundle = make_bundle(tmp_path / "model.zip", weights_bytes=20 * 2**20)
    port, thread = refusing_server()
    code = main(["--url", f"http://127.0.0.1:{port}", "--token", TOKEN, "submit-model", "t", str(bundle),
                 "--method", "M"])
    thread.join(10)
    assert code == ExitCode.USAGE
    assert capsys.readouterr().err == ("error: too large for the server (HTTP 413): The request body is 20,971,900 "
                                       "bytes; this address takes at most 1,048,576 bytes; nothing was stored\n")


def test_the_log_of_a_failed_smoke_run_is_printed_with_wait(tmp_path, capsys):
    failed = {**CREATED, "status": "rejected", "run_log": "Smoke run on the public sample: failed: exception\n\n"
                                                           "Traceback (most recent call last):\nKeyError: 'context'",
              "error": {"category": "smoke_failed", "message": "exception: predict raised an exception. The smoke "
                                                               "run's log says what went wrong.", "help": ""}}
    handler = recorder({"/api/v1/submissions/7/": (200, failed)})
    with serve(handler) as url:
        code = main(["--url", url, "--token", TOKEN, "submit-model", "hidden-squad",
                     str(make_bundle(tmp_path / "model.zip")), "--method", "M", "--wait"])
        captured = capsys.readouterr()
        assert code == ExitCode.FAILED
        assert "#7 hidden-squad 'M': rejected" in captured.out
        assert "  log of the run on the public sample:\n  | Smoke run on the public sample: failed: exception\n  |\n" \
               "  | Traceback (most recent call last):\n  | KeyError: 'context'\n" in captured.out
        assert captured.err.endswith("error: submission #7 rejected: exception: predict raised an exception. The "
                                     "smoke run's log says what went wrong.\n")
        assert main(["--url", url, "--token", TOKEN, "status", "7", "--json"]) == ExitCode.FAILED
        assert json.loads(capsys.readouterr().out)["run_log"] == failed["run_log"]


HIDDEN = {"type": "/api/v1/problems/inputs-hidden/", "title": "The task's inputs are hidden", "status": 403,
          "detail": "The test inputs of hidden-squad are hidden: they are never served. Upload a model "
                    "(kind=model), which runs on them on the server; see docs/model_submissions.md."}


def test_inputs_of_a_hidden_task_print_the_server_detail_and_exit_1(tmp_path, capsys):
    handler = recorder({"/api/v1/tasks/hidden-squad/inputs/": (403, HIDDEN)})
    with serve(handler) as url:
        for extra in ([], ["-o", str(tmp_path / "inputs.json")]):
            assert main(["--url", url, "inputs", "hidden-squad", *extra]) == ExitCode.FAILED
            assert capsys.readouterr().err == (f"error: {HIDDEN['detail']}; with this client: python -m "
                                               "expbench_client submit-model hidden-squad BUNDLE.zip --method NAME\n")
    assert not (tmp_path / "inputs.json").exists()


def test_a_prediction_file_for_a_hidden_task_says_to_submit_a_model(tmp_path, capsys):
    refused = {**HIDDEN, "status": 400, "detail": "The test inputs of hidden-squad are hidden, so prediction files "
                                                  "cannot be scored here: upload a model instead."}
    handler = recorder({"/api/v1/tasks/hidden-squad/submissions/": (400, refused)})
    predictions = tmp_path / "predictions.json"
    predictions.write_text("{}")
    with serve(handler) as url:
        assert main(["--url", url, "--token", TOKEN, "submit", "hidden-squad", str(predictions),
                     "--method", "M"]) == ExitCode.FAILED
    assert "upload a model instead.; with this client: python -m expbench_client submit-model hidden-squad" \
           in capsys.readouterr().err


def test_the_body_stops_when_the_server_answers_early(tmp_path):
    """After the 413 the rest of the bundle is neither sent nor read from disk."""
    bundle = make_bundle(tmp_path / "model.zip", weights_bytes=40 * 2**20)
    read = []
    body = UploadBody({}, "file", bundle, on_progress=lambda sent, total: read.append(sent))
    port, thread = refusing_server()
    response = Client(f"http://127.0.0.1:{port}", token="t", retries=0).upload("/api/v1/tasks/t/submissions/", body)
    thread.join(10)
    assert response.status == 413
    assert max(read, default=0) < body.length / 2
