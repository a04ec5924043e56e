"""Template filters and tags of every page: score formatting and inline SVG charts."""
import math
from collections.abc import Iterable, Mapping
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def score(value: float | str | None, decimals: int | str = 3) -> str:
    """Official display: fixed decimals, an em dash when missing. Magnitudes of ten million and
    more (only unbounded ratios such as QUACKIE's raw SNR reach them) in scientific notation, so
    that one near-zero noise does not print a 45-digit number across the table."""
    if value is None or value == "":
        return "—"
    value = float(value)
    if abs(value) >= 1e7 and math.isfinite(value):
        return f"{value:.{int(decimals)}e}"
    return f"{value:.{int(decimals)}f}"


@register.simple_tag
def ci_bar(low: float | None, high: float | None, value: float | None, width: float = 90) -> str:
    """A small inline SVG: the 95% CI as a bar with the point estimate, on a 0-100 axis that
    widens to hold the interval (SNR and other unbounded scores are drawn, never clamped)."""
    if low is None or high is None or value is None:
        return ""
    bottom = min(0.0, float(low), float(value))
    top = max(100.0, float(high), float(value))

    def x(v: float) -> float:
        return round((float(v) - bottom) / (top - bottom) * width, 2)

    return mark_safe(
        f'<svg class="ci-bar" width="{width}" height="8" viewBox="0 0 {width} 8" role="img" '
        f'aria-label="95% CI {float(low):.1f} to {float(high):.1f}">'
        f'<rect x="0" y="3" width="{width}" height="2" class="ci-axis"/>'
        f'<rect x="{x(low)}" y="1" width="{max(x(high) - x(low), 1)}" height="6" rx="2" class="ci-range"/>'
        f'<rect x="{x(value) - 0.75}" y="0" width="1.5" height="8" class="ci-point"/></svg>'
    )


# Label widths in px at the charts' 11px font: CJK characters are about a full em wide.
LATIN_PX, WIDE_PX, LONGEST_LABEL = 6.4, 11.5, 40


def text_px(text: str) -> float:
    return sum(WIDE_PX if ord(ch) >= 0x2E80 else LATIN_PX for ch in text)


def short_label(text: str) -> str:
    return text if len(text) <= LONGEST_LABEL else text[: LONGEST_LABEL - 1] + "…"


def chart_name(title: str, rows: Iterable[tuple[str, str]]) -> str:
    """The accessible name of a chart: its title and every label with its value, so a screen
    reader gets what the bars show."""
    return escape((f"{title}: " if title else "Bar chart: ") + "; ".join(f"{label} {value}" for label, value in rows))


@register.simple_tag
def hbar_chart(items: Iterable[Mapping[str, Any]], label_key: str, value_key: str, max_value: float | None = None,
               width: float = 420, decimals: int | str = 1, scale: float = 1.0, signed: bool = False,
               title: str = "") -> str:
    """A horizontal bar chart as inline SVG (no JavaScript, no CDN). ``signed`` draws bars
    left or right of a centre line, for differences such as ΔAcc. ``max_value`` fixes the
    scale (charts meant to be compared pass the same one); the label column is as wide as the
    longest label, so labels are not cut (beyond 40 characters they end in "…", the full text
    in the chart's name). ``title`` starts the chart's accessible name."""
    rows = [(str(item[label_key]), item[value_key]) for item in items if item.get(value_key) is not None]
    if not rows:
        return ""
    values = [float(v) for _, v in rows]  # bar lengths use raw values; labels show value * scale
    label_w = min(max(60.0, max(text_px(short_label(label)) for label, _ in rows) + 12), width * 0.55)
    bar_h, gap = 16, 6
    plot_w = width - label_w - 60
    top = max_value if max_value is not None else (max(abs(v) for v in values) or 1.0)
    height = len(rows) * (bar_h + gap) + gap
    name = chart_name(title, ((label, f"{value * scale:.{int(decimals)}f}")
                              for (label, _), value in zip(rows, values, strict=True)))
    parts = [f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
             f'aria-label="{name}">']
    zero = label_w + (plot_w / 2 if signed else 0)
    for i, ((label, _), value) in enumerate(zip(rows, values, strict=True)):
        y = gap + i * (bar_h + gap)
        span = plot_w / 2 if signed else plot_w
        length = min(abs(value) / top, 1.0) * span if top else 0
        x = zero - length if signed and value < 0 else zero
        cls = "bar-neg" if value < 0 else "bar"
        parts.append(f'<text x="{label_w - 6:.1f}" y="{y + bar_h - 4}" text-anchor="end" class="chart-label">'
                     f'{escape(short_label(label))}</text>')
        parts.append(f'<rect x="{x:.1f}" y="{y}" width="{max(length, 1):.1f}" height="{bar_h}" rx="3" class="{cls}"/>')
        parts.append(f'<text x="{max(x + length, zero) + 4:.1f}" y="{y + bar_h - 4}" class="chart-value">'
                     f'{value * scale:.{int(decimals)}f}</text>')
    if signed:
        parts.append(f'<line x1="{zero}" x2="{zero}" y1="0" y2="{height}" class="chart-zero"/>')
    parts.append("</svg>")
    return mark_safe("".join(parts))


