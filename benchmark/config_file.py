"""Benchmarks declared in a YAML file instead of Python (docs/benchmarks_config.md).

``read`` parses a file, keeping the line of every value, and validates it into a
:class:`BenchmarkFile`; a bad file is refused with ``file:line: field: problem`` for each
problem found, before anything is written. ``apply`` creates or updates what the file declares:
benchmarks, tasks and reported rows with update-or-create on their natural keys, test sets and
interpretation sets through the importers, so the same file again is a no-op (per checksum) and
other bytes under an existing version are refused. A field the file leaves out keeps the value it
has in the database (the model's default for a new object), so what maintainers change in the
admin and the file does not mention survives a reload.

Why this module is long: the schema, its validation with line numbers, the loading and the dump
that the round-trip test compares are one format; split up, they would drift apart.
"""
import difflib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator, validate_slug
from django.db import models, transaction

from . import kinds, quackie_tracks
from .importers import (
    ImportRefused,
    import_checklist,
    import_classification,
    import_expmrc,
    import_multichoice_reference,
    read_expmrc_json,
)
from .models import (
    Benchmark,
    InputsAccess,
    InterpretationSet,
    Phase,
    RankingRule,
    ReportedResult,
    Task,
    TestSet,
    Visibility,
)

# ``data_root: "{shared_data}"`` in a file stands for the server's shared data folder
# (EXPBENCH_SHARED_DATA, see docs/operations.md).
SHARED_DATA = "{shared_data}"
BOARD_FORMATS = {"quackie-leaderboard": "quackie"}  # format -> the benchmark whose boards it holds
VERSION_TAKEN = ("refuse", "add_checksum")
_ISO_DATE_SHAPE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MESSAGE_LINE = re.compile(r"^[^:\n]*:(\d+):")


class ConfigError(Exception):
    """A file refused: the message holds one ``file:line: field: problem`` line per problem."""


class _Problem(Exception):
    """A value that does not fit its field; the message says why."""


# --------------------------------------------------------------------------- the parsed file


@dataclass(frozen=True)
class Place:
    """Where a declaration is in the file (and the lines of its fields), for error messages."""
    file: str
    line: int
    where: str
    field_lines: tuple[tuple[str, int], ...] = ()

    def __call__(self, problem: str, field_name: str = "") -> str:
        if not field_name:
            return f"{self.file}:{self.line}: {self.where}: {problem}"
        line = dict(self.field_lines).get(field_name, self.line)
        return f"{self.file}:{line}: {self.where}.{field_name}: {problem}"


@dataclass(frozen=True)
class TestSetEntry:
    place: Place
    path: str
    importer: str
    split: str
    version: str
    change_note: str | None
    optional: bool
    version_taken: str


@dataclass(frozen=True)
class ReportedEntry:
    place: Place
    kind: str
    method: str
    fields: dict[str, Any]  # the other ReportedResult fields the file sets (order always)


@dataclass(frozen=True)
class PhaseEntry:
    place: Place
    name: str
    fields: dict[str, Any]  # the other Phase fields the file sets (starts_at and ends_at always)


@dataclass(frozen=True)
class TaskEntry:
    place: Place
    slug: str
    fields: dict[str, Any]  # the Task fields the file sets (name and kind always)
    test_sets: list[TestSetEntry]
    reported: list[ReportedEntry]
    phases: list[PhaseEntry] = field(default_factory=list)


@dataclass(frozen=True)
class FileEntry:
    """An interpretation set or a published-boards file of a benchmark."""
    place: Place
    path: str
    optional: bool
    options: dict[str, str]  # name and version of an interpretation set, format of a boards file


@dataclass(frozen=True)
class BenchmarkEntry:
    place: Place
    slug: str
    fields: dict[str, Any]
    data_dir: str | None
    tasks: list[TaskEntry]
    interpretation_sets: list[FileEntry]
    published_boards: list[FileEntry]
    # Test sets of tasks refused for other problems: their files are still looked for, so that
    # one run reports a missing file beside the task's own problem.
    unchecked_files: list[TestSetEntry] = field(default_factory=list)


@dataclass(frozen=True)
class BenchmarkFile:
    path: Path
    data_root: str | None
    benchmarks: list[BenchmarkEntry]
    # (line, message) of each problem found while reading (``read_all``); the entries above are
    # the valid ones, so that a load can still find the faults of the files they name.
    problems: list[tuple[int, str]] = field(default_factory=list)

    def only(self, slugs: set[str], data_dirs: dict[str, Path] | None = None) -> "BenchmarkFile":
        """The benchmarks ``slugs`` of this file, their files read from ``data_dirs`` where given
        (folders relative to the working directory, not to the data root)."""
        dirs = {slug: str(Path(path).absolute()) for slug, path in (data_dirs or {}).items()}
        return replace(self, benchmarks=[replace(b, data_dir=dirs.get(b.slug, b.data_dir))
                                         for b in self.benchmarks if b.slug in slugs])


# --------------------------------------------------------------------------- field checks


def _kind_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, date):
        return f"the date {value}"
    if isinstance(value, dict):
        return "a mapping"
    return "a list" if isinstance(value, list) else "text" if isinstance(value, str) else type(value).__name__


