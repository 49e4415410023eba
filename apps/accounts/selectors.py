"""Reads for accounts: who may sign up, a user's tokens, and resolving a bearer token."""

from __future__ import annotations

import re

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from apps.accounts.models import PersonalAccessToken, User
from apps.accounts.services import TOKEN_PREFIX, token_digest
from deerflow_site.errors import NotFound

# dfp_ + at least 32 url-safe characters (token_create issues 43). Anything else cannot be ours.
TOKEN_PATTERN = re.compile(rf"^{TOKEN_PREFIX}[A-Za-z0-9_-]{{32,}}$")


class TokenRejected(Exception):
    """The bearer credential is not a usable token. The API answers 401 with this message."""


def superuser_exists() -> bool:
    return User.objects.filter(is_superuser=True).exists()


def signup_is_open() -> bool:
    """Open on a server without a superuser (its first account becomes the admin), otherwise only
    when the operator set DEERFLOW_ALLOW_SIGNUP."""
    return bool(getattr(settings, "DEERFLOW_ALLOW_SIGNUP", False)) or not superuser_exists()


def token_list_for_user(*, user) -> QuerySet[PersonalAccessToken]:
    """The user's tokens that are not revoked (expired ones stay listed, marked by expires_at)."""
    return PersonalAccessToken.objects.filter(owner=user, revoked_at__isnull=True).order_by("-created_at", "-pk")


def token_get_for_user(*, user, token_id: int) -> PersonalAccessToken:
    """One of the user's live tokens; another user's (or a revoked) token is simply not found."""
    token = token_list_for_user(user=user).filter(pk=token_id).first()
    if token is None:
        raise NotFound(f"Token {token_id} not found")
    return token


def token_authenticate(*, raw: str) -> PersonalAccessToken:
    """Resolve a presented token to its record, or raise TokenRejected saying why.

    Only the digest is looked up, so the plaintext is never compared or stored; a token whose
    owner was deleted went with the owner (cascade) and is simply unknown.
    """
    if not raw.startswith(TOKEN_PREFIX):
        raise TokenRejected(f"not a DeerFlow personal access token (they start with {TOKEN_PREFIX})")
    if not TOKEN_PATTERN.match(raw):
        raise TokenRejected("malformed personal access token")
    # The digest is unique: no ORDER BY (the model's Meta.ordering would add one to every
    # authenticated request).
    token = next(iter(PersonalAccessToken.objects.select_related("owner").filter(digest=token_digest(raw)).order_by()[:1]), None)
    if token is None or not token.owner.is_active:
        raise TokenRejected("invalid personal access token")
    if token.revoked_at is not None:
        raise TokenRejected("this personal access token has been revoked")
    if token.expires_at is not None and token.expires_at <= timezone.now():
        raise TokenRejected("this personal access token has expired")
    return token
