"""Benchmarks from a YAML file (`manage.py load_benchmark`, docs/benchmarks_config.md): the demo
file round-trips through the database, loading twice changes nothing, every importer is reachable
from a file, and a bad file is refused with its line and field before anything is written."""
import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.management import CommandError, call_command

from benchmark import config_file
from benchmark.config_file import ConfigError
from benchmark.demo import DEMO_FILE
from benchmark.models import Benchmark, InterpretationSet, ReportedResult, Task
from benchmark.models import TestSet as StoredTestSet  # not "Test*": pytest would try to collect it
from tests.factories import FIXTURES, QUACKIE_SQUAD_V2
from tests.scoring.test_checklist import inv, mft

pytestmark = pytest.mark.django_db

FIXTURE_ROOT = FIXTURES.parent  # holds expmrc/, the layout of the shared data folder
ICQ = Path(settings.BASE_DIR) / "tests" / "fixtures" / "icq"


def quiet(_line):
    pass


def database_state():
    """Everything a load writes, with primary keys and import times (a reload must keep them)."""
    return (sorted(Benchmark.objects.values_list("pk", "slug", "name", "description", "url", "citation", "order")),
            sorted(Task.objects.values_list("pk", "slug", "benchmark__slug", "name", "kind", "language",
                                            "description", "order", "visibility", "ranking_rule",
                                            "accepts_submissions", "daily_quota")),
            sorted(StoredTestSet.objects.values_list("pk", "task__slug", "split", "version", "checksum",
                                                     "is_current", "imported_at", "change_note")),
            sorted((r.pk, r.task.slug, r.kind, r.method, r.team, json.dumps(r.scores, sort_keys=True), r.source,
                    r.url, r.note, r.date, r.order) for r in ReportedResult.objects.select_related("task")),
            sorted(InterpretationSet.objects.values_list("pk", "name", "version", "checksum")))


# --------------------------------------------------------------------------- the demo file


def test_the_demo_file_round_trips_through_the_database():
    demo = config_file.read(DEMO_FILE)
    report = config_file.apply(demo, data_root=FIXTURE_ROOT, log=quiet)
    # The four ExpMRC fixtures (and the interpretation set built from SQuAD's); C3's reference split,
    # the CheckList suite and the QUACKIE boards come with the shared data only and are skipped.
    assert [s.task.slug for s, created in report.test_sets if created] == [
        "expmrc-squad", "expmrc-cmrc2018", "expmrc-race", "expmrc-c3", "expmrc-squad-hidden"]
    assert report.count("skipped") == 3
    root = config_file.data_root_of(demo, FIXTURE_ROOT)

    def present(benchmark, test_set):
        base = root / benchmark.data_dir if benchmark.data_dir else root
        return (base / test_set.path).is_file()

    expected = config_file.declared_structure(demo)
    for benchmark_entry, benchmark in zip(demo.benchmarks, expected, strict=True):
        for task_entry, task in zip(benchmark_entry.tasks, benchmark["tasks"], strict=True):
            task["test_sets"] = [declared for entry, declared in zip(task_entry.test_sets, task["test_sets"], strict=True)
                                 if present(benchmark_entry, entry)]
    assert config_file.dump(demo) == expected

    # Field by field, the database holds what the file says, read with a plain YAML loader.
    raw = yaml.safe_load(DEMO_FILE.read_text(encoding="utf-8"))
    dumped = {b["slug"]: b for b in config_file.dump(demo)}
    n_rows = 0
    for benchmark in raw["benchmarks"]:
        stored = dumped[benchmark["slug"]]
        assert {k: stored[k] for k in benchmark if k in config_file.BENCHMARK_FIELDS} == \
            {k: v for k, v in benchmark.items() if k in config_file.BENCHMARK_FIELDS}
        for task, stored_task in zip(benchmark.get("tasks", []), stored["tasks"], strict=True):
            assert {k: stored_task[k] for k in task if k in config_file.TASK_FIELDS} == \
                {k: v for k, v in task.items() if k in config_file.TASK_FIELDS}
            rows = task.get("reported", [])
            assert [{k: row[k] for k in declared} for declared, row in zip(rows, stored_task["reported"], strict=True)] == rows
            n_rows += len(rows)
    # ExpMRC Table 3: human + baselines; the human row of the hidden-inputs task.
    assert n_rows == ReportedResult.objects.count() == 2 * 9 + 2 * 7 + 1


