"""``manage.py rescore``: re-score entries on their task's current test set and scorer through the
workers (``submissions.rescoring``), with progress and a closing report."""
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.models import Task
from submissions import rescoring
from submissions.models import Submission


class Command(BaseCommand):
    help = ("Re-score scored prediction-file and interpreter-code entries on the task's current test set and "
            "current scorer, through the workers. Idempotent: entries already up to date are left alone.")

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--task", help="task slug")
        which.add_argument("--all", action="store_true", help="every task")
        which.add_argument("--submission", type=int, help="one submission id")
        parser.add_argument("--dry-run", action="store_true", help="list what would be re-scored; change nothing")
        parser.add_argument("--force", action="store_true",
                            help="re-score entries that are already up to date too")
        parser.add_argument("--no-wait", action="store_true", help="queue and return; the workers go on")
        parser.add_argument("--timeout", type=float, default=None, help="stop waiting after this many seconds")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["all"]:
            tasks = list(Task.objects.all())
            ids = None
        elif opts["task"]:
            tasks = list(Task.objects.filter(slug=opts["task"]))
            if not tasks:
                raise CommandError(f"No task {opts['task']!r}.")
            ids = None
        else:
            submission = Submission.objects.filter(pk=opts["submission"]).select_related("task").first()
            if submission is None:
                raise CommandError(f"No submission #{opts['submission']}.")
            if submission.kind not in rescoring.RESCORABLE_KINDS:
                raise CommandError(f"Submission #{submission.pk} is a {submission.kind} submission; only "
                                   "prediction files and interpreter code are re-scored here.")
            tasks, ids = [submission.task], [submission.pk]
        plan = rescoring.plan(tasks, ids, force=opts["force"])
        in_flight = len(plan.targets) - len(plan.to_queue)
        self.stdout.write(f"{len(plan.to_queue)} entr{'y' if len(plan.to_queue) == 1 else 'ies'} to re-score, "
                          f"{in_flight} already being re-scored, {plan.up_to_date} up to date.")
        for target in plan.targets:
            state = "in progress" if target.queued_now else "to queue"
            self.stdout.write(f"  #{target.submission_id} {target.method} [{target.task_slug}] "
                              f"test set {target.before_version}, scorer {target.before_scorer or '-'} ({state})")
        if opts["dry_run"] or not plan.targets:
            return
        before = rescoring.ranks_before(plan)
        queued = rescoring.queue_all(plan)
        self.stdout.write(f"queued {queued}.")
        if opts["no_wait"]:
            self.stdout.write("Not waiting: run the same command again to wait for them and see the report.")
            return
        last: list[tuple[int, int, int]] = []

        def progress(done: int, running: int, waiting: int) -> None:
            if not last or last[-1] != (done, running, waiting):
                self.stdout.write(f"progress: {done}/{len(plan.targets)} done, {running} running, {waiting} queued")
                self.stdout.flush()
                last.append((done, running, waiting))

        finished = rescoring.wait(plan.targets, timeout=opts["timeout"], progress=progress)
        if not finished:
            self.stdout.write("Timed out waiting; the re-scores go on in the workers. Run the command again to resume.")
        results = rescoring.outcomes(plan.targets)
        self.stdout.write(rescoring.report(plan, results, before))
        for line in rescoring.withdrawn_lines(results):
            self.stdout.write(line)
        failed = sum(1 for outcome in results if outcome.status == "failed")
        if failed:
            # A maintainer's script must see it: the entries stay on their previous score.
            raise CommandError(f"{failed} re-score{'' if failed == 1 else 's'} failed; "
                               f"the entr{'y keeps its' if failed == 1 else 'ies keep their'} previous score.")
