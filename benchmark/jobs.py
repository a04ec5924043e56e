"""Recovery of dataset-level background jobs (skill-set builds, ICQ cue discovery, QUACKIE
inclusion runs).

These run on the maintenance and models queues; a worker killed mid-job would otherwise leave
a status of "queued"/"running" (and a page saying so) forever. The beat reaper calls
``reap_stuck`` with the same rules as for submissions: a job whose heartbeat is older than
BACKGROUND_LEASE_SECONDS is sent again, and after SCORING_MAX_ATTEMPTS runs it fails with a
note a maintainer can act on. Both jobs are deterministic, so a second run is harmless.
"""
from datetime import datetime, timedelta, timezone as dt_timezone

from django.conf import settings
from django.utils import timezone

from submissions.lifecycle import stopped

from . import cues, quackie_tracks, skill_sets
from .models import TestSet, Track


def reap_stuck(now=None):
    now = now or timezone.now()
    dead = now - timedelta(seconds=settings.BACKGROUND_LEASE_SECONDS)
    counts = {"skill_builds_resent": 0, "skill_builds_failed": 0, "cue_discoveries_resent": 0,
              "cue_discoveries_failed": 0, "tracks_resent": 0, "tracks_failed": 0}
    max_attempts = settings.SCORING_MAX_ATTEMPTS

    building = TestSet.objects.filter(diagnostics__skills_build__status__in=["queued", "running"])
    for test_set in building.select_related("task").only("pk", "diagnostics", "task__kind", "split"):
        build = test_set.diagnostics["skills_build"]
        if heartbeat(build.get("updated_at")) >= dead:
            continue
        attempts = build.get("attempts", 0)
        if build["status"] == "running" and attempts >= max_attempts:
            skill_sets.set_progress(test_set, status="failed", note=(
                f"The build {stopped(attempts)}; run `manage.py build_skill_sets` to see why."))
            counts["skill_builds_failed"] += 1
        else:
            skill_sets.set_progress(test_set, status="queued")
            skill_sets.send(test_set)
            counts["skill_builds_resent"] += 1

    discovering = TestSet.objects.filter(diagnostics__icq__status__in=list(cues.PENDING))
    for test_set in discovering.only("pk", "diagnostics"):
        part = test_set.diagnostics["icq"]
        if heartbeat(part.get("updated_at")) >= dead:
            continue
        attempts = part.get("attempts", 0)
        if part["status"] == "running" and attempts >= max_attempts:
            cues.set_status(test_set, status="failed", cues=[], note=(
                f"Cue discovery {stopped(attempts)}; run `manage.py discover_cues` to see why."))
            counts["cue_discoveries_failed"] += 1
        else:
            cues.set_status(test_set, status="queued")
            cues.send(test_set)
            counts["cue_discoveries_resent"] += 1

    for track in Track.objects.filter(status__in=[Track.PENDING, Track.RUNNING], updated_at__lt=dead):
        same = Track.objects.filter(pk=track.pk, status=track.status, attempts=track.attempts)
        if track.status == Track.RUNNING and track.attempts >= max_attempts:
            if same.update(status=Track.FAILED, updated_at=now,
                           error=f"The inclusion run {stopped(track.attempts)}."):
                counts["tracks_failed"] += 1
        elif same.update(status=Track.PENDING, updated_at=now):
            quackie_tracks.send_inclusion(track.pk)
            counts["tracks_resent"] += 1
    return counts


def heartbeat(value):
    """The stored ISO time, or the epoch when missing (a job from before heartbeats: stale)."""
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return datetime(1970, 1, 1, tzinfo=dt_timezone.utc)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, dt_timezone.utc)
