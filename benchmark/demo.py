"""The demo benchmarks: benchmark_files/demo.yaml (the ExpMRC tasks with their dev sets as hidden test
sets and the paper's reported rows, CheckList SQuAD, the published QUACKIE boards and an
interpretation set) loaded like any benchmark file (benchmark/config_file.py), plus what a file
cannot declare: rows computed from released predictions, the demo QUACKIE track once its
classifier is trained, and background jobs an earlier run left unfinished."""
import gzip
import json
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import transaction

from scoring.metrics import checklist

from . import config_file, quackie_tracks, skill_sets
from .importers import import_expmrc, schedule_dataset_diagnostics
from .models import Benchmark, HostedModel, InterpretationSet, ReportedResult, Task, TestSet

DEMO_FILE = Path(settings.BASE_DIR) / "benchmark_files" / "demo.yaml"


def expmrc_data_dir() -> Path:
    return Path(settings.SHARED_DATA_DIR) / "expmrc"


def fixture_dir() -> Path:
    return Path(settings.BASE_DIR) / "benchmark" / "fixtures" / "expmrc"


@transaction.atomic
def load_demo(data_dir: str | Path | None = None, log: Callable[[str], None] = print) -> Benchmark:
    """Load benchmark_files/demo.yaml from the shared data folder; safe to run any number of times.

    ``data_dir`` is a folder with the ExpMRC dev files to use instead of the shared ones: then only
    the ExpMRC part of the demo is loaded (the CheckList and QUACKIE parts come with the shared data
    only). Without either, the small bundled fixtures are used.
    """
    expmrc_dir = Path(data_dir) if data_dir else expmrc_data_dir()
    if not expmrc_dir.is_dir():
        log(f"{expmrc_dir} not found: loading the small bundled fixtures instead")
        expmrc_dir = fixture_dir()
    demo = config_file.read(DEMO_FILE)
    whole = expmrc_dir.resolve() == expmrc_data_dir().resolve()
    if not whole:
        demo = demo.only(set(EXPMRC_BENCHMARKS), data_dirs={slug: expmrc_dir for slug in EXPMRC_BENCHMARKS})
    report = config_file.apply(demo, data_root=settings.SHARED_DATA_DIR, log=log)
    add_hidden_inputs_sample(log)
    requeue_unfinished_jobs(report.test_sets, log)
    if whole:
        add_checklist_reference_row(Path(settings.SHARED_DATA_DIR) / "skills", log)
        add_quackie_demo_track(report.interpretation_sets, log)
    return Benchmark.objects.get(slug="expmrc")


EXPMRC_BENCHMARKS = ("expmrc", "expmrc-hidden")
HIDDEN_INPUTS_TASK = "expmrc-squad-hidden"


def add_hidden_inputs_sample(log: Callable[[str], None]) -> None:
    """The public sample of the hidden-inputs task, which every model is smoke-run on before it
    reaches the hidden inputs: the bundled SQuAD fixture (other questions than the hidden set's),
    as the task's dev split."""
    task = Task.objects.filter(slug=HIDDEN_INPUTS_TASK).first()
    if task is None:
        return
    _, created = import_expmrc(fixture_dir() / "expmrc-squad-dev.json", task_slug=task.slug, split=TestSet.DEV,
                               version="sample-1")
    if created:
        log(f"{task.slug}: public sample (dev split) for the smoke runs of model submissions")


def requeue_unfinished_jobs(test_sets: list[tuple[TestSet, bool]], log: Callable[[str], None]) -> None:
    """A fresh import queues its dataset jobs itself; a set imported by an earlier run whose skill
    sets or cue table were never started (e.g. no worker then) is queued again."""
    for test_set, created in test_sets:
        if created or test_set.split != TestSet.TEST:
            continue
        task, diagnostics = test_set.task, test_set.diagnostics or {}
        if task.kind_definition.builds_skill_sets and "skills_build" not in diagnostics:
            skill_sets.schedule(test_set)
            log(f"{task.slug}: skill sets s1–s14 queued for a worker")
        if task.kind_definition.icq_format and "icq" not in diagnostics:
            schedule_dataset_diagnostics(task)
            log(f"{task.slug}: ICQ cue discovery queued for a worker")


def add_checklist_reference_row(skills_dir: Path, log: Callable[[str], None]) -> None:
    """The BERT-base predictions released with the CheckList SQuAD suite, scored here, as the task's
    reported reference row (computed once: a row that exists is left as it is)."""
    task = Task.objects.filter(slug="checklist-squad").first()
    bert_path = skills_dir / "checklist_squad_suite_bert_preds.json.gz"
    test_set = task.current_test_set() if task else None
    if test_set is None or not bert_path.exists():
        return
    if ReportedResult.objects.filter(task=task, method="BERT-base (SQuAD)").exists():
        return
    suite = TestSet.objects.only("gold").get(pk=test_set.pk).gold
    predictions = checklist.predictions_from_stored(json.loads(gzip.decompress(bert_path.read_bytes())), suite)
    outcomes = [o for test in checklist.case_outcomes(suite, predictions) for o in test]
    ReportedResult.objects.update_or_create(
        task=task, kind=ReportedResult.BASELINE, method="BERT-base (SQuAD)",
        defaults={"team": "CheckList authors",
                  "scores": {"pass_rate": 100.0 * outcomes.count("pass") / len(outcomes)},
                  "source": "CheckList paper (Ribeiro et al., ACL 2020): predictions released with the suite",
                  "url": "https://github.com/marcotcr/checklist"})
    log("checklist-squad: reference row of the released BERT-base predictions added")


def add_quackie_demo_track(interpretation_sets: list[tuple[InterpretationSet, bool]],
                           log: Callable[[str], None]) -> None:
    """The demo track (the interpretation set x the locally trained answerability classifier);
    its inclusion flags are computed by the models worker."""
    if not interpretation_sets:
        return
    iset = interpretation_sets[0][0]
    model_dir = quackie_tracks.demo_model_dir()
    if not (model_dir / "config.json").exists():
        squad = Path(settings.SHARED_DATA_DIR) / "expmrc" / "expmrc-squad-dev.json"
        log("quackie: no demo classifier yet, so no demo track. `QUACKIE_MODELS=1 bash scripts/run.sh` trains one "
            "in the background and adds the track; or train one with:\n"
            f"  python manage.py train_answerability_classifier --data {squad} --out {model_dir}\n"
            "  then run load_demo again")
        return
    model = quackie_tracks.register_model(slug="minilm-answerability", name="MiniLM answerability (demo)",
                                          kind=HostedModel.CLASSIFICATION, path=model_dir,
                                          description="all-MiniLM-L6-v2 fine-tuned by train_answerability_classifier")
    track = quackie_tracks.create_track(iset, model)
    log(f"quackie: track {track.task.slug} ({track.status}; inclusion flags computed by the models worker)")
    # The inclusion run queues the built-in baselines when it stores the test set; a track
    # included by an earlier run whose baselines never ran, or gave up, gets them queued here.
    test_set = track.task.current_test_set() if track.status == track.DONE else None
    if test_set is not None and quackie_tracks.schedule_baselines(test_set):
        log(f"quackie: all 15 built-in baseline rows of {track.task.slug} queued for the models worker")
