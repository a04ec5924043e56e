"""The best score of a task over time, drawn on the server as an SVG (no script, no library).

Its points are the board's own rows, so the chart shows exactly the entries the board ranks: a
record is a ranked entry whose primary score beats every ranked entry scored before it. Human
performance, when the board has it, is a dashed line to aim at. The worker that stores a board
stores its records with it (``stored_progress``, in the payload), so a page draws the chart from
what it already read, never from the board's rows."""
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from benchmark.models import Task

# The drawing's size in SVG units (it scales to its box) and the room kept for the axis labels.
WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 14, 30


@dataclass(frozen=True)
class Record:
    day: date
    score: float
    method: str
    team: str


def records(task: Task, rows: list[dict[str, Any]]) -> list[Record]:
    """The ranked entries that raised the best primary score, in the order they were scored
    (entries of one day in board order, best first, so only the day's best counts)."""
    metric = task.primary_metric
    dated = [(date.fromisoformat(row["date"]), position, row) for position, row in enumerate(rows)
             if row.get("kind") == "submission" and row.get("rank") is not None and row.get("date")
             and isinstance((row.get("scores") or {}).get(metric), (int, float))]
    dated.sort(key=lambda item: (item[0], item[1]))
    found: list[Record] = []
    for day, _position, row in dated:
        score = float(row["scores"][metric])
        if not found or score > found[-1].score:
            found.append(Record(day, score, row["method"], row["team"]))
    return found


def human_score(task: Task, rows: list[dict[str, Any]]) -> float | None:
    value = next(((row.get("scores") or {}).get(task.primary_metric) for row in rows if row.get("kind") == "human"),
                 None)
    return float(value) if isinstance(value, (int, float)) else None


def stored_progress(task: Task, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What a stored board keeps for its chart (plain JSON): the records and human performance."""
    return {"records": [[record.day.isoformat(), record.score, record.method, record.team]
                        for record in records(task, rows)],
            "human": human_score(task, rows)}


def task_progress(task: Task, stored: dict[str, Any] | None) -> dict[str, Any]:
    """The chart of ``task`` from its stored board's ``stored_progress`` (None: no board yet):
    ``records``, ``svg`` (empty without a record) and ``summary``, one sentence that says what
    the chart shows."""
    stored = stored or {"records": [], "human": None}
    found = [Record(date.fromisoformat(day), score, method, team) for day, score, method, team in stored["records"]]
    label = dict(task.metric_columns)[task.primary_metric]
    return {"task": task, "records": found, "metric_label": label,
            "svg": progress_svg(task, found, stored["human"]) if found else "",
            "summary": summary(found, label, task.metric_decimals)}


def summary(found: list[Record], label: str, decimals: int) -> str:
    if not found:
        return _("No ranked entry yet.")
    first, last = found[0], found[-1]
    if len(found) == 1:
        return _("Best %(metric)s: %(score)s, by %(method)s on %(day)s.") % {
            "metric": label, "score": f"{first.score:.{decimals}f}", "method": first.method,
            "day": first.day.isoformat()}
    return _("Best %(metric)s rose from %(first)s (%(first_day)s) to %(last)s (%(last_day)s, %(method)s) "
             "in %(count)s records.") % {
        "metric": label, "first": f"{first.score:.{decimals}f}", "first_day": first.day.isoformat(),
        "last": f"{last.score:.{decimals}f}", "last_day": last.day.isoformat(), "method": last.method,
        "count": len(found)}


def progress_svg(task: Task, found: list[Record], human: float | None) -> SafeString:
    """A step line of the best score (a dot, with its entry as a tooltip, at each record), the
    human line if any, the score range on the left and the first and last day below."""
    decimals = task.metric_decimals
    start, end = found[0].day, max(found[-1].day, found[0].day + timedelta(days=1))
    values = [record.score for record in found] + ([human] if human is not None else [])
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or 1.0
    low, high = low - pad, high + pad

    def x(day: date) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * (day - start).days / (end - start).days

    def y(score: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (high - score) / (high - low)

    steps = [f"M{x(found[0].day):.1f},{y(found[0].score):.1f}"]
    for record in found[1:]:
        steps.append(f"H{x(record.day):.1f}V{y(record.score):.1f}")
    steps.append(f"H{x(end):.1f}")
    dots = "".join(
        f'<circle class="record" cx="{x(r.day):.1f}" cy="{y(r.score):.1f}" r="4" fill="currentColor"><title>'
        f'{escape(r.day.isoformat())}: {r.score:.{decimals}f} · {escape(r.method)} ({escape(r.team)})</title></circle>'
        for r in found)
    human_line = ""
    if human is not None:
        human_line = (f'<line class="human" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(human):.1f}" y2="{y(human):.1f}" '
                      'stroke="currentColor" stroke-opacity="0.5" stroke-dasharray="5 4"/>'
                      f'<text class="human-label" x="{WIDTH - RIGHT}" y="{y(human) - 4:.1f}" text-anchor="end" '
                      'font-size="11" fill="currentColor">'
                      f'{escape(_("Human"))} {human:.{decimals}f}</text>')
    title = escape(_("Best %(metric)s over time") % {"metric": dict(task.metric_columns)[task.primary_metric]})
    axis_y = HEIGHT - BOTTOM
    labels = (f'<text x="{LEFT - 6}" y="{y(high - pad) + 4:.1f}" text-anchor="end">{high - pad:.{decimals}f}</text>'
              f'<text x="{LEFT - 6}" y="{y(low + pad) + 4:.1f}" text-anchor="end">{low + pad:.{decimals}f}</text>'
              f'<text x="{LEFT}" y="{HEIGHT - 8}">{start.isoformat()}</text>'
              f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{end.isoformat()}</text>')
    return mark_safe(  # noqa: S308  # every text inside is escaped above; the rest is numbers
        f'<svg class="progress-chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" '
        f'aria-labelledby="progress-{task.pk}-title" id="progress-{task.slug}">'
        f'<title id="progress-{task.pk}-title">{title}</title>'
        f'<g stroke="currentColor" stroke-opacity="0.4">'
        f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{axis_y}" y2="{axis_y}"/>'
        f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{axis_y}"/></g>'
        f'{human_line}<path class="best" d="{"".join(steps)}" fill="none" stroke="currentColor" stroke-width="2"/>'
        f'{dots}<g font-size="11" fill="currentColor">{labels}</g></svg>')
