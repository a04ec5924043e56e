import json
import os
import time

from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import BaseCommand, CommandError

from benchmark.leaderboard import BASELINES_USERNAME
from benchmark.models import Task, TestSet


class Command(BaseCommand):
    help = ("Run the built-in QUACKIE baselines (Random, Gradient, IntegratedGradients, SmoothGrad, LIME, SHAP with "
            "sum/max aggregation) on a track's included samples and score them like any score file.")

    def add_arguments(self, parser):
        parser.add_argument("--track", required=True, help="task slug quackie-<set>-<model>")
        parser.add_argument("--methods", nargs="*", help="default: all")
        parser.add_argument("--limit", type=int, help="only the first N included samples (quick runs)")

    def handle(self, *args, **opts):
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import torch

        from scoring.hosted_model import load_hosted_model
        from scoring.interpreters import BASELINE_METHODS, interpret
        from submissions.services import submit_predictions
        from submissions.tasks import score_submission

        torch.set_num_threads(2)
        task = Task.objects.filter(slug=opts["track"], kind=Task.INTERPRETATION).select_related("track").first()
        if task is None or not hasattr(task, "track"):
            raise CommandError(f"{opts['track']}: no QUACKIE track of that name")
        test_set = task.current_test_set()
        if test_set is None:
            raise CommandError(f"{task.slug}: inclusion flags not computed yet (track {task.track.status})")
        methods = opts["methods"] or list(BASELINE_METHODS)
        unknown = set(methods) - set(BASELINE_METHODS)
        if unknown:
            raise CommandError(f"unknown methods {sorted(unknown)}; known: {', '.join(BASELINE_METHODS)}")
        samples = TestSet.objects.only("public_inputs").get(pk=test_set.pk).public_inputs["data"]
        if opts["limit"]:
            samples = samples[: opts["limit"]]
        model = load_hosted_model(task.track.hosted_model.path, task.track.hosted_model.kind)
        user, _ = User.objects.get_or_create(username=BASELINES_USERNAME, defaults={"is_active": False})
        from accounts.models import Profile

        Profile.objects.get_or_create(user=user, defaults={"team": "ExpBench built-in baseline"})
        for method in methods:
            started = time.monotonic()
            scores = {s["sample_id"]: interpret(method, model, s["question"], s["context"], s["sentences"], seed=0)
                      for s in samples}
            seconds = time.monotonic() - started
            upload = SimpleUploadedFile(f"{method}.json", json.dumps(scores).encode(), "application/json")
            submission = submit_predictions(
                user=user, task=task, uploaded_file=upload, method_name=method, enforce_quota=False,
                description=f"Built-in baseline on {len(samples)} samples ({seconds / max(len(samples), 1):.2f} s/sample).")
            score_submission(submission.pk)
            submission.refresh_from_db()
            s = submission.scores
            self.stdout.write(f"{method:28s} IoU {s.get('iou') or 0:6.2f}  HPD {s.get('hpd') or 0:6.2f}  "
                              f"SNR {s.get('snr') or 0:7.2f}  fails {submission.details['quackie']['fails']}  "
                              f"{seconds / max(len(samples), 1):6.2f} s/sample")
