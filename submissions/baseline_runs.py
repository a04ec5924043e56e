"""The built-in QUACKIE baselines of a track as a background job (docs/quackie_models.md §7).

``benchmark.quackie_tracks.BASELINES`` is the job (core.jobs: claim, heartbeat, finish, reap; its
state is the test set's ``diagnostics["baselines"]``); this module runs it on a worker of the
``models`` queue, or by hand (``manage.py run_quackie_baselines --job``).

The run goes family by family (the ``sum`` and ``max`` rows of a method share one explanation),
cheapest first, and stores each family's rows as soon as its samples are explained, so the
board fills up while the run goes on. It is resumable at two levels: a row already stored is
not redone (``rows`` in the job's state), and the samples of the family being explained are
checkpointed to a file every ``CHECKPOINT_SECONDS``, so a run that stops (worker lost, time
slice over) goes on from its last checkpoint. A worker runs it in slices of ``SLICE_SECONDS``:
at the end of a slice the job is queued again (behind whatever else waits on the worker, such as
diagnostics) and the next slice goes on from the checkpoint.

A sample on which a method raises, or returns a NaN/infinite score, is a per-sample fail, as in
the sandbox: left out of the score file (a counted fail), counted per category and noted in the
row's description.
"""
from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction

from accounts.models import Profile
from benchmark.models import TestSet, boards_changed
from benchmark.quackie_tracks import BASELINES
from core.jobs import JobStatus

from .intake import SubmissionRefused, submit_predictions
from .models import BASELINES_USERNAME, Status, Submission
from .runs import claim_and_score

log = logging.getLogger(__name__)

# Families in the order they run: the cheapest first, so most rows reach the board early
# (per-sample CPU seconds with the demo classifier, docs/quackie_models.md §5).
FAMILY_ORDER = ("Random", "Gradient", "SmoothGrad_5", "LIME_10", "SHAP_10", "LIME_100", "SHAP_100",
                "IntegratedGradients_50")
SLICE_SECONDS = 300.0
CHECKPOINT_SECONDS = 30.0
TORCH_THREADS = 2


class SampleFailures:
    """Samples a method failed on, counted per category (the sandbox's names: ``exception``,
    ``not_finite``), with the first one kept for the report."""

    def __init__(self, counts: dict[str, int] | None = None, first: str = "") -> None:
        self.counts: dict[str, int] = dict(counts or {})
        self.first = first

    def add(self, sample_id: str, category: str, detail: object) -> None:
        self.counts[category] = self.counts.get(category, 0) + 1
        if not self.first:
            detail = " ".join(str(detail).split())
            self.first = f"sample {sample_id}: {category}: {detail[:200]}"

    def __bool__(self) -> bool:
        return bool(self.counts)

    def summary(self) -> str:
        total = sum(self.counts.values())
        kinds = ", ".join(f"{category} {count}" for category, count in sorted(self.counts.items()))
        return f"{total} sample{'s' if total != 1 else ''} failed ({kinds})"


def families(methods: Iterable[str]) -> list[list[str]]:
    """Methods grouped by explanation family (their sum/max rows share one explanation), in
    ``FAMILY_ORDER`` (a family not listed there comes last)."""
    from scoring.models.interpreters import family_of  # noqa: PLC0415  (imports nltk)

    groups: dict[str, list[str]] = {}
    for method in methods:
        groups.setdefault(family_of(method), []).append(method)
    rank = {family: i for i, family in enumerate(FAMILY_ORDER)}
    return [groups[family] for family in sorted(groups, key=lambda f: rank.get(f, len(rank)))]


def baselines_user() -> User:
    user, _ = User.objects.get_or_create(username=BASELINES_USERNAME, defaults={"is_active": False})
    Profile.objects.get_or_create(user=user, defaults={"team": "ExpBench built-in baseline"})
    return user


