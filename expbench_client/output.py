"""Plain-text rendering of the server's JSON: aligned tables that fit the terminal (80 columns
when the output is not a terminal), scores with 3 decimals, ``-`` for anything unknown or
absent. ``--json`` bypasses all of this.

Columns are measured in terminal cells, not characters: a Chinese, Japanese or Korean character
(East Asian Wide or Fullwidth) takes two cells, a combining mark none, so the rows of a CMRC 2018
board with Chinese names line up."""
from __future__ import annotations

import json
import os
import shutil
import sys
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

from .errors import format_duration, parse_time
from .progress import progress_of

WIDTH = 80
GAP = "  "
MIN_SHRUNK = 10
ABSENT = "-"


def emit_json(value: Any, stream: TextIO | None = None) -> None:
    """Pretty JSON in UTF-8 whatever the locale's encoding, so non-ASCII names stay readable."""
    stream = stream or sys.stdout
    text = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(text)
        return
    stream.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


def cell(value: Any) -> str:
    if value is None or value == "":
        return ABSENT
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return score(value)
    return " ".join(str(value).split())


def score(value: Any) -> str:
    """Three decimals; ``-`` for a missing or empty score (null, "", a non-number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ABSENT
    return f"{value:.3f}"


def signed(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ABSENT
    return f"{value:+.3f}"


def p_value(value: Any) -> str:
    """``p=0.0043``; ``p<0.0001`` rather than a misleading run of zeros."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"p={ABSENT}"
    return f"p={value:.4f}" if value >= 0.0001 else "p<0.0001"


def when(value: Any, *, date_only: bool = False) -> str:
    moment = parse_time(value)
    if moment is None:
        return ABSENT
    return f"{moment:%Y-%m-%d}" if date_only else f"{moment:%Y-%m-%d %H:%M} UTC"


def terminal_width() -> int:
    """The terminal's columns (``COLUMNS`` when set), 80 when the output is not a terminal."""
    return shutil.get_terminal_size((WIDTH, 24)).columns


