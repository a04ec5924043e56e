"""Importers of versioned test sets (ExpMRC, classification, CheckList, reference splits):
named functions the management commands, the demo and the admin call. Each checksums the
file, refuses malformed ones with the exact place of the problem, stores a new version and
makes it current, then schedules the dataset-level jobs (cue discovery, skill sets)."""
import hashlib
import zipfile
from pathlib import Path
from typing import Any

from django.db import transaction

from scoring.analysis import icq
from scoring.metrics import checklist, classification, expmrc
from scoring.strict_json import InvalidJson, loads_json

from . import cues, skill_sets
from .kinds.checklist import ChecklistKind
from .kinds.classification import ClassificationKind
from .models import Benchmark, Task, TestSet

# The kinds the classification and CheckList importers make (ExpMRC files say their own kind).
CLASSIFICATION, CHECKLIST = ClassificationKind.name, ChecklistKind.name


class ImportRefused(Exception):
    pass


def load_expmrc_file(path: str | Path) -> tuple[Any, str]:
    """Read and check an ExpMRC gold file. Returns (gold, sha256). Raises ImportRefused."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportRefused(f"cannot read {path}: {exc.strerror}") from None
    try:
        gold = loads_json(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ImportRefused(f"{path.name}: not UTF-8 (byte {exc.start})") from None
    except InvalidJson as exc:
        raise ImportRefused(f"{path.name}: not JSON: {exc}") from None
    try:
        expmrc.check_gold(gold)
    except expmrc.InvalidGold as exc:
        raise ImportRefused(f"{path.name}: {exc}") from None
    return gold, hashlib.sha256(raw).hexdigest()


def ensure_expmrc_benchmark() -> Benchmark:
    benchmark, _ = Benchmark.objects.get_or_create(
        slug="expmrc",
        defaults={
            "name": "ExpMRC",
            "order": 1,
            "url": "https://github.com/ymcui/expmrc",
            "description": "Explainability of machine reading comprehension: systems give the answer "
            "and the evidence that supports it. Scored exactly as the official eval_expmrc.py.",
            "citation": "Cui, Y., Liu, T., Che, W., Chen, Z., Wang, S. ExpMRC: Explainability Evaluation "
            "for Machine Reading Comprehension. Heliyon, 2022.",
        },
    )
    return benchmark


@transaction.atomic
def import_expmrc(path: str | Path, *, task_slug: str, split: str = TestSet.TEST, version: str,
                  task_name: str | None = None, language: str | None = None) -> tuple[TestSet, bool]:
    """Import an ExpMRC file as version ``version`` of a task's split and make it current.

    Idempotent: the same file under the same version is a no-op. Returns (test_set, created).
    """
    gold, checksum = load_expmrc_file(path)
    kind = expmrc.task_kind(gold)
    task = Task.objects.filter(slug=task_slug).first()
    if task is None:
        if not task_name:
            raise ImportRefused(f"no task {task_slug!r}; pass --name (and --language) to create it")
        task = Task.objects.create(
            benchmark=ensure_expmrc_benchmark(),
            slug=task_slug,
            name=task_name,
            kind=kind,
            language=language or "en",
        )
    elif task.kind != kind:
        raise ImportRefused(f"{Path(path).name} is a {kind} set but task {task_slug} is {task.kind}")

    spec = expmrc.key_spec(gold)
    return _store_split(task, split, version, checksum, Path(path).name, gold, len(spec.keys),
                        key_spec=spec.to_dict(), public_inputs=expmrc.public_inputs(gold))


def read_expmrc_json(path: str | Path) -> tuple[Any, str]:
    """An ExpMRC-schema JSON file, or the first .json member of a .zip (the pseudo training
    data ships zipped). Returns (data, sha256 of the bytes read)."""
    path = Path(path)
    try:
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                member = next((n for n in archive.namelist() if n.endswith(".json")), None)
                if member is None:
                    raise ImportRefused(f"{path.name}: no .json file inside the zip")
                raw = archive.read(member)
        else:
            raw = path.read_bytes()
    except (OSError, zipfile.BadZipFile) as exc:
        raise ImportRefused(f"cannot read {path}: {exc}") from None
    try:
        return loads_json(raw.decode("utf-8-sig")), hashlib.sha256(raw).hexdigest()
    except (UnicodeDecodeError, InvalidJson) as exc:
        raise ImportRefused(f"{path.name}: not UTF-8 JSON ({exc})") from None


@transaction.atomic
def import_multichoice_reference(path: str | Path, *, task_slug: str, version: str) -> tuple[TestSet, bool]:
    """Import training data in the ExpMRC multi-choice schema (e.g. the C3 pseudo training
    data) as the task's reference split R for ICQ cue discovery. Never served to anyone."""
    task = Task.objects.filter(slug=task_slug).first()
    if task is None or task.kind_definition.importer != "expmrc" or not task.kind_definition.icq_format:
        raise ImportRefused(f"no multiple-choice task {task_slug!r}")
    data, checksum = read_expmrc_json(path)
    try:
        instances = icq.expmrc_multichoice_instances(data)
    except (icq.InvalidICQInput, KeyError, TypeError, ValueError) as exc:
        raise ImportRefused(f"{Path(path).name}: not ExpMRC multiple-choice data ({exc})") from None
    return _store_split(task, TestSet.REFERENCE, version, checksum, Path(path).name, data, len(instances),
                        key_spec={}, public_inputs={})


