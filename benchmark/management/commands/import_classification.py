from django.core.management.base import BaseCommand, CommandError

from benchmark.models import TestSet
from benchmark.test_sets import ImportRefused, import_classification


class Command(BaseCommand):
    help = ("Import NLI-style rows {id, premise, hypothesis, label} (JSON Lines) as a classification "
            "task's hidden test split or its reference split (training data for ICQ cue discovery).")

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version is the data version label here, not Django's --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--task", required=True)
        parser.add_argument("--split", choices=[TestSet.TEST, TestSet.REFERENCE], default=TestSet.TEST)
        parser.add_argument("--version", dest="set_version", required=True)
        parser.add_argument("--name", help="task name, to create the task if it does not exist")
        parser.add_argument("--language", choices=["en", "zh"])

    def handle(self, *args, **opts):
        try:
            test_set, created = import_classification(
                opts["file"], task_slug=opts["task"], split=opts["split"], version=opts["set_version"],
                task_name=opts["name"], language=opts["language"])
        except ImportRefused as exc:
            raise CommandError(str(exc)) from None
        verb = "imported" if created else "already imported (same checksum), nothing to do"
        self.stdout.write(f"{test_set.task.slug} {test_set.split} version {test_set.version}: {verb}; "
                          f"{test_set.n_items} rows, labels {', '.join(test_set.key_spec['labels'])}")
