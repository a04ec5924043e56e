from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.importers import ImportRefused
from benchmark.models import HostedModel
from benchmark.quackie_tracks import register_model


class Command(BaseCommand):
    help = "Register a local transformers model (classification or qa) for QUACKIE tracks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--slug", required=True)
        parser.add_argument("--name", required=True)
        parser.add_argument("--kind", choices=[HostedModel.CLASSIFICATION, HostedModel.QA], required=True)
        parser.add_argument("--path", required=True)

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            model = register_model(slug=opts["slug"], name=opts["name"], kind=opts["kind"], path=opts["path"])
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"hosted model {model.slug}: {model.path}")
