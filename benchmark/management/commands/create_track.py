from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.importers import ImportRefused
from benchmark.models import HostedModel, InterpretationSet
from benchmark.quackie_tracks import compute_inclusion, create_track


class Command(BaseCommand):
    help = ("Create the QUACKIE track (task quackie-<set>-<model>) of an interpretation set and a hosted model; "
            "the inclusion flags are computed by a worker on the models queue, or here with --now. Given a new "
            "version of a set, the existing track of that set name and model moves to it.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--set", required=True, help="interpretation set name (latest version)")
        parser.add_argument("--model", required=True, help="hosted model slug")
        parser.add_argument("--now", action="store_true", help="compute the inclusion flags in this process")

    def handle(self, *args: Any, **opts: Any) -> None:
        iset = InterpretationSet.objects.filter(name=opts["set"]).order_by("-imported_at").first()
        model = HostedModel.objects.filter(slug=opts["model"]).first()
        if iset is None or model is None:
            raise CommandError("unknown " + ("interpretation set" if iset is None else "hosted model"))
        try:
            track = create_track(iset, model)
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"track {track.task.slug} on {track.interpretation_set} ({track.status})")
        if opts["now"]:
            included = compute_inclusion(track, progress=lambda d, t: self.stdout.write(f"\r  {d}/{t}", ending=""))
            self.stdout.write(f"\n{track.task.slug}: {included} of {iset.n_samples} samples included")
