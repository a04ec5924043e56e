"""The built-in baselines of a track as a background job (submissions.baseline_runs): queued when
the demo model's track is included, all 15 rows on the samples, progress in the job's state,
resumable (rows and checkpointed samples are not redone), run in slices, and the same numbers as
explaining the samples directly."""
import io
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from benchmark import demo, jobs, quackie_tracks
from benchmark.models import TestSet as StoredTestSet
from core.jobs import JobStatus
from submissions import baseline_runs
from submissions.models import BASELINES_USERNAME, Submission
from tests.tiny_models import build_tiny_classifier

pytestmark = pytest.mark.django_db
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SQUAD_V2 = Path(__file__).resolve().parents[1] / "fixtures" / "quackie" / "squad_v2_small.json"
LIMIT = 2  # samples per run: every method on a tiny model in about a second


@pytest.fixture
def sent(monkeypatch):
    """The job messages sent (by name) once their transaction commits."""
    messages = []
    monkeypatch.setattr("core.jobs.current_app.send_task",
                        lambda name, args=(), **_: messages.append((name, tuple(args))))
    return messages


@pytest.fixture
def demo_track(tmp_path, settings, django_capture_on_commit_callbacks, sent):
    """The demo model's track on the small SQuAD set, included (a tiny classifier that says
    answerable); its inclusion run queued the baselines."""
    settings.EXPBENCH_MODELS_DIR = tmp_path / "models"
    build_tiny_classifier(quackie_tracks.demo_model_dir(), answerable=True)
    iset, _ = quackie_tracks.import_quackie(SQUAD_V2, name="small", version="1")
    model = quackie_tracks.register_model(slug=quackie_tracks.DEMO_MODEL_SLUG, name="Demo", kind="classification",
                                          path=quackie_tracks.demo_model_dir())
    with django_capture_on_commit_callbacks(execute=True):
        track = quackie_tracks.create_track(iset, model)
        quackie_tracks.compute_inclusion(track, batch_size=4)
    track.refresh_from_db()
    return track


def part_of(test_set):
    return quackie_tracks.BASELINES.state.read(test_set.pk)


def with_limit(test_set, sent, django_capture_on_commit_callbacks, methods=None, limit=LIMIT):
    with django_capture_on_commit_callbacks(execute=True):
        assert quackie_tracks.schedule_baselines(test_set, methods=methods, limit=limit)
    return part_of(test_set)


def stored_scores(submission):
    submission.file.open("rb")
    try:
        return json.loads(submission.file.read())
    finally:
        submission.file.close()


def test_including_the_demo_track_queues_all_fifteen_rows_for_the_models_worker(demo_track, sent):
    from scoring.models.interpreters import BASELINE_METHODS

    test_set = demo_track.task.current_test_set()
    part = part_of(test_set)
    assert part["status"] == JobStatus.QUEUED and part["methods"] == list(BASELINE_METHODS)
    assert len(part["methods"]) == 15 and part["limit"] is None and part["rows"] == {}
    assert part["samples_total"] == demo_track.n_included
    assert ("submissions.tasks.run_track_baselines", (test_set.pk,)) in sent
    # queued, running or done: asking again queues nothing
    assert not quackie_tracks.schedule_baselines(test_set)


def test_other_tracks_get_no_baselines_unless_asked(tmp_path):
    iset, _ = quackie_tracks.import_quackie(SQUAD_V2, name="small", version="1")
    model = quackie_tracks.register_model(slug="tiny", name="Tiny", kind="classification",
                                          path=build_tiny_classifier(tmp_path / "clf", answerable=True))
    track = quackie_tracks.create_track(iset, model)
    quackie_tracks.compute_inclusion(track)
    assert part_of(track.task.current_test_set()) == {}


def test_the_baselines_task_is_routed_to_the_models_queue():
    from config.celery import app

    assert app.amqp.router.route({}, "submissions.tasks.run_track_baselines")["queue"].name == "models"


