"""Number formats for the console pages."""

from datetime import datetime

from django import template

from apps.console.charts import compact as _compact
from apps.runs.pricing import cost_text

register = template.Library()


@register.filter
def compact(value) -> str:
    return _compact(float(value or 0))


@register.filter
def money(cost: dict) -> str:
    return cost_text(cost)


@register.filter
def percent(value) -> str:
    return f"{float(value) * 100:.1f}%"


@register.filter
def iso_local(value: str, tz) -> str:
    return datetime.fromisoformat(value).astimezone(tz).strftime("%d %b %H:%M")


@register.filter
def seconds(value) -> str:
    if value is None:
        return "–"
    value = int(value)
    return f"{value // 3600}h {value % 3600 // 60}m" if value >= 3600 else f"{value // 60}m {value % 60}s" if value >= 60 else f"{value}s"
