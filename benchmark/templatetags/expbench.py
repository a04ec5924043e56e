from django import template
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def score(value, decimals=3):
    """Official display: fixed decimals, an em dash when missing."""
    if value is None or value == "":
        return "—"
    return f"{float(value):.{int(decimals)}f}"


@register.simple_tag
def ci_bar(low, high, value, width=90):
    """A small inline SVG: the 95% CI as a bar on a 0-100 axis with the point estimate."""
    if low is None or high is None or value is None:
        return ""

    def x(v):
        return round(max(0.0, min(100.0, float(v))) / 100 * width, 2)

    return mark_safe(
        f'<svg class="ci-bar" width="{width}" height="8" viewBox="0 0 {width} 8" role="img" '
        f'aria-label="95% CI {float(low):.1f} to {float(high):.1f}">'
        f'<rect x="0" y="3" width="{width}" height="2" class="ci-axis"/>'
        f'<rect x="{x(low)}" y="1" width="{max(x(high) - x(low), 1)}" height="6" rx="2" class="ci-range"/>'
        f'<rect x="{x(value) - 0.75}" y="0" width="1.5" height="8" class="ci-point"/></svg>'
    )
