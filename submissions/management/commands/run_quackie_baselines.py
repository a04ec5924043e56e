import json
import os
import tempfile
import time
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark import kinds
from benchmark.models import Task, TestSet
from benchmark.quackie_tracks import BASELINES, schedule_baselines
from scoring.sandbox import write_baseline_code
from submissions import baseline_runs
from submissions.baseline_runs import SampleFailures
from submissions.code_runs import claim_and_run
from submissions.intake import SubmissionRefused, submit, submit_predictions
from submissions.models import Status, Submission
from submissions.runs import claim_and_score


class Command(BaseCommand):
    help = ("Run the built-in QUACKIE baselines (Random, Gradient, IntegratedGradients, SmoothGrad, LIME, SHAP with "
            "sum/max aggregation) on a track's included samples and score them like any score file.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--track", required=True, help="task slug quackie-<set>-<model>")
        parser.add_argument("--methods", nargs="*", help="default: all")
        parser.add_argument("--limit", type=int, help="only the first N included samples (quick runs)")
        parser.add_argument("--sandbox", action="store_true",
                            help="submit each method as interpreter code and run it through the code-submission "
                                 "sandbox, exactly as a researcher's code is run (all included samples)")
        parser.add_argument("--background", action="store_true",
                            help="queue the track's background baseline job for the models worker instead "
                                 "(rows it already stored are kept; progress in the job's state)")
        parser.add_argument("--job", action="store_true",
                            help="run the track's background baseline job in this process (queued first if "
                                 "needed): resumable, it goes on from the rows and samples already done")

    def handle(self, *args: Any, **opts: Any) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        # torch is heavy and reads OMP_WAIT_POLICY when it loads: imported after the line above.
        import torch  # noqa: PLC0415

        from scoring.models.interpreters import BASELINE_METHODS  # noqa: PLC0415

        torch.set_num_threads(2)
        with_tracks = kinds.names(lambda kind: kind.has_tracks)
        task = Task.objects.filter(slug=opts["track"], kind__in=with_tracks).select_related("track").first()
        if task is None or not hasattr(task, "track"):
            raise CommandError(f"{opts['track']}: no QUACKIE track of that name")
        test_set = task.current_test_set()
        if test_set is None:
            raise CommandError(f"{task.slug}: inclusion flags not computed yet (track {task.track.status})")
        methods = opts["methods"] or list(BASELINE_METHODS)
        unknown = set(methods) - set(BASELINE_METHODS)
        if unknown:
            raise CommandError(f"unknown methods {sorted(unknown)}; known: {', '.join(BASELINE_METHODS)}")
        if sum(bool(opts[flag]) for flag in ("sandbox", "background", "job")) > 1:
            raise CommandError("choose one of --sandbox, --background and --job")
        if opts["background"] or opts["job"]:
            return self.run_as_job(test_set, methods, opts["limit"], here=opts["job"])
        user = baseline_runs.baselines_user()
        if opts["sandbox"]:
            if opts["limit"]:
                raise CommandError("--limit does not apply with --sandbox: code runs on every included sample")
            return self.run_in_sandbox(task, user, methods)
        samples = TestSet.objects.only("public_inputs").get(pk=test_set.pk).public_inputs["data"]
        if opts["limit"]:
            samples = samples[: opts["limit"]]
        return self.run_here(task, user, methods, samples)

    def run_here(self, task: Task, user: User, methods: list[str], samples: list[dict[str, Any]]) -> None:
        """Explain ``samples`` with every method in this process, then submit and score one row
        per method (the quickest way: no job state, no checkpoint)."""
        from scoring.models.hosted_model import load_hosted_model  # noqa: PLC0415  (torch: see handle)

        # The device of EXPBENCH_MODEL_DEVICE (the CPU unless set) and the default batch size for
        # it: 2 for a QA model on every device, as officially (its unmasked padding makes the
        # numbers depend on the batch; the sandbox loads it the same way), for a classifier 8 on
        # the CPU and 128 on a GPU.
        model = load_hosted_model(task.track.hosted_model.path, task.track.hosted_model.kind)
        # All methods per sample in one pass: the sum and max rows of a family share their
        # model calls (interpret_many), which halves the cost of LIME, SHAP and the gradients,
        # and the families of a sample share forward passes (the unperturbed context, texts two
        # methods both perturb to, the gradient methods' embedding: shared_forward_passes).
        scores: dict[str, dict[str, list[float]]] = {method: {} for method in methods}
        seconds = {method: 0.0 for method in methods}
        failures = {method: SampleFailures() for method in methods}
        for done, sample in enumerate(samples, 1):
            sample_id = sample["sample_id"]
            with model.shared_forward_passes():
                for group in baseline_runs.families(methods):
                    started = time.monotonic()
                    results = baseline_runs.explain_sample(model, group, sample)
                    share = (time.monotonic() - started) / len(group)
                    for method, result in results.items():
                        seconds[method] += share
                        if isinstance(result, tuple):  # (category, detail): this sample failed
                            failures[method].add(sample_id, *result)
                        else:
                            scores[method][sample_id] = result
            if done % 25 == 0 or done == len(samples):
                self.stderr.write(f"  {done}/{len(samples)} samples explained", ending="\r")
        self.stderr.write("")
        n = max(len(samples), 1)
        for method in methods:
            # A failed sample is left out of the score file: scored as a counted fail, as the
            # sandbox path does with a sample whose interpreter raised or returned NaN.
            description = (f"Built-in baseline on {len(samples)} samples ({seconds[method] / n:.2f} s/sample; "
                           f"device {model.device_label}).")
            if failures[method]:
                description += f" {failures[method].summary()}."
            upload = SimpleUploadedFile(f"{method}.json", json.dumps(scores[method]).encode(), "application/json")
            submission = submit_predictions(
                user=user, task=task, uploaded_file=upload, method_name=method, enforce_quota=False,
                description=description)
            claim_and_score(submission.pk)
            submission.refresh_from_db()
            self.report(method, submission, seconds[method] / n)
            if failures[method]:
                self.stdout.write(f"  {method}: {failures[method].summary()}; first: {failures[method].first}")

    def run_as_job(self, test_set: TestSet, methods: list[str], limit: int | None, *, here: bool) -> None:
        """The background job (submissions.baseline_runs): queued for the models worker, or run
        here from where it stands. Queued again if it is done, with the rows it stored kept."""
        queued = schedule_baselines(test_set, methods=methods, limit=limit, again=True)
        part = BASELINES.state.read(test_set.pk)
        if not here:
            self.stdout.write(f"{test_set.task.slug}: baseline job {'queued' if queued else part.get('status')} "
                              f"({len(part.get('rows') or {})} of {len(part.get('methods') or [])} rows stored)")
            return
        attempt = BASELINES.state.take(test_set.pk)
        started = time.monotonic()
        outcome = baseline_runs.run_claimed(test_set.pk, attempt, report=self.stdout.write)
        part = BASELINES.state.read(test_set.pk)
        self.stdout.write(f"{test_set.task.slug}: baseline job {outcome} in {time.monotonic() - started:.0f} s "
                          f"({len(part.get('rows') or {})} of {len(part.get('methods') or [])} rows stored)"
                          + (f": {part['note']}" if part.get("note") else ""))
        if outcome != "done":
            raise CommandError(part.get("note") or outcome)

    def run_in_sandbox(self, task: Task, user: User, methods: Iterable[str]) -> None:
        """The same path as a researcher's interpreter: generated code module, upload validation,
        sandbox runner, QUACKIE scoring (docs/sandbox.md; proves the runner with real methods)."""
        for method in methods:
            with tempfile.TemporaryDirectory() as scratch:
                path = write_baseline_code(method, scratch, seed=0)
                upload = SimpleUploadedFile(path.name, path.read_bytes(), "text/x-python")
            try:
                submission = submit(kind=Submission.CODE, user=user, task=task, uploaded_file=upload,
                                    method_name=method, enforce_quota=False,
                                    description="Built-in baseline run as interpreter code in the sandbox.")
            except SubmissionRefused as exc:
                raise CommandError(str(exc)) from exc
            if submission.status == Status.REJECTED:
                raise CommandError(f"{method}: generated code refused: {submission.error_message}")
            started = time.monotonic()
            # Runs here; a worker that picks up the queued message finds it already claimed.
            claim_and_run(submission.pk)
            submission.refresh_from_db()
            if submission.status != Status.SCORED:
                raise CommandError(f"{method}: {submission.status}: {submission.error_message}")
            done = submission.details.get("progress", {}).get("done") or 1
            self.report(method, submission, (time.monotonic() - started) / done)

    def report(self, method: str, submission: Submission, seconds_per_sample: float) -> None:
        if submission.status != Status.SCORED:  # e.g. a database error while storing: say so, go on
            self.stdout.write(f"{method:28s} {submission.status}: {submission.error_message}  "
                              f"{seconds_per_sample:6.2f} s/sample")
            return
        s = submission.scores
        line = (f"{method:28s} IoU {s.get('iou') or 0:6.2f}  HPD {s.get('hpd') or 0:6.2f}  "
                f"SNR {s.get('snr') or 0:7.2f}  fails {submission.details['quackie']['fails']}  "
                f"{seconds_per_sample:6.2f} s/sample")
        sandbox = submission.details.get("sandbox")
        if sandbox:
            line += f"  (sandbox {sandbox['mode']}, start-up {sandbox['startup_seconds']:.1f} s)"
        self.stdout.write(line)
