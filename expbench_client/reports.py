"""Text summaries of the two nested reports: ``compare`` and ``diagnostics``.

Their JSON grows new sections as the server learns new diagnostics, so these summaries walk the
structure generically (any side-by-side list, any test with a p-value) rather than naming each
section; ``--json`` always has everything.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .output import cell, p_value, score, signed, table

# Fields that describe how a test was run rather than what it found.
PROCEDURE = frozenset({"seed", "n_permutations", "min_group_size", "min_bin_size", "min_items", "p_value_formula",
                       "language", "alpha", "threshold", "binning", "order", "pooled_groups", "note",
                       "bins_left_out", "hidden_items", "unit", "bin_width"})
LABELS = ("variable", "name", "property", "skill", "capability", "test", "feature", "cue", "type", "group", "metric")
MAX_DEPTH = 5


def compare_report(result: Mapping[str, Any]) -> str:
    a, b = result.get("a") or {}, result.get("b") or {}
    lines = [f"A  #{cell(a.get('id'))} {cell(a.get('method'))} ({cell(a.get('team'))})",
             f"B  #{cell(b.get('id'))} {cell(b.get('method'))} ({cell(b.get('team'))})",
             f"task {cell(a.get('task'))}, test set {cell(a.get('test_set_version'))}"
             + ("" if result.get("same_test_set", True) else f" vs {cell(b.get('test_set_version'))} (different sets)"),
             ""]
    metrics = result.get("metrics") or []
    lines.append(table(["METRIC", "A", "B", "A-B"],
                       [[m.get("metric"), score(m.get("a")), score(m.get("b")), signed(m.get("difference"))]
                        for m in metrics], right=[1, 2, 3], shrink=[0]))
    paired = result.get("paired") or {}
    if paired.get("applicable"):
        verdict = "significant" if paired.get("significant") else "not significant"
        lines.append(f"paired test on {cell(paired.get('metric'))}: {p_value(paired.get('p_value'))} "
                     f"({verdict} at 0.05)")
    elif paired:
        lines.append(f"paired test: {cell(paired.get('note') or 'not applicable')}")
    for name, rows in side_by_side_sections(result):
        lines += ["", name.replace("_", " ")]
        lines.append(side_by_side_table(rows))
    return "\n".join(lines)


def side_by_side_sections(result: Mapping[str, Any]) -> Iterator[tuple[str, list[Mapping[str, Any]]]]:
    """Every list of ``{label, "a": {...}, "b": {...}}`` rows, one level of nesting included
    (CheckList: tests and capabilities)."""
    for name, value in result.items():
        if name in ("a", "b", "metrics", "paired"):
            continue
        if is_side_by_side(value):
            yield name, value
        elif isinstance(value, Mapping):
            for inner, rows in value.items():
                if is_side_by_side(rows):
                    yield f"{name} {inner}", rows


def is_side_by_side(value: Any) -> bool:
    return (isinstance(value, list) and bool(value) and all(isinstance(r, Mapping) for r in value)
            and isinstance(value[0].get("a"), Mapping) and isinstance(value[0].get("b"), Mapping))


def headline(values: Mapping[str, Any]) -> str | None:
    """The field that says most about one side: a rate or score rather than a count."""
    numbers = [k for k, v in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    for key in numbers:
        if key not in ("n", "ci_low", "ci_high"):
            return key
    return numbers[0] if numbers else None


def side_by_side_table(rows: Sequence[Mapping[str, Any]]) -> str:
    label = next((k for k in rows[0] if k not in ("a", "b")), "")
    field = headline({**(rows[0].get("b") or {}), **(rows[0].get("a") or {})}) or ""
    body = []
    for row in rows:
        va, vb = (row.get("a") or {}).get(field), (row.get("b") or {}).get(field)
        diff = va - vb if isinstance(va, (int, float)) and isinstance(vb, (int, float)) else None
        body.append([row.get(label), score(va), score(vb), signed(diff)])
    return table([label.upper() or "-", f"A {field}", f"B {field}", "A-B"], body, right=[1, 2, 3], shrink=[0])


def diagnostics_report(answer: Mapping[str, Any]) -> str:
    status = answer.get("status")
    head = f"#{cell(answer.get('id'))} {cell(answer.get('task'))} diagnostics: {cell(status)}"
    diagnostics = answer.get("diagnostics") or {}
    if not diagnostics:
        waiting = {"queued": "not started yet", "running": "being computed", "none": "none for this entry"}
        return f"{head} ({waiting.get(str(status), 'nothing to show')})"
    lines = [head]
    for section, value in diagnostics.items():
        if not isinstance(value, Mapping):
            lines.append(f"{section}: {cell(value)}")
            continue
        facts = summary_facts(value)
        lines.append(f"{section.replace('_', ' ')}" + (f": {facts}" if facts else ""))
        tests = list(tests_with_p_values(value))
        for label, facts_of_test in tests[:12]:
            lines.append(f"  {label}  {facts_of_test}")
        if len(tests) > 12:
            lines.append(f"  … {len(tests) - 12} more (see --json)")
    lines.append("(everything, with the method of each test: --json)")
    return "\n".join(lines)


def summary_facts(section: Mapping[str, Any]) -> str:
    facts = []
    for key, value in section.items():
        if key in PROCEDURE or isinstance(value, (Mapping, list)) or value is None:
            continue
        facts.append(f"{key.replace('_', ' ')} {number(value)}")
    return ", ".join(facts[:6])


def number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return cell(value)


def tests_with_p_values(node: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(label, "p=0.004 statistic 0.338 ...") for each dict holding a p-value, depth first."""
    if depth > MAX_DEPTH:
        return
    if isinstance(node, Mapping):
        if isinstance(node.get("p_value"), (int, float)) and not isinstance(node.get("p_value"), bool):
            label = next((str(node[k]) for k in LABELS if isinstance(node.get(k), str)), "test")
            extras = [f"{k.replace('_', ' ')} {number(v)}" for k, v in node.items()
                      if k not in PROCEDURE and k != "p_value" and isinstance(v, (int, float))
                      and not isinstance(v, bool)][:3]
            yield label, "  ".join([p_value(node["p_value"]), *extras])
            return
        for value in node.values():
            yield from tests_with_p_values(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from tests_with_p_values(value, depth + 1)
