"""QUACKIE tracks end to end inside Django: interpretation set import, hosted model, inclusion
flags with a real (tiny) transformers model, public inputs without GT, score files, built-in
baselines and the published boards."""
import io
import json
import math
import os
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from benchmark import quackie_tracks
from benchmark.importers import ImportRefused
from benchmark.models import Task, Track
from benchmark.models import TestSet as StoredTestSet
from submissions.models import Submission
from submissions.tasks import score_submission
from tests.factories import api_for, make_track, make_user, upload_file
from tests.tiny_models import build_tiny_classifier

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
    assert track.task.slug == "quackie-small-tiny" and track.status == Track.QUEUED
    progress = []
    included = quackie_tracks.compute_inclusion(track, batch_size=2, progress=lambda d, t: progress.append((d, t)))
    assert included == iset.n_samples and progress[-1] == (iset.n_samples, iset.n_samples)
    track.refresh_from_db()
    assert track.status == Track.DONE and track.n_included == included
    return track


def test_inputs_are_the_included_samples_without_ground_truth(track):
    body = APIClient().get(f"/api/tasks/{track.task.slug}/inputs/").json()
    assert all(set(row) == {"sample_id", "question", "context", "sentences"} for row in body["data"])
    assert "gt_candidates" not in json.dumps(body)
    assert len(body["data"]) == track.n_included


def test_a_model_that_says_unanswerable_includes_nothing(tmp_path):
    iset, track = make_track(build_tiny_classifier(tmp_path / "never", answerable=False), slug="never", name="Never")
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
    # each row says where its model ran
    assert all(sub.description.endswith("; device cpu).") for sub in Submission.objects.filter(task=track.task))


@pytest.mark.needs_bwrap
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


RANDOM_ROW = {"dataset": "SQuAD", "classifier": "QA", "method": "Random", "IoU": 24.64, "HPD": 40.28, "SNR": 36.0,
              "info": ""}


