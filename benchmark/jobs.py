"""The catalogue's background jobs (core.jobs): skill-set builds, ICQ cue discoveries, QUACKIE
inclusion runs and built-in baseline runs of tracks, and the reaper pass over them."""
from datetime import datetime

from . import cues, quackie_tracks, skill_sets

DATASET_JOBS = (skill_sets.SKILL_BUILD, cues.CUE_DISCOVERY, quackie_tracks.INCLUSION, quackie_tracks.BASELINES)


def reap_stuck(now: datetime | None = None) -> dict[str, int]:
    """Send dataset jobs whose worker died (or whose message was lost) again; give up on the
    ones claimed SCORING_MAX_ATTEMPTS times. Returns counts per job kind."""
    counts: dict[str, int] = {}
    for job in DATASET_JOBS:
        counts.update(job.reap(now))
    return counts
