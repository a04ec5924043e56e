"""QUACKIE tracks (docs/metrics.md#quackie): hidden interpretation sets built from SQuAD-format data, hosted
models, and the per-(set, model) track whose included samples are the task's hidden test set.
"""
import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.jobs import WAITING, ColumnState, Job, JobStatus, JsonPartState
from scoring.metrics import quackie
from scoring.strict_json import InvalidJson, loads_json

from .importers import ImportRefused
from .kinds.interpretation import InterpretationKind
from .models import Benchmark, HostedModel, InterpretationSet, ReportedResult, Task, TestSet, Track

log = logging.getLogger(__name__)
MAX_TOKENS = 512

INCLUSION = Job(key="tracks", task_name="benchmark.tasks.compute_track_inclusion",
                state=ColumnState(Track, on_give_up=lambda note: {"error": note}), what="The inclusion run")

# The built-in baselines of a track's test set (docs/quackie_models.md §7): a job on the models
# queue whose state is the test set's diagnostics["baselines"]. The run itself creates and scores
# submissions, so it lives in the submissions app (submissions.baseline_runs), sent by name.
# Its part: status, attempts, updated_at (core.jobs), methods, limit (None = every sample), rows
# ({method: submission id} of the rows stored so far), family (the one being explained),
# samples_done / samples_total (of that family), done / total (sample x family explanations),
# note (why it stopped, if it did).
BASELINES = Job(key="baselines", task_name="submissions.tasks.run_track_baselines",
                state=JsonPartState(TestSet, part="baselines"), what="The built-in baseline run",
                advice="load_demo or `manage.py run_quackie_baselines --track SLUG --background` queues it again, "
                       "and it goes on from the rows and samples already done")
# Tracks of these hosted models get the built-in baselines queued whenever their inclusion
# flags are stored: the demo classifier's, so that the demo board fills itself in the background.
DEMO_MODEL_SLUG = "minilm-answerability"
AUTO_BASELINE_MODELS = frozenset({DEMO_MODEL_SLUG})


def ensure_quackie_benchmark() -> Benchmark:
    benchmark, _ = Benchmark.objects.get_or_create(
        slug="quackie",
        defaults={
            "name": "QUACKIE",
            "order": 2,
            "url": "https://github.com/axa-rev-research/quackie",
            "description": "Interpretability with ground truth: which sentence makes a QA-derived classifier say "
                           "'answerable'? Methods score every sentence; IoU, HPD and SNR against the sentence "
                           "holding the answer, computed exactly as the official code.",
            "citation": "Rychener, Y., Renard, X., Seddah, D., Frossard, P., Detyniecki, M. QUACKIE: A NLP "
                        "Classification Task With Ground Truth Explanations. arXiv:2012.13190, 2020.",
        },
    )
    return benchmark