def test_loading_the_demo_twice_changes_nothing():
    config_file.load(DEMO_FILE, data_root=FIXTURE_ROOT, log=quiet)
    before = database_state()
    out = io.StringIO()
    call_command("load_benchmark", str(DEMO_FILE), "--data-root", str(FIXTURE_ROOT), stdout=out)
    assert database_state() == before
    text = out.getvalue()
    assert "0 created, 0 updated" in text and "0 imported, 6 already present" in text, text
    assert "reported rows of expmrc-squad: 9 unchanged" in text


def test_a_dry_run_writes_nothing_and_says_what_would_change():
    out = io.StringIO()
    call_command("load_benchmark", str(DEMO_FILE), "--data-root", str(FIXTURE_ROOT), "--dry-run", stdout=out)
    assert "would be: " in out.getvalue() and "6 imported" in out.getvalue()
    assert "task expmrc-squad: created" in out.getvalue()
    assert Benchmark.objects.count() == Task.objects.count() == StoredTestSet.objects.count() == 0


# --------------------------------------------------------------------------- a maintainer's file


def write(tmp_path, text, name="bench.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


SMALL = """\
benchmarks:
  - slug: small
    name: Small benchmark
    tasks:
      - slug: small-squad
        name: Small SQuAD
        kind: span
        visibility: hidden
        ranking_rule: best_per_system
        daily_quota: 3
        accepts_submissions: false
        test_sets:
          - path: expmrc-squad-dev.json
            importer: expmrc
            version: 1
            change_note: First release.
        reported:
          - kind: human
            method: Annotators
            scores: {answer_f1: 91.5, evidence_f1: 90, overall_f1: 84}
            source: Our paper, Table 2
            date: 2024-05-01
"""


def test_visibility_ranking_rule_and_quota_from_the_file_land_on_the_task(tmp_path):
    path = write(tmp_path, SMALL)
    config_file.load(path, data_root=FIXTURES, log=quiet)
    task = Task.objects.get(slug="small-squad")
    assert (task.visibility, task.ranking_rule, task.daily_quota, task.accepts_submissions) == \
        ("hidden", "best_per_system", 3, False)
    test_set = task.current_test_set()
    assert (test_set.version, test_set.change_note, test_set.n_items) == ("1", "First release.", 3)
    row = task.reported_results.get()
    assert row.scores == {"answer_f1": 91.5, "evidence_f1": 90, "overall_f1": 84} and str(row.date) == "2024-05-01"

    # An edit of the file updates the task; a field the file stops mentioning keeps its value.
    write(tmp_path, SMALL.replace("visibility: hidden", "visibility: unlisted").replace("        daily_quota: 3\n", "")
          .replace("First release.", "First release (typo fixed)."))
    report = config_file.load(path, data_root=FIXTURES, log=quiet)
    task.refresh_from_db()
    assert (task.visibility, task.daily_quota) == ("unlisted", 3)
    assert ("task small-squad", "updated", "visibility") in report.outcomes
    assert task.current_test_set().change_note == "First release (typo fixed)."
    assert report.count("imported") == 0 and task.test_sets.count() == 1


def test_every_importer_is_reachable_from_a_file_and_a_reload_is_a_no_op(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("expmrc-c3-dev.json",):
        shutil.copy(FIXTURES / name, data / name)
    for name in ("nli_test.jsonl", "nli_reference.jsonl"):
        shutil.copy(ICQ / name, data / name)
    shutil.copy(QUACKIE_SQUAD_V2, data / "squad.json")
    (data / "suite.json").write_text(json.dumps({"tests": [
        mft("A is COMP than B. Who is more / less COMP?", "eq", [["A", "B"], ["C"]]),
        inv("Typos in the question", "inv", [2, 3])]}))
    (data / "results.json").write_text(json.dumps([
        {"dataset": "SQuAD", "classifier": "QA", "method": "Random", "IoU": 20.0, "HPD": 30.0, "SNR": 1.5,
         "info": "https://example.org/random"}]))
    path = write(tmp_path, """\
data_root: data
benchmarks:
  - slug: mixed
    name: Mixed
    tasks:
      - {slug: mixed-c3, name: C3, kind: multichoice, language: zh, test_sets: [
          {path: expmrc-c3-dev.json, importer: expmrc, version: v1},
          {path: expmrc-c3-dev.json, importer: expmrc, split: reference, version: r1}]}
      - {slug: mixed-nli, name: NLI, kind: classification, test_sets: [
          {path: nli_test.jsonl, importer: classification, version: v1},
          {path: nli_reference.jsonl, importer: classification, split: reference, version: r1}]}
      - {slug: mixed-checklist, name: Suite, kind: checklist, test_sets: [
          {path: suite.json, importer: checklist, version: "1"}]}
  - slug: quackie
    name: QUACKIE
    interpretation_sets: [{name: small-squad, version: "1", path: squad.json}]
    published_boards: [{path: results.json, format: quackie-leaderboard}]
""")
    report = config_file.load(path, log=quiet)
    assert report.count("imported") == 6
    splits = sorted(StoredTestSet.objects.values_list("task__slug", "split"))
    assert splits == [("mixed-c3", "reference"), ("mixed-c3", "test"), ("mixed-checklist", "dev"),
                      ("mixed-nli", "reference"), ("mixed-nli", "test")]
    # The checklist importer files the task where the file put it, and makes no benchmark of its own.
    assert sorted(Benchmark.objects.values_list("slug", flat=True)) == ["mixed", "quackie"]
    assert InterpretationSet.objects.get().name == "small-squad"
    board = Task.objects.get(slug="quackie-published-squad-qa")
    assert board.reported_results.get().scores == {"iou": 20.0, "hpd": 30.0, "snr": 1.5}

    before = database_state()
    again = config_file.load(path, log=quiet)
    assert database_state() == before
    assert again.count("imported") == again.count("created") == again.count("updated") == 0
    assert again.count("already present") == 6


def test_a_changed_file_under_an_existing_version_is_refused_and_nothing_is_written(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    squad = data / "expmrc-squad-dev.json"
    shutil.copy(FIXTURES / squad.name, squad)
    path = write(tmp_path, SMALL)
    config_file.load(path, data_root=data, log=quiet)
    before = database_state()
    squad.write_text(json.dumps(json.loads(squad.read_text(encoding="utf-8")), indent=3), encoding="utf-8")
    assert squad.read_bytes() != (FIXTURES / squad.name).read_bytes()  # same questions, other bytes
    write(tmp_path, SMALL.replace("name: Small SQuAD", "name: Renamed"))
    with pytest.raises(CommandError) as refused:
        call_command("load_benchmark", str(path), "--data-root", str(data), stdout=io.StringIO())
    line = SMALL.splitlines().index("            version: 1") + 1
    assert f"bench.yaml:{line}: benchmarks[0].tasks[0].test_sets[0].version: " in str(refused.value)
    assert "different checksum" in str(refused.value)
    assert database_state() == before  # the rename before the refusal was rolled back too


# --------------------------------------------------------------------------- bad files


def line_of(text, needle):
    return next(number for number, line in enumerate(text.splitlines(), start=1) if needle in line)


@pytest.mark.parametrize("edit, needle, field, problem", [
    (("kind: span", "kind: spann"), "kind: spann", "benchmarks[0].tasks[0].kind",
     "'spann' is not one of span, multichoice, interpretation, classification, checklist"),
    (("        name: Small SQuAD\n", ""), "- slug: small-squad", "benchmarks[0].tasks[0].name",
     "missing (a required field)"),
    (("daily_quota: 3", "daily_quota: three"), "daily_quota: three", "benchmarks[0].tasks[0].daily_quota",
     "expected a whole number >= 0, got text"),
    (("accepts_submissions: false", "accepts_submissions: [false]"), "accepts_submissions",
     "benchmarks[0].tasks[0].accepts_submissions", "expected true or false, got a list"),
    (("visibility: hidden", "visiblity: hidden"), "visiblity", "benchmarks[0].tasks[0].visiblity",
     "unknown field 'visiblity' (did you mean 'visibility'?)"),
    (("overall_f1: 84}", "overall_f1: 84, pass_rate: 3}"), "pass_rate", "benchmarks[0].tasks[0].reported[0].scores",
     "pass_rate: not a score column of this task (answer_f1, evidence_f1, overall_f1)"),
    (("importer: expmrc", "importer: checklist"), "importer: checklist",
     "benchmarks[0].tasks[0].test_sets[0].importer", "the checklist importer makes checklist test sets, not span"),
    (("date: 2024-05-01", "date: last May"), "date: last May", "benchmarks[0].tasks[0].reported[0].date",
     "expected a date like 2022-01-31"),
    (("path: expmrc-squad-dev.json", "path: missing.json"), "path: missing.json",
     "benchmarks[0].tasks[0].test_sets[0].path", "no such file"),
])
def test_a_bad_file_is_refused_with_the_line_and_the_field(tmp_path, edit, needle, field, problem):
    text = SMALL.replace(*edit)
    assert text != SMALL
    path = write(tmp_path, text)
    with pytest.raises(CommandError) as refused:
        call_command("load_benchmark", str(path), "--data-root", str(FIXTURES), stdout=io.StringIO())
    message = str(refused.value)
    assert f"bench.yaml:{line_of(text, needle)}: {field}: {problem}" in message, message
    assert Benchmark.objects.count() == Task.objects.count() == 0


def test_every_problem_of_a_file_is_listed_in_line_order(tmp_path):
    text = SMALL.replace("kind: span", "kind: spann").replace("name: Small benchmark", "name: [x]")
    with pytest.raises(ConfigError) as refused:
        config_file.read(write(tmp_path, text))
    lines = str(refused.value).splitlines()
    assert [line.split(":")[1] for line in lines] == [str(line_of(text, "name: [x]")), str(line_of(text, "spann"))]


@pytest.mark.parametrize("text, expected", [
    ("benchmarks:\n  - slug: a\n    name: A\n    tasks:\n      - slug: t\n        name: [unclosed\n",
     "bench.yaml:7: not valid YAML"),
    ("", "bench.yaml:1: the file is empty"),
    ("benchmarks:\n  - slug: a\n    name: A\n  - slug: a\n    name: Again\n",
     "bench.yaml:4: benchmarks[1].slug: benchmark a is declared twice (first at line 2)"),
    ("benchmarks:\n  - slug: a\n    name: A\n    name: B\n", "bench.yaml:4: benchmarks[0].name: given twice"),
    ("benchmarks:\n  - slug: not a slug\n    name: A\n", "bench.yaml:2: benchmarks[0].slug: 'not a slug' is not a slug"),
    ("benchmarks: {slug: a}\n", "bench.yaml:1: benchmarks: expected a list, got a mapping"),
    ("- slug: a\n", "bench.yaml:1: (top level): expected a mapping of fields, got a list"),
])
def test_malformed_yaml_and_duplicates_are_refused_with_their_line(tmp_path, text, expected):
    with pytest.raises(ConfigError) as refused:
        config_file.read(write(tmp_path, text))
    assert expected in str(refused.value), str(refused.value)


def test_a_missing_file_is_refused_by_the_command(tmp_path):
    with pytest.raises(CommandError, match=r"absent\.yaml: cannot read it: No such file"):
        call_command("load_benchmark", str(tmp_path / "absent.yaml"), stdout=io.StringIO())
