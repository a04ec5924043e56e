"""Hidden inputs are hidden (docs/model_submissions.md): on a task whose test inputs are hidden,
with a model scored on them and another that tried to print and raise them, no route of the
site or the API (every named route, crawled as anonymous, owner and another user), no error
message and no log line carries a question or a passage of the hidden test set."""
import json
import logging
import zipfile

import pytest
from django.test import Client
from django.urls import NoReverseMatch, reverse
from rest_framework.views import APIView

from benchmark.importers import import_expmrc
from benchmark.models import InputsAccess, Task
from scoring.model_bundles.build import build_reference_bundle
from submissions.models import Status
from submissions.tasks import run_model_submission
from tests.factories import api_for, fixture_gold, make_task, make_user, upload_file
from tests.test_hidden_gold import readings, routes

pytestmark = [pytest.mark.django_db, pytest.mark.needs_bwrap]

LEAKY = '''
def predict(examples):
    if any(not e["id"].startswith("dev-") for e in examples):
        print([(e["question"], e["context"]) for e in examples])
        raise ValueError(" | ".join(e["question"] + e["context"] for e in examples))
    return {e["id"]: {"answer": "x", "evidence": e["context"][:30]} for e in examples}
'''


def hidden_texts():
    """Every question of the hidden set, and a 40-character piece of every passage."""
    texts = set()
    for article in fixture_gold("expmrc-squad")["data"]:
        for paragraph in article["paragraphs"]:
            texts.add(paragraph["context"][10:50])
            texts.update(qa["question"] for qa in paragraph["qas"])
    return sorted(texts)


HIDDEN = hidden_texts()


def found(body):
    return sorted({text for form in readings(body) for text in HIDDEN if text in form})


def zipped(source: str, tmp_path, name: str) -> bytes:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("predict.py", source)
    return path.read_bytes()


@pytest.fixture
def world(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(APIView, "get_throttles", lambda self: [])
    task = make_task("expmrc-squad")
    # The public sample: the same layout, other questions and ids (nothing of the hidden set).
    sample = fixture_gold("expmrc-squad")
    for article in sample["data"]:
        for paragraph in article["paragraphs"]:
            paragraph["context"] = "Sample passage. " + "It rained on Tuesday. " * 3
            for qa in paragraph["qas"]:
                qa["id"], qa["question"] = "dev-" + qa["id"], "Sample question?"
                qa["answers"] = [{"text": "rained", "answer_start": 19}]
                qa["evidences"] = ["It rained on Tuesday."]
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(sample), encoding="utf-8")
    import_expmrc(path, task_slug=task.slug, split="dev", version="sample-1")
    Task.objects.filter(pk=task.pk).update(inputs=InputsAccess.HIDDEN)
    alice, bob = make_user("alice"), make_user("bob")
    ids = []
    for user, content, name in ((alice, build_reference_bundle(tmp_path / "ref.zip").read_bytes(), "Overlap"),
                                (bob, zipped(LEAKY, tmp_path, "leaky.zip"), "Leaky")):
        response = api_for(user).post(f"/api/v1/tasks/{task.slug}/submissions/",
                                      {"file": upload_file(content, name="model.zip"), "method_name": name,
                                       "kind": "model", "public": "true"}, format="multipart")
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    assert [run_model_submission(pk) for pk in ids] == [Status.SCORED, Status.FAILED]
    return {"task": task, "alice": alice, "bob": bob, "ids": ids, "log": caplog}


def crawl_urls(world):
    values = {"slug": [world["task"].slug, world["task"].benchmark.slug], "pk": [str(pk) for pk in world["ids"]],
              "format": ["json"], "skill": ["s1"], "name": ["inputs-hidden"], "uidb64": ["MQ"],
              "token": ["set-password"]}
    urls = set()
    for name, regex in routes():
        combos = [{}]
        for param in sorted(regex.groupindex):
            combos = [{**combo, param: value} for combo in combos for value in values[param]]
        for kwargs in combos:
            try:
                urls.add(reverse(name, kwargs=kwargs))
            except NoReverseMatch:
                pass
    return sorted(urls)


def test_no_route_error_or_log_line_carries_the_hidden_inputs(world):
    assert len(HIDDEN) >= 4  # three questions and their passage
    assert found(json.dumps(fixture_gold("expmrc-squad"), ensure_ascii=False)) == HIDDEN  # the matcher does match
    alice, bob = Client(), Client()
    alice.force_login(world["alice"])
    bob.force_login(world["bob"])
    checked = 0
    for who, client in {"anonymous": Client(), "alice": alice, "bob": bob, "bob (token)": api_for(world["bob"])}.items():
        for url in crawl_urls(world):
            response = client.get(url)
            assert response.status_code < 500, (who, url)
            assert found(response.content) == [], (who, url)
            checked += response.status_code == 200
    assert checked > 50
    for url in (f"/api/v1/tasks/{world['task'].slug}/inputs/", f"/tasks/{world['task'].slug}/inputs.json"):
        assert Client().get(url).status_code == 403
    assert found("\n".join(record.getMessage() for record in world["log"].records)) == []
