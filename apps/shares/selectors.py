"""Reading shares: the owner's list, and what a visitor's token opens."""

from __future__ import annotations

from apps.errors import NotFound
from apps.shares.models import Share
from apps.shares.tokens import token_digest

# Tokens are 43 base64url characters; anything else is refused before a query.
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def share_list(*, owner, thread_id: str | None = None) -> list[Share]:
    qs = Share.objects.filter(owner=owner).select_related("thread")
    if thread_id is not None:
        qs = qs.filter(thread_id=thread_id)
    return list(qs.order_by("-created_at"))


def share_for_visitor(*, token: str) -> Share:
    """The live share a link opens. Unknown, revoked, and links of deleted chats (their rows go
    with the chat) all answer the same not-found, so a visitor learns nothing from trying."""
    if not token or len(token) > 64 or not set(token) <= _TOKEN_CHARS:
        raise NotFound("This shared link does not exist or was revoked")
    share = Share.objects.filter(token_digest=token_digest(token), revoked_at__isnull=True).select_related("thread").first()
    if share is None:
        raise NotFound("This shared link does not exist or was revoked")
    return share


def share_file(*, share: Share, path: str) -> dict:
    """The snapshot's entry for ``path`` when the owner included files; else not found."""
    if share.include_files:
        for f in share.files or []:
            if f.get("path") == path:
                return f
    raise NotFound("No such file in this shared chat")
