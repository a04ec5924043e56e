import hashlib
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.importers import ImportRefused, import_classification
from benchmark.models import TestSet


class Command(BaseCommand):
    help = ("Import NLI-style rows {id, premise, hypothesis, label} (JSON Lines) as a classification "
            "task's hidden test split or its reference split (training data for ICQ cue discovery).")

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # --version is the data version label here, not Django's --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--task", required=True)
        parser.add_argument("--split", choices=[TestSet.TEST, TestSet.REFERENCE], default=TestSet.TEST)
        parser.add_argument("--version", dest="set_version",
                            help="data version label (default: the first 12 hex digits of the file's sha256, "
                                 "so importing the same file again is a no-op)")
        parser.add_argument("--name", help="task name, to create the task if it does not exist")
        parser.add_argument("--language", choices=["en", "zh"])

    def handle(self, *args: Any, **opts: Any) -> None:
        version = opts["set_version"] or checksum_version(opts["file"])
        try:
            test_set, created = import_classification(
                opts["file"], task_slug=opts["task"], split=opts["split"], version=version,
                task_name=opts["name"], language=opts["language"])
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        verb = "imported" if created else "already imported (same checksum), nothing to do"
        self.stdout.write(f"{test_set.task.slug} {test_set.split} version {test_set.version}: {verb}; "
                          f"{test_set.n_items} rows, labels {', '.join(test_set.key_spec['labels'])}")


def checksum_version(path: str | Path) -> str:
    """Default version label: the content, not the import date, names the version, so the
    same bytes always land on the same version and different bytes on a new one."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
