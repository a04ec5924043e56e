from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.importers import ImportRefused
from benchmark.quackie_tracks import import_quackie


class Command(BaseCommand):
    help = "Build a hidden QUACKIE interpretation set from SQuAD v1.1/v2.0 JSON (frozen sentences + GT)."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--name", required=True, help="set name, e.g. squad-dev")
        parser.add_argument("--version", dest="set_version", required=True)

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            iset, created = import_quackie(opts["file"], name=opts["name"], version=opts["set_version"])
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        verb = "imported" if created else "already imported (same checksum)"
        self.stdout.write(f"{iset.name} v{iset.version}: {verb}; {iset.n_samples} samples ({iset.stats})")