def import_quackie(path: str | Path, *, name: str, version: str) -> tuple[InterpretationSet, bool]:
    """Build a hidden interpretation set from SQuAD v1.1/v2.0 JSON. Idempotent per checksum."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        squad = loads_json(raw.decode("utf-8-sig"))
    except OSError as exc:
        raise ImportRefused(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, InvalidJson) as exc:
        raise ImportRefused(f"{path.name}: not UTF-8 JSON ({exc})") from None
    try:
        samples, stats = quackie.squad_samples(squad)
    except quackie.InvalidQuackieGold as exc:
        raise ImportRefused(f"{path.name}: {exc}") from None
    checksum = hashlib.sha256(raw).hexdigest()
    existing = InterpretationSet.objects.filter(name=name, version=version).first()
    if existing:
        if existing.checksum != checksum:
            raise ImportRefused(f"interpretation set {name} version {version} exists with a different checksum; "
                                "use a new --version")
        return existing, False
    return InterpretationSet.objects.create(name=name, version=version, checksum=checksum, source_name=path.name,
                                            n_samples=len(samples), stats=stats, samples=samples), True


def register_model(*, slug: str, name: str, kind: str, path: str | Path, description: str = "") -> HostedModel:
    path = Path(path)
    if not (path / "config.json").exists():
        raise ImportRefused(f"{path} has no config.json: not a local transformers model directory")
    model, _ = HostedModel.objects.update_or_create(
        slug=slug, defaults={"name": name, "kind": kind, "path": str(path), "description": description})
    return model


def track_slug(interpretation_set: InterpretationSet, hosted_model: HostedModel) -> str:
    return f"quackie-{interpretation_set.name}-{hosted_model.slug}"


@transaction.atomic
def create_track(interpretation_set: InterpretationSet, hosted_model: HostedModel) -> Track:
    """The task ``quackie-<set name>-<model slug>`` and its track; inclusion runs on a worker.

    Idempotent for the same set version and model (a failed inclusion run is sent again). The
    track is identified by the set's *name* and the model: given another version of the same set,
    the existing track is re-pointed to it and its inclusion flags are recomputed; the result
    becomes a new hidden test set version of the task (the board shows the submissions scored on
    the current version; older submissions keep theirs). Refused with :class:`ImportRefused`: a
    slug longer than a task slug holds (never truncated: two long names would share a track), a
    slug already taken by another task or by the track of another (set, model) pair (names with
    hyphens can collide, e.g. set ``a-b`` x model ``c`` and set ``a`` x model ``b-c``), and
    re-pointing while the track's inclusion flags are being computed."""
    slug = track_slug(interpretation_set, hosted_model)
    limit = Task._meta.get_field("slug").max_length
    if len(slug) > limit:  # type: ignore[operator]  # a SlugField has a max_length
        raise ImportRefused(f"the track's task slug {slug} would be {len(slug)} characters, more than the {limit} "
                            "a task slug holds: use a shorter set name or model slug")
    track: Track | None
    task = Task.objects.select_for_update().filter(slug=slug).first()
    if task is None:
        task = Task.objects.create(
            slug=slug, benchmark=ensure_quackie_benchmark(), kind=InterpretationKind.name, language="en",
            name=f"{interpretation_set.name} · {hosted_model.name}",
            description=f"Explain {hosted_model.name} ({hosted_model.get_kind_display()}) on "
                        f"{interpretation_set.name}: one score per sentence, higher = more important.")
        track = Track.objects.create(task=task, interpretation_set=interpretation_set, hosted_model=hosted_model,
                                     total=interpretation_set.n_samples)
        schedule_inclusion(track)
        return track
    track = Track.objects.select_related("interpretation_set", "hosted_model").filter(task=task).first()
    if track is None:
        raise ImportRefused(f"task {slug} already exists and is not a QUACKIE track: use another set name or "
                            "model slug")
    if track.hosted_model_id != hosted_model.pk or track.interpretation_set.name != interpretation_set.name:
        raise ImportRefused(f"task {slug} is already the track of set {track.interpretation_set.name} x model "
                            f"{track.hosted_model.slug}, not of set {interpretation_set.name} x model "
                            f"{hosted_model.slug}: use another set name or model slug")
    if track.interpretation_set_id != interpretation_set.pk:
        moved = Track.objects.filter(pk=track.pk).exclude(status=JobStatus.RUNNING).update(
            interpretation_set=interpretation_set, total=interpretation_set.n_samples, updated_at=timezone.now())
        if not moved:
            raise ImportRefused(f"track {slug}: the inclusion flags of {track.interpretation_set} are being computed; "
                                f"move it to {interpretation_set} when that run has finished")
        log.info("track %s moved from %s to %s", slug, track.interpretation_set, interpretation_set)
        schedule_inclusion(track)
    elif track.status == JobStatus.FAILED:
        schedule_inclusion(track)
    track.refresh_from_db()
    return track


def schedule_inclusion(track: Track) -> None:
    INCLUSION.state.schedule(track.pk, done=0, error="")
    INCLUSION.send(track.pk)


def claim_inclusion(track_id: int) -> int | None:
    """Take a queued inclusion run (a duplicate message finds nothing to do): its attempt."""
    return INCLUSION.state.claim(track_id)


