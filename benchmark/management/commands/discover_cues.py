from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.cues import discover
from benchmark.models import Task


class Command(BaseCommand):
    help = "Run ICQ cue discovery now for the current test set of a task (normally a worker does it after import)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--task", required=True)

    def handle(self, *args: Any, **opts: Any) -> None:
        task = Task.objects.filter(slug=opts["task"]).first()
        if task is None or not task.kind_definition.icq_format:
            raise CommandError(f"{opts['task']}: no multiple-choice or classification task of that name")
        test_set = task.current_test_set()
        if test_set is None:
            raise CommandError(f"{task.slug} has no test set")
        # By hand the run claims the job whatever its state, so a part is stored and returned.
        part: dict[str, Any] = discover(type(test_set).objects.get(pk=test_set.pk))  # type: ignore[assignment]
        self.stdout.write(f"{task.slug}: {len(part['cues'])} cues ({part['status']}). {part['note']}")
        for cue in part["cues"][:5]:
            self.stdout.write(f"  {cue['feature']}={cue['value']}: cueness {cue['cueness']:.5f} "
                              f"(R {cue['n_reference']}, S {cue['n_test']})")
