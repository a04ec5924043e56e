"""Mutation testing of one module: how many small faults in its code do its tests catch?

    python scripts/mutation.py submissions/lifecycle.py tests/submissions/test_lifecycle.py ...

A mutant is one change to the module's syntax tree: a comparison, arithmetic or boolean
operator swapped, ``not`` dropped, a condition negated, a constant changed (``True`` <->
``False``, a number plus one, a string wrapped in ``XX``), a keyword argument of a call
dropped, a call statement dropped, a returned value replaced by ``None``, ``break`` <->
``continue``. Docstrings, annotations, type aliases, decorators, default values of parameters,
imports and the bodies of classes other than their methods are left alone.

The tests given run once, normally, in this process (it stops if one fails), recording which
lines of the module each test runs. Then each mutant is applied in a forked child of this
process: the mutated function's code object replaces the live function's (so every module that
imported the function runs the mutant), or a mutated module-level assignment is executed again
with the assignments after it. The child runs the tests that ran the mutant's statement, in
order, until one fails (killed) or all pass (survived); a child that runs over its time limit
is killed as a timeout. A mutant on a line no test runs survives without running anything.

Prints every survivor (line, function, change) and the score, killed / all mutants. Nothing is
written to the working tree; use ``--only LINE`` to try the mutants of one line.
"""
from __future__ import annotations

import argparse
import ast
import copy
import os
import select
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

ROOT = Path(__file__).resolve().parent.parent

COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.BitOr: ast.BitAnd, ast.BitAnd: ast.BitOr,
    ast.BitXor: ast.BitOr, ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.MatMult: ast.Mult,
}
SYMBOLS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
           ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-",
           ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.BitOr: "|",
           ast.BitAnd: "&", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@",
           ast.And: "and", ast.Or: "or"}
NOT_MUTATED_FIELDS = {"annotation", "returns", "decorator_list", "defaults", "kw_defaults", "format_spec",
                      "type_comment", "bases"}


@dataclass
class Mutant:
    """One change: ``apply`` makes it on a copy of the tree, whose nodes are found again by
    their position in ``ast.walk`` order."""
    line: int
    function: str  # qualified name of the outermost function holding it; "" at module level
    statement: tuple[int, int]  # first and last line of the statement it changes
    description: str
    apply: Callable[[ast.Module], ast.stmt | None]  # returns the mutated module-level statement, if any
    tests: list[int] = field(default_factory=list)


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    body = getattr(parent, "body", None)
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and isinstance(body, list) and bool(body) and body[0] is node)


def _children(node: ast.AST) -> Iterator[ast.AST]:
    for name, value in ast.iter_fields(node):
        if name in NOT_MUTATED_FIELDS:
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield child


def _sites(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.AST, str, ast.stmt, ast.stmt | None]]:
    """(node, parent, outermost function, enclosing statement, module-level assignment) for
    every node that may be mutated."""

    def visit(node: ast.AST, parent: ast.AST, function: str, statement: ast.stmt, top: ast.stmt | None,
              prefix: str) -> Iterator[tuple[ast.AST, ast.AST, str, ast.stmt, ast.stmt | None]]:
        if _is_docstring(node, parent) or isinstance(node, (ast.Import, ast.ImportFrom)):
            return
        if isinstance(node, ast.stmt):
            statement = node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not function:
            function = prefix + node.name
        elif isinstance(node, ast.ClassDef) and not function:
            for member in node.body:  # only the methods of a class (and of the classes in it)
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    yield from visit(member, node, "", member, None, f"{prefix}{node.name}.")
            return
        yield node, parent, function, statement, top
        for child in _children(node):
            yield from visit(child, node, function, statement, top, prefix)

    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from visit(stmt, tree, "", stmt, None, "")
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and not _is_type_alias(stmt):
            yield from visit(stmt.value, stmt, "", stmt, stmt, "")


def _is_type_alias(stmt: ast.Assign | ast.AnnAssign) -> bool:
    """``Name: TypeAlias = ...``: a type, not a value the code computes with."""
    annotation = stmt.annotation if isinstance(stmt, ast.AnnAssign) else None
    return isinstance(annotation, (ast.Name, ast.Attribute)) and ast.unparse(annotation).endswith("TypeAlias")


def _locate(tree: ast.Module, index: int) -> ast.AST:
    for position, node in enumerate(ast.walk(tree)):
        if position == index:
            return node
    raise LookupError(index)


