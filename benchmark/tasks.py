import logging

from celery import shared_task
from django.utils import timezone

log = logging.getLogger(__name__)


@shared_task(name="benchmark.tasks.discover_cues", acks_late=True)
def discover_cues(test_set_id):
    from . import cues
    from .models import TestSet

    test_set = TestSet.objects.select_related("task").filter(pk=test_set_id).first()
    if test_set is None:
        return "gone"
    try:
        part = cues.discover(test_set)
    except Exception as exc:
        log.error("cue discovery for test set %s failed: %s", test_set_id, type(exc).__name__)
        cues.set_status(test_set, status="failed", cues=[], note="Cue discovery failed.")
        return "failed"
    return f"{len(part['cues'])} cues"


@shared_task(name="benchmark.tasks.build_skill_sets", acks_late=True)
def build_skill_sets(test_set_id):
    from . import skill_sets
    from .models import TestSet

    test_set = TestSet.objects.select_related("task").defer("gold", "public_inputs").filter(pk=test_set_id).first()
    if test_set is None:
        return "gone"
    try:
        statuses = skill_sets.build(test_set)
    except Exception as exc:
        log.error("skill sets of test set %s failed: %s", test_set_id, type(exc).__name__)
        skill_sets.set_progress(test_set, status="failed")
        return "failed"
    return statuses


@shared_task(name="benchmark.tasks.compute_track_inclusion", acks_late=True)
def compute_track_inclusion(track_id):
    import os

    import torch

    from . import quackie_tracks
    from .models import Track

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    torch.set_num_threads(2)
    if not quackie_tracks.claim_inclusion(track_id):
        return "skipped"  # done already (e.g. by `manage.py create_track`) or taken by another run
    track = Track.objects.select_related("task", "hosted_model", "interpretation_set").filter(pk=track_id).first()
    if track is None:
        return "gone"
    try:
        return f"{quackie_tracks.compute_inclusion(track)} samples included"
    except Exception as exc:
        log.error("inclusion flags of track %s failed: %s", track_id, type(exc).__name__)
        Track.objects.filter(pk=track_id).update(status=Track.FAILED, updated_at=timezone.now(),
                                                 error=f"{type(exc).__name__} while running the hosted model")
        return "failed"


@shared_task(name="benchmark.tasks.reap_stuck_jobs")
def reap_stuck_jobs():
    from . import jobs

    counts = jobs.reap_stuck()
    if any(counts.values()):
        log.warning("dataset-job reaper: %s", counts)
    return counts
