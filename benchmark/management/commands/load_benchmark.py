from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark import config_file


class Command(BaseCommand):
    help = ("Create or update the benchmarks, tasks, test sets and reported rows a YAML file declares "
            "(docs/benchmarks_config.md); idempotent. A bad file is refused with the line and field of "
            "every problem found, in one run, and nothing is written.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the benchmark file (YAML)")
        parser.add_argument("--data-root", help="folder the file's relative paths start from (default: the file's "
                                                "data_root, else the file's own folder)")
        parser.add_argument("--dry-run", action="store_true",
                            help="check the file and every data file, show what would change, write nothing")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            # Read on past the file's own problems: apply lists them with the data files' faults.
            config = config_file.read_all(opts["file"])
            root = config_file.data_root_of(config, opts.get("data_root"))
            self.stdout.write(f"{opts['file']}: {len(config.benchmarks)} benchmark(s), data root {root}"
                              + (" (dry run: nothing is written)" if opts["dry_run"] else ""))
            report = config_file.apply(config, data_root=root, dry_run=opts["dry_run"], log=self.stdout.write)
        except config_file.ConfigError as exc:
            raise CommandError(f"{exc}\nThe file was refused: nothing was written.") from None
        verb = "would be" if opts["dry_run"] else "done"
        self.stdout.write(f"{verb}: {report.summary()}")
