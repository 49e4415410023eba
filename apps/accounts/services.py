"""Writes for accounts: token creation and revocation."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from apps.accounts.models import PersonalAccessToken
from deerflow_site.errors import InvalidRequest

TOKEN_PREFIX = "dfp_"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class IssuedToken:
    record: PersonalAccessToken
    token: str  # the plaintext, returned once and never stored


def token_create(*, owner, name: str, scopes: list[str], expires_in_days: int | None = None) -> IssuedToken:
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidRequest("name: give the token a name of 1 to 100 characters")
    valid = set(PersonalAccessToken.Scope.values)
    unknown = sorted(set(scopes) - valid)
    if unknown or not scopes:
        raise InvalidRequest(f"scopes: unknown {', '.join(unknown)}; choose from {', '.join(sorted(valid))}" if unknown else "scopes: choose at least one scope")
    if expires_in_days is not None and not (1 <= expires_in_days <= 3650):
        raise InvalidRequest("expires_in_days: must be between 1 and 3650")
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
