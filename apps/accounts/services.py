"""Writes for accounts: sign-up admission (the first admin), token creation, use and revocation."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts.models import PersonalAccessToken, User
from apps.errors import AlreadyInitialized, InvalidRequest

TOKEN_PREFIX = "dfp_"
# Any constant works; it only has to be the same in every process taking this lock.
_ADMIN_BOOTSTRAP_LOCK_ID = 0x6466_6164  # "dfad"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def user_signup_save(*, user: User, save: Callable[[], object] | None = None, first_admin_only: bool = False) -> User:
    """Save a newly signed-up account; on a server without a superuser it becomes the superuser.

    ``first_admin_only`` (the first-run setup, e.g. DeerFlow's ``/api/v1/auth/initialize``): save
    nothing and raise AlreadyInitialized unless this account is the one that becomes the admin,
    decided under the same lock, so two racing setups never leave a second, ordinary account.

    Two sign-ups racing on an empty server must not both become admin, so the check and the
    insert share one transaction under a lock: a PostgreSQL advisory lock, or on SQLite the
    write lock that the IMMEDIATE transaction mode takes at BEGIN.
    """
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_ADMIN_BOOTSTRAP_LOCK_ID])
        if not User.objects.filter(is_superuser=True).exists():
            user.is_staff = True
            user.is_superuser = True
        elif first_admin_only:
            raise AlreadyInitialized("System already initialized")
        if save is None:
            user.save()
        else:
            save()
    return user


@dataclass(frozen=True)
class IssuedToken:
    record: PersonalAccessToken
    token: str  # the plaintext, returned once and never stored


def token_create(*, owner, name: str, scopes: list[str], expires_in_days: int | None = None) -> IssuedToken:
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidRequest("name: give the token a name of 1 to 100 characters")
    valid = set(PersonalAccessToken.Scope.values)
    if not isinstance(scopes, (list, tuple)) or not all(isinstance(s, str) for s in scopes):
        raise InvalidRequest("scopes: a list of scope names")
    unknown = sorted(set(scopes) - valid)
    if unknown:
        raise InvalidRequest(f"scopes: unknown {', '.join(unknown)}; choose from {', '.join(sorted(valid))}")
    if not scopes:
        raise InvalidRequest("scopes: choose at least one scope")
    if PersonalAccessToken.Scope.ADMIN in scopes and not owner.is_staff:
        raise InvalidRequest("scopes: admin: only staff accounts can hold the admin scope")
    if expires_in_days is not None and not (1 <= expires_in_days <= 3650):
        raise InvalidRequest("expires_in_days: must be between 1 and 3650")
    # 32 random bytes -> 43 url-safe characters after the prefix.
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = PersonalAccessToken.objects.create(
        owner=owner,
        name=name,
        prefix=token[: len(TOKEN_PREFIX) + 6],
        digest=token_digest(token),
        scopes=sorted(set(scopes)),
        expires_at=timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None,
    )
    return IssuedToken(record=record, token=token)


def token_revoke(*, token: PersonalAccessToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def token_touch(*, token: PersonalAccessToken) -> None:
    """Record a use. Written at most once per DEERFLOW_TOKEN_TOUCH_SECONDS per token, so a script
    polling a run does not turn every read into a write."""
    now = timezone.now()
    interval = timedelta(seconds=getattr(settings, "DEERFLOW_TOKEN_TOUCH_SECONDS", 60))
    if token.last_used_at is not None and now - token.last_used_at < interval:
        return
    # A conditional UPDATE: concurrent requests with the same token write once, not once each.
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - interval)
    if PersonalAccessToken.objects.filter(stale, pk=token.pk).update(last_used_at=now):
        token.last_used_at = now


def user_set_active(*, user, active: bool) -> int:
    """Disable (or re-enable) an account. Disabling also revokes its access tokens, so a
    script holding one stops at once rather than when the token expires; the count revoked."""
    user.is_active = active
    user.save(update_fields=["is_active"])
    if active:
        return 0
    return PersonalAccessToken.objects.filter(owner=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