def compute_inclusion(track: Track, *, batch_size: int = 16, progress: Callable[[int, int], None] | None = None,
                      attempt: int | None = None) -> int | None:
    """Inclusion flags (official filter): <= 512 tokens with the model's tokenizer, has an answer
    (every stored sample has one), model predicts "answerable". Then the included samples become
    the track's hidden test set.

    A QA model predicts one sample at a time, as the official filter does: its padding is not
    masked (docs/quackie_models.md), so P(answer) of a short sample padded in a batch with a
    long one differs and a decision near 0.5 can flip. A classifier masks its padding, so it
    predicts ``batch_size`` samples at a time (same numbers, faster).

    A worker passes the ``attempt`` it claimed (progress is its heartbeat, and a run that lost
    its claim stores nothing); by hand (``create_track --now``) the run claims the track."""
    # Imports torch: only the models worker (and this command by hand) pays for it.
    from scoring.models.hosted_model import load_hosted_model  # noqa: PLC0415

    samples = InterpretationSet.objects.only("samples").get(pk=track.interpretation_set_id).samples
    if attempt is None:
        attempt = INCLUSION.state.take(track.pk)
    INCLUSION.state.heartbeat(track.pk, attempt, done=0, total=len(samples), error="")
    kind = track.hosted_model.kind
    model = load_hosted_model(track.hosted_model.path, kind,
                              batch_size=1 if kind == HostedModel.QA else batch_size)
    inclusion: dict[str, dict[str, Any]] = {}
    for start in range(0, len(samples), batch_size):
        inclusion.update(_batch_inclusion(model, samples[start:start + batch_size]))
        done = min(start + batch_size, len(samples))
        INCLUSION.state.heartbeat(track.pk, attempt, done=done)
        if progress:
            progress(done, len(samples))
    included = [s for s in samples if inclusion[s["id"]]["included"]]
    exclusions = {
        "too_long": sum(1 for v in inclusion.values() if v["tokens"] > MAX_TOKENS),
        "predicted_unanswerable": sum(1 for v in inclusion.values() if v["answerable"] is False),
        "unanswerable_in_data": track.interpretation_set.stats.get("unanswerable", 0),
    }
    with transaction.atomic():
        if not INCLUSION.state.finish(track.pk, attempt, JobStatus.DONE, n_included=len(included),
                                      inclusion=inclusion, exclusions=exclusions, done=len(samples)):
            log.warning("inclusion run %s of track %s lost its claim; result discarded", attempt, track.pk)
            return None
        test_set = store_track_test_set(track, included)
        if track.hosted_model.slug in AUTO_BASELINE_MODELS and included:
            schedule_baselines(test_set)
    return len(included)


