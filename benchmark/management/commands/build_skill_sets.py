import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark import skill_sets
from benchmark.models import SkillVariant, Task


class Command(BaseCommand):
    help = ("Build the reconstructed test sets s1–s14 (InDepth-Eva-MRC, Wu et al., 2022) of a span task's "
            "current hidden test set.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--task", required=True)

    def handle(self, *args: Any, **opts: Any) -> None:
        task = Task.objects.filter(slug=opts["task"]).first()
        if task is None or not task.kind_definition.builds_skill_sets:
            raise CommandError(f"{opts['task']}: no span-extraction task of that name", returncode=2)
        test_set = task.current_test_set()
        if test_set is None:
            raise CommandError(f"{task.slug} has no test set", returncode=2)
        started = time.perf_counter()
        statuses = skill_sets.build(test_set, log=self.stdout.write)
        notes = dict(SkillVariant.objects.filter(test_set=test_set).values_list("skill", "note"))
        for skill, status in statuses.items():
            # Why a skill was not built (language, translation models) is worth a line; the
            # notes are aggregate counts and configuration messages, never gold.
            reason = f" ({notes.get(skill)})" if status != "ok" and notes.get(skill) else ""
            self.stdout.write(f"  {skill}: {status}{reason}")
        self.stdout.write(f"{task.slug}: {len(statuses)} skill sets in {time.perf_counter() - started:.1f} s")