def _model_field(model: type[models.Model], name: str) -> models.Field:
    found = model._meta.get_field(name)
    assert isinstance(found, models.Field), f"{model.__name__}.{name} is a relation, not a column"
    return found


def _text(model: type[models.Model] | None = None, name: str = "") -> Callable[[Any], Any]:
    limit = _model_field(model, name).max_length if model else None

    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise _Problem(f"expected text, got {_kind_of(value)}")
        if limit is not None and len(value) > limit:
            raise _Problem(f"{len(value)} characters, more than the {limit} it holds")
        return value
    return check


def _version(model: type[models.Model]) -> Callable[[Any], Any]:
    text = _text(model, "version")

    def check(value: Any) -> str:
        # A whole number reads the same as text; 1.10 would become 1.1, so a float is refused.
        if isinstance(value, float):
            raise _Problem(f"read as the number {value}: quote a version to keep it as written (\"1.10\")")
        return text(str(value) if isinstance(value, int) and not isinstance(value, bool) else value)
    return check


def _slug(model: type[models.Model], name: str = "slug") -> Callable[[Any], Any]:
    text = _text(model, name)

    def check(value: Any) -> str:
        try:
            validate_slug(text(value))
        except ValidationError:
            raise _Problem(f"{value!r} is not a slug (letters, digits, - and _)") from None
        return value
    return check


def _choice(choices: list[str] | tuple[str, ...] | Callable[[], list[str]]) -> Callable[[Any], Any]:
    """A check that the value is one of ``choices`` (a callable: read at each check, e.g. the
    kinds registered now)."""
    def check(value: Any) -> str:
        allowed = choices() if callable(choices) else choices
        if value not in allowed:
            raise _Problem(f"{value!r} is not one of {', '.join(allowed)}")
        return value
    return check


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Problem(f"expected true or false, got {_kind_of(value)}")
    return value


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Problem(f"expected a whole number >= 0, got {_kind_of(value)}")
    return value


def _count_or_null(value: Any) -> int | None:
    return None if value is None else _count(value)


# cpu_seconds, memory_mb, wall_seconds: one model run; scoring_cpu_seconds: scoring one prediction file.
MODEL_BUDGET_KEYS = ("cpu_seconds", "memory_mb", "wall_seconds", "scoring_cpu_seconds")


def _model_budget(value: Any) -> dict[str, int]:
    """``{cpu_seconds, memory_mb, wall_seconds}``, each a positive whole number (any may be left
    out: the site default)."""
    if not isinstance(value, dict):
        raise _Problem(f"expected a mapping of {', '.join(MODEL_BUDGET_KEYS)}, got {_kind_of(value)}")
    unknown = sorted(set(value) - set(MODEL_BUDGET_KEYS))
    if unknown:
        raise _Problem(f"unknown key {unknown[0]!r}; the budget has {', '.join(MODEL_BUDGET_KEYS)}")
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise _Problem(f"{key}: expected a whole number of at least 1, got {number!r}")
    return dict(value)


def _url(value: Any) -> str:
    text = _text(ReportedResult, "url")(value)
    if text:
        try:
            URLValidator()(text)
        except ValidationError:
            raise _Problem(f"{text!r} is not a URL") from None
    return text


def _date(value: Any) -> date | None:
    if value is None or (isinstance(value, date) and not isinstance(value, datetime)):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError as exc:
            if _ISO_DATE_SHAPE.match(value):  # shaped like a date, but no such day: say why
                raise _Problem(f"{value!r} is no date ({exc}); expected a date like 2022-01-31") from None
    raise _Problem(f"expected a date like 2022-01-31, got {_kind_of(value)}")