@register.filter
def label(value: object) -> str:
    """snake_case names as readable labels: question_type -> Question type."""
    text = str(value).replace("_", " ").strip()
    return text[:1].upper() + text[1:]


# Fill colours of the series of a grouped chart (presentation attributes, so no stylesheet change).
_SERIES_FILLS = ("#7f9ee6", "#e3a76f", "#b8bfcb")


@register.simple_tag
def grouped_bar_chart(item: Mapping[str, Any], series_keys: str, series_names: str, max_value: float | str | None = 1.0,
                      width: float = 420, decimals: int | str = 2) -> str:
    """Grouped horizontal bars as inline SVG (no JavaScript, no CDN): one group per category,
    one bar per series, e.g. an ICQ cue's predicted, reference and uniform label distributions.
    ``item[key]`` is a ``{category: value}`` dict for each comma-separated key of
    ``series_keys``; ``series_names`` gives the legend names in the same order."""
    keys = [key.strip() for key in series_keys.split(",")]
    names = [name.strip() for name in series_names.split(",")]
    dists = [item.get(key) or {} for key in keys]
    categories = list(dict.fromkeys(category for dist in dists for category in dist))
    if not categories:
        return ""
    label_w, bar_h, gap, legend_h = 110, 10, 8, 18
    plot_w = width - label_w - 50
    group_h = len(keys) * bar_h
    height = legend_h + len(categories) * (group_h + gap) + gap
    top = float(max_value) if max_value else max(float(v) for dist in dists for v in dist.values()) or 1.0
    name = chart_name(", ".join(names), (
        (str(category), ", ".join(f"{names[i] if i < len(names) else keys[i]} {float(dist[category]):.{int(decimals)}f}"
                                  for i, dist in enumerate(dists) if dist.get(category) is not None))
        for category in categories))
    parts = [f'<svg class="chart grouped-chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{name}">']
    x = label_w
    for i, name in enumerate(names):
        parts.append(f'<rect x="{x}" y="4" width="10" height="10" fill="{_SERIES_FILLS[i % len(_SERIES_FILLS)]}"/>')
        parts.append(f'<text x="{x + 14}" y="13" class="chart-label">{escape(name)}</text>')
        x += 14 + 7 * len(name) + 16
    for c, category in enumerate(categories):
        y0 = legend_h + gap + c * (group_h + gap)
        parts.append(f'<text x="{label_w - 6}" y="{y0 + group_h / 2 + 4:.1f}" text-anchor="end" '
                     f'class="chart-label">{escape(str(category)[:18])}</text>')
        for i, dist in enumerate(dists):
            value = dist.get(category)
            if value is None:
                continue
            y = y0 + i * bar_h
            length = min(max(float(value), 0.0) / top, 1.0) * plot_w if top else 0
            series = names[i] if i < len(names) else keys[i]
            parts.append(f'<rect x="{label_w}" y="{y}" width="{max(length, 1):.1f}" height="{bar_h - 1}" '
                         f'fill="{_SERIES_FILLS[i % len(_SERIES_FILLS)]}"><title>{escape(series)} '
                         f'{escape(str(category))}: {float(value):.{int(decimals)}f}</title></rect>')
            parts.append(f'<text x="{label_w + length + 4:.1f}" y="{y + bar_h - 1}" class="chart-value">'
                         f'{float(value):.{int(decimals)}f}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))


@register.filter
def p_value(value: float | str | None, decimals: int | str = 3) -> str:
    """``p = 0.042``; a p-value below the last decimal shown reads ``p < 0.001``, never
    ``p = 0.000`` (a permutation p-value is never 0)."""
    cell = p_cell(value, decimals)
    return "p < " + cell[1:] if cell.startswith("<") else "p = " + cell


@register.filter
def p_cell(value: float | str | None, decimals: int | str = 4) -> str:
    """A p-value in a table column: ``0.0421``, or ``<0.0001`` below the last decimal shown."""
    if value is None or value == "":
        return "—"
    places = int(decimals)
    return f"<{10 ** -places:.{places}f}" if float(value) < 10 ** -places else f"{float(value):.{places}f}"