def _replace_child(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for name, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, name, new)
            return
        if isinstance(value, list):
            for position, item in enumerate(value):
                if item is old:
                    value[position] = new
                    return
    raise LookupError(old)


Change = Callable[[Any, ast.AST], None]  # (the node found again in a copy, its parent): changes it in place
Mutations = Iterator[tuple[str, Change]]  # (description, change)


def _compare(node: ast.Compare) -> Mutations:
    for position, op in enumerate(node.ops):
        if type(op) in COMPARE_SWAPS:
            new = COMPARE_SWAPS[type(op)]

            def swap(n: Any, p: ast.AST, position: int = position, new: type = new) -> None:
                n.ops[position] = new()
            yield f"{SYMBOLS[type(op)]!r} -> {SYMBOLS[new]!r}", swap


def _binop(node: ast.BinOp | ast.AugAssign) -> Mutations:
    if type(node.op) in BINOP_SWAPS:
        new = BINOP_SWAPS[type(node.op)]

        def swap(n: Any, p: ast.AST, new: type = new) -> None:
            n.op = new()
        yield f"{SYMBOLS[type(node.op)]!r} -> {SYMBOLS[new]!r}", swap


def _boolop(node: ast.BoolOp) -> Mutations:
    other = ast.Or if isinstance(node.op, ast.And) else ast.And

    def swap(n: Any, p: ast.AST, other: type = other) -> None:
        n.op = other()
    yield f"{SYMBOLS[type(node.op)]!r} -> {SYMBOLS[other]!r}", swap


def _unary(node: ast.UnaryOp) -> Mutations:
    if isinstance(node.op, (ast.Not, ast.USub)):
        def drop(n: Any, p: ast.AST) -> None:
            _replace_child(p, n, n.operand)
        yield f"{'not' if isinstance(node.op, ast.Not) else 'unary -'} dropped", drop


def _call(node: ast.Call) -> Mutations:
    for position, keyword in enumerate(node.keywords):
        if keyword.arg is not None:
            def drop(n: Any, p: ast.AST, position: int = position) -> None:
                del n.keywords[position]
            yield f"keyword {keyword.arg}= dropped", drop


def _expression_statement(node: ast.Expr) -> Mutations:
    if isinstance(node.value, (ast.Call, ast.Await)):
        def drop(n: Any, p: ast.AST) -> None:
            _replace_child(p, n, ast.copy_location(ast.Pass(), n))
        yield "call statement dropped", drop


def _return(node: ast.Return) -> Mutations:
    if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
        def return_none(n: Any, p: ast.AST) -> None:
            n.value = ast.copy_location(ast.Constant(None), n.value)
        yield "returns None", return_none


def _negated(test: ast.expr) -> ast.expr:
    return ast.copy_location(ast.UnaryOp(ast.Not(), test), test)


def _is_plain_condition(test: ast.expr) -> bool:
    """A condition the operator swaps do not change already (a comparison, a ``not``)."""
    return not (isinstance(test, ast.Compare) or (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)))


def _condition(node: ast.If | ast.While | ast.IfExp | ast.Assert) -> Mutations:
    if _is_plain_condition(node.test):
        def negate(n: Any, p: ast.AST) -> None:
            n.test = _negated(n.test)
        yield "condition negated", negate


def _comprehension(node: ast.comprehension) -> Mutations:
    for position, test in enumerate(node.ifs):
        if _is_plain_condition(test):
            def negate(n: Any, p: ast.AST, position: int = position) -> None:
                n.ifs[position] = _negated(n.ifs[position])
            yield "condition negated", negate


def _jump(node: ast.Break | ast.Continue) -> Mutations:
    other = ast.Continue if isinstance(node, ast.Break) else ast.Break

    def swap(n: Any, p: ast.AST, other: type = other) -> None:
        _replace_child(p, n, ast.copy_location(other(), n))
    yield f"{type(node).__name__.lower()} -> {other.__name__.lower()}", swap


def _constant(node: ast.Constant) -> Mutations:
    value = node.value
    if isinstance(value, bool):
        new: Any = not value
    elif isinstance(value, (int, float)):
        new = value + 1
    elif isinstance(value, str):
        new = f"XX{value}XX"
    else:
        return

    def set_constant(n: Any, p: ast.AST, new: Any = new) -> None:
        n.value = new
    yield f"{value!r} -> {new!r}", set_constant


