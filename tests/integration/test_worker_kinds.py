"""Every kind of upload through the real processes of the embedded default: a skill submission
scored by the scoring worker, a QUACKIE score file, and interpreter code run by the background
worker's ``sandbox`` queue inside bubblewrap. Expected figures are recomputed here with the
pure scorers on the same data, so the worker's numbers are checked, not just its status."""
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from expbench_client.client import Client
from scoring.analysis import skills
from scoring.metrics import expmrc

from .conftest import FIXTURE_EXPMRC, SHARED_EXPMRC, assert_official, sample_and_expected
from .stack import REPO, wait_until

pytestmark = pytest.mark.integration

QUACKIE_FIXTURE = REPO / "tests" / "fixtures" / "quackie" / "squad_v2_small.json"


def squad_gold():
    path = SHARED_EXPMRC / "expmrc-squad-dev.json"
    if not path.exists():
        path = FIXTURE_EXPMRC / "expmrc-squad-dev.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_skill_submission_scored_by_a_real_worker(embedded_stack):
    token = embedded_stack.create_user("sam", "integration-pw-5")

    def built():  # load_demo queued the build; the background worker runs it
        status, body = embedded_stack.request("GET", "/api/v1/tasks/expmrc-squad/skills/")
        build = body.get("build") or {}
        assert build.get("status") != "failed", build
        return body if build.get("status") == "done" else None

    listing = wait_until(built, "the SQuAD skill sets")
    assert {"s1", "s13"} <= {row["skill"] for row in listing["skills"] if row["inputs_url"]}
    content, expected = sample_and_expected()
    sample = json.loads(content)
    upload = json.dumps({"original": sample, "s1": sample, "s13": sample}).encode()
    status, body = Client(embedded_stack.url, token).submit("expmrc-squad", upload, method_name="Skills",
                                                            filename="skills.json", kind="skills")
    assert status == 201, body
    scored = embedded_stack.wait_for(body["id"], token, timeout=120)
    assert scored["status"] == "scored", scored
    assert scored["kind"] == "skills"
    assert_official(scored["scores"], expected)

    # The same gaps, computed here from the pure reconstruction and scorer.
    gold = squad_gold()
    variants = skills.build_all(gold, language="en", seed=0)
    predictions = expmrc.parse_predictions(content, expmrc.key_spec(gold))
    original = expmrc.score_predictions(gold, predictions)
    variant_f1 = {}
    for name in ("s1", "s13"):
        result = expmrc.score_predictions(variants[name]["gold"], predictions)
        variant_f1[name] = {q["key"]: q["answer"] for q in result.per_question}
    gaps = skills.skill_gaps({q["key"]: q["answer"] for q in original.per_question}, variant_f1, seed=0)
    assert scored["details"]["skills"] == json.loads(json.dumps(gaps))
    assert "s1" not in scored["details"]["not_submitted"] and "s2" in scored["details"]["not_submitted"]


@pytest.fixture(scope="module")
def tiny_track(embedded_stack, tmp_path_factory):
    """The small SQuAD v2 fixture × a tiny classifier, registered with the standard commands."""
    from tests.tiny_models import build_tiny_classifier

    model_dir = build_tiny_classifier(tmp_path_factory.mktemp("models") / "tiny", answerable=True)
    for args in (["import_quackie", str(QUACKIE_FIXTURE), "--name", "small", "--version", "1"],
                 ["register_hosted_model", "--slug", "tiny", "--name", "Tiny", "--kind", "classification",
                  "--path", str(model_dir)],
                 ["create_track", "--set", "small", "--model", "tiny"]):
        result = embedded_stack.manage(*args)
        assert result.returncode == 0, result.stdout + result.stderr
    slug = "quackie-small-tiny"

    def ready():  # the inclusion flags are computed by the background worker (models queue)
        status, body = embedded_stack.request("GET", f"/api/v1/tasks/{slug}/inputs/")
        return body["data"] if status == 200 and isinstance(body, dict) and body.get("data") else None

    return slug, wait_until(ready, "the track's inclusion flags")


