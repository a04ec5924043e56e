from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.importers import ImportRefused, import_expmrc
from benchmark.models import TestSet


class Command(BaseCommand):
    help = "Import an ExpMRC gold file as a versioned (hidden by default) test set of a task."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # Our --version is the test-set version label; it replaces Django's built-in --version
        # flag (which otherwise makes argparse refuse to build the parser at all).
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--task", required=True, help="task slug, e.g. expmrc-squad")
        parser.add_argument("--split", choices=[TestSet.TEST, TestSet.DEV], default=TestSet.TEST)
        parser.add_argument("--version", dest="set_version", required=True, help="test-set version label")
        parser.add_argument("--name", help="task name, to create the task if it does not exist")
        parser.add_argument("--language", choices=["en", "zh"], help="task language when creating it")
        parser.add_argument("--note", default="", help="what changed from the previous version (shown in the "
                                                        "score history of re-scored entries)")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            test_set, created = import_expmrc(
                opts["file"],
                task_slug=opts["task"],
                split=opts["split"],
                version=opts["set_version"],
                task_name=opts["name"],
                language=opts["language"],
            )
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        if created and opts["note"]:
            TestSet.objects.filter(pk=test_set.pk).update(change_note=opts["note"])
        verb = "imported" if created else "already imported (same checksum), nothing to do"
        self.stdout.write(
            f"{test_set.task.slug} {test_set.split} version {test_set.version}: {verb}; "
            f"{test_set.n_items} questions, sha256 {test_set.checksum}"
        )
        if created:
            scored = test_set.task.submissions.filter(status="scored").exclude(test_set=test_set).count()
            if scored:
                self.stdout.write(f"{scored} scored entr{'y is' if scored == 1 else 'ies are'} on an earlier version: "
                                  f"run `python manage.py rescore --task {test_set.task.slug}` to score "
                                  f"{'it' if scored == 1 else 'them'} on this one.")
