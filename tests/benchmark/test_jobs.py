"""Dataset-level background jobs (skill-set builds, ICQ cue discovery, QUACKIE inclusion runs) survive a dead
worker: the reaper sends them again after the background lease and gives up after the attempt
limit with a readable note, instead of a page saying "running" forever."""
import os
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from benchmark import cues, jobs, quackie_tracks, skill_sets
from benchmark.models import SkillVariant, Track
from benchmark.models import TestSet as StoredTestSet
from benchmark.tasks import build_skill_sets, compute_track_inclusion, discover_cues
from tests.factories import make_task, make_track
from tests.tiny_models import build_tiny_classifier

pytestmark = pytest.mark.django_db
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def after_lease(settings, now=None):
    return (now or timezone.now()) + timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS + 1)


def job_state(test_set, part):
    return StoredTestSet.objects.get(pk=test_set.pk).diagnostics[part]


def worker_dies_and_reaper_resends(settings, capture, test_set, part, set_state, resent_key):
    """The import queued the job; a worker takes it and dies; the reaper sends it once more."""
    assert job_state(test_set, part)["status"] == "queued"
    assert jobs.reap_stuck()[resent_key] == 0  # fresh: leave it alone
    set_state(test_set, status="running", attempts=1)
    with capture(execute=False) as sent:
        assert jobs.reap_stuck(now=after_lease(settings))[resent_key] == 1
    assert len(sent) == 1 and job_state(test_set, part)["status"] == "queued"


def test_a_skill_build_whose_worker_died_is_sent_again_and_finishes(settings, django_capture_on_commit_callbacks):
    test_set = make_task("expmrc-squad").current_test_set()
    worker_dies_and_reaper_resends(settings, django_capture_on_commit_callbacks, test_set, "skills_build",
                                   skill_sets.set_progress, "skill_builds_resent")
    build_skill_sets(test_set.pk)
    state = job_state(test_set, "skills_build")
    assert state["status"] == "done" and state["attempts"] == 2
    assert SkillVariant.objects.filter(test_set=test_set).count() == state["total"]
    assert jobs.reap_stuck(now=after_lease(settings))["skill_builds_resent"] == 0


def test_a_cue_discovery_whose_worker_died_is_sent_again_and_finishes(settings, django_capture_on_commit_callbacks):
    test_set = make_task("expmrc-race").current_test_set()
    worker_dies_and_reaper_resends(settings, django_capture_on_commit_callbacks, test_set, "icq",
                                   cues.set_status, "cue_discoveries_resent")
    assert discover_cues(test_set.pk) == f"{len(job_state(test_set, 'icq')['cues'])} cues"
    state = job_state(test_set, "icq")
    assert state["status"] == "no_reference" and state["attempts"] == 2 and state["n_test"] > 0
    assert jobs.reap_stuck(now=after_lease(settings))["cue_discoveries_resent"] == 0


@pytest.mark.parametrize("slug, set_state, part, count, page_url, page_text", [
    ("expmrc-squad", skill_sets.set_progress, "skills_build", "skill_builds_failed", "/tasks/expmrc-squad/skills/", ""),
    ("expmrc-c3", cues.set_status, "icq", "cue_discoveries_failed", "/tasks/expmrc-c3/", "Cue discovery failed"),
])
def test_a_dataset_job_that_keeps_dying_fails_with_a_note(settings, slug, set_state, part, count, page_url, page_text):
    test_set = make_task(slug).current_test_set()
    settings.SCORING_MAX_ATTEMPTS = 2
    set_state(test_set, status="running", attempts=2)
    assert jobs.reap_stuck(now=after_lease(settings))[count] == 1
    state = job_state(test_set, part)
    assert state["status"] == "failed" and "stopped 2 times" in state["note"]
    page = Client().get(page_url).content.decode()
    assert "stopped 2 times" in page and page_text in page


def test_two_jobs_writing_one_test_set_keep_each_others_parts():
    test_set = make_task("expmrc-race").current_test_set()
    skill_sets.set_progress(test_set, status="running", done=1)
    cues.set_status(test_set, replace=True, status="done", cues=[])
    skill_sets.set_progress(test_set, done=2)
    diagnostics = StoredTestSet.objects.get(pk=test_set.pk).diagnostics
    assert diagnostics["icq"]["status"] == "done"
    assert diagnostics["skills_build"]["status"] == "running" and diagnostics["skills_build"]["done"] == 2


@pytest.fixture
def pending_track(tmp_path):
    _, track = make_track(build_tiny_classifier(tmp_path / "clf", answerable=True), slug="tiny", name="Tiny")
    assert track.status == Track.QUEUED
    return track


def test_an_inclusion_run_whose_worker_died_is_sent_again(pending_track, settings,
                                                          django_capture_on_commit_callbacks):
    assert quackie_tracks.claim_inclusion(pending_track.pk)  # a worker took it ... and died
    assert compute_track_inclusion(pending_track.pk) == "skipped"  # a duplicate has nothing to do
    assert jobs.reap_stuck()["tracks_resent"] == 0
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert jobs.reap_stuck(now=after_lease(settings))["tracks_resent"] == 1
    assert len(sent) == 1 and Track.objects.get(pk=pending_track.pk).status == Track.QUEUED
    assert "samples included" in compute_track_inclusion(pending_track.pk)
    track = Track.objects.get(pk=pending_track.pk)
    assert track.status == Track.DONE and track.attempts == 2 and track.n_included > 0
    assert jobs.reap_stuck(now=after_lease(settings))["tracks_resent"] == 0


def test_an_inclusion_run_that_keeps_dying_fails_with_a_note(pending_track, settings):
    settings.SCORING_MAX_ATTEMPTS = 1
    assert quackie_tracks.claim_inclusion(pending_track.pk)
    assert jobs.reap_stuck(now=after_lease(settings))["tracks_failed"] == 1
    track = Track.objects.get(pk=pending_track.pk)
    assert track.status == Track.FAILED and "stopped 1 time" in track.error