def _utc_datetime(value: Any) -> datetime:
    """A moment in UTC: ``2026-12-01T00:00:00Z`` (a time zone is required, so that no reader
    guesses which one was meant)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return moment.astimezone(UTC)
    raise _Problem(f"expected a moment with its time zone, like 2026-12-01T00:00:00Z, got {_kind_of(value)}")


def _share(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise _Problem(f"expected a share from 0 to below 1 (0.5: half the items private), got {_kind_of(value)}")
    return float(value)


def _scores(value: Any) -> dict[str, float]:
    if not isinstance(value, dict) or not value:
        raise _Problem(f"expected a mapping of score columns to numbers, got {_kind_of(value)}")
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise _Problem(f"{key}: expected a number, got {_kind_of(number)}")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _Problem(f"expected a list, got {_kind_of(value)}")
    return value


# (check, required) per field; the first group of each level is stored on the model as is.
BENCHMARK_FIELDS = {"slug": (_slug(Benchmark), True), "name": (_text(Benchmark, "name"), True),
                    "description": (_text(), False), "url": (_url, False), "citation": (_text(), False),
                    "order": (_count, False), "license": (_text(Benchmark, "license"), False),
                    "license_url": (_url, False), "overview": (_text(), False), "evaluation": (_text(), False),
                    "terms": (_text(), False)}
BENCHMARK_KEYS = {**BENCHMARK_FIELDS, "data_dir": (_text(), False), "tasks": (_list, False),
                  "interpretation_sets": (_list, False), "published_boards": (_list, False)}
TASK_FIELDS = {"slug": (_slug(Task), True), "name": (_text(Task, "name"), True),
               "kind": (_choice(kinds.names), True),
               "language": (_choice([k for k, _ in Task.LANGUAGE_CHOICES]), False),
               "description": (_text(), False), "order": (_count, False),
               "visibility": (_choice(Visibility.values), False),
               "ranking_rule": (_choice(RankingRule.values), False),
               "accepts_submissions": (_boolean, False), "daily_quota": (_count_or_null, False),
               "inputs": (_choice(InputsAccess.values), False), "model_max_bytes": (_count_or_null, False),
               "model_budget": (_model_budget, False), "requires_code_url": (_boolean, False),
               "requires_paper_url": (_boolean, False), "public_predictions": (_boolean, False),
               "public_model_files": (_boolean, False)}
TASK_KEYS = {**TASK_FIELDS, "test_sets": (_list, False), "reported": (_list, False), "phases": (_list, False)}
PHASE_FIELDS = {"name": (_text(Phase, "name"), True), "starts_at": (_utc_datetime, True),
                "ends_at": (_utc_datetime, True), "daily_quota": (_count_or_null, False),
                "total_quota": (_count_or_null, False), "live_board": (_boolean, False),
                "private_share": (_share, False), "split_seed": (_count, False)}
TEST_SET_KEYS = {"path": (_text(), True), "importer": (_choice(lambda: importer_names()), True),
                 "split": (_choice([k for k, _ in TestSet.SPLIT_CHOICES]), False),
                 "version": (_version(TestSet), True), "change_note": (_text(), False),
                 "optional": (_boolean, False), "version_taken": (_choice(VERSION_TAKEN), False)}
REPORTED_FIELDS = {"kind": (_choice([k for k, _ in ReportedResult.KIND_CHOICES]), True),
                   "method": (_text(ReportedResult, "method"), True),
                   "team": (_text(ReportedResult, "team"), False), "scores": (_scores, True),
                   "source": (_text(ReportedResult, "source"), True), "url": (_url, False),
                   "note": (_text(), False), "date": (_date, False), "order": (_count, False)}
INTERPRETATION_SET_KEYS = {"name": (_slug(InterpretationSet, "name"), True),
                           "version": (_version(InterpretationSet), True), "path": (_text(), True),
                           "optional": (_boolean, False)}
BOARDS_KEYS = {"path": (_text(), True), "format": (_choice(list(BOARD_FORMATS)), True),
               "optional": (_boolean, False)}


# --------------------------------------------------------------------------- reading


def importer_names() -> list[str]:
    """The importers the registered kinds name, in the order of the kinds."""
    return list(dict.fromkeys(kind.importer for kind in kinds.registered() if kind.importer))


def _importer_mismatch(importer: str, split: str, kind: str) -> tuple[str, str] | None:
    """(field, problem) when a test set entry cannot make a test set of a ``kind`` task."""
    definition = kinds.get(kind)
    if not definition.importer:
        return "", f"an {kind} task gets its test set from elsewhere (a QUACKIE track), not from a file"
    if definition.importer != importer:
        makes = " or ".join(kinds.names(lambda other: other.importer == importer))
        return "importer", f"the {importer} importer makes {makes} test sets, not {kind} ones"
    if definition.scored_split == TestSet.DEV and split != TestSet.DEV:
        return "split", f"{definition.label} items are public: the split is dev"
    if split == TestSet.REFERENCE and not definition.icq_format:
        with_cues = " or ".join(kinds.names(lambda other: bool(other.icq_format)))
        return "split", f"a reference split (for ICQ cue discovery) needs a {with_cues} task"
    return None


def _scalar(node: yaml.Node, where: str, constructor: yaml.SafeLoader, problems: list[tuple[int, str]]) -> Any:
    """The value of a scalar; its text when YAML cannot build it (2022-13-01 resolves to a date
    that does not exist), so that the field's own check says what is wrong, beside the others."""
    try:
        return constructor.construct_object(node, deep=True)
    except ValueError:
        return node.value
    except yaml.constructor.ConstructorError as exc:
        line = node.start_mark.line + 1
        problems.append((line, f"{constructor.name}:{line}: {where or '(top level)'}: {exc.problem}"))
        return None


def _plain(node: yaml.Node, where: str, lines: dict[str, int], constructor: yaml.SafeLoader,
           problems: list[tuple[int, str]]) -> Any:
    """The Python value of ``node``; records the line of every value (of its key in a mapping)
    and every problem of the YAML itself in ``problems``, reading on."""
    lines.setdefault(where, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        own = {id(key_node) for key_node, _ in node.value}
        constructor.flatten_mapping(node)  # merge keys (<<: *anchor) come first, own keys override them
        result: dict[str, Any] = {}
        merged: set[str] = set()
        for key_node, value_node in node.value:
            key = _scalar(key_node, where, constructor, problems) if isinstance(key_node, yaml.ScalarNode) else None
            child = f"{where}.{key}" if where else str(key)
            line = key_node.start_mark.line + 1
            if not isinstance(key, str):
                problems.append((line, f"{constructor.name}:{line}: {child}: a field name must be text"))
                continue
            if key in result and key not in merged:
                problems.append((line, f"{constructor.name}:{line}: {child}: given twice"))
                continue
            if id(key_node) not in own:
                merged.add(key)
            else:
                merged.discard(key)
            lines[child] = line
            result[key] = _plain(value_node, child, lines, constructor, problems)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item, f"{where}[{i}]", lines, constructor, problems) for i, item in enumerate(node.value)]
    return _scalar(node, where, constructor, problems)


