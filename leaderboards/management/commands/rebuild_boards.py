from typing import Any

from django.core.management.base import BaseCommand

from leaderboards.store import rebuild_all


class Command(BaseCommand):
    help = ("Recompute every stored board now (task boards and average boards). A release whose board rows "
            "changed shape marks stored boards stale by itself; run this on deploy to rebuild them at once "
            "instead of on the first visits.")

    def handle(self, *args: Any, **options: Any) -> None:
        rebuild_all()
        self.stdout.write("stored boards rebuilt")
