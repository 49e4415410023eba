"""Bar charts as server-side SVG: they render with no script and no network, scale to the
width of a phone (viewBox, width 100%), and carry their numbers as text for screen readers
and as a <title> on every bar for pointers."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 220, 64, 28, 12


def compact(value: float) -> str:
    """12_345 → 12.3k: axis labels stay short on a phone."""
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{value:.4f}".rstrip("0").rstrip(".") if value and abs(value) < 1 else f"{value:.0f}"


def bar_chart(points: list[tuple[str, float | None]], *, label: str, unit: str = "", color: str = "#3b6fe0") -> SafeString:
    """``points`` are (x label, value); a None value (unpriced) draws no bar and says so."""
    values = [v for _, v in points if v is not None]
    peak = max(values, default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    step = plot_w / max(len(points), 1)
    bar_w = max(step * 0.7, 1)
    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" aria-label="{escape(label)}" '
             f'xmlns="http://www.w3.org/2000/svg" font-size="13" font-family="system-ui, sans-serif">',
             f"<title>{escape(label)}</title>"]
    for frac in (0, 0.5, 1):
        y = TOP + plot_h * (1 - frac)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - 8}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e3e6eb"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#5b6472">{escape(unit)}{compact(peak * frac)}</text>')
    every = max(1, round(len(points) / 6))
    for i, (x_label, value) in enumerate(points):
        x = LEFT + i * step + (step - bar_w) / 2
        text = "unpriced" if value is None else f"{unit}{compact(value)}"
        if value:
            h = max(plot_h * value / peak, 1)
            parts.append(f'<rect class="bar" x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" rx="2" fill="{color}">'
                         f"<title>{escape(x_label)}: {escape(text)}</title></rect>")
        if i % every == 0 or i == len(points) - 1:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" fill="#5b6472">{escape(x_label)}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))