class _Reader:
    """Checks the plain structure of a file, collecting every problem with its line."""

    def __init__(self, name: str, lines: dict[str, int]):
        self.name = name
        self.lines = lines
        self.problems: list[tuple[int, str]] = []
        self.unattached: list[TestSetEntry] = []  # test sets of refused tasks (their files are checked)

    def place(self, where: str) -> Place:
        probe = where
        while probe not in self.lines and probe:
            probe = probe.rpartition(".")[0]
        prefix = f"{where}."
        fields = tuple((key[len(prefix):], line) for key, line in self.lines.items()
                       if key.startswith(prefix) and not any(c in key[len(prefix):] for c in ".["))
        return Place(self.name, self.lines.get(probe, 1), where, fields)

    def problem(self, where: str, message: str) -> None:
        place = self.place(where)
        self.problems.append((place.line, f"{place.file}:{place.line}: {where or '(top level)'}: {message}"))

    def mapping(self, value: Any, where: str, keys: dict[str, tuple[Callable[[Any], Any], bool]]
                ) -> dict[str, Any] | None:
        """The checked fields of a mapping, or None when it has a problem (reported)."""
        if not isinstance(value, dict):
            self.problem(where, f"expected a mapping of fields, got {_kind_of(value)}")
            return None
        checked, ok = {}, True
        for key, item in value.items():
            child = f"{where}.{key}" if where else key
            if key not in keys:
                close = difflib.get_close_matches(key, keys, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; known: {', '.join(keys)}"
                self.problem(child, f"unknown field {key!r}{hint}")
                ok = False
                continue
            try:
                checked[key] = keys[key][0](item)
            except _Problem as exc:
                self.problem(child, str(exc))
                ok = False
        for key, (_, required) in keys.items():
            if required and key not in value:
                self.problem(f"{where}.{key}" if where else key, "missing (a required field)")
                ok = False
        return checked if ok else None

    def entries(self, parent: Any, key: str, where: str, read: Callable[[Any, str], Any]) -> list[Any]:
        """The valid entries of the list ``parent[key]``. Read even when the parent has problems of
        its own, so that one run lists every problem of the file; a non-list is the parent's problem."""
        values = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(values, list):
            return []
        child = f"{where}.{key}" if where else key
        return [entry for i, value in enumerate(values) if (entry := read(value, f"{child}[{i}]")) is not None]

    def benchmark_file(self, document: Any, path: Path) -> BenchmarkFile:
        top = self.mapping(document, "", {"data_root": (_text(), False), "benchmarks": (_list, True)})
        benchmarks = self.entries(document, "benchmarks", "", self.benchmark)
        self.unique([(b.place, b.slug) for b in benchmarks], "slug", "benchmark")
        tasks = [t for b in benchmarks for t in b.tasks]
        self.unique([(t.place, t.slug) for t in tasks], "slug", "task")
        self.unique([(s.place, (s.options["name"], s.options["version"]))
                     for b in benchmarks for s in b.interpretation_sets], "version", "interpretation set")
        return BenchmarkFile(path=path, data_root=(top or {}).get("data_root"), benchmarks=benchmarks,
                             problems=sorted(self.problems))

    def unique(self, keyed: list[tuple[Place, Any]], field_name: str, what: str) -> None:
        seen: dict[Any, Place] = {}
        for place, key in keyed:
            if key in seen:
                self.problem(f"{place.where}.{field_name}",
                             f"{what} {key} is declared twice (first at line {seen[key].line})")
            seen.setdefault(key, place)

    def benchmark(self, value: Any, where: str) -> BenchmarkEntry | None:
        checked = self.mapping(value, where, BENCHMARK_KEYS)
        self.unattached = []
        tasks = self.entries(value, "tasks", where, self.task)
        interpretation_sets = self.entries(value, "interpretation_sets", where, self.interpretation_set)
        boards = self.entries(value, "published_boards", where, self.boards)
        if checked is None:
            return None
        slug = checked["slug"]
        for board in boards:
            if BOARD_FORMATS[board.options["format"]] != slug:
                self.problem(f"{board.place.where}.format", f"{board.options['format']} boards belong to the "
                                                             f"benchmark {BOARD_FORMATS[board.options['format']]!r}")
        return BenchmarkEntry(
            place=self.place(where), slug=slug, fields={k: v for k, v in checked.items() if k in BENCHMARK_FIELDS},
            data_dir=checked.get("data_dir"), tasks=tasks, interpretation_sets=interpretation_sets,
            published_boards=boards, unchecked_files=self.unattached)

    def task(self, value: Any, where: str) -> TaskEntry | None:
        checked = self.mapping(value, where, TASK_KEYS)
        declared_kind = value.get("kind") if isinstance(value, dict) else None
        kind = declared_kind if declared_kind in kinds.names() else None  # None: checks needing it are left out
        test_sets = self.entries(value, "test_sets", where, lambda v, w: self.test_set(v, w, kind))
        self.unique([(s.place, (s.split, s.version)) for s in test_sets], "version", "test set")
        reported = self.reported_rows(value, where, kind)
        phases = self.entries(value, "phases", where, self.phase)
        self.unique([(p.place, p.name) for p in phases], "name", "phase")
        if checked is None:
            self.unattached.extend(test_sets)
            return None
        if checked.get("inputs") == InputsAccess.HIDDEN and kind and not kinds.get(kind).takes_models:
            self.problem(f"{where}.inputs", f"{kind} tasks take no model submissions, so their inputs cannot be "
                                            "hidden (docs/model_submissions.md)")
        return TaskEntry(place=self.place(where), slug=checked["slug"],
                         fields={k: v for k, v in checked.items() if k in TASK_FIELDS},
                         test_sets=test_sets, reported=reported, phases=phases)

    def reported_rows(self, value: Any, where: str, kind: str | None) -> list[ReportedEntry]:
        """A task's reported rows, each checked against the kind's metric columns (when the kind
        is known) and numbered in the order of the file, which is their order on the board."""
        columns = [key for key, _ in Task(kind=kind).metric_columns] if kind else None
        reported = self.entries(value, "reported", where, lambda v, w: self.reported(v, w, columns))
        self.unique([(r.place, (r.kind, r.method)) for r in reported], "method", "reported row")
        return [replace(r, fields={"order": position, **r.fields}) for position, r in enumerate(reported)]

    def phase(self, value: Any, where: str) -> PhaseEntry | None:
        checked = self.mapping(value, where, PHASE_FIELDS)
        if checked is None:
            return None
        if checked["ends_at"] <= checked["starts_at"]:
            self.problem(f"{where}.ends_at", "a phase must end after it starts")
        name = checked.pop("name")
        return PhaseEntry(place=self.place(where), name=name, fields=checked)

    def test_set(self, value: Any, where: str, kind: str | None) -> TestSetEntry | None:
        checked = self.mapping(value, where, TEST_SET_KEYS)
        if checked is None:
            return None
        importer = checked["importer"]
        split = checked.get("split", kinds.get(kind).scored_split if kind else TestSet.TEST)
        mismatch = _importer_mismatch(importer, split, kind) if kind else None
        if mismatch:
            self.problem(f"{where}.{mismatch[0]}" if mismatch[0] else where, mismatch[1])
        return TestSetEntry(place=self.place(where), path=checked["path"], importer=importer, split=split,
                            version=checked["version"], change_note=checked.get("change_note"),
                            optional=checked.get("optional", False),
                            version_taken=checked.get("version_taken", "refuse"))

    def reported(self, value: Any, where: str, columns: list[str] | None) -> ReportedEntry | None:
        checked = self.mapping(value, where, REPORTED_FIELDS)
        if checked is None:
            return None
        unknown = [key for key in checked["scores"] if columns is not None and key not in columns]
        if unknown:
            self.problem(f"{where}.scores", f"{', '.join(unknown)}: not a score column of this task "
                                            f"({', '.join(columns or [])})")
        kind, method = checked.pop("kind"), checked.pop("method")
        return ReportedEntry(place=self.place(where), kind=kind, method=method, fields=checked)

    def interpretation_set(self, value: Any, where: str) -> FileEntry | None:
        checked = self.mapping(value, where, INTERPRETATION_SET_KEYS)
        return None if checked is None else FileEntry(
            place=self.place(where), path=checked["path"], optional=checked.get("optional", False),
            options={"name": checked["name"], "version": checked["version"]})

    def boards(self, value: Any, where: str) -> FileEntry | None:
        checked = self.mapping(value, where, BOARDS_KEYS)
        return None if checked is None else FileEntry(
            place=self.place(where), path=checked["path"], optional=checked.get("optional", False),
            options={"format": checked["format"]})


def read(path: str | Path) -> BenchmarkFile:
    """Parse and validate a benchmark file. Raises :class:`ConfigError` listing every problem."""
    return _refused_if_any(read_all(path))


def read_all(path: str | Path) -> BenchmarkFile:
    """Parse and validate a benchmark file; its valid entries, with the problems of the others in
    ``problems`` (``apply`` lists them with the faults of the data files and refuses the file).
    Raises :class:`ConfigError` only when the file cannot be read as YAML at all."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 (byte {exc.start})") from None
    return parse_all(text, path)


def _refused_if_any(config: BenchmarkFile) -> BenchmarkFile:
    if config.problems:
        raise ConfigError(problem_listing([message for _, message in config.problems]))
    return config


def problem_listing(messages: list[str]) -> str:
    """One line per problem, in the order of their lines in the file."""
    def line_of(message: str) -> int:
        match = _MESSAGE_LINE.match(message)
        return int(match.group(1)) if match else 0

    return "\n".join(sorted(dict.fromkeys(messages), key=line_of))


def parse(text: str, path: Path) -> BenchmarkFile:
    """Validate the YAML ``text`` of the file ``path`` (named in messages, and the default root of
    its relative paths). Raises :class:`ConfigError` listing every problem."""
    return _refused_if_any(parse_all(text, path))


def parse_all(text: str, path: Path) -> BenchmarkFile:
    """``parse`` that returns the valid entries and the problems (``read_all``)."""
    constructor = yaml.SafeLoader(text)
    constructor.name = path.name
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise ConfigError(f"{path.name}:{line}: not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path.name}: not valid YAML: {exc}") from None
    if node is None:
        raise ConfigError(f"{path.name}:1: the file is empty; it needs a 'benchmarks' list")
    lines: dict[str, int] = {}
    problems: list[tuple[int, str]] = []
    document = _plain(node, "", lines, constructor, problems)
    reader = _Reader(path.name, lines)
    reader.problems.extend(problems)
    return reader.benchmark_file(document, path)


# --------------------------------------------------------------------------- applying


@dataclass
class LoadReport:
    """What a load did (or, in a dry run, would do): one (what, status, detail) per object."""
    outcomes: list[tuple[str, str, str]] = field(default_factory=list)
    test_sets: list[tuple[TestSet, bool]] = field(default_factory=list)
    interpretation_sets: list[tuple[InterpretationSet, bool]] = field(default_factory=list)
    log: Callable[[str], None] = print
    problems: list[str] = field(default_factory=list)  # every refusal, so that one run lists them all
    missing: set[Place] = field(default_factory=set)  # declared files not found (a problem each)

    def attempt(self, step: Callable[[], None]) -> None:
        """Run one object's step in a savepoint: a refusal is recorded and the load goes on to the
        next object (the whole load is rolled back at its end)."""
        try:
            with transaction.atomic():
                step()
        except ConfigError as exc:
            self.problems.append(str(exc))

    def add(self, what: str, status: str, detail: str = "", *, quiet: bool = False) -> None:
        self.outcomes.append((what, status, detail))
        if not quiet:
            self.log(f"{what}: {status}{f' ({detail})' if detail else ''}")

    def count(self, status: str) -> int:
        return sum(1 for _, s, _ in self.outcomes if s == status)

    def summary(self) -> str:
        return ", ".join(f"{self.count(s)} {s}" for s in
                         ("created", "updated", "unchanged", "imported", "already present", "skipped"))


def data_root_of(config: BenchmarkFile, data_root: str | Path | None = None) -> Path:
    """The folder relative paths start from: ``data_root`` (the command line), else the file's
    ``data_root`` (relative to the file), else the file's folder."""
    if data_root is not None:
        return Path(data_root).expanduser()
    declared = config.data_root or "."
    declared = declared.replace(SHARED_DATA, str(settings.SHARED_DATA_DIR))
    return config.path.parent / Path(declared).expanduser()


def resolve_files(config: BenchmarkFile, data_root: str | Path | None = None) -> dict[Place, Path | None]:
    """The file of every test set, interpretation set and boards entry (None: an optional file
    that is missing). Raises :class:`ConfigError` for missing files that are not optional."""
    files, problems = _resolve(config, data_root)
    if problems:
        raise ConfigError("\n".join(problems))
    return files


def _resolve(config: BenchmarkFile, data_root: str | Path | None) -> tuple[dict[Place, Path | None], list[str]]:
    root = data_root_of(config, data_root)
    files: dict[Place, Path | None] = {}
    problems = []
    for benchmark in config.benchmarks:
        base = root / Path(benchmark.data_dir).expanduser() if benchmark.data_dir else root
        entries: list[TestSetEntry | FileEntry] = [*(s for t in benchmark.tasks for s in t.test_sets),
                                                   *benchmark.interpretation_sets, *benchmark.published_boards,
                                                   *benchmark.unchecked_files]
        for entry in entries:
            path = base / Path(entry.path).expanduser()
            files[entry.place] = path if path.is_file() or not entry.optional else None
            if not path.is_file() and not entry.optional:
                problems.append(entry.place(f"no such file {path} (mark it optional: true to skip it)", "path"))
    return files, problems


def apply(config: BenchmarkFile, *, data_root: str | Path | None = None, dry_run: bool = False,
          log: Callable[[str], None] = print) -> LoadReport:
    """Create or update what ``config`` declares, in one transaction (a refusal writes nothing;
    a dry run is rolled back, background jobs included). Raises :class:`ConfigError` listing
    every problem: those found reading the file (``config.problems``), missing files, and what
    the importers refuse, each object tried on its own so that one run finds them all."""
    files, missing = _resolve(config, data_root)
    known = [message for _, message in config.problems] + missing
    # Nothing will be written when the file is already refused: the log would only mislead.
    report = LoadReport(log=(lambda line: None) if known else log, problems=known,
                        missing={place for place, path in files.items() if path is not None and not path.is_file()})
    with transaction.atomic():
        for entry in config.benchmarks:
            report.attempt(partial(_apply_benchmark, entry, files, report))
        if report.problems:
            raise ConfigError(problem_listing(report.problems))
        if dry_run:
            transaction.set_rollback(True)
    return report


def load(path: str | Path, *, data_root: str | Path | None = None, dry_run: bool = False,
         log: Callable[[str], None] = print) -> LoadReport:
    """``read`` then ``apply``."""
    return apply(read(path), data_root=data_root, dry_run=dry_run, log=log)


def _sync(model: type[models.Model], lookup: dict[str, Any], declared: dict[str, Any]
          ) -> tuple[Any, str, list[str]]:
    """update_or_create that says what it did: (object, created|updated|unchanged, changed fields)."""
    obj = model._default_manager.filter(**lookup).first()
    if obj is None:
        return model._default_manager.create(**lookup, **declared), "created", []
    changed = [name for name, value in declared.items() if getattr(obj, name) != value]
    for name in changed:
        setattr(obj, name, declared[name])
    if changed:
        obj.save(update_fields=changed)
    return obj, "updated" if changed else "unchanged", changed


def _apply_benchmark(entry: BenchmarkEntry, files: dict[Place, Path | None], report: LoadReport) -> None:
    fields = {k: v for k, v in entry.fields.items() if k != "slug"}
    benchmark, status, changed = _sync(Benchmark, {"slug": entry.slug}, fields)
    report.add(f"benchmark {entry.slug}", status, ", ".join(changed))
    for task_entry in entry.tasks:
        report.attempt(partial(_apply_task, benchmark, task_entry, files, report))
    for iset_entry in entry.interpretation_sets:
        if iset_entry.place not in report.missing:
            report.attempt(partial(_apply_interpretation_set, iset_entry, files[iset_entry.place], report))
    for boards in entry.published_boards:
        if boards.place not in report.missing:
            report.attempt(partial(_apply_boards, benchmark, boards, files[boards.place], report))


def _apply_task(benchmark: Benchmark, entry: TaskEntry, files: dict[Place, Path | None], report: LoadReport) -> None:
    existing = Task.objects.filter(slug=entry.slug).first()
    if existing and existing.kind != entry.fields["kind"] and existing.test_sets.exists():
        raise ConfigError(entry.place(f"task {entry.slug} is a {existing.kind} task with test sets; its kind "
                                      f"cannot become {entry.fields['kind']}", "kind"))
    fields = {"benchmark_id": benchmark.pk, **{k: v for k, v in entry.fields.items() if k != "slug"}}
    task, status, changed = _sync(Task, {"slug": entry.slug}, fields)
    report.add(f"task {entry.slug}", status, ", ".join(c.removesuffix("_id") for c in changed))
    for set_entry in entry.test_sets:
        if set_entry.place not in report.missing:
            report.attempt(partial(_apply_test_set, task, set_entry, files[set_entry.place], report))
    for phase in entry.phases:
        _, phase_status, phase_changed = _sync(Phase, {"task": task, "name": phase.name}, phase.fields)
        report.add(f"phase {entry.slug} / {phase.name}", phase_status, ", ".join(phase_changed))
    _apply_reported(task, entry, report)


def _apply_reported(task: Task, entry: TaskEntry, report: LoadReport) -> None:
    """Create or update the task's reported rows; one log line sums them up (with what changed)."""
    rows: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
    for row in entry.reported:
        _, row_status, row_changed = _sync(ReportedResult, {"task": task, "kind": row.kind, "method": row.method},
                                           row.fields)
        rows[row_status].append(f"{row.method}: {', '.join(row_changed)}" if row_changed else row.method)
        report.add(f"reported row {entry.slug} / {row.method}", row_status, quiet=True)
    if entry.reported:
        counts = ", ".join(f"{len(names)} {status}" for status, names in rows.items() if names)
        updates = f"; updated {'; '.join(rows['updated'])}" if rows["updated"] else ""
        report.log(f"reported rows of {entry.slug}: {counts}{updates}")


def _importer_checksum(entry: TestSetEntry, path: Path) -> str:
    """The checksum the importer will store for ``path`` (the .json inside a reference .zip)."""
    if entry.importer == "expmrc" and entry.split == TestSet.REFERENCE:
        return read_expmrc_json(path)[1]
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _apply_test_set(task: Task, entry: TestSetEntry, path: Path | None, report: LoadReport) -> None:
    what = f"test set {task.slug} {entry.split} {entry.version}"
    if path is None:
        report.add(what, "skipped", f"{entry.path} not found; optional")
        return
    version = entry.version
    try:
        if entry.version_taken == "add_checksum":
            # The label names other bytes already (e.g. first loaded from other data): import
            # under a label naming this file's checksum instead of refusing.
            taken = TestSet.objects.filter(task=task, split=entry.split, version=version).values_list(
                "checksum", flat=True).first()
            checksum = _importer_checksum(entry, path)
            version = version if taken in (None, checksum) else f"{version}-{checksum[:12]}"
        test_set, created = _import(entry, path, task, version)
    except ImportRefused as exc:
        raise ConfigError(entry.place(str(exc), "version" if "checksum" in str(exc) else "path")) from None
    what, detail = f"test set {task.slug} {entry.split} {version}", f"{path.name}, {test_set.n_items} {task.item_noun}"
    if entry.change_note is not None and test_set.change_note != entry.change_note:
        # The importers store the bytes; the note is the maintainers' words about them, editable.
        TestSet.objects.filter(pk=test_set.pk).update(change_note=entry.change_note)
        test_set.change_note = entry.change_note
        if not created:
            detail = f"{detail}; change note"
    report.add(what, "imported" if created else "updated" if detail.endswith("change note") else "already present",
               detail)
    report.test_sets.append((test_set, created))


def _import(entry: TestSetEntry, path: Path, task: Task, version: str) -> tuple[TestSet, bool]:
    if entry.importer == "checklist":
        return import_checklist(path, task_slug=task.slug, version=version)
    if entry.importer == "classification":
        return import_classification(path, task_slug=task.slug, split=entry.split, version=version)
    if entry.split == TestSet.REFERENCE:
        return import_multichoice_reference(path, task_slug=task.slug, version=version)
    return import_expmrc(path, task_slug=task.slug, split=entry.split, version=version)


def _apply_interpretation_set(entry: FileEntry, path: Path | None, report: LoadReport) -> None:
    name, version = entry.options["name"], entry.options["version"]
    what = f"interpretation set {name} v{version}"
    if path is None:
        report.add(what, "skipped", f"{entry.path} not found; optional")
        return
    try:
        iset, created = quackie_tracks.import_quackie(path, name=name, version=version)
    except ImportRefused as exc:
        raise ConfigError(entry.place(str(exc), "path")) from None
    report.add(what, "imported" if created else "already present", f"{path.name}, {iset.n_samples} samples")
    report.interpretation_sets.append((iset, created))


def _board_rows(benchmark: Benchmark) -> dict[str, Any]:
    return {task.slug: (task.name, task.order, task.accepts_submissions,
                        sorted((r.method, r.kind, r.team, sorted(r.scores.items()), r.source, r.url, r.note, r.order)
                               for r in task.reported_results.all()))
            for task in benchmark.tasks.prefetch_related("reported_results")}


def _apply_boards(benchmark: Benchmark, entry: FileEntry, path: Path | None, report: LoadReport) -> None:
    what = f"published boards {entry.path}"
    if path is None:
        report.add(what, "skipped", "not found; optional")
        return
    before = _board_rows(benchmark)
    try:
        boards = quackie_tracks.load_published_results(path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problem = f"not a QUACKIE leaderboard file ({type(exc).__name__}: {exc})"
        raise ConfigError(entry.place(problem, "path")) from None
    after = _board_rows(benchmark)
    slugs = sorted(task.slug for task in boards.values())
    created = [s for s in slugs if s not in before]
    updated = [s for s in slugs if s in before and before[s] != after[s]]
    status = "created" if created else "updated" if updated else "unchanged"
    report.add(what, status, f"{len(slugs)} boards: {len(created)} new, {len(updated)} changed")


# --------------------------------------------------------------------------- the round trip


def declared_structure(config: BenchmarkFile) -> list[dict[str, Any]]:
    """What ``config`` declares, with the model defaults for the fields it leaves out: what the
    database holds after loading it into an empty database (compare :func:`dump`). Test sets are
    named by their file name (the database keeps only that)."""
    def defaults(model: type[models.Model], names: list[str]) -> dict[str, Any]:
        return {name: _model_field(model, name).get_default() for name in names}

    return [{**defaults(Benchmark, list(BENCHMARK_FIELDS)), **b.fields,
             "tasks": [{**defaults(Task, list(TASK_FIELDS)), **t.fields,
                        "test_sets": [{"file": Path(s.path).name, "split": s.split, "version": s.version,
                                       "change_note": s.change_note or ""} for s in t.test_sets],
                        "reported": [{**defaults(ReportedResult, list(REPORTED_FIELDS)), **r.fields,
                                      "kind": r.kind, "method": r.method} for r in t.reported],
                        "phases": [{**defaults(Phase, list(PHASE_FIELDS)), **p.fields, "name": p.name}
                                   for p in t.phases]}
                       for t in b.tasks]}
            for b in config.benchmarks]


def dump(config: BenchmarkFile) -> list[dict[str, Any]]:
    """The benchmarks and tasks ``config`` declares, read back from the database in the shape of
    :func:`declared_structure`: every test set and reported row of those tasks, declared or not."""
    result = []
    for entry in config.benchmarks:
        benchmark = Benchmark.objects.get(slug=entry.slug)
        tasks = []
        for task_entry in entry.tasks:
            task = benchmark.tasks.get(slug=task_entry.slug)
            sets = task.test_sets.order_by("pk").values("source_name", "split", "version", "change_note")
            tasks.append({**{name: getattr(task, name) for name in TASK_FIELDS},
                          "test_sets": [{"file": s["source_name"], "split": s["split"], "version": s["version"],
                                         "change_note": s["change_note"]} for s in sets],
                          "reported": [{name: getattr(row, name) for name in REPORTED_FIELDS}
                                       for row in task.reported_results.order_by("order", "pk")],
                          "phases": [{name: getattr(phase, name) for name in PHASE_FIELDS}
                                     for phase in task.phases.order_by("starts_at", "pk")]})
        result.append({**{name: getattr(benchmark, name) for name in BENCHMARK_FIELDS}, "tasks": tasks})
    return result
