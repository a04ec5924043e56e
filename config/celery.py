"""The Celery app. Queues: ``scoring`` (fast CPU scorers, what a researcher waits for),
``reaper`` (the reapers, on a worker of their own so that they run even when every scoring
slot is taken by a run that hangs), ``maintenance`` (background work: per-submission
diagnostics, dataset-level jobs such as cue discovery and skill sets), ``models``
(transformers inference) and ``sandbox`` (untrusted code). Run separate workers for
``scoring``, ``reaper`` and the rest, so heavy background work never delays a score.

Every task has a time limit (:class:`TimeLimits`): past the soft limit the task gets
``SoftTimeLimitExceeded`` and fails its run the way any exception does; past the hard limit
the worker kills the process and takes the next message, and the reaper re-queues the run.
So a scorer that hangs holds a worker slot for minutes, not for good."""
import os

# Before torch or numpy start their thread pools: on 2-core machines spinning OpenMP
# threads make small ops 15-50x slower (measured on the CI machines).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from celery import Celery  # noqa: E402
from kombu import Exchange, Queue  # noqa: E402

from .request_id import connect_celery_signals  # noqa: E402

# In every process that loads the app: the web (sending) and the workers (running).
connect_celery_signals()

QUEUES = ["scoring", "reaper", "models", "sandbox", "maintenance"]
REAPERS = ["submissions.tasks.reap_stuck_submissions", "benchmark.tasks.reap_stuck_jobs"]
#: How long a reaper may take: a few conditional updates and re-sent messages.
REAPER_TIME_LIMIT = 120


def soft_limit(hard: float) -> float:
    """The soft limit: 10% (at least 5 s) before the hard one, time to record the failure."""
    return hard - min(max(5.0, hard * 0.1), hard / 2)


class TimeLimits:
    """``task_annotations``: soft and hard limits per task, read from the Django settings
    when Celery binds each task (docs/operations.md#time-limits)."""

    def annotate(self, task: object) -> dict[str, float]:
        from django.conf import settings  # noqa: PLC0415  # settings are loaded by then

        name = getattr(task, "name", "")
        hard: float
        if name in REAPERS:
            hard = REAPER_TIME_LIMIT
        elif name == "submissions.tasks.score_submission":
            hard = settings.SCORING_TIME_LIMIT
        elif name == "submissions.tasks.run_code_submission":
            # The sandbox stops the code after SANDBOX_TOTAL_SECONDS; then the run is scored.
            hard = settings.SANDBOX_TOTAL_SECONDS + settings.SCORING_TIME_LIMIT
        elif name == "submissions.tasks.run_model_submission":
            # Two runs (smoke, then the test inputs), each stopped by the sandbox at its wall
            # budget (at most MODEL_MAX_WALL_SECONDS), then the predictions are scored.
            hard = 2 * settings.MODEL_MAX_WALL_SECONDS + settings.SCORING_TIME_LIMIT
        else:  # diagnostics, cue discovery, skill sets, inclusion flags, and any task added later
            hard = settings.BACKGROUND_TIME_LIMIT
        return {"time_limit": hard, "soft_time_limit": soft_limit(hard)}


app = Celery("expbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    # One direct exchange per queue, so a message routed to one queue never lands in another.
    task_queues=[Queue(name, Exchange(name, type="direct"), routing_key=name) for name in QUEUES],
    task_default_queue="scoring",
    task_routes={
        "submissions.tasks.score_submission": {"queue": "scoring"},
        "submissions.tasks.compute_diagnostics": {"queue": "maintenance"},
        "submissions.tasks.run_code_submission": {"queue": "sandbox"},
        "submissions.tasks.run_model_submission": {"queue": "sandbox"},
        "submissions.tasks.run_track_baselines": {"queue": "models"},
        "benchmark.tasks.compute_track_inclusion": {"queue": "models"},
        "submissions.tasks.purge_uploads": {"queue": "maintenance"},
        "submissions.tasks.close_ended_phases": {"queue": "maintenance"},
        "benchmark.tasks.*": {"queue": "maintenance"},
        "leaderboards.tasks.*": {"queue": "maintenance"},
        **{name: {"queue": "reaper"} for name in REAPERS},
    },
    task_annotations=[TimeLimits()],
    # A message is acknowledged only after the task finished, and given back if the worker
    # process dies, so a killed worker never loses a submission. The database state machine
    # (plus the reaper) makes a second delivery harmless.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_ignore_result=True,
    task_serializer="json",
    accept_content=["json"],
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    beat_schedule={
        "reap-stuck-submissions": {
            "task": "submissions.tasks.reap_stuck_submissions",
            "schedule": float(os.environ.get("REAPER_INTERVAL_SECONDS", 30)),
        },
        "reap-stuck-dataset-jobs": {
            "task": "benchmark.tasks.reap_stuck_jobs",
            "schedule": 60.0,
        },
        # Housekeeping: upload files nobody needs (rejected submissions', orphaned ones, and the
        # temporary files of uploads whose web worker was killed) would otherwise pile up.
        "purge-uploads": {
            "task": "submissions.tasks.purge_uploads",
            "schedule": float(os.environ.get("PURGE_UPLOADS_INTERVAL_SECONDS", 3600)),
        },
        # Phases (docs/phases.md): a phase that has ended is closed within a minute: its hidden
        # entries join the boards and its private part is revealed.
        "close-ended-phases": {
            "task": "submissions.tasks.close_ended_phases",
            "schedule": 60.0,
        },
    },
)
app.autodiscover_tasks()
