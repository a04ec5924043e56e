from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from submissions import storage


class Command(BaseCommand):
    help = ("Delete upload files nobody needs: files of rejected submissions (the rows and their "
            "messages stay), files under MEDIA_ROOT/submissions that no submission names, and "
            "temporary upload files a killed web worker left in FILE_UPLOAD_TEMP_DIR. The last two "
            "only when older than --older-than-minutes, so uploads in flight are safe. Run it "
            "from cron, e.g. hourly (docs/operations.md).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than-minutes", type=float, default=storage.DEFAULT_GRACE.total_seconds() / 60,
                            help="age below which orphaned and temporary files are kept (default: 60)")

    def handle(self, *args: Any, **opts: Any) -> None:
        minutes = opts["older_than_minutes"]
        if minutes < 1:
            raise CommandError("--older-than-minutes must be at least 1: a younger file may belong to "
                               "an upload that is still running", returncode=2)
        report = storage.purge_rejected_files(older_than=timedelta(minutes=minutes))
        self.stdout.write(f"Deleted {report}.")
