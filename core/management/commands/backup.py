from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import backups


class Command(BaseCommand):
    help = ("Write a backup of the whole site to one archive (.tar.gz): accounts and tokens, teams, benchmarks, "
            "tasks, every test-set version with its gold, phases, reported rows, submissions with their scores "
            "and score history, stored boards, and the uploaded files in MEDIA_ROOT, with a manifest of the "
            "schema and the SHA-256 of every file. The archive holds hidden gold and password hashes: keep it "
            "private (it is written with mode 0600). Safe while the site runs (docs/operations.md).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("output", nargs="?", type=Path,
                            help="the archive to write (default: expbench-backup-<UTC time>.tar.gz here)")
        parser.add_argument("--database", default="default", help="the database to back up (default: default)")

    def handle(self, *args: Any, **options: Any) -> None:
        output = options["output"] or Path(f"expbench-backup-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.tar.gz")
        try:
            manifest = backups.write_backup(output, options["database"])
        except backups.BackupError as error:
            raise CommandError(str(error)) from None
        for line in backups.describe(manifest):
            self.stdout.write(line)
        self.stdout.write(f"wrote {output}")
