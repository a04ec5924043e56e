"""Demo benchmarks: the four ExpMRC subsets with their dev sets as hidden test sets, and the
human and baseline numbers published in the ExpMRC paper (Cui et al., 2022, Table 3)."""
import gzip
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from scoring.metrics import checklist

from . import quackie_tracks, skill_sets
from .importers import (
    ensure_expmrc_benchmark,
    import_checklist,
    import_expmrc,
    import_multichoice_reference,
    schedule_dataset_diagnostics,
)
from .models import Benchmark, ReportedResult, Task, TestSet

PAPER = "ExpMRC paper (Cui et al., Heliyon 2022), Table 3"
PAPER_URL = "https://github.com/ymcui/expmrc"
DEMO_VERSION = "dev-as-test-1"

EXPMRC_TASKS = [
    # slug, name, language, dev file, description
    ("expmrc-squad", "SQuAD", "en", "expmrc-squad-dev.json", "English span extraction (SQuAD 1.1) with evidence."),
    ("expmrc-cmrc2018", "CMRC 2018", "zh", "expmrc-cmrc2018-dev.json", "Chinese span extraction with evidence."),
    ("expmrc-race", "RACE+", "en", "expmrc-race-dev.json", "English multiple choice (RACE) with evidence."),
    ("expmrc-c3", "C3", "zh", "expmrc-c3-dev.json", "Chinese multiple choice with evidence."),
]

# (method, backbone family, {split: (answer, evidence, overall)}) per task, from Table 3.
# The backbones are BERT-base / BERT-large-wwm for English, MacBERT-base / -large for Chinese.
# Training data of the ExpMRC repository that serves as ICQ's reference split R (only C3's is
# available here; RACE+ then shows the accuracy test only).
REFERENCE_FILES = {"expmrc-c3": "train-pseudo-c3.zip"}

_SPAN_METHODS = ["Most Similar Sent.", "Most Similar Sent. w/ Ques.", "Predicted Answer Sent.", "Pseudo-data Training"]
_MC_METHODS = ["Most Similar Sent.", "Most Similar Sent. w/ Ques.", "Pseudo-data Training"]
REPORTED: dict[str, dict[str, Any]] = {
    "expmrc-squad": {
        "human": {"dev": (90.8, 92.1, 83.6), "test": (91.3, 92.9, 84.7)},
        "backbones": ("BERT-base", "BERT-large-wwm"),
        "methods": _SPAN_METHODS,
        "dev": [(87.4, 81.8, 74.5), (87.4, 81.0, 72.9), (87.4, 84.1, 76.4), (88.1, 76.9, 69.7),
                (93.0, 83.9, 79.3), (93.0, 81.9, 77.4), (93.0, 85.4, 81.8), (93.3, 78.1, 73.5)],
        "test": [(87.1, 85.4, 76.1), (87.1, 84.8, 75.6), (87.1, 89.1, 79.6), (88.1, 76.3, 67.5),
                 (92.3, 85.7, 80.4), (92.3, 85.1, 79.8), (92.3, 89.6, 83.6), (93.4, 76.1, 72.1)],
    },
    "expmrc-cmrc2018": {
        "human": {"dev": (97.7, 94.6, 92.4), "test": (97.9, 94.6, 92.6)},
        "backbones": ("MacBERT-base", "MacBERT-large"),
        "methods": _SPAN_METHODS,
        "dev": [(82.3, 71.9, 60.1), (82.3, 76.9, 63.9), (82.3, 78.0, 66.8), (82.7, 65.1, 54.7),
                (82.8, 71.6, 60.3), (82.8, 76.3, 63.6), (82.8, 77.7, 66.9), (83.8, 65.3, 55.6)],
        "test": [(84.4, 62.2, 52.9), (84.4, 69.8, 59.9), (84.4, 69.1, 59.8), (85.7, 59.7, 51.2),
                 (88.6, 63.0, 55.9), (88.6, 71.0, 63.2), (88.6, 70.6, 63.3), (88.8, 58.4, 51.5)],
    },
    "expmrc-race": {
        "human": {"dev": (92.0, 92.4, 85.4), "test": (93.6, 90.5, 84.4)},
        "backbones": ("BERT-base", "BERT-large-wwm"),
        "methods": _MC_METHODS,
        "dev": [(62.4, 36.6, 28.2), (62.4, 44.5, 31.5), (63.6, 45.7, 31.7),
                (69.0, 37.6, 29.9), (69.0, 48.0, 36.8), (69.0, 45.9, 32.6)],
        "test": [(59.8, 34.4, 26.3), (59.8, 41.8, 27.3), (60.1, 43.5, 27.1),
                 (68.1, 36.8, 28.9), (68.1, 42.5, 31.3), (70.4, 41.3, 30.8)],
    },
    "expmrc-c3": {
        "human": {"dev": (95.3, 95.7, 91.1), "test": (94.3, 97.7, 90.0)},
        "backbones": ("MacBERT-base", "MacBERT-large"),
        "methods": _MC_METHODS,
        "dev": [(68.7, 57.7, 47.7), (68.7, 62.3, 47.3), (70.9, 59.9, 43.5),
                (73.1, 59.4, 49.9), (73.1, 63.2, 50.9), (76.4, 64.3, 50.7)],
        "test": [(66.8, 52.2, 41.2), (66.8, 57.4, 42.3), (69.0, 57.5, 40.6),
                 (72.0, 52.7, 43.9), (72.0, 58.4, 46.0), (74.4, 59.9, 47.3)],
    },
}


