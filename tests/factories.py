"""Small builders for test data. Test sets come from the hand-made fixtures in
benchmark/fixtures/expmrc, so these tests never need ../shared/data."""
import json
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.models import Profile
from benchmark.importers import import_expmrc

FIXTURES = Path(settings.BASE_DIR) / "benchmark" / "fixtures" / "expmrc"
SHARED_EXPMRC = Path(settings.SHARED_DATA_DIR) / "expmrc"

FIXTURE_TASKS = {
    "expmrc-squad": ("SQuAD", "en", "expmrc-squad-dev.json"),
    "expmrc-cmrc2018": ("CMRC 2018", "zh", "expmrc-cmrc2018-dev.json"),
    "expmrc-race": ("RACE+", "en", "expmrc-race-dev.json"),
    "expmrc-c3": ("C3", "zh", "expmrc-c3-dev.json"),
}


def make_user(username="alice", password="correct-horse-42", team="", default_public=True):
    """A researcher. Accounts made on the site are private by default (accounts.models.Profile);
    most tests are about entries on the board, so theirs publish unless told otherwise."""
    user = User.objects.create_user(username=username, password=password)
    Profile.objects.create(user=user, team=team, default_public=default_public)
    return user


def token_for(user):
    return Token.objects.get_or_create(user=user)[0].key


def logged_in(user):
    """A web client with ``user``'s session."""
    client = Client()
    client.force_login(user)
    return client


def api_for(user):
    """An API client with ``user``'s token."""
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return api


def make_task(slug="expmrc-squad", version="v1", path=None):
    name, language, filename = FIXTURE_TASKS[slug]
    test_set, _ = import_expmrc(
        path or FIXTURES / filename, task_slug=slug, version=version, task_name=name, language=language
    )
    return test_set.task


def fixture_gold(slug):
    return json.loads((FIXTURES / FIXTURE_TASKS[slug][2]).read_text(encoding="utf-8"))


def gold_answers_and_evidence(gold):
    """Every gold answer and evidence string of an ExpMRC gold object."""
    texts = []
    for item in gold["data"]:
        if "paragraphs" in item:
            for paragraph in item["paragraphs"]:
                for qa in paragraph["qas"]:
                    texts += [a["text"] for a in qa["answers"]] + list(qa["evidences"])
        else:
            for evidences in item["evidences"]:
                texts += list(evidences)
    return texts


def perfect_predictions(gold):
    """Predictions equal to the first gold answer and evidence of every question."""
    predictions = {}
    for item in gold["data"]:
        if "paragraphs" in item:
            for paragraph in item["paragraphs"]:
                for qa in paragraph["qas"]:
                    predictions[qa["id"]] = {"answer": qa["answers"][0]["text"], "evidence": qa["evidences"][0]}
        else:
            for j, letter in enumerate(item["answers"]):
                predictions[f"{item['id']}-{j}"] = {"answer": letter, "evidence": item["evidences"][j][0]}
    return predictions


def upload_file(content, name="predictions.json"):
    if not isinstance(content, (bytes, str)):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode("utf-8")
    return SimpleUploadedFile(name, content, content_type="application/json")


WH_WORDS = ["What", "Who", "When", "Where", "Why", "How", "Which"]


def synthetic_span_gold(n_questions=60, version="expmrc-squad-synthetic"):
    """A SQuAD-layout gold with ``n_questions`` questions (question words cycle through
    WH_WORDS), one paragraph each; answer "token<i>" and evidence "Fact <i> holds." are
    unique per question so a test can tell any two apart."""
    paragraphs = []
    for i in range(n_questions):
        evidence = f"Fact {i} holds because token{i} was seen."
        context = f"Intro sentence number {i}. {evidence} Closing remark {i}."
        paragraphs.append({
            "context": context,
            "qas": [{
                "id": f"syn-{i:04d}",
                "question": f"{WH_WORDS[i % len(WH_WORDS)]} is the token of fact {i}?",
                "answers": [{"text": f"token{i}", "answer_start": context.index(f"token{i}")}],
                "evidences": [evidence],
            }],
        })
    return {"version": version, "data": [{"title": "Synthetic", "paragraphs": paragraphs}]}


def make_task_from_gold(tmp_path, gold, slug="expmrc-squad", name="SQuAD", language="en", version="v1"):
    path = tmp_path / f"{slug}-{version}.json"
    path.write_text(json.dumps(gold), encoding="utf-8")
    test_set, _ = import_expmrc(path, task_slug=slug, version=version, task_name=name, language=language)
    return test_set.task


QUACKIE_SQUAD_V2 = Path(settings.BASE_DIR) / "tests" / "fixtures" / "quackie" / "squad_v2_small.json"


def make_tiny_track(tmp_path, *, answerable=True, model_dir=None):
    """A ready QUACKIE track: the small SQuAD v2 fixture × a tiny random classifier, built here
    unless ``model_dir`` holds one already (a suite builds it once and shares it read-only)."""
    from benchmark import quackie_tracks
    from tests.tiny_models import build_tiny_classifier

    iset, _ = quackie_tracks.import_quackie(QUACKIE_SQUAD_V2, name="small", version="1")
    path = model_dir or build_tiny_classifier(tmp_path / "clf", answerable=answerable)
    model = quackie_tracks.register_model(slug="tiny", name="Tiny", kind="classification", path=path)
    track = quackie_tracks.create_track(iset, model)
    quackie_tracks.compute_inclusion(track)
    track.refresh_from_db()
    return track


QUACKIE_SQUAD_V2 = Path(__file__).resolve().parent / "fixtures" / "quackie" / "squad_v2_small.json"


def make_track(model_dir, *, slug, name, kind="classification", squad=QUACKIE_SQUAD_V2, set_name="small"):
    """A QUACKIE track (not yet included) of a small SQuAD set and a hosted model at
    ``model_dir``; returns (interpretation set, track)."""
    from benchmark import quackie_tracks

    interpretation_set, _ = quackie_tracks.import_quackie(squad, name=set_name, version="1")
    model = quackie_tracks.register_model(slug=slug, name=name, kind=kind, path=model_dir)
    return interpretation_set, quackie_tracks.create_track(interpretation_set, model)