def test_quackie_score_file_scored_by_a_real_worker(embedded_stack, tiny_track):
    from scoring.metrics import quackie

    slug, inputs = tiny_track
    token = embedded_stack.create_user("quinn", "integration-pw-6")
    scores = {row["sample_id"]: [float(len(s)) for s in row["sentences"]] for row in inputs}
    status, body = embedded_stack.upload(token, slug, json.dumps(scores).encode(), method_name="Longest sentence")
    assert status == 201, body
    scored = embedded_stack.wait_for(body["id"], token)
    assert scored["status"] == "scored", scored
    assert scored["details"]["quackie"]["fails"] == 0
    assert set(scored["scores"]) == {"iou", "hpd", "snr", "hpd_rank", "snr_raw"}
    gold = json.loads(embedded_stack.manage("shell", "-c", (
        "import json; from benchmark.models import Task;"
        f"print(json.dumps(Task.objects.get(slug={slug!r}).current_test_set().gold))")).stdout.splitlines()[-1])
    expected = quackie.score(gold, scores)
    for name, key in (("IoU", "iou"), ("HPD", "hpd"), ("SNR", "snr")):
        assert scored["scores"][key] == pytest.approx(100 * expected[name], abs=1e-9)
    board = embedded_stack.board(slug, until=lambda b: any(r["submission_id"] == body["id"] for r in b["rows"]))
    assert any(row["submission_id"] == body["id"] for row in board["rows"])


INTERPRETER = b'''
def interpret(model, question, context, sentences):
    # Probability of "answerable" for each sentence alone, batched: uses the hosted model.
    probabilities = model.predict_proba([question] * len(sentences), sentences)
    return [float(p[1]) for p in probabilities]
'''


@pytest.mark.needs_bwrap
def test_interpreter_code_run_by_the_sandbox_worker(embedded_stack, tiny_track):
    slug, inputs = tiny_track
    token = embedded_stack.create_user("rita", "integration-pw-7")
    status, body = Client(embedded_stack.url, token).submit(slug, INTERPRETER, method_name="Sentence alone",
                                                            filename="interpreter.py", kind="code")
    assert status == 201, body
    assert body["status"] == "queued"
    scored = embedded_stack.wait_for(body["id"], token, timeout=180)
    assert scored["status"] == "scored", scored
    assert scored["kind"] == "code"
    assert scored["details"]["progress"] == {"done": len(inputs), "total": len(inputs)}
    assert scored["details"]["sandbox"]["mode"] == "bwrap"
    assert scored["details"]["sandbox"]["sample_failures"] == {}
    assert scored["details"]["quackie"]["fails"] == 0
    # Untrusted code runs on its own worker, never on the one of the background jobs.
    # (The task's name alone is in every worker's start-up list: look for a received message.)
    assert "submissions.tasks.run_code_submission[" in embedded_stack.log_text("sandbox")
    assert "submissions.tasks.run_code_submission[" not in embedded_stack.log_text("background")
    assert "submissions.tasks.run_code_submission[" not in embedded_stack.log_text("models")


KILLER = b'''
import os, signal
def interpret(model, question, context, sentences):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "pids.txt")) as handle:
        worker_pids = [int(pid) for pid in handle.read().split()]
    for pid in worker_pids + [os.getppid(), 1]:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        raise RuntimeError(f"LEAK: SIGKILL reached pid {pid}")
    return [float(len(s)) for s in sentences]
'''


def worker_processes(stack, name):
    """The Celery main process and its prefork pool children (the one running the sandbox)."""
    main = stack.procs[name].pid
    children = Path(f"/proc/{main}/task/{main}/children").read_text().split()
    return [main] + [int(pid) for pid in children]


@pytest.mark.needs_bwrap
def test_sandboxed_code_cannot_kill_the_worker_that_runs_it(embedded_stack, tiny_track):
    slug, inputs = tiny_track
    token = embedded_stack.create_user("kim", "integration-pw-8")
    client = Client(embedded_stack.url, token)
    worker = worker_processes(embedded_stack, "sandbox")
    assert len(worker) >= 2, worker  # the main process and its pool child
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("interpreter.py", KILLER)
        archive.writestr("pids.txt", " ".join(map(str, worker)))
    status, body = client.submit(slug, buffer.getvalue(), method_name="Killer", filename="killer.zip", kind="code")
    assert status == 201, body
    scored = embedded_stack.wait_for(body["id"], token, timeout=180)
    # Every SIGKILL was refused (other pid namespace, unprivileged uid), on every sample.
    assert scored["status"] == "scored", scored
    assert scored["details"]["sandbox"]["sample_failures"] == {}, scored["details"]["sandbox"]
    assert worker_processes(embedded_stack, "sandbox") == worker
    for pid in worker:
        os.kill(pid, 0)

    # The very same worker processes go on scoring.
    status, body = client.submit(slug, INTERPRETER, method_name="After the attack", filename="interpreter.py",
                                 kind="code")
    assert status == 201, body
    scored = embedded_stack.wait_for(body["id"], token, timeout=180)
    assert scored["status"] == "scored" and scored["details"]["progress"]["done"] == len(inputs), scored
    assert worker_processes(embedded_stack, "sandbox") == worker
    assert "WorkerLostError" not in embedded_stack.log_text("sandbox")
