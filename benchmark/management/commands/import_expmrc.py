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
        verb = "imported" if created else "already imported (same checksum), nothing to do"
        self.stdout.write(
            f"{test_set.task.slug} {test_set.split} version {test_set.version}: {verb}; "
            f"{test_set.n_items} questions, sha256 {test_set.checksum}"
        )
