"""Model submissions to a task whose test inputs are hidden (docs/model_submissions.md), through
Django with the real sandbox: prediction files and inputs refused, a bundle smoke-run on the
public sample then run on the hidden inputs and scored like a file, identical scores twice,
failures on the hidden inputs that show a category and nothing the bundle wrote."""
import io
import json
import zipfile

import pytest
from django.test import Client

from benchmark.importers import import_expmrc
from benchmark.models import InputsAccess, Task
from scoring.model_bundles.build import build_reference_bundle
from submissions import intake
from submissions.models import ErrorCategory, Status, Submission
from submissions.tasks import run_model_submission
from tests.factories import FIXTURES, api_for, make_task, make_user, upload_file

pytestmark = [pytest.mark.django_db, pytest.mark.needs_bwrap]

SECRET_QUESTION = "When was the Quillfeather lighthouse built?"  # a hidden question of the fixture


@pytest.fixture
def hidden_task(tmp_path):
    """SQuAD fixture as the hidden test split; the same passages under other ids as the public
    dev sample (the smoke run's inputs)."""
    task = make_task("expmrc-squad")
    gold = json.loads((FIXTURES / "expmrc-squad-dev.json").read_text(encoding="utf-8"))
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["id"] = "dev-" + qa["id"]
                qa["question"] = "Sample: " + qa["question"]
    sample = tmp_path / "sample.json"
    sample.write_text(json.dumps(gold), encoding="utf-8")
    import_expmrc(sample, task_slug=task.slug, split="dev", version="sample-1")
    Task.objects.filter(pk=task.pk).update(inputs=InputsAccess.HIDDEN)
    return Task.objects.get(pk=task.pk)


def bundle_bytes(predict_source: str, extra: dict[str, bytes] | None = None, entry: str = "predict.py") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(entry, predict_source)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def reference_bundle(tmp_path) -> bytes:
    return build_reference_bundle(tmp_path / "reference.zip").read_bytes()


def upload_model(user, task, content: bytes, **fields):
    return api_for(user).post(f"/api/v1/tasks/{task.slug}/submissions/",
                              {"file": upload_file(content, name="model.zip"), "method_name": "Overlap",
                               "kind": "model", **fields}, format="multipart")


def test_hidden_inputs_are_never_served_and_files_are_refused(hidden_task):
    user = make_user()
    assert Client().get(f"/api/v1/tasks/{hidden_task.slug}/").json()["inputs"] == "hidden"
    for path in (f"/api/v1/tasks/{hidden_task.slug}/inputs/", f"/tasks/{hidden_task.slug}/inputs.json",
                 f"/api/v1/tasks/{hidden_task.slug}/skills/s1/inputs/"):
        response = Client().get(path)
        assert response.status_code == 403, path
        assert SECRET_QUESTION not in response.content.decode()
    refused = api_for(user).post(f"/api/v1/tasks/{hidden_task.slug}/submissions/",
                                 {"file": upload_file({"fx-squad-1": {"answer": "1874", "evidence": "x"}}),
                                  "method_name": "File"}, format="multipart")
    assert refused.status_code == 400
    assert refused.json()["type"].endswith("/problems/inputs-hidden/") and "kind=model" in refused.json()["detail"]
    assert not Submission.objects.exists()
    for page in (f"/tasks/{hidden_task.slug}/", f"/tasks/{hidden_task.slug}/skills/"):
        text = Client().get(page).content.decode()
        assert SECRET_QUESTION not in text and f"/tasks/{hidden_task.slug}/inputs.json" not in text