def test_a_run_stores_every_row_with_the_numbers_of_a_direct_explanation(demo_track, sent,
                                                                          django_capture_on_commit_callbacks):
    from scoring.models.interpreters import BASELINE_METHODS, interpret_many

    test_set = demo_track.task.current_test_set()
    with_limit(test_set, sent, django_capture_on_commit_callbacks)
    assert baseline_runs.claim_and_run(test_set.pk) == "done"
    part = part_of(test_set)
    assert part["status"] == JobStatus.DONE and set(part["rows"]) == set(BASELINE_METHODS)
    assert part["done"] == part["total"] == LIMIT * 8  # 8 families
    rows = APIClient().get(f"/api/tasks/{demo_track.task.slug}/leaderboard/").json()["rows"]
    assert sorted(row["method"] for row in rows) == sorted(BASELINE_METHODS)
    # the samples past the limit are missing from the score files: counted fails
    assert all(row["baseline"] and row["fails"] == demo_track.n_included - LIMIT for row in rows)
    subs = {sub.method_name: sub for sub in Submission.objects.filter(task=demo_track.task)}
    assert {sub.pk for sub in subs.values()} == set(part["rows"].values())
    assert all(sub.user.username == BASELINES_USERNAME and sub.status == "scored" for sub in subs.values())
    assert f"on {LIMIT} samples" in subs["LIME_10_sum"].description
    # where the model ran is stored with the rows and in the job's state (the board shows it)
    assert all("; device cpu)." in sub.description for sub in subs.values())
    assert part["device"] == "cpu" and part["batch_size"] == 8
    # the stored score files are what the interpreters give on those samples
    model = baseline_runs.load_model(demo_track)
    samples = StoredTestSet.objects.get(pk=test_set.pk).public_inputs["data"][:LIMIT]
    for sample in samples:
        with model.shared_forward_passes():
            direct = interpret_many(["Random", "Gradient_max", "LIME_10_sum", "IntegratedGradients_50_sum"], model,
                                    sample["question"], sample["context"], sample["sentences"], seed=0)
        for method, scores in direct.items():
            assert stored_scores(subs[method])[sample["sample_id"]] == pytest.approx(scores, abs=1e-6)


def test_slices_checkpoint_and_resume_without_redoing_samples_or_rows(demo_track, sent, monkeypatch, settings,
                                                                      django_capture_on_commit_callbacks):
    test_set = demo_track.task.current_test_set()
    methods = ["Random", "Gradient_sum", "Gradient_max", "LIME_10_sum"]
    with_limit(test_set, sent, django_capture_on_commit_callbacks, methods=methods)
    explained = []
    original = baseline_runs.explain_sample
    monkeypatch.setattr(baseline_runs, "explain_sample",
                        lambda model, group, sample: (explained.append((tuple(group), sample["sample_id"])),
                                                      original(model, group, sample))[1])
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        # a slice of no time: one sample, then the job is queued again behind the others
        assert baseline_runs.claim_and_run(test_set.pk, slice_seconds=0) == "continues"
    part = part_of(test_set)
    assert part["status"] == JobStatus.QUEUED and part["attempts"] == 0
    assert (part["family"], part["samples_done"], part["done"], part["total"]) == ("Random", 1, 1, 3 * LIMIT)
    assert sent == [("submissions.tasks.run_track_baselines", (test_set.pk,))]
    checkpoints = Path(settings.MEDIA_ROOT) / "baseline-runs"
    assert [path.name for path in checkpoints.glob("*/*")] == ["Random.json"]
    slices = 1
    while part_of(test_set)["status"] == JobStatus.QUEUED:
        with django_capture_on_commit_callbacks(execute=True):
            baseline_runs.claim_and_run(test_set.pk, slice_seconds=0)
        slices += 1
        part = part_of(test_set)
        if part["status"] == JobStatus.QUEUED:  # progress is visible between slices
            assert 0 < part["done"] < part["total"]
    assert part_of(test_set)["status"] == JobStatus.DONE and slices > 3
    # every (family, sample) explained exactly once across the slices
    assert sorted(explained) == sorted({(tuple(g), s) for g, s in explained})
    assert len(explained) == 3 * LIMIT
    sliced = {sub.method_name: stored_scores(sub) for sub in Submission.objects.filter(task=demo_track.task)}
    assert set(sliced) == set(methods)
    assert not list(checkpoints.glob("*/*"))  # removed once a family's rows are stored

    # done: queued again (the command's --background), nothing is redone
    explained.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert quackie_tracks.schedule_baselines(test_set, methods=methods, limit=LIMIT, again=True)
    assert baseline_runs.claim_and_run(test_set.pk) == "done"
    assert explained == [] and Submission.objects.filter(task=demo_track.task).count() == len(methods)

    # a row that was deleted is redone, and only that family
    Submission.objects.filter(task=demo_track.task, method_name="LIME_10_sum").delete()
    with django_capture_on_commit_callbacks(execute=True):
        quackie_tracks.schedule_baselines(test_set, methods=methods, limit=LIMIT, again=True)
    assert baseline_runs.claim_and_run(test_set.pk) == "done"
    assert {group for group, _ in explained} == {("LIME_10_sum",)}
    redone = Submission.objects.get(task=demo_track.task, method_name="LIME_10_sum")
    again = stored_scores(redone)
    assert set(again) == set(sliced["LIME_10_sum"])
    for sample_id, scores in sliced["LIME_10_sum"].items():
        assert again[sample_id] == pytest.approx(scores, rel=1e-6, abs=1e-12)