def load_model(track: Any) -> Any:
    """The track's hosted model on the worker's device (``EXPBENCH_MODEL_DEVICE``: the CPU unless
    set) at the default batch size for its kind and device (2 for QA models, as officially),
    with OMP_WAIT_POLICY=PASSIVE and few torch threads (2-core machines)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # noqa: PLC0415  (heavy: only the models worker and the command load it)

    from scoring.models.hosted_model import load_hosted_model  # noqa: PLC0415

    torch.set_num_threads(TORCH_THREADS)
    return load_hosted_model(track.hosted_model.path, track.hosted_model.kind)


def explain_sample(model: Any, group: list[str], sample: dict[str, Any]) -> dict[str, list[float] | tuple[str, str]]:
    """``{method: scores}`` for one sample, or ``{method: (category, detail)}`` where it failed."""
    from scoring.models.interpreters import interpret_many  # noqa: PLC0415

    try:
        with model.shared_forward_passes():
            results = interpret_many(group, model, sample["question"], sample["context"], sample["sentences"],
                                     seed=0)
    except Exception as exc:  # noqa: BLE001  (one sample's failure must not end the run)
        return {method: ("exception", f"{type(exc).__name__}: {exc}") for method in group}
    return {method: results[method] if all(math.isfinite(v) for v in results[method])
            else ("not_finite", "a score is NaN or infinite") for method in group}


def submit_row(task: Any, method: str, scores: dict[str, list[float]], description: str) -> Submission:
    """Store one baseline row like any score file and score it here; earlier built-in score-file
    rows of the method on this test set leave the board (the new one covers the run's samples)."""
    upload = SimpleUploadedFile(f"{method}.json", json.dumps(scores).encode(), "application/json")
    submission = submit_predictions(user=baselines_user(), task=task, uploaded_file=upload, method_name=method,
                                    enforce_quota=False, description=description)
    claim_and_score(submission.pk)
    submission.refresh_from_db()
    if submission.status == Status.SCORED:
        with transaction.atomic():
            hidden = (Submission.objects.filter(user=submission.user, task=task, test_set=submission.test_set,
                                                method_name=method, kind=Submission.PREDICTIONS, public=True)
                      .exclude(pk=submission.pk).update(public=False))
            if hidden:
                boards_changed([task.pk])
    return submission


class Checkpoint:
    """The explained samples of one family, kept in a file while the family runs (private, in
    MEDIA_ROOT like the uploads): valid only for the same test set, methods and samples."""

    def __init__(self, test_set: TestSet, group: list[str]):
        self.path = Path(settings.MEDIA_ROOT) / "baseline-runs" / f"test-set-{test_set.pk}" / f"{group[0]}.json"
        self.key = {"test_set": test_set.pk, "version": test_set.version, "methods": group}
        self.sample_ids: list[str] = []
        self.scores: dict[str, dict[str, list[float]]] = {method: {} for method in group}
        self.failures = {method: SampleFailures() for method in group}
        self.seconds = 0.0
        self.devices: list[str] = []  # where the samples were explained (a run may change worker)

    def load(self, sample_ids: list[str]) -> "Checkpoint":
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return self
        done = stored.get("sample_ids", [])
        if stored.get("key") != self.key or done != sample_ids[:len(done)]:
            return self  # another run's or another sample list's: start the family afresh
        self.sample_ids = done
        self.scores = stored["scores"]
        self.failures = {m: SampleFailures(f["counts"], f["first"]) for m, f in stored["failures"].items()}
        self.seconds = float(stored["seconds"])
        self.devices = list(stored.get("devices") or [])
        return self

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        scratch = self.path.with_suffix(".part")
        scratch.write_text(json.dumps({
            "key": self.key, "sample_ids": self.sample_ids, "scores": self.scores, "seconds": self.seconds,
            "devices": self.devices,
            "failures": {m: {"counts": f.counts, "first": f.first} for m, f in self.failures.items()}}),
            encoding="utf-8")
        os.replace(scratch, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        try:
            self.path.parent.rmdir()
        except OSError:
            pass  # other families' checkpoints are still there


class LostClaim(Exception):
    """Another run owns the job now (the reaper gave it away): stop without writing."""


def claim_and_run(test_set_id: int, *, slice_seconds: float = SLICE_SECONDS) -> str:
    """What a models worker does with a message: claim the job, run a slice, store."""
    attempt = BASELINES.state.claim(test_set_id)
    if attempt is None:
        return "skipped"  # done, or taken by another run
    return run_claimed(test_set_id, attempt, slice_seconds=slice_seconds)


def run_claimed(test_set_id: int, attempt: int, *, slice_seconds: float = math.inf,
                report: Callable[[str], None] | None = None) -> str:
    """Run the claimed job (``attempt``) for up to ``slice_seconds``; returns ``done``,
    ``continues`` (queued again for the next slice), ``failed`` or ``lost its claim``."""
    try:
        return _run(test_set_id, attempt, slice_seconds, report or (lambda line: None))
    except LostClaim:
        log.warning("baseline run %s of test set %s lost its claim", attempt, test_set_id)
        return "lost its claim"
    except Exception as exc:
        log.exception("baseline run of test set %s failed", test_set_id)
        BASELINES.state.finish(test_set_id, attempt, JobStatus.FAILED, note=f"{type(exc).__name__}: {exc}"[:500])
        return "failed"


@dataclass
class _Slice:
    """One slice of a claimed run: its samples, the rows stored so far and the families done,
    which every heartbeat reports."""

    test_set: TestSet
    attempt: int
    samples: list[dict]
    groups: list[list[str]]
    rows: dict[str, int]
    finished: list[list[str]]
    started: float
    slice_seconds: float
    on_all: bool  # the run covers every sample (no ``limit``): the rows' description says so

    @classmethod
    def resume(cls, test_set: TestSet, attempt: int, part: dict, started: float, slice_seconds: float) -> _Slice:
        """The slice that goes on from the job's state ``part``: its methods by family, its
        samples (the first ``limit``), and the rows stored before that still count."""
        samples = test_set.public_inputs["data"]
        if part.get("limit") is not None:
            samples = samples[: part["limit"]]
        rows = _rows_kept(part.get("rows") or {})
        groups = families(list(part.get("methods") or []))
        finished = [group for group in groups if all(method in rows for method in group)]
        return cls(test_set, attempt, samples, groups, rows, finished, started, slice_seconds,
                   on_all=part.get("limit") is None)

    def beat(self, **fields: Any) -> None:
        if not BASELINES.state.heartbeat(self.test_set.pk, self.attempt, **fields):
            raise LostClaim

    def fail(self, note: str) -> str:
        BASELINES.state.finish(self.test_set.pk, self.attempt, JobStatus.FAILED, note=note)
        return "failed"

    def progress(self, group: list[str], checkpoint: Checkpoint) -> None:
        from scoring.models.interpreters import family_of  # noqa: PLC0415  (imports nltk)

        self.beat(family=family_of(group[0]), samples_done=len(checkpoint.sample_ids),
                  done=len(self.samples) * len(self.finished) + len(checkpoint.sample_ids))

    def explain(self, group: list[str], todo: list[str], model: Any, checkpoint: Checkpoint) -> bool:
        """Explain the samples the checkpoint lacks with the ``todo`` methods, saving it every
        CHECKPOINT_SECONDS. False when the slice ended first: the rest is queued again."""
        saved = time.monotonic()
        if len(checkpoint.sample_ids) < len(self.samples) and model.device_label not in checkpoint.devices:
            checkpoint.devices.append(model.device_label)
        for sample in self.samples[len(checkpoint.sample_ids):]:
            began = time.monotonic()
            for method, result in explain_sample(model, todo, sample).items():
                if isinstance(result, tuple):
                    checkpoint.failures[method].add(sample["sample_id"], *result)
                else:
                    checkpoint.scores[method][sample["sample_id"]] = result
            checkpoint.sample_ids.append(sample["sample_id"])
            checkpoint.seconds += time.monotonic() - began
            now = time.monotonic()
            over = now - self.started >= self.slice_seconds and len(checkpoint.sample_ids) < len(self.samples)
            if now - saved >= CHECKPOINT_SECONDS or over:
                checkpoint.save()
                saved = now
                self.progress(group, checkpoint)
            if over:  # the slice is over: queue the rest behind whatever else waits
                if not BASELINES.state.finish(self.test_set.pk, self.attempt, JobStatus.QUEUED, attempts=0):
                    raise LostClaim
                BASELINES.send(self.test_set.pk)
                return False
        return True

    def store(self, todo: list[str], checkpoint: Checkpoint, report: Callable[[str], None]) -> str:
        """Submit and score one row per method of ``todo``; the note that fails the job, or ""."""
        n = max(len(self.samples), 1)
        per_sample = checkpoint.seconds / n / len(todo)
        for method in todo:
            failures = checkpoint.failures[method]
            device = f"; device {' and '.join(checkpoint.devices)}" if checkpoint.devices else ""
            description = (f"Built-in baseline on {'all ' if self.on_all else ''}{len(self.samples)} "
                           f"samples ({per_sample:.2f} s/sample{device}).")
            if failures:
                description += f" {failures.summary()}."
            try:
                submission = submit_row(self.test_set.task, method, checkpoint.scores[method], description)
            except SubmissionRefused as exc:
                return f"{method}: {exc}"
            if submission.status != Status.SCORED:
                return f"{method}: {submission.status}: {submission.error_message}"[:500]
            self.rows[method] = submission.pk
            self.beat(rows=self.rows)
            report(f"{method:28s} {submission.scores.get('iou') or 0:6.2f} IoU  {per_sample:6.2f} s/sample"
                   + (f"  {failures.summary()}; first: {failures.first}" if failures else ""))
        return ""


def _rows_kept(rows: dict[str, int]) -> dict[str, int]:
    """The stored rows that count as done: a row stays done while its submission exists and did
    not fail (a re-score in progress keeps it); a deleted or failed one is redone."""
    kept = set(Submission.objects.filter(pk__in=list(rows.values()))
               .exclude(status__in=[Status.FAILED, Status.REJECTED, Status.CANCELLED])
               .values_list("pk", flat=True))
    return {method: pk for method, pk in rows.items() if pk in kept}


def _run(test_set_id: int, attempt: int, slice_seconds: float, report: Callable[[str], None]) -> str:
    started = time.monotonic()
    test_set = TestSet.objects.select_related("task__track__hosted_model").defer("gold").get(pk=test_set_id)
    part = BASELINES.state.read(test_set_id)
    if not test_set.is_current:
        BASELINES.state.finish(test_set_id, attempt, JobStatus.FAILED,
                               note=f"stopped: the track now scores another test set than {test_set.version}")
        return "failed"
    run = _Slice.resume(test_set, attempt, part, started, slice_seconds)
    samples, rows = run.samples, run.rows
    sample_ids = [sample["sample_id"] for sample in samples]
    total = len(samples) * len(run.groups)
    run.beat(rows=rows, done=len(samples) * len(run.finished), total=total, samples_total=len(samples),
             samples_done=0, note="")
    model = None
    for group in run.groups:
        todo = [method for method in group if method not in rows]
        if not todo:
            continue
        checkpoint = Checkpoint(test_set, todo).load(sample_ids)
        run.progress(group, checkpoint)
        if model is None:
            model = load_model(test_set.task.track)
            run.beat(device=model.device_label, batch_size=model.batch_size)
        if not run.explain(group, todo, model, checkpoint):
            return "continues"
        failure = run.store(todo, checkpoint, report)
        if failure:
            return run.fail(failure)
        checkpoint.remove()
        run.finished.append(group)
        run.beat(done=len(samples) * len(run.finished), samples_done=len(samples))
    if not BASELINES.state.finish(test_set_id, attempt, JobStatus.DONE, rows=rows, family="", done=total):
        raise LostClaim
    return "done"