#: The mutation operators, by the type of node they change.
OPERATORS: dict[type[ast.AST], Callable[[Any], Mutations]] = {
    ast.Compare: _compare, ast.BinOp: _binop, ast.AugAssign: _binop, ast.BoolOp: _boolop, ast.UnaryOp: _unary,
    ast.Constant: _constant, ast.Call: _call, ast.Expr: _expression_statement, ast.Return: _return,
    ast.If: _condition, ast.While: _condition, ast.IfExp: _condition, ast.Assert: _condition,
    ast.comprehension: _comprehension, ast.Break: _jump, ast.Continue: _jump,
}


def mutants(tree: ast.Module) -> list[Mutant]:
    index = {id(node): position for position, node in enumerate(ast.walk(tree))}
    found = []
    for node, parent, function, statement, top in _sites(tree):
        operator = OPERATORS.get(type(node))
        for description, change in operator(node) if operator is not None else ():
            def apply(copied: ast.Module, node_at: int = index[id(node)], parent_at: int = index[id(parent)],
                      top_at: int | None = index[id(top)] if top is not None else None,
                      change: Change = change) -> ast.stmt | None:
                change(_locate(copied, node_at), _locate(copied, parent_at))
                return None if top_at is None else _locate(copied, top_at)  # type: ignore[return-value]
            found.append(Mutant(getattr(node, "lineno", statement.lineno), function,
                                (statement.lineno, statement.end_lineno or statement.lineno), description, apply))
    return found


def _code_named(code: types.CodeType, qualname: str) -> types.CodeType:
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            if constant.co_qualname == qualname:
                return constant
            try:
                return _code_named(constant, qualname)
            except LookupError:
                pass
    raise LookupError(qualname)


def _live_function(module: types.ModuleType, qualname: str) -> types.FunctionType:
    owner: Any = module
    for part in qualname.split("."):
        owner = owner.__dict__[part] if isinstance(owner, type) else getattr(owner, part)
    for unwrap in ("__func__", "fget", "func", "__wrapped__"):
        while hasattr(owner, unwrap) and not isinstance(owner, types.FunctionType):
            owner = getattr(owner, unwrap)
    return owner


