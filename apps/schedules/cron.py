"""Cron expressions in a time zone: validation, the next firing times, a readable description.

Parsing is Celery's own (``celery.schedules.crontab``), so an expression accepted here is
one beat accepts. Like Celery, day-of-month and day-of-week must *both* match when both are
restricted (classic cron ORs them).

Wall-clock rules across daylight-saving changes (what beat's time-zone-aware crontab does
too): a time that does not exist on the spring-forward day is skipped; a time that happens
twice on the fall-back day fires once, at its first occurrence.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from celery.schedules import crontab

from apps.errors import InvalidRequest

FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
# A schedule that matches nothing in this many years (e.g. 30 February) is refused.
_SEARCH_YEARS = 5


@dataclass(frozen=True)
class Cron:
    minute: str
    hour: str
    day_of_month: str
    month_of_year: str
    day_of_week: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday, as in cron and Celery

    @property
    def expression(self) -> str:
        return " ".join(getattr(self, f) for f in FIELDS)

    def as_beat_fields(self) -> dict[str, str]:
        return {f: getattr(self, f) for f in FIELDS}


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def parse_timezone(name: object) -> ZoneInfo:
    if not isinstance(name, str) or name not in _zone_names():
        raise InvalidRequest(f"timezone: unknown time zone {name!r}; use an IANA name such as 'Europe/Berlin' or 'UTC'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidRequest(f"timezone: unknown time zone {name!r}") from None


def parse_cron(expression: object) -> Cron:
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidRequest("cron: a cron expression is required, e.g. '0 8 * * 1-5'")
    parts = expression.split()
    if len(parts) != 5:
        raise InvalidRequest(f"cron: expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}")
    # Cron writes Sunday as 0 or 7; Celery only knows 0.
    parts[4] = ",".join("0" if p == "7" else p for p in parts[4].split(","))
    values = dict(zip(FIELDS, parts, strict=True))
    try:
        parsed = crontab(**values)
    except (ValueError, TypeError, IndexError) as exc:
        raise InvalidRequest(f"cron: invalid expression {expression.strip()!r}: {exc}") from None
    return Cron(
        **values,
        minutes=frozenset(parsed.minute), hours=frozenset(parsed.hour), days=frozenset(parsed.day_of_month),
        months=frozenset(parsed.month_of_year), weekdays=frozenset(parsed.day_of_week),
    )


def _exists(local: dt.datetime, zone: ZoneInfo) -> bool:
    """False for a wall-clock time inside a spring-forward gap."""
    round_trip = local.replace(tzinfo=zone).astimezone(dt.UTC).astimezone(zone)
    return round_trip.replace(tzinfo=None) == local


def next_runs(cron: Cron, zone: ZoneInfo, *, after: dt.datetime, count: int = 5) -> list[dt.datetime]:
    """The next ``count`` firing times strictly after ``after``, as aware datetimes in ``zone``."""
    after = after.astimezone(zone)
    start = after.replace(tzinfo=None, second=0, microsecond=0)
    found: list[dt.datetime] = []
    day = start.date()
    last_day = day + dt.timedelta(days=366 * _SEARCH_YEARS)
    hours, minutes = sorted(cron.hours), sorted(cron.minutes)
    while day <= last_day and len(found) < count:
        # isoweekday: Monday 1 … Sunday 7; cron: Sunday 0.
        if day.month in cron.months and day.day in cron.days and day.isoweekday() % 7 in cron.weekdays:
            for hour in hours:
                for minute in minutes:
                    local = dt.datetime(day.year, day.month, day.day, hour, minute)
                    if local < start or not _exists(local, zone):
                        continue
                    aware = local.replace(tzinfo=zone, fold=0)
                    if aware <= after:
                        continue
                    found.append(aware)
                    if len(found) == count:
                        return found
        day += dt.timedelta(days=1)
    return found


def next_run(cron: Cron, zone: ZoneInfo, *, after: dt.datetime) -> dt.datetime | None:
    runs = next_runs(cron, zone, after=after, count=1)
    return runs[0] if runs else None


def describe(cron: Cron) -> str:
    """A readable sentence for the UI ('At 07:30 AM, Monday through Friday')."""
    from cron_descriptor import Options, get_description

    options = Options()
    options.use_24hour_time_format = True
    try:
        return get_description(cron.expression, options)
    except Exception:  # the descriptor is stricter than Celery on a few forms; the expression still works
        return cron.expression


def preview(expression: object, timezone: object, *, now: dt.datetime, count: int = 5) -> dict:
    cron = parse_cron(expression)
    zone = parse_timezone(timezone)
    runs = next_runs(cron, zone, after=now, count=count)
    if not runs:
        raise InvalidRequest(f"cron: {cron.expression!r} never fires")
    return {"cron": cron.expression, "timezone": zone.key, "description": describe(cron), "next_runs": [r.isoformat() for r in runs]}