def test_a_model_is_smoke_run_then_scored_on_the_hidden_inputs_the_same_twice(hidden_task, tmp_path):
    user = make_user()
    bundle = reference_bundle(tmp_path)
    scores = []
    for _ in range(2):
        response = upload_model(user, hidden_task, bundle, dev_set_use="part", external_data="")
        assert response.status_code == 201, response.content
        assert run_model_submission(response.json()["id"]) == Status.SCORED
        entry = Submission.objects.get(pk=response.json()["id"])
        assert entry.kind == Submission.MODEL and entry.scores["overall_f1"] > 0
        run = entry.details["model_run"]["run"]
        assert run["bundle_sha256"] == entry.sha256 and run["environment"]["python"] and run["hardware"]
        assert entry.details["model_run"]["smoke"] is True
        assert run["started_ahead"] is True  # the smoke run left the hidden run's sandbox booted
        assert entry.scorer_version.startswith("model-1/expmrc-1")
        assert "Smoke run on the public sample" in entry.run_log and "passed" in entry.run_log
        scores.append((entry.scores, entry.item_scores))
    assert scores[0] == scores[1]  # the same bundle twice: the same score
    page = Client().get(f"/tasks/{hidden_task.slug}/").content.decode()
    assert "Overlap" in page and 'id="dev-set-legend"' in page


def test_a_failure_on_the_hidden_inputs_shows_its_category_only(hidden_task):
    # Passes the smoke run (sample questions), then prints and raises the hidden questions.
    leaky = '''
def predict(examples):
    hidden = [e["question"] for e in examples if not e["question"].startswith("Sample: ")]
    if hidden:
        print("LEAK", hidden)
        raise ValueError("LEAK " + " | ".join(hidden))
    return {e["id"]: {"answer": "x", "evidence": e["context"][:20]} for e in examples}
'''
    user = make_user()
    response = upload_model(user, hidden_task, bundle_bytes(leaky))
    assert response.status_code == 201, response.content
    assert run_model_submission(response.json()["id"]) == Status.FAILED
    entry = Submission.objects.get(pk=response.json()["id"])
    assert entry.error_category == ErrorCategory.MODEL_FAILED and entry.error_message.startswith("exception")
    answer = api_for(user).get(f"/api/v1/submissions/{entry.pk}/").content.decode()
    page = Client().get(f"/submissions/{entry.pk}/").content.decode()
    for shown in (entry.error_message, entry.run_log, json.dumps(entry.details), answer, page):
        assert "LEAK" not in shown and "Quillfeather" not in shown
    assert "progress" not in entry.details  # where it failed would say which input triggered it
    assert intake.quota_status(user, hidden_task)["used"] == 1  # the bundle's fault: charged


def test_a_bundle_that_fails_its_smoke_run_is_rejected_with_its_log_and_no_quota(hidden_task):
    user = make_user()
    broken = "import json\ndef predict(examples):\n    raise RuntimeError('my own bug on ' + examples[0]['id'])\n"
    response = upload_model(user, hidden_task, bundle_bytes(broken))
    assert run_model_submission(response.json()["id"]) == Status.REJECTED
    entry = Submission.objects.get(pk=response.json()["id"])
    assert entry.error_category == ErrorCategory.SMOKE_FAILED
    assert "my own bug on dev-fx-squad-1" in entry.run_log  # the public sample's traceback, in full
    assert "run_log" in api_for(user).get(f"/api/v1/submissions/{entry.pk}/").json()
    assert "run_log" not in api_for(make_user("bob")).get(f"/api/v1/submissions/{entry.pk}/").json()
    assert intake.quota_status(user, hidden_task)["used"] == 0


@pytest.mark.parametrize("content, category", [
    (bundle_bytes("x = 1\n", entry="helper.py"), "no_predict_py"),
    (bundle_bytes("def other(examples):\n    return {}\n"), "no_predict"),
    (bundle_bytes("def predict(e):\n    return {}\n", {"../escape.py": b"x = 1\n"}), "invalid_bundle"),
])
def test_a_malformed_bundle_is_rejected_at_upload_without_quota(hidden_task, content, category):
    user = make_user()
    response = upload_model(user, hidden_task, content)
    assert response.status_code == 400 and response.json()["category"] == "invalid_input"
    assert response.json()["detail"].startswith(category)
    assert intake.quota_status(user, hidden_task)["used"] == 0


def test_a_bundle_over_the_tasks_limit_is_refused_with_413(hidden_task):
    Task.objects.filter(pk=hidden_task.pk).update(model_max_bytes=100)
    response = upload_model(make_user(), hidden_task, bundle_bytes("def predict(e):\n    return {}\n" + "#" * 200))
    assert response.status_code == 413 and "at most 100 bytes" in response.json()["detail"]
    assert not Submission.objects.exists()
