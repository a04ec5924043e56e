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
    max_attempts = settings.SCORING_MAX_ATTEMPTS
    counts = {"tracks_resent": 0, "tracks_failed": 0}
    counts["skill_builds_resent"], counts["skill_builds_failed"] = reap_test_set_jobs(
        "skills_build", skill_sets.set_progress, skill_sets.send, dead, max_attempts,
        what="The build", command="build_skill_sets")
    counts["cue_discoveries_resent"], counts["cue_discoveries_failed"] = reap_test_set_jobs(
        "icq", cues.set_status, cues.send, dead, max_attempts,
        what="Cue discovery", command="discover_cues")

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


def reap_test_set_jobs(part, set_status, send, dead, max_attempts, *, what, command):
    """Re-send or fail the jobs whose state is ``diagnostics[part]`` of a test set (queued or
    running, heartbeat older than ``dead``); returns (resent, failed)."""
    resent = failed = 0
    pending = TestSet.objects.filter(**{f"diagnostics__{part}__status__in": ["queued", "running"]})
    for test_set in pending.only("pk", "diagnostics"):
        state = test_set.diagnostics[part]
        if heartbeat(state.get("updated_at")) >= dead:
            continue
        attempts = state.get("attempts", 0)
        if state["status"] == "running" and attempts >= max_attempts:
            set_status(test_set, status="failed",
                       note=f"{what} {stopped(attempts)}; run `manage.py {command}` to see why.")
            failed += 1
        else:
            set_status(test_set, status="queued")
            send(test_set)
            resent += 1
    return resent, failed


def heartbeat(value):
    """The stored ISO time, or the epoch when missing (a job from before heartbeats: stale)."""
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return datetime(1970, 1, 1, tzinfo=dt_timezone.utc)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, dt_timezone.utc)