def write_results(tmp_path, *rows):
    """A published results.json holding ``rows`` (the Random row alone by default)."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps(list(rows) or [RANDOM_ROW]))
    return path


def test_published_boards_hold_the_official_rows_as_reported(tmp_path):
    results = write_results(tmp_path, {"dataset": "SQuAD", "classifier": "QA", "method": "Gradient_sum", "IoU": 91.12,
                                       "HPD": 93.01, "SNR": 35.5, "info": "https://example.org/saliency"}, RANDOM_ROW)
    boards = quackie_tracks.load_published_results(results)
    task = boards[("SQuAD", "QA")]
    assert task.slug == "quackie-published-squad-qa" and not task.accepts_submissions
    rows = APIClient().get(f"/api/tasks/{task.slug}/leaderboard/").json()["rows"]
    assert [(r["rank"], r["method"], r["reported"], r["scores"]["iou"]) for r in rows] == [
        (1, "Gradient_sum", True, 91.12), (2, "Random", True, 24.64)]
    page = APIClient().get(f"/tasks/{task.slug}/").content.decode()
    assert "91.12" in page and "reported" in page
    assert Task.objects.get(slug=task.slug).metric_decimals == 2


def test_published_smoothgrad_rows_carry_a_note_that_ours_differ(tmp_path):
    smoothgrad = {**RANDOM_ROW, "method": "SmoothGrad_5_sum", "IoU": 80.0, "HPD": 85.0, "SNR": 9.0}
    task = quackie_tracks.load_published_results(write_results(tmp_path, smoothgrad, RANDOM_ROW))[("SQuAD", "QA")]
    rows = {r["method"]: r for r in APIClient().get(f"/api/tasks/{task.slug}/leaderboard/").json()["rows"]}
    assert rows["SmoothGrad_5_sum"]["note"] == quackie_tracks.SMOOTHGRAD_NOTE and rows["Random"]["note"] == ""
    page = APIClient().get(f"/tasks/{task.slug}/").content.decode()
    assert page.count('class="small reported-note"') == 1 and "does not run as committed" in page


# --------------------------------------------------------------------------- extreme scores

def walk_numbers(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from walk_numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk_numbers(item)
    elif isinstance(value, float):
        yield value


def test_extreme_finite_scores_store_only_finite_numbers(track):
    from scoring.metrics import quackie

    inputs = {row["sample_id"]: row for row in APIClient().get(f"/api/tasks/{track.task.slug}/inputs/").json()["data"]}
    assert len(inputs["q-mat"]["sentences"]) == len(inputs["q-birds"]["sentences"]) == 3
    ordinary = {sample_id: [3.0, 1.0, 2.0] for sample_id in inputs if sample_id not in ("q-mat", "q-birds")}
    scores = {
        "q-mat": [1.0, 0.0, 2e-154],  # GT sentence 0: snr_raw ~1e308, finite, but x100 overflows
        "q-birds": [0.0, 1e-170, 1.0],  # GT sentence 2: rest [0, 1e-170], std underflows: once inf
        **ordinary,
    }
    response = api_for(make_user()).post(f"/api/tasks/{track.task.slug}/submissions/",
                                         {"file": upload_file(scores), "method_name": "Extremes"}, format="multipart")
    assert response.status_code == 201, response.content
    score_submission(response.json()["id"])
    sub = Submission.objects.get(pk=response.json()["id"])
    assert sub.status == "scored"
    for field in (sub.scores, sub.ci, sub.item_scores, sub.details):
        json.dumps(field, allow_nan=False)  # what PostgreSQL's jsonb accepts
        assert all(math.isfinite(number) for number in walk_numbers(field))
    # The too-large item is stored as undefined and the column's score is the mean of the others.
    gold = StoredTestSet.objects.get(pk=track.task.current_test_set().pk).gold
    expected = quackie.score({sample_id: gold[sample_id] for sample_id in ordinary}, ordinary)["SNR_raw"]
    assert expected is not None and sub.scores["snr_raw"] == pytest.approx(100 * expected)
    assert sub.scores["iou"] is not None and sub.details["quackie"]["fails"] == 0


# --------------------------------------------------------------------------- inclusion flags

def write_squad(path, samples):
    """A SQuAD v2 file with one paragraph per (id, question, context); the answer at 0."""
    data = [{"title": sample_id, "paragraphs": [{"context": context, "qas": [
        {"id": sample_id, "question": question, "is_impossible": False,
         "answers": [{"text": context.split()[0], "answer_start": 0}]}]}]}
        for sample_id, question, context in samples]
    path.write_text(json.dumps({"version": "v2.0", "data": data}), encoding="utf-8")
    return path


PADDING_SAMPLES = [
    ("short-cat", "Where did the cat sit?", "The cat sat on the mat. It was a sunny day."),
    ("short-paris", "What?", "Paris is large. It hosts the Louvre."),
    ("long-paris", "Who?", " ".join(["Paris is the capital of France."] * 40)),
    ("long-river", "Who built the park?",
     " ".join(["The river ran north through the old city and the people built a large park."] * 20)),
    ("too-long", "Who?", "The river was high. " * 150),
]


def test_qa_inclusion_predicts_each_sample_alone(tmp_path):
    """QA padding is not masked, so batching changes P(answer); the official filter predicts one
    sample at a time, and so must the inclusion flags."""
    from scoring.models.hosted_model import load_hosted_model
    from tests.tiny_models import build_tiny_qa_model

    squad = write_squad(tmp_path / "padding.json", PADDING_SAMPLES)
    model_dir = build_tiny_qa_model(tmp_path / "qa", seed=6)  # random: P(answer) near 0.5 for long inputs
    iset, track = make_track(model_dir, slug="tiny-qa", name="Tiny QA", kind="qa", squad=squad, set_name="padding")
    quackie_tracks.compute_inclusion(track, batch_size=16)
    track.refresh_from_db()

    model = load_hosted_model(model_dir, "qa")
    fits = [(sample_id, q, c) for sample_id, q, c in PADDING_SAMPLES if model.n_tokens(q, c) <= 512]
    alone = {sample_id: bool(model.predict(q, c)[0]) for sample_id, q, c in fits}
    batched = dict(zip([s for s, _, _ in fits], map(bool, load_hosted_model(model_dir, "qa", batch_size=16).predict(
        [q for _, q, _ in fits], [c for _, _, c in fits])), strict=True))
    assert batched != alone, "the samples must be ones where batching flips a decision"
    assert {sample_id: flags["answerable"] for sample_id, flags in track.inclusion.items()} == {
        **alone, "too-long": None}
    included = sorted(sample_id for sample_id, ok in alone.items() if ok)
    assert included and len(included) < len(alone)  # both decisions occur
    assert track.n_included == len(included)
    assert sorted(track.task.current_test_set().key_spec["keys"]) == included
    assert track.exclusions["too_long"] == 1
    assert track.exclusions["predicted_unanswerable"] == len(alone) - len(included)


def test_samples_over_512_tokens_are_excluded_without_asking_the_model(tmp_path):
    squad = write_squad(tmp_path / "long.json", [PADDING_SAMPLES[0], PADDING_SAMPLES[-1]])
    iset, track = make_track(build_tiny_classifier(tmp_path / "yes", answerable=True), slug="yes", name="Yes",
                             squad=squad, set_name="long")
    assert quackie_tracks.compute_inclusion(track) == 1
    track.refresh_from_db()
    too_long = track.inclusion["too-long"]
    assert too_long["tokens"] > 512 and too_long["answerable"] is None and too_long["included"] is False
    assert track.inclusion["short-cat"] == {"tokens": track.inclusion["short-cat"]["tokens"], "answerable": True,
                                            "included": True}
    assert track.exclusions == {"too_long": 1, "predicted_unanswerable": 0, "unanswerable_in_data": 0}
    assert track.task.current_test_set().key_spec["keys"] == ["short-cat"]


# --------------------------------------------------------------------------- built-in baselines

@pytest.fixture
def qa_track(tmp_path):
    from tests.tiny_models import build_tiny_qa_model

    iset, track = make_track(build_tiny_qa_model(tmp_path / "qa", answerable=True), slug="tiny-qa", name="Tiny QA",
                             kind="qa")
    assert track.task.slug == "quackie-small-tiny-qa"
    assert quackie_tracks.compute_inclusion(track) == iset.n_samples
    track.refresh_from_db()
    return track


def test_qa_track_baselines_run_the_model_at_the_official_batch_size(qa_track):
    """QA padding is not masked, so the batch size shows in the numbers: the stored score files
    must be what the interpreters give with the official batch size 2 (every perturbed text,
    duplicates included), not with the classifier's default of 8."""
    from scoring.models.hosted_model import load_hosted_model
    from scoring.models.interpreters import interpret

    methods = ("Random", "LIME_10_sum", "SHAP_10_max")
    call_command("run_quackie_baselines", "--track", qa_track.task.slug, "--methods", *methods,
                 stdout=io.StringIO(), stderr=io.StringIO())
    inputs = APIClient().get(f"/api/tasks/{qa_track.task.slug}/inputs/").json()["data"]
    assert len(inputs) == qa_track.n_included

    def explain(method, batch_size):
        model = load_hosted_model(qa_track.hosted_model.path, "qa", batch_size=batch_size)
        return {row["sample_id"]: interpret(method, model, row["question"], row["context"], row["sentences"])
                for row in inputs}

    for method in methods:
        sub = Submission.objects.get(task=qa_track.task, method_name=method)
        assert sub.status == "scored" and sub.details["quackie"]["fails"] == 0
        with sub.file.open("rb") as handle:
            stored = json.load(handle)
        expected = explain(method, 2)
        assert stored.keys() == expected.keys()
        for sample_id, scores in expected.items():
            assert stored[sample_id] == pytest.approx(scores, abs=1e-12, rel=0)
    # the check above can tell batch sizes apart
    at_two, at_eight = explain("LIME_10_sum", 2), explain("LIME_10_sum", 8)
    assert any(two != pytest.approx(eight, abs=1e-10, rel=0)
               for sample_id in at_two for two, eight in zip(at_two[sample_id], at_eight[sample_id], strict=True))


