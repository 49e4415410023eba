"""What a console request asks about: a period of days in a time zone, and whose runs.

A period is whole local days ending today (``today``, ``7d``, ``30d``, ``90d``) or an explicit
``since``/``until`` pair of dates, both inclusive. Days are cut in the caller's ``tz`` (IANA
name, default UTC), so "today" in Tokyo is not UTC's today and a run at 23:30 local time lands
on the day its user saw it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib.auth import get_user_model
from django.utils import timezone

from apps.errors import Forbidden, InvalidRequest, NotFound

PERIODS = {"today": 1, "7d": 7, "30d": 30, "90d": 90}
MAX_DAYS = 366


@dataclass(frozen=True)
class Period:
    name: str
    tz: ZoneInfo
    first_day: date
    last_day: date

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first_day, time.min, tzinfo=self.tz)

    @property
    def end(self) -> datetime:
        return datetime.combine(self.last_day + timedelta(days=1), time.min, tzinfo=self.tz)

    def days(self) -> list[date]:
        return [self.first_day + timedelta(days=i) for i in range((self.last_day - self.first_day).days + 1)]

    def as_dict(self) -> dict:
        return {"name": self.name, "tz": self.tz.key, "since": self.first_day.isoformat(), "until": self.last_day.isoformat(),
                "start": self.start.isoformat(), "end": self.end.isoformat()}


def _date(value: str, name: str) -> date:
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError):
        raise InvalidRequest(f"{name} must be a date as YYYY-MM-DD, got {value!r}") from None


def parse_tz(value: str | None) -> ZoneInfo:
    if not value:
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidRequest(f"tz must be an IANA time zone name such as Europe/Paris, got {value!r}") from None


def parse_period(params, *, default: str = "7d", now: datetime | None = None) -> Period:
    tz = parse_tz(params.get("tz"))
    today = (now or timezone.now()).astimezone(tz).date()
    since, until = params.get("since"), params.get("until")
    if since or until:
        if params.get("period"):
            raise InvalidRequest("period: give either period or since/until, not both")
        first = _date(since, "since") if since else None
        last = _date(until, "until") if until else today
        if first is None:
            raise InvalidRequest("since is required with until")
        if first > last:
            raise InvalidRequest("since must not be after until")
        if (last - first).days + 1 > MAX_DAYS:
            raise InvalidRequest(f"since/until may span at most {MAX_DAYS} days")
        return Period("custom", tz, first, last)
    name = params.get("period") or default
    if name not in PERIODS:
        raise InvalidRequest(f"period must be one of {', '.join(PERIODS)} (or give since/until as YYYY-MM-DD), got {name!r}")
    return Period(name, tz, today - timedelta(days=PERIODS[name] - 1), today)


@dataclass(frozen=True)
class Scope:
    """Whose runs: one user (``owner_id``) or everyone (``owner_id`` None, admins only)."""

    owner_id: int | None
    label: str

    @property
    def everyone(self) -> bool:
        return self.owner_id is None

    def filter(self, qs, field: str = "owner_id"):
        return qs if self.everyone else qs.filter(**{field: self.owner_id})


def parse_scope(user, value: str | None) -> Scope:
    """``user`` absent: the caller. ``all`` or another user's name or id: admins only."""
    if not value or value in (user.get_username(), str(user.pk)):
        return Scope(user.pk, user.get_username())
    if not user.is_staff:
        raise Forbidden("user: only administrators can see other users' usage")
    if value == "all":
        return Scope(None, "all")
    User = get_user_model()
    found = User.objects.filter(username=value).only("pk", "username").first()
    if found is None and value.isdigit():
        found = User.objects.filter(pk=int(value)).only("pk", "username").first()
    if found is None:
        raise NotFound(f"user: no user {value!r}")
    return Scope(found.pk, found.get_username())
