"""Channel connections: one-time connect codes, bindings, revocation; and the lookups the
channel manager makes for every inbound message.

A code is issued to a signed-in user and consumed by the platform identity that sends it to
the bot. Consumption is one conditional UPDATE (``used_at IS NULL AND expires_at > now``), so
two senders racing with the same code cannot both bind. The newest bind wins: binding an
identity revokes its earlier live binding (to whichever user), in the same transaction.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.channels.models import ChannelConnection, ConnectCode
from apps.errors import NotFound

logger = logging.getLogger(__name__)

# No 0/O, 1/I/L: read off a screen and typed on a phone.
_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
_CODE_RE = re.compile(rf"^[{_ALPHABET}]{{{CODE_LENGTH}}}$")
# last_used_at is for people reading the admin: at most one write a minute per connection.
_TOUCH_EVERY = timedelta(minutes=1)


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def normalize_code(text: str) -> str | None:
    code = (text or "").strip().upper().replace("-", "").replace(" ", "")
    return code if _CODE_RE.match(code) else None


@dataclass(frozen=True)
class IssuedCode:
    code: str
    expires_at: object
    expires_in: int


def connect_code_issue(*, user, provider: str, ttl_seconds: int) -> IssuedCode:
    """A fresh code; the user's earlier unused codes for this provider stop working."""
    now = timezone.now()
    code = "".join(secrets.choice(_ALPHABET) for _ in range(CODE_LENGTH))
    with transaction.atomic():
        ConnectCode.objects.filter(user=user, provider=provider, used_at__isnull=True, expires_at__gt=now).update(expires_at=now)
        row = ConnectCode.objects.create(user=user, provider=provider, digest=_digest(code),
                                         expires_at=now + timedelta(seconds=ttl_seconds))
    return IssuedCode(code=code, expires_at=row.expires_at, expires_in=ttl_seconds)


def connect_code_consume(*, provider: str, code_text: str, external_id: str, workspace: str = "",
                         display_name: str = "") -> ChannelConnection | None:
    """Bind the sender to the code's user, or None when the code is unknown, used, expired or
    for another provider (one answer for all: a guesser learns nothing)."""
    code = normalize_code(code_text)
    if code is None:
        return None
    now = timezone.now()
    with transaction.atomic():
        row = ConnectCode.objects.select_for_update().filter(digest=_digest(code), provider=provider).first()
        if row is None or row.used_at is not None or row.expires_at <= now:
            return None
        if not ConnectCode.objects.filter(pk=row.pk, used_at__isnull=True).update(used_at=now):
            return None
        ChannelConnection.objects.filter(provider=provider, external_id=external_id, workspace=workspace,
                                         revoked_at__isnull=True).update(revoked_at=now)
        connection = ChannelConnection.objects.create(user_id=row.user_id, provider=provider, external_id=external_id,
                                                      workspace=workspace, display_name=display_name[:255], last_used_at=now)
        ConnectCode.objects.filter(pk=row.pk).update(connection=connection)
    logger.info("Channel %s: identity %s connected to user %s", provider, external_id, row.user_id)
    return connection


def connect_code_discard(*, provider: str, code_text: str) -> bool:
    """Use a code up without binding anything: it was shown where others could read it."""
    code = normalize_code(code_text)
    if code is None:
        return False
    return bool(ConnectCode.objects.filter(digest=_digest(code), provider=provider, used_at__isnull=True).update(used_at=timezone.now()))


def connection_for_sender(*, provider: str, external_id: str, workspace: str = "") -> ChannelConnection | None:
    """The live binding of a platform identity, with its user; None for a stranger."""
    connection = (ChannelConnection.objects.select_related("user")
                  .filter(provider=provider, external_id=external_id, workspace=workspace, revoked_at__isnull=True).first())
    if connection is None or not connection.user.is_active:
        return None
    now = timezone.now()
    if connection.last_used_at is None or now - connection.last_used_at > _TOUCH_EVERY:
        ChannelConnection.objects.filter(pk=connection.pk).update(last_used_at=now)
        connection.last_used_at = now
    return connection


def connection_list_for_user(*, user):
    return ChannelConnection.objects.filter(user=user, revoked_at__isnull=True).order_by("-created_at")


def connection_revoke(*, connection: ChannelConnection) -> None:
    ChannelConnection.objects.filter(pk=connection.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def connection_revoke_for_user(*, user, connection_id) -> None:
    """The user's own live connection, or 404 (another user's id included)."""
    try:
        pk = int(connection_id)
    except (TypeError, ValueError):
        raise NotFound(f"Connection {connection_id} not found") from None
    connection = ChannelConnection.objects.filter(pk=pk, user=user, revoked_at__isnull=True).first()
    if connection is None:
        raise NotFound(f"Connection {connection_id} not found")
    connection_revoke(connection=connection)


def connection_serialize(connection: ChannelConnection) -> dict:
    return {
        "id": connection.pk,
        "provider": connection.provider,
        "workspace": connection.workspace,
        "external_id": connection.external_id,
        "display_name": connection.display_name,
        "created_at": connection.created_at.isoformat() if connection.created_at else None,
        "last_used_at": connection.last_used_at.isoformat() if connection.last_used_at else None,
    }


def connection_id_for_user(*, user, value) -> int:
    """A scheduled task's ``deliver_to``: one of the user's live connections (422 otherwise,
    also for another user's id: it is not theirs to name)."""
    from apps.errors import InvalidRequest

    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit():
        raise InvalidRequest("deliver_to: the id of one of your channel connections, or null")
    pk = int(value)
    if not ChannelConnection.objects.filter(pk=pk, user=user, revoked_at__isnull=True).exists():
        raise InvalidRequest(f"deliver_to: you have no live channel connection {pk} (see Settings → Connections)")
    return pk
