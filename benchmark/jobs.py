"""The catalogue's background jobs (core.jobs): skill-set builds, ICQ cue discoveries and
QUACKIE inclusion runs, and the reaper pass over all three."""
from datetime import datetime

from . import cues, quackie_tracks, skill_sets

DATASET_JOBS = (skill_sets.SKILL_BUILD, cues.CUE_DISCOVERY, quackie_tracks.INCLUSION)


def reap_stuck(now: datetime | None = None) -> dict[str, int]:
    """Send dataset jobs whose worker died (or whose message was lost) again; give up on the
    ones claimed SCORING_MAX_ATTEMPTS times. Returns counts per job kind."""
    counts: dict[str, int] = {}
    for job in DATASET_JOBS:
        counts.update(job.reap(now))
    return counts