@transaction.atomic
def import_classification(path: str | Path, *, task_slug: str, split: str, version: str, task_name: str | None = None,
                          language: str | None = None) -> tuple[TestSet, bool]:
    """Import NLI-style rows {"id", "premise", "hypothesis", "label"} (JSON Lines or a JSON
    array) as a classification task's hidden test split or its reference split."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportRefused(f"cannot read {path}: {exc.strerror}") from None
    try:
        rows = classification.check_gold_rows(classification.read_jsonl_rows(raw, what=path.name), what=path.name)
    except (classification.InvalidClassificationData, UnicodeDecodeError) as exc:
        raise ImportRefused(str(exc)) from None
    task = Task.objects.filter(slug=task_slug).first()
    if task is None:
        if not task_name:
            raise ImportRefused(f"no task {task_slug!r}; pass --name (and --language) to create it")
        benchmark, _ = Benchmark.objects.get_or_create(
            slug="nlu", defaults={"name": "NLU classification", "order": 5,
                                  "description": "Natural-language inference and other classification tasks, "
                                                 "profiled for statistical cues (ICQ)."})
        task = Task.objects.create(benchmark=benchmark, slug=task_slug, name=task_name,
                                   kind=CLASSIFICATION, language=language or "en")
    elif task.kind_definition.importer != "classification":
        raise ImportRefused(f"task {task_slug} is a {task.kind} task, not classification")
    checksum = hashlib.sha256(raw).hexdigest()
    spec = classification.label_spec(rows)
    public = classification.public_inputs(rows) if split != TestSet.REFERENCE else {}
    return _store_split(task, split, version, checksum, path.name, {"rows": rows}, len(rows),
                        key_spec=spec.to_dict(), public_inputs=public)


def _store_split(task: Task, split: str, version: str, checksum: str, source_name: str, gold: Any, n_items: int, *,
                 key_spec: dict[str, Any], public_inputs: dict[str, Any]) -> tuple[TestSet, bool]:
    """Create version ``version`` of a task's split and make it current; idempotent for the
    same bytes, refused for different bytes under an existing version. Schedules the
    dataset-level diagnostics (cue discovery) after commit."""
    existing = TestSet.objects.filter(task=task, split=split, version=version).first()
    if existing:
        if existing.checksum != checksum:
            raise ImportRefused(
                f"{task.slug} {split} version {version} already exists with a different checksum "
                f"({existing.checksum[:12]}…); import the new file under a new --version")
        return existing, False
    TestSet.objects.filter(task=task, split=split).update(is_current=False)
    test_set = TestSet.objects.create(
        task=task, split=split, version=version, checksum=checksum, source_name=source_name, is_current=True,
        n_items=n_items, gold=gold, key_spec=key_spec, public_inputs=public_inputs)
    schedule_dataset_diagnostics(task)
    if split == TestSet.TEST:
        skill_sets.schedule(test_set)  # for the kinds that build skill sets
    return test_set, True


def schedule_dataset_diagnostics(task: Task) -> None:
    """Ask a worker (after commit) to (re)discover ICQ cues for the task's current test set."""
    if not task.kind_definition.icq_format:
        return
    test_set = task.current_test_set()
    if test_set is not None:
        cues.schedule(test_set)


@transaction.atomic
def import_checklist(path: str | Path, *, task_slug: str, version: str,
                     task_name: str = "CheckList SQuAD") -> tuple[TestSet, bool]:
    """Import a CheckList suite (JSON, gzip or not) as the public item set of a checklist
    task: its items are downloadable with stable ids; expectations stay with the scorer."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        suite = checklist.load_suite(path)
    except OSError as exc:
        raise ImportRefused(f"cannot read {path}: {exc.strerror}") from None
    except InvalidJson as exc:
        raise ImportRefused(f"{path.name}: not JSON: {exc}") from None
    except (checklist.InvalidSuite, ValueError) as exc:
        raise ImportRefused(f"{path.name}: {exc}") from None
    task = Task.objects.filter(slug=task_slug).first()
    if task is None:  # only a task created here goes to the CheckList-MRC benchmark (created if need be)
        benchmark, _ = Benchmark.objects.get_or_create(
            slug="checklist-mrc",
            defaults={"name": "CheckList-MRC", "order": 3, "url": "https://github.com/marcotcr/checklist",
                      "description": "Behavioural tests of reading comprehension (Ribeiro et al., ACL 2020): "
                                     "failure rates per capability; the items are public.",
                      "citation": "Ribeiro, M. T., Wu, T., Guestrin, C., Singh, S. Beyond Accuracy: Behavioral "
                                  "Testing of NLP Models with CheckList. ACL 2020."})
        task = Task.objects.create(slug=task_slug, benchmark=benchmark, name=task_name, kind=CHECKLIST,
                                   language="en", description="CheckList SQuAD suite: 24 tests, 13,311 cases.")
    if task.kind_definition.importer != "checklist":
        raise ImportRefused(f"task {task_slug} is a {task.kind} task, not checklist")
    items = checklist.suite_items(suite)
    return _store_split(task, TestSet.DEV, version, hashlib.sha256(raw).hexdigest(), path.name, suite, len(items),
                        key_spec={"kind": CHECKLIST, "keys": [item["id"] for item in items]},
                        public_inputs={"items": items})
