from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.demo import load_demo
from benchmark.importers import ImportRefused


class Command(BaseCommand):
    help = "Create the demo benchmarks (ExpMRC dev sets as hidden test sets); idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data-dir", help="folder with the ExpMRC dev files (default ../shared/data/expmrc)")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            load_demo(opts.get("data_dir"), log=self.stdout.write)
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
