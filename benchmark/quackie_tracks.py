"""QUACKIE tracks (SPEC §6): hidden interpretation sets built from SQuAD-format data, hosted
models, and the per-(set, model) track whose included samples are the task's hidden test set.
"""
import hashlib
import json
import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import Benchmark, HostedModel, InterpretationSet, ReportedResult, Task, TestSet, Track
from .test_sets import ImportRefused

log = logging.getLogger(__name__)
MAX_TOKENS = 512


def ensure_quackie_benchmark():
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


def import_quackie(path, *, name, version):
    """Build a hidden interpretation set from SQuAD v1.1/v2.0 JSON. Idempotent per checksum."""
    from scoring import quackie

    path = Path(path)
    try:
        raw = path.read_bytes()
        squad = json.loads(raw.decode("utf-8-sig"))
    except OSError as exc:
        raise ImportRefused(f"cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
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


def register_model(*, slug, name, kind, path, description=""):
    path = Path(path)
    if not (path / "config.json").exists():
        raise ImportRefused(f"{path} has no config.json: not a local transformers model directory")
    model, _ = HostedModel.objects.update_or_create(
        slug=slug, defaults={"name": name, "kind": kind, "path": str(path), "description": description})
    return model


@transaction.atomic
def create_track(interpretation_set, hosted_model):
    """The task ``quackie-<set>-<model>`` and its track; inclusion runs on a worker."""
    slug = f"quackie-{interpretation_set.name}-{hosted_model.slug}"[:50]
    task, _ = Task.objects.get_or_create(
        slug=slug,
        defaults={"benchmark": ensure_quackie_benchmark(), "kind": Task.INTERPRETATION, "language": "en",
                  "name": f"{interpretation_set.name} · {hosted_model.name}",
                  "description": f"Explain {hosted_model.name} ({hosted_model.get_kind_display()}) on "
                                 f"{interpretation_set.name}: one score per sentence, higher = more important."})
    track, created = Track.objects.get_or_create(
        task=task, defaults={"interpretation_set": interpretation_set, "hosted_model": hosted_model,
                             "total": interpretation_set.n_samples})
    if created or track.status == Track.FAILED:
        schedule_inclusion(track)
    return track


def schedule_inclusion(track):
    Track.objects.filter(pk=track.pk).update(status=Track.PENDING, done=0, error="", attempts=0,
                                             updated_at=timezone.now())
    send_inclusion(track.pk)


def claim_inclusion(track_id):
    """Atomically take a pending inclusion run (a duplicate message finds nothing to do)."""
    return bool(Track.objects.filter(pk=track_id, status=Track.PENDING).update(
        status=Track.RUNNING, attempts=F("attempts") + 1, updated_at=timezone.now()))


def send_inclusion(track_id):
    def send():
        from .tasks import compute_track_inclusion

        try:
            compute_track_inclusion.apply_async(args=[track_id])
        except Exception:  # broker down: the reaper sends it again
            log.exception("could not enqueue the inclusion flags of track %s", track_id)

    transaction.on_commit(send)


def compute_inclusion(track, *, batch_size=16, progress=None):
    """Inclusion flags (official filter): <= 512 tokens with the model's tokenizer, has an answer
    (every stored sample has one), model predicts "answerable". Then the included samples become
    the track's hidden test set."""
    from scoring.hosted_model import load_hosted_model

    samples = InterpretationSet.objects.only("samples").get(pk=track.interpretation_set_id).samples
    Track.objects.filter(pk=track.pk).update(status=Track.RUNNING, done=0, total=len(samples), error="",
                                             updated_at=timezone.now())
    model = load_hosted_model(track.hosted_model.path, track.hosted_model.kind, batch_size=batch_size)
    inclusion = {}
    for start in range(0, len(samples), batch_size):
        batch = samples[start:start + batch_size]
        tokens = [model.n_tokens(s["question"], s["context"]) for s in batch]
        fits = [s for s, n in zip(batch, tokens) if n <= MAX_TOKENS]
        answerable = {}
        if fits:
            predicted = model.predict([s["question"] for s in fits], [s["context"] for s in fits])
            answerable = {s["id"]: bool(p) for s, p in zip(fits, predicted)}
        for sample, n in zip(batch, tokens):
            ok = answerable.get(sample["id"], False)
            inclusion[sample["id"]] = {"tokens": n, "answerable": ok if n <= MAX_TOKENS else None,
                                       "included": n <= MAX_TOKENS and ok}
        done = min(start + batch_size, len(samples))
        Track.objects.filter(pk=track.pk).update(done=done, updated_at=timezone.now())
        if progress:
            progress(done, len(samples))
    included = [s for s in samples if inclusion[s["id"]]["included"]]
    exclusions = {
        "too_long": sum(1 for v in inclusion.values() if v["tokens"] > MAX_TOKENS),
        "predicted_unanswerable": sum(1 for v in inclusion.values() if v["answerable"] is False),
        "unanswerable_in_data": track.interpretation_set.stats.get("unanswerable", 0),
    }
    with transaction.atomic():
        store_track_test_set(track, included)
        Track.objects.filter(pk=track.pk).update(status=Track.READY, n_included=len(included), inclusion=inclusion,
                                                 updated_at=timezone.now(),
                                                 exclusions=exclusions, done=len(samples))
    return len(included)


def store_track_test_set(track, included):
    """The track task's hidden test set: gold = sentences + GT candidates per included
    sample; public inputs = question, context and the frozen sentences, never the GT."""
    interpretation_set = track.interpretation_set
    version = f"{interpretation_set.name}-v{interpretation_set.version}"
    gold = {s["id"]: {"sentences": s["sentences"], "gt_candidates": s["gt_candidates"]} for s in included}
    public = {"data": [{"sample_id": s["id"], "question": s["question"], "context": s["context"],
                        "sentences": s["sentences"]} for s in included]}
    checksum = hashlib.sha256(json.dumps(gold, sort_keys=True).encode()).hexdigest()
    TestSet.objects.filter(task=track.task, split=TestSet.TEST).update(is_current=False)
    TestSet.objects.update_or_create(
        task=track.task, split=TestSet.TEST, version=version,
        defaults={"checksum": checksum, "source_name": interpretation_set.source_name, "is_current": True,
                  "n_items": len(included), "gold": gold, "public_inputs": public,
                  "key_spec": {"kind": "interpretation", "keys": [s["id"] for s in included]}})


def load_published_results(path):
    """The official QUACKIE leaderboard (results.json) as reported rows, one board per
    (dataset, classifier); they take no submissions."""
    rows = json.loads(Path(path).read_text(encoding="utf-8"))
    rows = rows["results"] if isinstance(rows, dict) and "results" in rows else rows
    benchmark = ensure_quackie_benchmark()
    boards = {}
    for order, row in enumerate(rows):
        key = (row["dataset"], row["classifier"])
        if key not in boards:
            slug = f"quackie-published-{row['dataset']}-{row['classifier']}".lower().replace("_", "-")
            boards[key], _ = Task.objects.update_or_create(
                slug=slug, defaults={"benchmark": benchmark, "kind": Task.INTERPRETATION, "language": "en",
                                     "name": f"Published: {row['dataset']} · {row['classifier']}",
                                     "accepts_submissions": False, "order": 100 + len(boards),
                                     "description": "Official QUACKIE leaderboard rows (results.json, ×100), "
                                                    "as published; not scored here."})
        ReportedResult.objects.update_or_create(
            task=boards[key], kind=ReportedResult.BASELINE, method=row["method"],
            defaults={"team": "QUACKIE leaderboard", "order": order,
                      "scores": {"iou": row["IoU"], "hpd": row["HPD"], "snr": row["SNR"]},
                      "source": "QUACKIE official leaderboard (gh-pages results.json, commit 766d17d)",
                      "url": row["info"] if str(row.get("info", "")).startswith("http") else ""})
    return boards


def demo_model_dir():
    return Path(settings.EXPBENCH_MODELS_DIR) / "answerability-minilm"
