"""Importing versioned hidden test sets. Named functions the commands and the admin call."""
import hashlib
import json
from pathlib import Path

from django.db import transaction

from scoring import expmrc

from .models import Benchmark, Task, TestSet


class ImportRefused(Exception):
    pass


def expmrc_public_inputs(gold):
    """The gold with every answer and evidence removed, by whitelist: only fields known to be
    public are copied, so an unexpected gold field can never leak."""
    kind = expmrc.task_kind(gold)
    if kind == expmrc.SPAN:
        data = [
            {
                "title": article.get("title", ""),
                "paragraphs": [
                    {
                        **({"id": paragraph["id"]} if "id" in paragraph else {}),
                        "context": paragraph["context"],
                        "qas": [{"id": qa["id"], "question": qa["question"]} for qa in paragraph["qas"]],
                    }
                    for paragraph in article["paragraphs"]
                ],
            }
            for article in gold["data"]
        ]
    else:
        data = [
            {"id": p["id"], "article": p["article"], "questions": p["questions"], "options": p["options"]}
            for p in gold["data"]
        ]
    return {"version": gold["version"], "data": data}


def load_expmrc_file(path):
    """Read and check an ExpMRC gold file. Returns (gold, sha256). Raises ImportRefused."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportRefused(f"cannot read {path}: {exc.strerror}") from None
    try:
        gold = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ImportRefused(f"{path.name}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ImportRefused(f"{path.name}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    try:
        expmrc.check_gold(gold)
    except expmrc.InvalidGold as exc:
        raise ImportRefused(f"{path.name}: {exc}") from None
    return gold, hashlib.sha256(raw).hexdigest()


def ensure_expmrc_benchmark():
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
def import_expmrc(path, *, task_slug, split=TestSet.TEST, version, task_name=None, language=None):
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

    existing = TestSet.objects.filter(task=task, split=split, version=version).first()
    if existing:
        if existing.checksum != checksum:
            raise ImportRefused(
                f"{task_slug} {split} version {version} already exists with a different checksum "
                f"({existing.checksum[:12]}…); import the new file under a new --version"
            )
        return existing, False
    spec = expmrc.key_spec(gold)
    TestSet.objects.filter(task=task, split=split).update(is_current=False)
    test_set = TestSet.objects.create(
        task=task,
        split=split,
        version=version,
        checksum=checksum,
        source_name=Path(path).name,
        is_current=True,
        n_items=len(spec.keys),
        gold=gold,
        key_spec=spec.to_dict(),
        public_inputs=expmrc_public_inputs(gold),
    )
    return test_set, True
