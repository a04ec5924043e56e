"""`manage.py load_benchmark` on a file with many faults: every one is listed in one run, in line
order, with its line and field; nothing is written; no traceback, even for a date that does not
exist; and the messages of the importers say what they expect."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from benchmark import config_file
from benchmark.models import Benchmark, ReportedResult, Task
from scoring.strict_json import InvalidJson, loads_json
from tests.factories import synthetic_span_gold

pytestmark = pytest.mark.django_db

FAULTY = """\
benchmarks:
  - slug: faulty
    name: Faulty
    tasks:
      - slug: t1
        name: T1
        kind: span
        langauge: en
        test_sets:
          - {path: missing.json, importer: expmrc, split: test, version: v1}
        reported:
          - {kind: human, method: H, scores: {answer_f1: 90}, source: paper, date: 2022-13-01}
      - slug: t2
        name: T2
        kind: spam
      - slug: t3
        name: T3
        kind: span
        test_sets:
          - {path: broken.json, importer: expmrc, split: test, version: v1}
          - {path: old-version.json, importer: expmrc, split: test, version: v2}
      - slug: t4
        name: T4
        kind: span
        test_sets:
          - {path: good.json, importer: expmrc, split: test, version: v1}
        reported:
          - {kind: human, method: H, scores: {answer_f1: 90}, source: paper, date: 2022-02-30}
"""


def faulty_folder(tmp_path):
    (tmp_path / "bench.yaml").write_text(FAULTY, encoding="utf-8")
    (tmp_path / "broken.json").write_text('{"version": "expmrc-squad", "data": [{"title": "unterminated', encoding="utf-8")
    (tmp_path / "old-version.json").write_text(json.dumps({"version": "1.1", "data": []}), encoding="utf-8")
    (tmp_path / "good.json").write_text(json.dumps(synthetic_span_gold(5)), encoding="utf-8")
    return tmp_path / "bench.yaml"


def line_of(needle):
    return next(number for number, line in enumerate(FAULTY.splitlines(), start=1) if needle in line)


def test_every_fault_of_a_file_is_listed_in_one_run_and_nothing_is_written(tmp_path):
    path = faulty_folder(tmp_path)
    out = io.StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("load_benchmark", str(path), stdout=out)
    lines = str(refused.value).splitlines()
    expected = [
        f"bench.yaml:{line_of('langauge')}: benchmarks[0].tasks[0].langauge: unknown field 'langauge' "
        "(did you mean 'language'?)",
        f"bench.yaml:{line_of('missing.json')}: benchmarks[0].tasks[0].test_sets[0].path: no such file "
        f"{tmp_path / 'missing.json'} (mark it optional: true to skip it)",
        f"bench.yaml:{line_of('2022-13-01')}: benchmarks[0].tasks[0].reported[0].date: '2022-13-01' is no date "
        "(month must be in 1..12); expected a date like 2022-01-31",
        f"bench.yaml:{line_of('kind: spam')}: benchmarks[0].tasks[1].kind: 'spam' is not one of",
        f"bench.yaml:{line_of('broken.json')}: benchmarks[0].tasks[2].test_sets[0].path: broken.json: not JSON: "
        "Unterminated string starting at line 1, column",
        f"bench.yaml:{line_of('old-version.json')}: benchmarks[0].tasks[2].test_sets[1].path: old-version.json: "
        "Unsupported version: '1.1'. The official scorer reads the task from the \"version\" string",
        f"bench.yaml:{line_of('2022-02-30')}: benchmarks[0].tasks[3].reported[0].date: '2022-02-30' is no date",
    ]
    assert len(lines) == len(expected) + 1, lines
    for line, start in zip(lines, expected, strict=False):
        assert line.startswith(start), (line, start)
    assert lines[-1] == "The file was refused: nothing was written."
    # The valid task t4 and its test set were tried (that is how the others' faults were found),
    # then rolled back with the rest; the log does not claim what was not written.
    assert Benchmark.objects.count() == Task.objects.count() == ReportedResult.objects.count() == 0
    assert "created" not in out.getvalue()


def test_a_date_that_does_not_exist_is_a_problem_not_a_crash(tmp_path):
    path = tmp_path / "bench.yaml"
    text = FAULTY.split("      - slug: t2")[0].replace("        langauge: en\n", "").replace("missing.json", "good.json")
    path.write_text(text, encoding="utf-8")
    line = text.splitlines().index(next(row for row in text.splitlines() if "2022-13-01" in row)) + 1
    (tmp_path / "good.json").write_text(json.dumps(synthetic_span_gold(5)), encoding="utf-8")
    with pytest.raises(config_file.ConfigError) as refused:
        config_file.read(path)
    assert str(refused.value) == (f"bench.yaml:{line}: benchmarks[0].tasks[0].reported[0].date: "
                                  "'2022-13-01' is no date (month must be in 1..12); expected a date like 2022-01-31")
    fixed = path.read_text(encoding="utf-8").replace("2022-13-01", "2022-12-01")
    path.write_text(fixed, encoding="utf-8")
    config_file.load(path, log=lambda line: None)
    assert str(ReportedResult.objects.get().date) == "2022-12-01"


@pytest.mark.parametrize("text, message", [
    ('{"a": "abc', "Unterminated string starting at line 1, column 7"),
    ('{"a": "a\tb"}', "Invalid control character at line 1, column 9"),
    ('{"a": 1,}', "Expecting property name enclosed in double quotes at line 1, column 9"),
])
def test_json_errors_say_at_once(text, message):
    with pytest.raises(InvalidJson) as refused:
        loads_json(text)
    assert str(refused.value) == message and "at at" not in str(refused.value)
