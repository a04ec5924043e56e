from celery.signals import task_prerun
from django.apps import AppConfig

from . import jobs


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # In every process that runs tasks: a coalesced task that starts no longer counts as
        # waiting (core.jobs.COALESCED_TASKS).
        task_prerun.connect(jobs.task_starting, weak=False, dispatch_uid="core.jobs.task_starting")
