import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.jobs import JobStatus
from submissions import diagnostics
from submissions.models import Status, Submission


class Command(BaseCommand):
    help = ("Recompute and store the diagnostics of one scored submission now, in this process "
            "(e.g. the question-type tests with 1,000,000 permutations instead of the default).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--submission", type=int, required=True, help="submission id")
        parser.add_argument("--permutations", type=int,
                            help="permutations per question-type test (default: DIAGNOSTICS_PERMUTATIONS)")

    def handle(self, *args: Any, **opts: Any) -> None:
        submission_id, permutations = opts["submission"], opts["permutations"]
        if permutations is not None and permutations < 1:
            raise CommandError("--permutations must be a positive integer", returncode=2)
        submission = Submission.objects.filter(pk=submission_id).only("status").first()
        if submission is None:
            raise CommandError(f"no submission {submission_id}", returncode=2)
        if submission.status != Status.SCORED:
            raise CommandError(f"submission {submission_id} is {submission.status}, not scored: "
                               "diagnostics need a stored score", returncode=2)
        # Not while a worker is running them: two runs would race to store their results.
        running = Submission.objects.filter(pk=submission_id, diagnostics_status=JobStatus.RUNNING).exists()
        if running or not diagnostics.DIAGNOSTICS.state.schedule(submission_id):
            raise CommandError(f"the diagnostics of submission {submission_id} are running in a worker now; "
                               "run this again when they are done")
        started = time.perf_counter()
        outcome = diagnostics.claim_and_run(submission_id, n_permutations=permutations)
        if outcome == "skipped":
            raise CommandError(f"a worker took the diagnostics of submission {submission_id} first; "
                               "run this again when they are done")
        if outcome == JobStatus.FAILED:
            raise CommandError(f"the diagnostics of submission {submission_id} failed; the score is not affected")
        stored = Submission.objects.only("diagnostics").get(pk=submission_id).diagnostics
        used = (stored.get("question_types") or {}).get("n_permutations")
        detail = f" with a budget of {used:,} permutations per question-type test" if used else ""
        self.stdout.write(f"submission {submission_id}: diagnostics stored{detail} "
                          f"in {time.perf_counter() - started:.1f} s")
