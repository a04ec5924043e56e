from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.config_file import ConfigError
from benchmark.demo import load_demo


class Command(BaseCommand):
    help = ("Load the demo benchmarks (benchmark_files/demo.yaml: ExpMRC dev sets as hidden test sets, CheckList, "
            "QUACKIE) and the demo's background jobs; idempotent.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data-dir", help="folder with the ExpMRC dev files to use instead of "
                                               "$EXPBENCH_SHARED_DATA/expmrc (then only the ExpMRC part is loaded)")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            load_demo(opts.get("data_dir"), log=self.stdout.write)
        except ConfigError as exc:
            raise CommandError(str(exc)) from None
