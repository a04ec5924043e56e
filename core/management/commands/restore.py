import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import backups


class Command(BaseCommand):
    help = ("Restore a backup written by `manage.py backup` into an empty database and MEDIA_ROOT: checks the "
            "archive (format, schema, SHA-256 of every file) before changing anything, refuses an archive from "
            "a newer schema, migrates to the archive's schema, loads it, then migrates to this code's schema. "
            "--check only checks the archive (docs/operations.md).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("archive", type=Path)
        parser.add_argument("--check", action="store_true", help="check the archive, restore nothing")
        parser.add_argument("--database", default="default", help="the database to restore into (default: default)")

    def handle(self, *args: Any, **options: Any) -> None:
        folder = backups.staging_folder(Path(settings.MEDIA_ROOT))
        try:
            archive = backups.read_archive(options["archive"], folder)
            for line in backups.describe(archive.manifest):
                self.stdout.write(line)
            if options["check"]:
                self.stdout.write("the archive is complete and matches its manifest")
                return
            report = backups.restore(archive, options["database"])
        except backups.BackupError as error:
            raise CommandError(str(error)) from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        self.stdout.write(f"restored {report.rows} rows and {report.files} files")
        if report.migrated:
            self.stdout.write(f"applied {len(report.migrated)} migration(s) newer than the archive; "
                              "run `manage.py rebuild_boards` and check the boards (docs/operations.md)")
