"""One-off schedules: a task that runs once, at ``run_at``, then is complete.

``run_at`` is ISO 8601. A time with an offset (``2026-12-02T09:00:00+01:00``, ``…Z``) means
that instant; a time without one is read in the task's time zone, which is what a person
typing "tomorrow 09:00" into the page means.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from apps.errors import InvalidRequest

FIELD = "schedule_spec.run_at"


def parse_run_at(value: object, zone: ZoneInfo) -> dt.datetime:
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, str) and value.strip():
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidRequest(f"{FIELD}: {value!r} is not an ISO 8601 date and time, e.g. '2026-12-24T09:00'") from None
    else:
        raise InvalidRequest(f"{FIELD}: a date and time is required for a one-off task, e.g. '2026-12-24T09:00'")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment.astimezone(dt.UTC).replace(microsecond=0)


def require_future(run_at: dt.datetime, *, now: dt.datetime) -> None:
    if run_at <= now:
        raise InvalidRequest(f"{FIELD}: {run_at.isoformat()} is in the past; a one-off task needs a time still to come")


def describe(run_at: dt.datetime, zone: ZoneInfo) -> str:
    local = run_at.astimezone(zone)
    return f"Once, on {local:%a %d %b %Y} at {local:%H:%M}"


def preview(run_at: object, timezone: ZoneInfo, *, now: dt.datetime) -> dict:
    moment = parse_run_at(run_at, timezone)
    require_future(moment, now=now)
    return {"schedule_type": "once", "run_at": moment.isoformat(), "timezone": timezone.key, "description": describe(moment, timezone),
            "next_runs": [moment.astimezone(timezone).isoformat()]}
