import time

from django.core.management.base import BaseCommand, CommandError

from benchmark import skill_sets
from benchmark.models import Task


class Command(BaseCommand):
    help = "Build the reconstructed test sets s1–s14 (seed 000) of a span task's current hidden test set."

    def add_arguments(self, parser):
        parser.add_argument("--task", required=True)

    def handle(self, *args, **opts):
        task = Task.objects.filter(slug=opts["task"], kind=Task.SPAN).first()
        if task is None:
            raise CommandError(f"{opts['task']}: no span-extraction task of that name")
        test_set = task.current_test_set()
        if test_set is None:
            raise CommandError(f"{task.slug} has no test set")
        started = time.perf_counter()
        statuses = skill_sets.build(test_set, log=self.stdout.write)
        for skill, status in statuses.items():
            self.stdout.write(f"  {skill}: {status}")
        self.stdout.write(f"{task.slug}: {len(statuses)} skill sets in {time.perf_counter() - started:.1f} s")
