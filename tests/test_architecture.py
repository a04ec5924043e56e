"""The layout's rules (docs/architecture.md), checked on the source as it is now."""
import ast
import re
from pathlib import Path

import pytest

from benchmark import kinds
from scripts import import_graph

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [p for p in import_graph.product_files(ROOT) if "migrations" not in p.parts]
MAX_LINES = 600


def relative(path):
    return str(path.relative_to(ROOT))


def test_the_import_graph_has_no_cycle_and_no_hidden_import():
    edges, deferred = import_graph.graph(ROOT)
    assert import_graph.cycles(edges) == []
    assert deferred == [], "product code imported inside a function hides cycles; see docs/architecture.md"
    # The graph is not empty by accident: the apps do import each other downwards.
    assert "benchmark.models" in edges["submissions.models"] | edges["submissions.intake"]


def test_the_cycle_finder_finds_a_planted_cycle(tmp_path):
    package = tmp_path / "core"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from core import b\n")
    (package / "b.py").write_text("def f():\n    from core.c import g\n")
    (package / "c.py").write_text("from .a import x\n")
    edges, deferred = import_graph.graph(tmp_path)
    assert import_graph.cycles(edges) == [["core.a", "core.b", "core.c"]]
    assert deferred == [("core/b.py", 2, "core.c")]


def test_scoring_never_imports_django():
    for path in (ROOT / "scoring").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not any(n.split(".")[0] in {"django", "rest_framework", "celery"} for n in names), relative(path)


def status_writes(tree):
    """Lines that write a submission's status: ``x.status = ...`` on a submission-like name, or a
    queryset ``.update(status=...)`` whose chain names ``Submission``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (isinstance(target, ast.Attribute) and target.attr == "status"
                        and "sub" in ast.unparse(target.value).lower()):
                    yield node.lineno
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"
                and any(k.arg == "status" for k in node.keywords) and "Submission" in ast.unparse(node.func.value)):
            yield node.lineno


def test_every_submission_status_write_goes_through_the_transition_function():
    owner = ROOT / "submissions" / "lifecycle.py"
    offenders = [f"{relative(p)}:{line}" for p in PRODUCT if p != owner
                 for line in status_writes(ast.parse(p.read_text(encoding="utf-8")))]
    assert offenders == []
    planted = "Submission.objects.filter(pk=1).update(status='scored')\nsubmission.status = 'failed'\n"
    assert sorted(status_writes(ast.parse(planted))) == [1, 2]  # the scan does see writes


def test_no_module_is_long_without_saying_why():
    long_ones = []
    for path in PRODUCT:
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_LINES and "Why this module is long:" not in (ast.get_docstring(ast.parse(text)) or ""):
            long_ones.append(relative(path))
    assert long_ones == []


OUTSIDE_CITATION = re.compile(r"SPEC\s*§|\breference[/ ][\w.-]+\.md|shared/reference|\bseed \d{3}\b|\bseed's\b", re.I)


@pytest.mark.parametrize("folder", ["scoring", "core", "accounts", "benchmark", "submissions", "leaderboards",
                                    "config", "expbench_client", "templates", "docs", "perf", "scripts"])
def test_nothing_cites_a_document_outside_the_repository_or_an_internal_label(folder):
    found = []
    for path in sorted((ROOT / folder).rglob("*")):
        if path.suffix in {".py", ".html", ".md", ".txt"} and "resources" not in path.parts:
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if OUTSIDE_CITATION.search(line):
                    found.append(f"{relative(path)}:{number}: {line.strip()}")
    assert found == []


APPS = {"core", "accounts", "benchmark", "submissions", "leaderboards", "config"}


def untyped_functions(tree):
    """(line, name) of each public function and method (name without a leading ``_``; module
    level and in classes, nested classes included) that lacks its return annotation or an
    annotation of a parameter other than ``self``/``cls`` (``*args``/``**kwargs`` included)."""
    def functions(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield node
            elif isinstance(node, ast.ClassDef):
                yield from functions(node.body)

    for function in functions(tree.body):
        if function.name.startswith("_"):
            continue
        args = function.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
        if function.returns is None or any(p.annotation is None for p in params if p.arg not in {"self", "cls"}):
            yield function.lineno, function.name


def test_the_apps_public_functions_are_typed():
    files = [p for p in PRODUCT if p.relative_to(ROOT).parts[0] in APPS]
    assert len({p.relative_to(ROOT).parts[0] for p in files}) == len(APPS)
    missing = [f"{relative(p)}:{line} {name}" for p in files
               for line, name in untyped_functions(ast.parse(p.read_text(encoding="utf-8")))]
    assert missing == [], "annotate every parameter and the return type (docs/architecture.md)"
    planted = (
        "def typed(a: int, *args: Any, **kwargs: Any) -> None: ...\n"
        "def no_return(a: int): ...\n"
        "def bare_parameter(a, b: int) -> int: ...\n"
        "def _private(a): ...\n"
        "class View:\n"
        "    def get(self, request) -> None: ...\n"
        "    @classmethod\n"
        "    def make(cls) -> 'View': ...\n"
        "    def __str__(self): ...\n"
        "    class Meta:\n"
        "        def nested(self, *args) -> None: ...\n"
        "async def fetch(*, key: str, **options) -> None:\n"
        "    def inner(x): ...\n"
    )
    assert list(untyped_functions(ast.parse(planted))) == [
        (2, "no_return"), (3, "bare_parameter"), (6, "get"), (11, "nested"), (12, "fetch")]


# --------------------------------------------------------------------------- task kinds

KIND_NAMES = {"span", "multichoice", "interpretation", "classification", "checklist"}
KINDS_PACKAGE = ROOT / "benchmark" / "kinds"
TEMPLATE_KIND_BRANCH = re.compile(r"""kind\s*(==|!=|in)\s*["'](%s)["']""" % "|".join(sorted(KIND_NAMES)))


def names_a_kind(node):
    """A string literal that is a task kind's name, or a tuple/list/set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in KIND_NAMES
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(names_a_kind(e) for e in node.elts)


def is_a_kind(node):
    text = ast.unparse(node)
    return text == "kind" or text.endswith(".kind") or text.endswith("_kind")


def kind_branches(tree):
    """Lines that decide by a task kind's name: ``task.kind == "span"``, ``kind in ("span", ...)``,
    a lookup ``TABLE[task.kind]`` or ``TABLE.get(task.kind)``, a table keyed by kind names, a
    query ``filter(kind="span")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(is_a_kind(o) for o in operands) and any(names_a_kind(o) for o in operands):
                yield node.lineno
        elif isinstance(node, ast.Subscript) and ast.unparse(node.slice).endswith("task.kind"):
            yield node.lineno
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and ast.unparse(node.args[0]).endswith("task.kind")
              and ast.unparse(node.func.value) != "kinds"):
            yield node.lineno
        elif isinstance(node, ast.Dict) and sum(names_a_kind(k) for k in node.keys if k is not None) >= 2:
            yield node.lineno
        elif isinstance(node, ast.Call) and any(k.arg in ("kind", "kind__in") and names_a_kind(k.value)
                                                for k in node.keywords):
            yield node.lineno