def apply_mutant(module: types.ModuleType, tree: ast.Module, mutant: Mutant) -> None:
    copied = copy.deepcopy(tree)
    top = mutant.apply(copied)
    ast.fix_missing_locations(copied)
    filename = module.__file__ or "<mutant>"
    if mutant.function:
        code = compile(copied, filename, "exec", dont_inherit=True)
        _live_function(module, mutant.function).__code__ = _code_named(code, mutant.function)
    else:  # the assignment, then the ones after it that may be computed from it
        following = copied.body[copied.body.index(top):] if top is not None else []
        assignments: list[ast.stmt] = [stmt for stmt in following if isinstance(stmt, (ast.Assign, ast.AnnAssign))]
        code = compile(ast.Module(body=assignments, type_ignores=[]), filename, "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102
    for value in list(module.__dict__.values()):
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()


def _defined_in(module: types.ModuleType, path: Path) -> bool:
    filename = getattr(module, "__file__", None)
    return isinstance(filename, str) and Path(filename).resolve() == path


class LineRecorder:
    """The lines of one file that run, from every thread, while it is on."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.lines: set[int] = set()

    def _local(self, frame: types.FrameType, event: str, arg: object) -> Any:
        if event == "line":
            self.lines.add(frame.f_lineno)
        return self._local

    def _global(self, frame: types.FrameType, event: str, arg: object) -> Any:
        if frame.f_code.co_filename == self.filename:
            self.lines.add(frame.f_lineno)
            return self._local
        return None

    def __enter__(self) -> LineRecorder:
        self.lines = set()
        threading.settrace(self._global)
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]


class MutationPlugin:
    def __init__(self, path: Path, only: int | None, timeout_factor: float) -> None:
        self.path = path.resolve()
        self.only = only
        self.timeout_factor = timeout_factor
        self.source = self.path.read_text()  # as mutated, whatever happens to the file meanwhile
        self.tree = ast.parse(self.source, filename=str(self.path))
        self.exit_code = 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        items = session.items
        lines, durations = self._baseline(items)
        if lines is None:
            self.exit_code = 2
            return True
        module = next((m for m in list(sys.modules.values()) if _defined_in(m, self.path)), None)
        if module is None:
            print(f"\nno test imports {self.path}", file=sys.stderr)
            self.exit_code = 2
            return True
        found = [m for m in mutants(self.tree) if self.only is None or m.line == self.only]
        survivors, timeouts = [], 0
        started = time.monotonic()
        for number, mutant in enumerate(found, 1):
            first, last = mutant.statement
            mutant.tests = [i for i, ran in enumerate(lines) if mutant.function == "" or
                            any(first <= line <= last for line in ran)]
            outcome = self._run(module, mutant, items, durations) if mutant.tests else "survived"
            timeouts += outcome == "timeout"
            if outcome == "survived":
                survivors.append(mutant)
            if sys.stderr.isatty():
                print(f"\r{number}/{len(found)} mutants, {len(survivors)} survived", end="", file=sys.stderr,
                      flush=True)
        self._report(found, survivors, timeouts, time.monotonic() - started)
        return True

    def _baseline(self, items: list[pytest.Item]) -> tuple[list[set[int]] | None, list[float]]:
        lines, durations = [], []
        recorder = LineRecorder(str(self.path))
        for position, item in enumerate(items):
            nextitem = items[position + 1] if position + 1 < len(items) else items[0]  # keep the session
            began = time.monotonic()
            with recorder:
                reports = runtestprotocol(item, log=True, nextitem=nextitem)
            durations.append(time.monotonic() - began)
            lines.append(recorder.lines)
            if any(report.failed for report in reports):
                print(f"\n{item.nodeid} fails without a mutant: fix it first", file=sys.stderr)
                return None, durations
        return lines, durations

    def _run(self, module: types.ModuleType, mutant: Mutant, items: list[pytest.Item], durations: list[float]) -> str:
        limit = 10.0 + self.timeout_factor * sum(durations[i] for i in mutant.tests)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: apply the mutant, run the tests until one fails
            os.close(read_end)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            try:
                apply_mutant(module, self.tree, mutant)
                selected = [items[i] for i in mutant.tests]
                item = selected[0]
                item.session._setupstate.teardown_exact(item)
                for position, item in enumerate(selected):
                    nextitem = selected[position + 1] if position + 1 < len(selected) else item
                    if any(report.failed for report in runtestprotocol(item, log=False, nextitem=nextitem)):
                        os.write(write_end, b"killed")
                        os._exit(0)
                os.write(write_end, b"survived")
            except BaseException:  # noqa: BLE001 - a mutant that breaks loading the code is caught
                os.write(write_end, b"killed")
            os._exit(0)
        os.close(write_end)
        ready, _, _ = select.select([read_end], [], [], limit)
        outcome = os.read(read_end, 16).decode() if ready else ""
        os.close(read_end)
        if not outcome:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return outcome or "timeout"

    def _report(self, found: list[Mutant], survivors: list[Mutant], timeouts: int, seconds: float) -> None:
        source = self.source.splitlines()
        relative = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        print(f"\n\n{relative}: {len(found)} mutants in {seconds:.0f} s")
        for mutant in survivors:
            where = mutant.function or "<module>"
            note = "" if mutant.tests else " (no test runs this line)"
            print(f"  survived  line {mutant.line:4d}  {where}: {mutant.description}{note}")
            print(f"            {source[mutant.line - 1].strip()}")
        killed = len(found) - len(survivors)
        score = 100.0 * killed / len(found) if found else 100.0
        print(f"{relative}: killed {killed} of {len(found)} ({timeouts} by timeout), "
              f"{len(survivors)} survived: mutation score {score:.1f}%")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", type=Path, help="the source file to mutate, e.g. submissions/lifecycle.py")
    parser.add_argument("tests", nargs="+", help="test files or node ids to run against each mutant")
    parser.add_argument("--only", type=int, help="only the mutants on this line")
    parser.add_argument("--timeout-factor", type=float, default=3.0,
                        help="a mutant's time limit: 10 s plus this many times its tests' own time")
    args = parser.parse_args(argv)
    plugin = MutationPlugin(args.module, args.only, args.timeout_factor)
    code = pytest.main([*args.tests, "-q", "-p", "no:cacheprovider", "-p", "no:randomly"], plugins=[plugin])
    return plugin.exit_code or int(code)


if __name__ == "__main__":
    sys.exit(main())
