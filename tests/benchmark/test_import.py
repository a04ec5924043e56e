"""Importing versioned hidden test sets (`import_expmrc`) and the demo loader (`load_demo`)."""
import hashlib
import io
import json

import pytest
from django.core.management import CommandError, call_command

from benchmark.importers import (
    ImportRefused,
    import_checklist,
    import_classification,
    import_multichoice_reference,
    read_expmrc_json,
)
from benchmark.models import ReportedResult, Task
from benchmark.models import TestSet as HiddenSet  # not "Test*": pytest would try to collect it
from benchmark.quackie_tracks import import_quackie
from tests.factories import FIXTURE_TASKS, FIXTURES, fixture_gold, make_task

pytestmark = pytest.mark.django_db

SQUAD = FIXTURES / "expmrc-squad-dev.json"
RACE = FIXTURES / "expmrc-race-dev.json"


def run_import(path, task="expmrc-squad", version="v1", *extra):
    out = io.StringIO()
    call_command("import_expmrc", str(path), "--task", task, "--split", "test", "--version", version, *extra,
                 stdout=out)
    return out.getvalue()


def create_squad(version="v1", path=SQUAD):
    return run_import(path, "expmrc-squad", version, "--name", "SQuAD", "--language", "en")


def keys_anywhere(value):
    """Every dict key in a nested JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from keys_anywhere(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys_anywhere(item)


def write_json(path, obj):
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return path


def edited_squad(tmp_path, name="squad-v2.json"):
    """The SQuAD fixture with one evidence changed: same structure, different checksum."""
    gold = fixture_gold("expmrc-squad")
    gold["data"][0]["paragraphs"][0]["qas"][0]["evidences"].append("built in 1874")
    return write_json(tmp_path / name, gold)


# --------------------------------------------------------------------------- import_expmrc


def test_import_creates_task_and_hidden_test_set_with_checksum():
    output = create_squad()
    task = Task.objects.get(slug="expmrc-squad")
    assert (task.name, task.kind, task.language, task.benchmark.slug) == ("SQuAD", "span", "en", "expmrc")
    test_set = HiddenSet.objects.get(task=task)
    assert test_set.split == HiddenSet.TEST and test_set.version == "v1" and test_set.is_current
    assert test_set.checksum == hashlib.sha256(SQUAD.read_bytes()).hexdigest()
    assert test_set.n_items == 3
    assert test_set.source_name == SQUAD.name
    assert test_set.gold == fixture_gold("expmrc-squad")
    assert test_set.key_spec["keys"] == ["fx-squad-1", "fx-squad-2", "fx-squad-3"]
    assert "imported" in output and test_set.checksum in output
    assert task.current_test_set().pk == test_set.pk


@pytest.mark.parametrize("slug", sorted(FIXTURE_TASKS))
def test_public_inputs_hold_no_answers_or_evidences(slug):
    test_set = make_task(slug).test_sets.get()
    keys = set(keys_anywhere(test_set.public_inputs))
    assert not keys & {"answers", "evidences", "answer_start"}
    gold = fixture_gold(slug)
    assert test_set.public_inputs["version"] == gold["version"]
    if test_set.task.kind == "multichoice":
        assert test_set.key_spec["option_letters"] == "ABCD"
        for public, hidden in zip(test_set.public_inputs["data"], gold["data"], strict=True):
            assert public == {k: hidden[k] for k in ("id", "article", "questions", "options")}
    else:
        questions = [qa for a in test_set.public_inputs["data"] for p in a["paragraphs"] for qa in p["qas"]]
        assert [qa["id"] for qa in questions] == test_set.key_spec["keys"]
        assert all(set(qa) == {"id", "question"} for qa in questions)


def test_importing_the_same_file_and_version_again_is_a_no_op():
    create_squad()
    first = HiddenSet.objects.get()
    output = create_squad()
    again = HiddenSet.objects.get()
    assert again.pk == first.pk and again.imported_at == first.imported_at and again.is_current
    assert "nothing to do" in output
    assert Task.objects.count() == 1


def test_same_version_with_a_different_file_is_refused(tmp_path):
    create_squad()
    with pytest.raises(CommandError, match=r"version v1 already exists with a different checksum.*--version"):
        create_squad(path=edited_squad(tmp_path))
    stored = HiddenSet.objects.get()
    assert stored.checksum == hashlib.sha256(SQUAD.read_bytes()).hexdigest()
    assert stored.gold == fixture_gold("expmrc-squad")


def test_a_new_version_becomes_current_and_the_old_one_not(tmp_path):
    create_squad("v1")
    run_import(edited_squad(tmp_path), "expmrc-squad", "v2")  # the task exists: no --name needed
    v1, v2 = (HiddenSet.objects.get(version=v) for v in ("v1", "v2"))
    assert v2.is_current and not v1.is_current
    assert Task.objects.get(slug="expmrc-squad").current_test_set().version == "v2"
    # Re-importing the old version's file is a no-op: it does not silently become current again.
    create_squad("v1")
    assert HiddenSet.objects.get(version="v2").is_current and not HiddenSet.objects.get(version="v1").is_current


def test_a_dev_split_does_not_replace_the_hidden_current_set(tmp_path):
    create_squad("v1")
    out = io.StringIO()
    call_command("import_expmrc", str(edited_squad(tmp_path)), "--task", "expmrc-squad", "--split", "dev",
                 "--version", "d1", stdout=out)
    assert Task.objects.get(slug="expmrc-squad").current_test_set().version == "v1"
    assert HiddenSet.objects.get(version="d1").split == HiddenSet.DEV


def _squad_without_evidences():
    gold = fixture_gold("expmrc-squad")
    del gold["data"][0]["paragraphs"][0]["qas"][1]["evidences"]
    return json.dumps(gold).encode()


def _squad_with_version(version):
    gold = fixture_gold("expmrc-squad")
    gold["version"] = version
    return json.dumps(gold).encode()


def _race_with_bad_letter():
    gold = fixture_gold("expmrc-race")
    gold["data"][1]["answers"][0] = "E"
    return json.dumps(gold).encode()


@pytest.mark.parametrize(
    "content, expected",
    [
        (b'{"version": "expmrc-squad-x",\n "data": [}', r"bad\.json: not JSON: .* at line 2, column \d+"),
        (b'{"version": "expmrc-squad-x", "data": [' + b"7" * 5000 + b"]}",
         r"bad\.json: not JSON: a number has more than 4300 digits$"),
        (b"[" * 100_000 + b"]" * 100_000, r"bad\.json: not JSON: nested too deeply$"),
        (b'{"version": "expmrc-squad-\xff", "data": []}', r"bad\.json: not UTF-8 \(byte 26\)"),
        (b"[]", r"bad\.json: top level must be a JSON object, found (an )?array"),
        (_squad_without_evidences(), r"bad\.json: data\[0\]\.paragraphs\[0\]\.qas\[1\]\.evidences is missing"),
        (_squad_with_version("1.1"), r"bad\.json: Unsupported version: '1\.1'"),
        (_squad_with_version("expmrc-squad-x").replace(b'"data"', b'"items"'), r"bad\.json: data is missing"),
        (b'{"version": "expmrc-squad-x", "data": []}', r"bad\.json: data holds no questions"),
        (_race_with_bad_letter(), r"bad\.json: data\[1\]\.answers\[0\] must be one of the question's option letters A, B, C, D$"),
    ],
    ids=["not-json", "too-long-integer", "too-deep", "not-utf8", "not-object", "missing-evidences", "unsupported-version", "no-data", "empty",
         "bad-letter"],
)
def test_malformed_files_are_refused_clearly_and_nothing_is_created(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(CommandError, match=expected):
        run_import(path, "expmrc-new", "v1", "--name", "New task")
    assert Task.objects.count() == 0 and HiddenSet.objects.count() == 0


@pytest.mark.parametrize("content, fragment", [
    (b'{"data": [' + b"7" * 5000 + b"]}", "a number has more than 4300 digits"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
], ids=["too-long-integer", "too-deep"])
def test_every_importer_refuses_json_that_fails_without_a_decode_error(tmp_path, content, fragment):
    """json.loads refuses these with a plain ValueError / RecursionError: each importer must
    still end in ImportRefused (a clean command error), not a traceback."""
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    make_task("expmrc-race")
    importers = [
        lambda: read_expmrc_json(path),
        lambda: import_multichoice_reference(path, task_slug="expmrc-race", version="r1"),
        lambda: import_classification(path, task_slug="nli-new", split="test", version="1", task_name="NLI"),
        lambda: import_checklist(path, task_slug="checklist-new", version="1"),
        lambda: import_quackie(path, name="quackie-new", version="1"),
    ]
    for importer in importers:
        with pytest.raises(ImportRefused) as info:
            importer()
        assert "bad.json" in str(info.value) and fragment in str(info.value)
        assert "\n" not in str(info.value)


def test_refusal_does_not_quote_the_gold_value(tmp_path):
    """A malformed gold letter is named by its place and the allowed letters, never by its value."""
    gold = fixture_gold("expmrc-race")
    gold["data"][0]["answers"][1] = "Her neighbour asked"
    with pytest.raises(CommandError) as info:
        run_import(write_json(tmp_path / "race.json", gold), "expmrc-race", "v1", "--name", "RACE+")
    assert "data[0].answers[1]" in str(info.value) and "Her neighbour" not in str(info.value)


def test_kind_mismatch_with_an_existing_task_is_refused():
    create_squad()
    with pytest.raises(CommandError, match=r"expmrc-race-dev\.json is a multichoice set but task expmrc-squad is span"):
        run_import(RACE, "expmrc-squad", "v2")
    assert HiddenSet.objects.count() == 1 and HiddenSet.objects.get().version == "v1"


def test_creating_a_task_needs_a_name():
    with pytest.raises(CommandError, match=r"no task 'expmrc-squad'; pass --name"):
        run_import(SQUAD, "expmrc-squad", "v1")
    assert Task.objects.count() == 0 and HiddenSet.objects.count() == 0


def test_unreadable_file_is_refused(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        run_import(tmp_path / "missing.json", "expmrc-squad", "v1", "--name", "SQuAD")


def test_version_is_required():
    with pytest.raises(CommandError, match="--version"):
        call_command("import_expmrc", str(SQUAD), "--task", "expmrc-squad")


# --------------------------------------------------------------------------- load_demo


def demo_counts():
    return (Task.objects.count(), HiddenSet.objects.count(), ReportedResult.objects.count(),
            sorted(HiddenSet.objects.values_list("task__slug", "version", "checksum", "is_current")))


def test_load_demo_is_idempotent_with_the_bundled_fixtures():
    call_command("load_demo", "--data-dir", str(FIXTURES), stdout=io.StringIO())
    first = demo_counts()
    out = io.StringIO()
    call_command("load_demo", "--data-dir", str(FIXTURES), stdout=out)
    assert demo_counts() == first
    assert "already present" in out.getvalue()
    n_tasks, n_sets, n_reported, sets = first
    # The four ExpMRC subsets, and the hidden-inputs SQuAD task with its test split and public sample.
    assert n_tasks == 5 and n_sets == 6
    assert Task.objects.get(slug="expmrc-squad-hidden").inputs_hidden
    # Human + 8 baselines for the span sets, human + 6 for the multi-choice sets (paper Table 3),
    # the human row of the hidden-inputs task.
    assert n_reported == 2 * 9 + 2 * 7 + 1
    assert all(is_current for *_, is_current in sets)


@pytest.mark.parametrize(
    "slug, kind, answer_key, n_items",
    [("expmrc-squad", "span", "answer_f1", 3), ("expmrc-cmrc2018", "span", "answer_f1", 2),
     ("expmrc-race", "multichoice", "answer_acc", 3), ("expmrc-c3", "multichoice", "answer_acc", 2)],
)
def test_load_demo_rows_per_task(slug, kind, answer_key, n_items):
    call_command("load_demo", "--data-dir", str(FIXTURES), stdout=io.StringIO())
    task = Task.objects.get(slug=slug)
    assert task.kind == kind and task.answer_metric == answer_key
    assert task.current_test_set().n_items == n_items
    rows = list(task.reported_results.all())
    humans = [r for r in rows if r.kind == ReportedResult.HUMAN]
    baselines = [r for r in rows if r.kind == ReportedResult.BASELINE]
    assert len(humans) == 1 and baselines
    for row in rows:
        assert set(row.scores) == {answer_key, "evidence_f1", "overall_f1"}, row.method
        assert row.source and row.url
    # Human beats every baseline on the ranking metric in the paper.
    assert all(humans[0].scores["overall_f1"] > b.scores["overall_f1"] for b in baselines)


def test_load_demo_falls_back_to_the_fixtures_when_the_data_dir_is_missing(tmp_path):
    out = io.StringIO()
    call_command("load_demo", "--data-dir", str(tmp_path / "absent"), stdout=out)
    assert "bundled fixtures" in out.getvalue()
    assert HiddenSet.objects.count() == 6  # four subsets; the hidden-inputs task's test split and sample


def test_load_demo_survives_a_change_of_data_source(tmp_path):
    """First run on the fixtures, later run on other data (e.g. ../shared/data appeared): the
    demo must still start, and the new data becomes the current test set."""
    call_command("load_demo", "--data-dir", str(FIXTURES), stdout=io.StringIO())
    data = tmp_path / "expmrc"
    data.mkdir()
    for _, _, filename in FIXTURE_TASKS.values():
        (data / filename).write_bytes((FIXTURES / filename).read_bytes())
    edited_squad(data, "expmrc-squad-dev.json")
    call_command("load_demo", "--data-dir", str(data), stdout=io.StringIO())
    squad = Task.objects.get(slug="expmrc-squad")
    current = squad.current_test_set()
    assert current.checksum == hashlib.sha256((data / "expmrc-squad-dev.json").read_bytes()).hexdigest()
    assert squad.test_sets.count() == 2
    # Running again on either source changes nothing (sets already imported are left as they are).
    before = demo_counts()
    call_command("load_demo", "--data-dir", str(data), stdout=io.StringIO())
    call_command("load_demo", "--data-dir", str(FIXTURES), stdout=io.StringIO())
    assert demo_counts() == before