def test_a_sample_that_fails_is_a_counted_fail_not_the_end_of_the_run(track, tmp_path):
    """A model that returns NaN on some inputs: the gradient comes back NaN and LIME raises on
    those samples only; both are per-sample fails, counted and reported, like in the sandbox."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = Path(track.hosted_model.path)
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    network = AutoModelForSequenceClassification.from_pretrained(source, local_files_only=True)
    with torch.no_grad():  # every input holding "paris" now gives NaN
        network.bert.embeddings.word_embeddings.weight[tokenizer.convert_tokens_to_ids("paris")] = float("nan")
    network.save_pretrained(tmp_path / "broken")
    tokenizer.save_pretrained(tmp_path / "broken")
    quackie_tracks.register_model(slug="tiny", name="Tiny", kind="classification", path=tmp_path / "broken")
    inputs = APIClient().get(f"/api/tasks/{track.task.slug}/inputs/").json()["data"]
    broken = {row["sample_id"] for row in inputs if "paris" in (row["question"] + row["context"]).lower()}
    assert 0 < len(broken) < len(inputs)

    out = io.StringIO()
    call_command("run_quackie_baselines", "--track", track.task.slug, "--methods", "Random", "Gradient_sum",
                 "LIME_10_sum", stdout=out, stderr=io.StringIO())
    subs = {sub.method_name: sub for sub in Submission.objects.filter(task=track.task)}
    assert all(sub.status == "scored" for sub in subs.values())
    assert subs["Random"].details["quackie"]["fails"] == 0
    for method, category in (("Gradient_sum", "not_finite"), ("LIME_10_sum", "exception")):
        assert subs[method].details["quackie"]["fails"] == len(broken)
        summary = f"{len(broken)} samples failed ({category} {len(broken)})"
        assert f"{method}: {summary}; first: sample " in out.getvalue()
        assert summary in subs[method].description
        assert subs[method].scores["iou"] is not None  # the other samples are scored
    assert "  Random: " not in out.getvalue()  # no failure line for Random


# --------------------------------------------------------------------------- track identity

def test_create_track_is_idempotent_for_the_same_set_and_model(track):
    again = quackie_tracks.create_track(track.interpretation_set, track.hosted_model)
    assert again.pk == track.pk and again.status == Track.DONE


def test_a_slug_longer_than_a_task_slug_is_refused_not_truncated(tmp_path):
    iset, _ = quackie_tracks.import_quackie(SQUAD_V2, name="a-rather-long-interpretation-set-name", version="1")
    path = build_tiny_classifier(tmp_path / "clf", answerable=True)
    first = quackie_tracks.register_model(slug="model-one", name="One", kind="classification", path=path)
    second = quackie_tracks.register_model(slug="model-two", name="Two", kind="classification", path=path)
    with pytest.raises(ImportRefused, match="55 characters, more than the 50"):
        quackie_tracks.create_track(iset, first)
    with pytest.raises(ImportRefused, match="shorter set name or model slug"):
        quackie_tracks.create_track(iset, second)  # once truncated to the same slug as the first
    assert not Track.objects.exists() and not Task.objects.filter(slug__startswith="quackie-a-rather").exists()


def test_a_slug_taken_by_another_set_and_model_is_refused(tmp_path):
    path = build_tiny_classifier(tmp_path / "clf", answerable=True)
    set_ab, _ = quackie_tracks.import_quackie(SQUAD_V2, name="a-b", version="1")
    set_a, _ = quackie_tracks.import_quackie(SQUAD_V2, name="a", version="1")
    model_c = quackie_tracks.register_model(slug="c", name="C", kind="classification", path=path)
    model_bc = quackie_tracks.register_model(slug="b-c", name="B C", kind="classification", path=path)
    first = quackie_tracks.create_track(set_ab, model_c)
    with pytest.raises(ImportRefused, match="task quackie-a-b-c is already the track of set a-b x model c, "
                                            "not of set a x model b-c"):
        quackie_tracks.create_track(set_a, model_bc)
    assert Track.objects.get().pk == first.pk and first.interpretation_set == set_ab
    published = quackie_tracks.load_published_results(write_results(tmp_path))[("SQuAD", "QA")]
    squad, _ = quackie_tracks.import_quackie(SQUAD_V2, name="published", version="1")
    model = quackie_tracks.register_model(slug="squad-qa", name="X", kind="classification", path=path)
    with pytest.raises(ImportRefused, match="task quackie-published-squad-qa already exists and is not a QUACKIE"):
        quackie_tracks.create_track(squad, model)
    assert not hasattr(Task.objects.get(pk=published.pk), "track")


def test_a_new_version_of_the_set_moves_the_track_and_recomputes_its_inclusion(track, tmp_path):
    old_test_set = track.task.current_test_set()
    squad = json.loads(SQUAD_V2.read_text(encoding="utf-8"))
    squad["data"] = squad["data"][:1]  # v2 keeps only the first article
    path = tmp_path / "small-v2.json"
    path.write_text(json.dumps(squad), encoding="utf-8")
    v2, _ = quackie_tracks.import_quackie(path, name="small", version="2")
    moved = quackie_tracks.create_track(v2, track.hosted_model)
    assert moved.pk == track.pk and moved.interpretation_set == v2 and moved.status == Track.QUEUED
    assert moved.total == v2.n_samples
    assert quackie_tracks.compute_inclusion(moved) == v2.n_samples
    current = track.task.current_test_set()
    assert current.version == "small-v2" and current.n_items == v2.n_samples
    assert StoredTestSet.objects.get(pk=old_test_set.pk).is_current is False


def test_a_track_is_not_moved_while_its_inclusion_runs(track, tmp_path):
    squad = json.loads(SQUAD_V2.read_text(encoding="utf-8"))
    squad["data"] = squad["data"][:1]
    path = tmp_path / "small-v2.json"
    path.write_text(json.dumps(squad), encoding="utf-8")
    v2, _ = quackie_tracks.import_quackie(path, name="small", version="2")
    Track.objects.filter(pk=track.pk).update(status=Track.RUNNING)
    with pytest.raises(ImportRefused, match="being computed"):
        quackie_tracks.create_track(v2, track.hosted_model)
    assert Track.objects.get(pk=track.pk).interpretation_set_id == track.interpretation_set_id


def test_create_track_command_reports_a_refusal_as_a_command_error(tmp_path):
    quackie_tracks.import_quackie(SQUAD_V2, name="a-rather-long-interpretation-set-name", version="1")
    quackie_tracks.register_model(slug="model-one", name="One", kind="classification",
                                  path=build_tiny_classifier(tmp_path / "clf", answerable=True))
    with pytest.raises(CommandError, match="more than the 50 a task slug holds"):
        call_command("create_track", "--set", "a-rather-long-interpretation-set-name", "--model", "model-one",
                     stdout=io.StringIO())