def reported_rows(slug: str, kind: str, split: str) -> Iterator[dict[str, Any]]:
    """Yield ReportedResult field dicts for one task, numbers of the given paper split."""
    table = REPORTED[slug]
    answer_key = "answer_acc" if kind == Task.MULTICHOICE else "answer_f1"

    def scores(triple: tuple[float, float, float]) -> dict[str, float]:
        return {answer_key: triple[0], "evidence_f1": triple[1], "overall_f1": triple[2]}

    yield {
        "kind": ReportedResult.HUMAN,
        "method": "Human Performance",
        "team": "ExpMRC authors",
        "scores": scores(table["human"][split]),
        "source": f"{PAPER} ({split} set)",
    }
    methods = table["methods"]
    for index, triple in enumerate(table[split]):
        backbone = table["backbones"][index // len(methods)]
        yield {
            "kind": ReportedResult.BASELINE,
            "method": f"{backbone} + {methods[index % len(methods)]}",
            "team": "ExpMRC authors (baseline)",
            "scores": scores(triple),
            "source": f"{PAPER} ({split} set)",
        }


def expmrc_data_dir() -> Path:
    return Path(settings.SHARED_DATA_DIR) / "expmrc"


def fixture_dir() -> Path:
    return Path(settings.BASE_DIR) / "benchmark" / "fixtures" / "expmrc"


def demo_version(task: Task, path: str | Path) -> str:
    """The demo's version label for ``path``: the plain label unless it is taken by another
    file (the first run used the fixtures and ../shared/data appeared since, or the reverse);
    then a label naming the file's checksum, so a changed source never stops the demo. A newly
    imported file becomes current; one imported before is left as the maintainers left it."""
    taken = (TestSet.objects.filter(task=task, split=TestSet.TEST, version=DEMO_VERSION)
             .values_list("checksum", flat=True).first())
    checksum = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return DEMO_VERSION if taken in (None, checksum) else f"{DEMO_VERSION}-{checksum[:12]}"


@transaction.atomic
def load_demo(data_dir: str | Path | None = None, log: Callable[[str], None] = print) -> Benchmark:
    """Create the demo tasks and import their test sets; safe to run any number of times.

    The ExpMRC dev sets play the hidden test sets, so the paper's *dev* numbers are the
    comparable reported rows. Without ../shared/data the small bundled fixtures are used.
    """
    data_dir = Path(data_dir) if data_dir else expmrc_data_dir()
    if not data_dir.is_dir():
        log(f"{data_dir} not found: loading the small bundled fixtures instead")
        data_dir = fixture_dir()
    benchmark = ensure_expmrc_benchmark()
    for order, (slug, name, language, filename, description) in enumerate(EXPMRC_TASKS, start=1):
        path = data_dir / filename
        kind = Task.MULTICHOICE if slug in ("expmrc-race", "expmrc-c3") else Task.SPAN
        task, _ = Task.objects.update_or_create(
            slug=slug,
            defaults={"benchmark": benchmark, "name": name, "language": language, "kind": kind,
                      "description": description, "order": order},
        )
        if not path.exists():
            log(f"{slug}: {path} missing, no test set imported")
            continue
        test_set, created = import_expmrc(path, task_slug=slug, split=TestSet.TEST, version=demo_version(task, path))
        log(f"{slug}: test set {test_set.version} ({test_set.n_items} questions) "
            f"{'imported' if created else 'already present'}")
        for position, fields in enumerate(reported_rows(slug, kind, "dev")):
            ReportedResult.objects.update_or_create(
                task=task, kind=fields["kind"], method=fields["method"],
                defaults={**fields, "url": PAPER_URL, "order": position},
            )
        reference = data_dir / "pseudo_training_data" / REFERENCE_FILES.get(slug, "-")
        if reference.exists():
            ref_set, ref_created = import_multichoice_reference(reference, task_slug=slug, version="pseudo-train-1")
            log(f"{slug}: reference split {ref_set.version} ({ref_set.n_items} questions, for ICQ cue discovery) "
                f"{'imported' if ref_created else 'already present'}")
        if kind == Task.SPAN and not created and "skills_build" not in (test_set.diagnostics or {}):
            skill_sets.schedule(test_set)
            log(f"{slug}: skill sets s1–s14 queued for a worker")
        # A fresh import queues cue discovery itself; re-queue only if an earlier run never finished it.
        if kind == Task.MULTICHOICE and not created and "icq" not in (test_set.diagnostics or {}):
            schedule_dataset_diagnostics(task)
            log(f"{slug}: ICQ cue discovery queued for a worker")
    shared = Path(settings.SHARED_DATA_DIR)
    if data_dir.resolve() == (shared / "expmrc").resolve():
        # The CheckList and QUACKIE demos come with the shared data only (no bundled fixture).
        load_checklist_demo(shared / "skills", log)
        load_quackie_demo(shared, log)
    return benchmark


def load_quackie_demo(shared_data: Path, log: Callable[[str], None]) -> None:
    """QUACKIE: the official published boards, an interpretation set built from the ExpMRC
    SQuAD dev data, and a demo track with the locally trained answerability classifier."""
    results = shared_data / "quackie" / "results.json"
    if results.exists():
        boards = quackie_tracks.load_published_results(results)
        log(f"quackie: {len(boards)} published boards from {results.name}")
    squad = shared_data / "expmrc" / "expmrc-squad-dev.json"
    if not squad.exists():
        return
    iset, created = quackie_tracks.import_quackie(squad, name="expmrc-squad-dev", version="1")
    log(f"quackie: interpretation set {iset} ({iset.n_samples} samples) {'imported' if created else 'already present'}")
    model_dir = quackie_tracks.demo_model_dir()
    if not (model_dir / "config.json").exists():
        log("quackie: no demo classifier yet, so no demo track. Train one (about 10 minutes on 2 cores) with:\n"
            f"  python manage.py train_answerability_classifier --data {squad} --out {model_dir}\n"
            "  then run load_demo again")
        return
    model = quackie_tracks.register_model(slug="minilm-answerability", name="MiniLM answerability (demo)",
                                          kind="classification", path=model_dir,
                                          description="all-MiniLM-L6-v2 fine-tuned by train_answerability_classifier")
    track = quackie_tracks.create_track(iset, model)
    log(f"quackie: track {track.task.slug} ({track.status}; inclusion flags computed by the models worker)")


def load_checklist_demo(skills_dir: Path, log: Callable[[str], None]) -> None:
    """The CheckList SQuAD suite as the public task checklist-squad, with the BERT-base
    predictions shipped with the suite as its reported reference row."""
    suite_path = skills_dir / "checklist_squad_suite.json.gz"
    if not suite_path.exists():
        log(f"checklist-squad: {suite_path} missing, task not created")
        return
    test_set, created = import_checklist(suite_path, task_slug="checklist-squad", version="suite-1")
    log(f"checklist-squad: {test_set.n_items} public items {'imported' if created else 'already present'}")
    bert_path = skills_dir / "checklist_squad_suite_bert_preds.json.gz"
    has_row = ReportedResult.objects.filter(task=test_set.task, method="BERT-base (SQuAD)").exists()
    if bert_path.exists() and not has_row:
        suite = TestSet.objects.only("gold").get(pk=test_set.pk).gold
        predictions = checklist.predictions_from_stored(json.loads(gzip.decompress(bert_path.read_bytes())), suite)
        outcomes = [o for test in checklist.case_outcomes(suite, predictions) for o in test]
        ReportedResult.objects.update_or_create(
            task=test_set.task, kind=ReportedResult.BASELINE, method="BERT-base (SQuAD)",
            defaults={"team": "CheckList authors",
                      "scores": {"pass_rate": 100.0 * outcomes.count("pass") / len(outcomes)},
                      "source": "CheckList paper (Ribeiro et al., ACL 2020): predictions released with the suite",
                      "url": "https://github.com/marcotcr/checklist"})