def test_a_run_that_lost_its_claim_stops_without_storing(demo_track, sent, django_capture_on_commit_callbacks):
    test_set = demo_track.task.current_test_set()
    with_limit(test_set, sent, django_capture_on_commit_callbacks, methods=["Random"])
    first = quackie_tracks.BASELINES.state.claim(test_set.pk)
    quackie_tracks.BASELINES.state.take(test_set.pk)  # e.g. the reaper gave the job to another run
    assert baseline_runs.run_claimed(test_set.pk, first) == "lost its claim"
    assert not Submission.objects.filter(task=demo_track.task).exists()
    assert part_of(test_set)["status"] == JobStatus.RUNNING


def test_the_reaper_sends_a_run_whose_worker_died_again_and_then_gives_up(demo_track, sent, settings,
                                                                          django_capture_on_commit_callbacks):
    test_set = demo_track.task.current_test_set()
    with_limit(test_set, sent, django_capture_on_commit_callbacks, methods=["Random"])
    state = quackie_tracks.BASELINES.state
    later = timezone.now() + timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS + 1)
    for attempt in range(1, settings.SCORING_MAX_ATTEMPTS + 1):
        assert state.claim(test_set.pk) == attempt  # a worker takes it and dies
        counts = jobs.reap_stuck(later)
        if attempt < settings.SCORING_MAX_ATTEMPTS:
            assert counts["baselines_resent"] == 1 and part_of(test_set)["status"] == JobStatus.QUEUED
    assert counts["baselines_failed"] == 1
    part = part_of(test_set)
    assert part["status"] == JobStatus.FAILED and "The built-in baseline run stopped" in part["note"]
    # load_demo's step queues it again, keeping what it had
    with django_capture_on_commit_callbacks(execute=True):
        assert quackie_tracks.schedule_baselines(test_set, methods=["Random"], limit=LIMIT)


def test_a_newer_row_replaces_an_earlier_builtin_row_of_the_same_method(demo_track, sent,
                                                                        django_capture_on_commit_callbacks):
    call_command("run_quackie_baselines", "--track", demo_track.task.slug, "--methods", "Random", "--limit", "1",
                 stdout=io.StringIO(), stderr=io.StringIO())
    earlier = Submission.objects.get(task=demo_track.task, method_name="Random")
    test_set = demo_track.task.current_test_set()
    with_limit(test_set, sent, django_capture_on_commit_callbacks, methods=["Random"])
    assert baseline_runs.claim_and_run(test_set.pk) == "done"
    earlier.refresh_from_db()
    assert not earlier.public
    rows = APIClient().get(f"/api/tasks/{demo_track.task.slug}/leaderboard/").json()["rows"]
    assert [row["submission_id"] for row in rows] == [part_of(test_set)["rows"]["Random"]]


def test_a_run_on_a_test_set_the_track_left_stops_with_a_note(demo_track, sent, django_capture_on_commit_callbacks):
    test_set = demo_track.task.current_test_set()
    with_limit(test_set, sent, django_capture_on_commit_callbacks, methods=["Random"])
    StoredTestSet.objects.filter(pk=test_set.pk).update(is_current=False)
    assert baseline_runs.claim_and_run(test_set.pk) == "failed"
    assert "another test set" in part_of(test_set)["note"]


def test_load_demo_queues_the_baselines_of_an_included_track_once(demo_track, sent, settings,
                                                                  django_capture_on_commit_callbacks):
    test_set = demo_track.task.current_test_set()
    # as after a run whose baselines gave up
    quackie_tracks.BASELINES.state.write(test_set.pk, status=JobStatus.FAILED, note="gave up")
    lines = []
    sets = [(demo_track.interpretation_set, False)]
    with django_capture_on_commit_callbacks(execute=True):
        demo.add_quackie_demo_track(sets, lines.append)
    assert part_of(test_set)["status"] == JobStatus.QUEUED
    assert any("15 built-in baseline rows" in line for line in lines)
    lines.clear()
    demo.add_quackie_demo_track(sets, lines.append)  # queued already: nothing new
    assert not any("baseline" in line for line in lines)


def test_the_command_queues_or_runs_the_job(demo_track, sent, django_capture_on_commit_callbacks):
    slug = demo_track.task.slug
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("run_quackie_baselines", "--track", slug, "--methods", "Random", "--limit", "1",
                     "--background", stdout=out)
    assert "baseline job queued (0 of 1 rows stored)" in out.getvalue()
    out = io.StringIO()
    call_command("run_quackie_baselines", "--track", slug, "--methods", "Random", "--limit", "1", "--job",
                 stdout=out)
    assert "baseline job done" in out.getvalue() and "(1 of 1 rows stored)" in out.getvalue()
    assert "Random" in out.getvalue()
    with pytest.raises(CommandError, match="choose one"):
        call_command("run_quackie_baselines", "--track", slug, "--job", "--background")
