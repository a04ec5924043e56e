"""The import graph of the product code, imports inside functions included.

    python scripts/import_graph.py            # cycles, and product imports placed inside functions
    python scripts/import_graph.py --edges    # every edge, one "a -> b" per line

It reads the source with ``ast`` (nothing is imported or run), resolves relative imports and
``from package import module`` to the module they name, and reports each group of modules that
import each other, directly or around a loop, as one cycle, and every import of product code
placed inside a function (such an import hides a cycle from Python until the function runs),
unless it carries ruff's ``# noqa: PLC0415`` with the reason above it: allowed only for code
that loads a heavy dependency such as torch. It exits 1 when there is either, so the README's
test command keeps both at zero. Deferred imports of third-party modules are ruff's business
(PLC0415), with the same rule.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Product packages; tests, performance benchmarks and scripts are not part of the product.
PACKAGES = ("scoring", "core", "benchmark", "submissions", "leaderboards", "accounts", "config",
            "expbench_client")


def product_files(root: Path = ROOT) -> Iterator[Path]:
    for package in PACKAGES:
        base = root / package
        if base.is_dir():
            yield from sorted(base.rglob("*.py"))


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(name: str, known: set[str]) -> str | None:
    """The longest known module that ``name`` is or lies in (``a.b.f`` -> ``a.b`` when f is a
    function of a.b)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


class Imports(ast.NodeVisitor):
    """(imported name, line, inside a function?) for every import statement of one module."""

    def __init__(self, module: str, is_package: bool):
        self.module, self.is_package = module, is_package
        self.depth = 0
        self.found: list[tuple[str, int, bool]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, node.lineno, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([base] if base else []))
        for alias in node.names:
            # `from a import b` names module a.b when b is a module, else something inside a.
            self.found.append((f"{base}.{alias.name}", node.lineno, self.depth > 0))


def graph(root: Path = ROOT) -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """({module: product modules it imports}, [(file, line, module) of product imports placed
    inside a function])."""
    files = {module_name(p, root): p for p in product_files(root)}
    known = set(files)
    edges: dict[str, set[str]] = {m: set() for m in files}
    deferred = set()
    for module, path in files.items():
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        visitor = Imports(module, path.name == "__init__.py")
        visitor.visit(ast.parse(source, filename=str(path)))
        for name, line, inside in visitor.found:
            target = resolve(name, known)
            # A package's own parents are imported by Python anyway: not an edge of the code.
            if target is None or target == module or module.startswith(target + "."):
                continue
            edges[module].add(target)
            if inside and not re.search(r"noqa:[^#]*PLC0415", lines[line - 1]):
                deferred.add((str(path.relative_to(root)), line, target))
    return edges, sorted(deferred)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(edges[start])))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while not group or group[-1] != node:
                        group.append(stack.pop())
                        on_stack.discard(group[-1])
                    if len(group) > 1:
                        found.append(sorted(group))
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Cycles of the product's import graph.")
    parser.add_argument("--edges", action="store_true", help="print every edge")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout to read (default: this one)")
    args = parser.parse_args(argv)
    edges, deferred = graph(args.root)
    if args.edges:
        for module in sorted(edges):
            for target in sorted(edges[module]):
                print(f"{module} -> {target}")
        return 0
    groups = cycles(edges)
    for group in groups:
        print(f"cycle of {len(group)} modules: {', '.join(group)}")
    for path, line, target in deferred:
        print(f"{path}:{line}: imports {target} inside a function")
    print(f"modules: {len(edges)}, edges: {sum(map(len, edges.values()))}, cycles: {len(groups)}, "
          f"product imports inside functions: {len(deferred)}")
    return 1 if groups or deferred else 0


if __name__ == "__main__":
    sys.exit(main())
