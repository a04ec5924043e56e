"""The Celery app. Queues: ``scoring`` (fast CPU scorers, what a researcher waits for, and
the reaper, which must run even when background work piles up), ``maintenance`` (background
work: per-submission diagnostics, dataset-level jobs such as cue discovery and skill sets),
``models`` (transformers inference) and ``sandbox`` (untrusted code). Run separate workers for
``scoring`` and the rest, so heavy background work never delays a score."""
import os

# Before torch or numpy start their thread pools: on 2-core machines spinning OpenMP
# threads make small ops 15-50x slower (measured on the CI machines).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from celery import Celery  # noqa: E402
from kombu import Exchange, Queue  # noqa: E402

QUEUES = ["scoring", "models", "sandbox", "maintenance"]

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
        "benchmark.tasks.compute_track_inclusion": {"queue": "models"},
        "benchmark.tasks.*": {"queue": "maintenance"},
        "submissions.tasks.reap_stuck_submissions": {"queue": "scoring"},
        "benchmark.tasks.reap_stuck_jobs": {"queue": "scoring"},
    },
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
    },
)
app.autodiscover_tasks()