def char_width(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal cells ``text`` takes: 2 per East Asian wide character, 0 per combining mark."""
    return sum(char_width(char) for char in text)


def clip(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` cells, with "…" where it was cut."""
    if display_width(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        if used + char_width(char) > max(1, width - 1):
            break
        kept.append(char)
        used += char_width(char)
    return "".join(kept) + "…"


def pad(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` cells (str.ljust counts characters)."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, right: Iterable[int] = (),
          shrink: Iterable[int] = (), width: int | None = None, min_width: int = MIN_SHRUNK) -> str:
    """Columns aligned with two spaces between them. Columns in ``shrink`` (long free text such
    as team names) are clipped, in that order of priority, until the table fits ``width``
    (default: the terminal's width)."""
    width = terminal_width() if width is None else width
    cells = [[cell(value) for value in row] for row in rows]
    widths = [max([display_width(h)] + [display_width(r[i]) for r in cells]) for i, h in enumerate(headers)]
    for column in shrink:
        excess = sum(widths) + len(GAP) * (len(widths) - 1) - width
        if excess <= 0:
            break
        widths[column] = max(widths[column] - excess, min_width, display_width(headers[column]))
    right_aligned = set(right)

    def line(values: Sequence[str]) -> str:
        parts = []
        for i, value in enumerate(values):
            parts.append(pad(clip(value, widths[i]), widths[i], right=i in right_aligned))
        return GAP.join(parts).rstrip()

    return "\n".join([line(list(headers))] + [line(r) for r in cells])


# --- one renderer per command ---------------------------------------------------------------
def tasks_table(tasks: Sequence[Mapping[str, Any]]) -> str:
    rows = [[t.get("slug"), t.get("kind"), (t.get("test_set") or {}).get("n_items"), t.get("accepts_submissions"),
             t.get("name")] for t in tasks]
    # Slugs are what the user types next, so they are never clipped; names are, further than usual.
    return table(["TASK", "KIND", "ITEMS", "OPEN", "NAME"], rows, right=[2], shrink=[4], min_width=8)


def primary_score(submission: Mapping[str, Any], primary: Mapping[str, str]) -> Any:
    scores = submission.get("scores") or {}
    key = primary.get(submission.get("task") or "")
    if key is None and len(scores) == 1:
        key = next(iter(scores))
    return scores.get(key) if key else None


def submissions_table(submissions: Sequence[Mapping[str, Any]], primary: Mapping[str, str]) -> str:
    rows = [[s.get("id"), s.get("task"), s.get("method_name"), s.get("status"), s.get("public"),
             score(primary_score(s, primary)), when(s.get("created_at"), date_only=True)] for s in submissions]
    return table(["ID", "TASK", "METHOD", "STATUS", "PUBLIC", "SCORE", "CREATED"], rows, right=[0, 5], shrink=[2])


def submission_line(submission: Mapping[str, Any]) -> str:
    """``#12 expmrc-squad 'My system': scored  overall_f1=71.690 ...``"""
    line = (f"#{submission.get('id')} {submission.get('task')} {submission.get('method_name')!r}: "
            f"{submission.get('status')}")
    scores = submission.get("scores") or {}
    if scores:
        line += "  " + "  ".join(f"{k}={score(v)}" for k, v in scores.items())
    return line


def submission_details(submission: Mapping[str, Any]) -> str:
    lines = [submission_line(submission)]
    facts = [f"kind {cell(submission.get('kind'))}", "public" if submission.get("public") else "private",
             f"team {cell(submission.get('team'))}", f"test set {cell(submission.get('test_set_version'))}"]
    lines.append("  " + " · ".join(facts))
    total, unanswered = submission.get("total"), submission.get("unanswered")
    if total is not None:
        lines.append(f"  items {total} ({cell(unanswered)} unanswered)")
    ci = submission.get("ci") or {}
    if ci:
        lines.append("  95% CI  " + "  ".join(f"{k} [{score(v[0])}, {score(v[1])}]" for k, v in ci.items()
                                             if isinstance(v, Sequence) and len(v) == 2))
    declared = declarations_line(submission)
    if declared:
        lines.append(f"  declared: {declared}")
    progress = progress_of(submission)
    if progress is not None and submission.get("status") not in ("scored",):
        lines.append(f"  samples {progress[0]}/{progress[1]}")
    error = submission.get("error")
    if isinstance(error, Mapping):
        lines.append(f"  {cell(error.get('category'))}: {cell(error.get('message'))}")
        if error.get("help"):
            lines.append(f"  {cell(error.get('help'))}")
    lines.append(f"  created {when(submission.get('created_at'))} · finished {when(submission.get('finished_at'))}"
                 f" · diagnostics {cell(submission.get('diagnostics_status'))}")
    return "\n".join(lines)


def declarations_line(submission: Mapping[str, Any]) -> str:
    """``dev set used for training: part · external data: NewsQA · code: https://…``: what the
    submitter declared; empty when nothing was (or the server does not say)."""
    facts = []
    if submission.get("dev_set_use") not in (None, "", "none"):
        facts.append(f"dev set used for training: {cell(submission.get('dev_set_use'))}")
    for key, label in (("external_data", "external data"), ("code_url", "code"), ("paper_url", "paper")):
        if submission.get(key):
            facts.append(f"{label}: {cell(submission.get(key))}")
    return " · ".join(facts)


def run_log_block(log: str) -> str:
    """A model's log from its run on the public sample, set off and indented under the entry."""
    body = "\n".join(f"  | {line}".rstrip() for line in log.rstrip("\n").splitlines())
    return f"  log of the run on the public sample:\n{body}"


def scores_of(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """A row's scores; a missing, null or malformed ``scores`` is no score at all, never a crash."""
    scores = row.get("scores")
    return scores if isinstance(scores, Mapping) else {}


def leaderboard_table(board: Mapping[str, Any]) -> str:
    rows = [row for row in board.get("rows") or [] if isinstance(row, Mapping)]
    primary = board.get("primary_metric")
    metrics: list[str] = []
    for row in rows:
        metrics += [k for k in scores_of(row) if k not in metrics]
    # The primary metric is a column even when no row has it yet, so the header always names it.
    if isinstance(primary, str) and primary and primary not in metrics:
        metrics.append(primary)
    body = []
    for row in rows:
        # The mark leads, so clipping a long name to fit the terminal never drops it.
        method = ("* " if row.get("reported") else "") + cell(row.get("method"))
        body.append([row.get("rank"), method, row.get("team"), *[score(scores_of(row).get(k)) for k in metrics]])
    text = table(["RANK", "METHOD", "TEAM", *metrics], body, right=[0, *range(3, 3 + len(metrics))], shrink=[2, 1])
    title = f"{board.get('task', '')}  (primary metric {cell(primary)}, " \
            f"test set {cell(board.get('test_set_version'))})"
    if not rows:
        return "\n".join([title, text, "no entries yet"])
    return "\n".join(filter(None, [title, text, reported_footnote(rows)]))


def reported_footnote(rows: Sequence[Mapping[str, Any]]) -> str:
    return "* reported in the literature, not scored on this server" if any(r.get("reported") for r in rows) else ""


def short_task(slug: str, tasks: Sequence[str]) -> str:
    """Task slugs without the prefix they all share ("expmrc-squad" -> "squad"), for column headers."""
    prefix = os.path.commonprefix(list(tasks)) if len(tasks) > 1 else ""
    prefix = prefix[: prefix.rfind("-") + 1]
    return slug[len(prefix):] or slug


def benchmark_table(slug: str, board: Mapping[str, Any]) -> str:
    tasks = [str(t) for t in board.get("tasks") or []]
    rows = board.get("rows") or []
    body = []
    for row in rows:
        # The mark leads, so clipping a long name to fit the terminal never drops it.
        method = ("* " if row.get("reported") else "") + cell(row.get("method"))
        per_task = row.get("per_task") or {}
        body.append([row.get("rank"), method, row.get("team"), score(row.get("average")),
                     *[score(per_task.get(t)) for t in tasks]])
    headers = ["RANK", "METHOD", "TEAM", "AVERAGE", *[short_task(t, tasks) for t in tasks]]
    title = f"{slug}: average of the primary metric over {len(tasks)} tasks ({', '.join(tasks) or '-'})"
    text = table(headers, body, right=[0, *range(3, len(headers))], shrink=[2, 1])
    if not rows:
        return "\n".join([title, text, "no system has a public score on every task yet"])
    return "\n".join(filter(None, [title, text, reported_footnote(rows)]))


def quota_line(quota: Mapping[str, Any], now: Any = None) -> str:
    reset = parse_time(quota.get("resets_at"))
    line = (f"{quota.get('task', '?')}: {cell(quota.get('used'))} of {cell(quota.get('limit'))} submissions "
            f"used today, {cell(quota.get('remaining'))} remaining")
    if reset is not None:
        seconds = (reset - (now or datetime.now(timezone.utc))).total_seconds()
        line += f"; resets in {format_duration(seconds)} (at {reset:%Y-%m-%d %H:%M} UTC)"
    return line