def test_no_module_outside_the_kinds_package_branches_on_a_kind_name():
    """One place per task kind (benchmark/kinds): the rest of the product asks the task's kind.
    ``scoring`` is left out: its pure formats name their own variants (an ExpMRC file is span or
    multiple choice, an ICQ instance list classification or multichoice), which kinds call."""
    assert KIND_NAMES == set(kinds.names())  # the scan knows every shipped kind
    apps = [p for p in PRODUCT if p.relative_to(ROOT).parts[0] not in {"scoring", "perf"}
            and KINDS_PACKAGE not in p.parents]
    offenders = [f"{relative(p)}:{line}" for p in apps for line in kind_branches(ast.parse(p.read_text("utf-8")))]
    for template in sorted((ROOT / "templates").rglob("*.html")):
        for number, line in enumerate(template.read_text(encoding="utf-8").splitlines(), start=1):
            if TEMPLATE_KIND_BRANCH.search(line):
                offenders.append(f"{relative(template)}:{number}")
    assert offenders == []
    planted = ('if task.kind == "span": pass\nx = kind in ("multichoice", "classification")\n'
               'h = HELP[task.kind]\nw = WORDS.get(submission.task.kind)\nT = {"span": 1, "checklist": 2}\n'
               'Task.objects.filter(kind="interpretation")\nok = a.task.kind != b.task.kind\n')
    assert sorted(set(kind_branches(ast.parse(planted)))) == [1, 2, 3, 4, 5, 6]  # the scan sees each form
    assert TEMPLATE_KIND_BRANCH.search('{% if task.kind == "checklist" %}')
