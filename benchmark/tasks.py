"""Celery entry points of the catalogue's background jobs: claim, call, store (core.jobs)."""
import logging
import os
import time

from celery import shared_task

from . import cues, jobs, quackie_tracks, skill_sets
from .models import TestSet, Track

log = logging.getLogger(__name__)


@shared_task(name="benchmark.tasks.discover_cues", acks_late=True)
def discover_cues(test_set_id: int) -> str:
    attempt = cues.CUE_DISCOVERY.state.claim(test_set_id)
    if attempt is None:
        return "skipped"  # done already, or taken by another run
    test_set = TestSet.objects.select_related("task").get(pk=test_set_id)
    try:
        part = cues.discover(test_set, attempt=attempt)
    except Exception as exc:
        log.error("cue discovery for test set %s failed: %s", test_set_id, type(exc).__name__)
        cues.fail(test_set, attempt)
        return "failed"
    return "lost its claim" if part is None else f"{len(part['cues'])} cues"


@shared_task(name="benchmark.tasks.build_skill_sets", acks_late=True)
def build_skill_sets(test_set_id: int) -> dict | str:
    attempt = skill_sets.SKILL_BUILD.state.claim(test_set_id)
    if attempt is None:
        return "skipped"
    test_set = TestSet.objects.select_related("task").defer("gold", "public_inputs").get(pk=test_set_id)
    try:
        return skill_sets.build(test_set, attempt=attempt)
    except Exception as exc:
        log.error("skill sets of test set %s failed: %s", test_set_id, type(exc).__name__)
        skill_sets.fail(test_set, attempt)
        return "failed"


@shared_task(name="benchmark.tasks.compute_track_inclusion", acks_late=True)
def compute_track_inclusion(track_id: int) -> str:
    # Before torch starts its thread pool: on 2 cores spinning OpenMP threads make small ops
    # crawl. torch is heavy, so only this worker imports it.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # noqa: PLC0415

    torch.set_num_threads(2)
    attempt = quackie_tracks.claim_inclusion(track_id)
    if attempt is None:
        return "skipped"  # done already (e.g. by `manage.py create_track --now`) or taken by another run
    # Fault-injection hook of the queue-separation test: holds the claimed job as a long model
    # job would (a real track's inclusion run takes minutes). Unset in normal operation.
    time.sleep(float(os.environ.get("EXPBENCH_TEST_MODELS_DELAY", "0") or 0))
    track = Track.objects.select_related("task", "hosted_model", "interpretation_set").get(pk=track_id)
    try:
        included = quackie_tracks.compute_inclusion(track, attempt=attempt)
    except Exception as exc:
        log.error("inclusion flags of track %s failed: %s", track_id, type(exc).__name__)
        quackie_tracks.fail_inclusion(track_id, attempt, f"{type(exc).__name__} while running the hosted model")
        return "failed"
    return "lost its claim" if included is None else f"{included} samples included"


@shared_task(name="benchmark.tasks.reap_stuck_jobs")
def reap_stuck_jobs() -> dict[str, int]:
    counts = jobs.reap_stuck()
    if any(counts.values()):
        log.warning("dataset-job reaper: %s", counts)
    return counts