def _batch_inclusion(model: Any, batch: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The official filter on one batch: a sample is included when it fits in MAX_TOKENS and the
    model predicts it answerable (a sample too long is never shown to the model)."""
    tokens = [model.n_tokens(s["question"], s["context"]) for s in batch]
    fits = [s for s, n in zip(batch, tokens, strict=True) if n <= MAX_TOKENS]
    answerable = {}
    if fits:
        predicted = model.predict([s["question"] for s in fits], [s["context"] for s in fits])
        answerable = {s["id"]: bool(p) for s, p in zip(fits, predicted, strict=True)}
    inclusion = {}
    for sample, n in zip(batch, tokens, strict=True):
        ok = answerable.get(sample["id"], False)
        inclusion[sample["id"]] = {"tokens": n, "answerable": ok if n <= MAX_TOKENS else None,
                                   "included": n <= MAX_TOKENS and ok}
    return inclusion


def fail_inclusion(track_id: int, attempt: int, error: str) -> None:
    INCLUSION.state.finish(track_id, attempt, JobStatus.FAILED, error=error)


def store_track_test_set(track: Track, included: list[dict[str, Any]]) -> TestSet:
    """The track task's hidden test set: gold = sentences + GT candidates per included
    sample; public inputs = question, context and the frozen sentences, never the GT."""
    interpretation_set = track.interpretation_set
    version = f"{interpretation_set.name}-v{interpretation_set.version}"
    gold = {s["id"]: {"sentences": s["sentences"], "gt_candidates": s["gt_candidates"]} for s in included}
    public = {"data": [{"sample_id": s["id"], "question": s["question"], "context": s["context"],
                        "sentences": s["sentences"]} for s in included]}
    checksum = hashlib.sha256(json.dumps(gold, sort_keys=True).encode()).hexdigest()
    TestSet.objects.filter(task=track.task, split=TestSet.TEST).update(is_current=False)
    test_set, _ = TestSet.objects.update_or_create(
        task=track.task, split=TestSet.TEST, version=version,
        defaults={"checksum": checksum, "source_name": interpretation_set.source_name, "is_current": True,
                  "n_items": len(included), "gold": gold, "public_inputs": public,
                  "key_spec": {"kind": InterpretationKind.name, "keys": [s["id"] for s in included]}})
    return test_set


def schedule_baselines(test_set: TestSet, *, methods: list[str] | None = None, limit: int | None = None,
                       again: bool = False) -> bool:
    """Queue the built-in baseline run of a track's test set (all 15 rows on every sample unless
    ``methods``/``limit`` say otherwise). Nothing is queued when the same run is already queued,
    running or (unless ``again``) done. The rows a previous run of the same methods and limit
    stored are kept (a row already scored is not redone); another selection starts afresh.
    Returns whether it queued the run."""
    from scoring.models.interpreters import BASELINE_METHODS  # noqa: PLC0415  (imports numpy/nltk only)

    methods = list(methods or BASELINE_METHODS)
    unknown = sorted(set(methods) - set(BASELINE_METHODS))
    if unknown:
        raise ValueError(f"unknown methods {unknown}; known: {', '.join(BASELINE_METHODS)}")
    methods = [method for method in BASELINE_METHODS if method in methods]  # the board's order, once each
    part = BASELINES.state.read(test_set.pk)
    same = part.get("methods") == methods and part.get("limit") == limit
    if same and (part.get("status") in WAITING or (part.get("status") == JobStatus.DONE and not again)):
        return False
    rows = dict(part.get("rows") or {}) if same else {}
    n_samples = test_set.n_items if limit is None else min(limit, test_set.n_items)
    BASELINES.state.schedule(test_set.pk, methods=methods, limit=limit, rows=rows, family="", samples_done=0,
                             samples_total=n_samples, done=0, total=0, note="")
    BASELINES.send(test_set.pk)
    return True


# The published SmoothGrad rows were produced by a variant of the official interpreter that
# crashes as committed, so they cannot be reproduced; ours follows the committed code.
SMOOTHGRAD_NOTE = ("Published by the QUACKIE authors from a SmoothGrad variant that does not run as committed in "
                   "their code; ExpBench's SmoothGrad baseline follows the committed code, so its numbers may differ.")


def load_published_results(path: str | Path) -> dict[tuple[str, str], Task]:
    """The official QUACKIE leaderboard (results.json) as reported rows, one board per
    (dataset, classifier); they take no submissions."""
    rows = json.loads(Path(path).read_text(encoding="utf-8"))
    rows = rows["results"] if isinstance(rows, dict) and "results" in rows else rows
    benchmark = ensure_quackie_benchmark()
    boards: dict[tuple[str, str], Task] = {}
    for order, row in enumerate(rows):
        key = (row["dataset"], row["classifier"])
        if key not in boards:
            slug = f"quackie-published-{row['dataset']}-{row['classifier']}".lower().replace("_", "-")
            boards[key], _ = Task.objects.update_or_create(
                slug=slug, defaults={"benchmark": benchmark, "kind": InterpretationKind.name, "language": "en",
                                     "name": f"Published: {row['dataset']} · {row['classifier']}",
                                     "accepts_submissions": False, "order": 100 + len(boards),
                                     "description": "Official QUACKIE leaderboard rows (results.json, ×100), "
                                                    "as published; not scored here."})
        ReportedResult.objects.update_or_create(
            task=boards[key], kind=ReportedResult.BASELINE, method=row["method"],
            defaults={"team": "QUACKIE leaderboard", "order": order,
                      "scores": {"iou": row["IoU"], "hpd": row["HPD"], "snr": row["SNR"]},
                      "source": "QUACKIE official leaderboard (gh-pages results.json, commit 766d17d)",
                      "note": SMOOTHGRAD_NOTE if row["method"].startswith("SmoothGrad") else "",
                      "url": row["info"] if str(row.get("info", "")).startswith("http") else ""})
    return boards


def demo_model_dir() -> Path:
    return Path(settings.EXPBENCH_MODELS_DIR) / "answerability-minilm"
