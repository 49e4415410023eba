"""Making and revoking shared links (the token scheme: ``tokens.py``)."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from apps.chat.export import thread_transcript
from apps.errors import InvalidRequest, NotFound
from apps.shares.models import Share
from apps.shares.tokens import share_token, token_digest


def _referenced_files(messages: list[dict]) -> list[dict]:
    """The files the conversation names: each question's attachments and the files an answer
    presented (``present_files``), once each, in order."""
    seen: dict[str, dict] = {}
    for m in messages:
        for f in m.get("files") or []:
            if f.get("path") and f["path"] not in seen:
                seen[f["path"]] = {"path": f["path"], "name": f.get("name") or f["path"].rsplit("/", 1)[-1], "size": f.get("size")}
        for call in m.get("tool_calls") or []:
            if call.get("name") != "present_files":
                continue
            for path in (call.get("args") or {}).get("filepaths") or []:
                if isinstance(path, str) and path.startswith("/mnt/user-data/") and path not in seen:
                    seen[path] = {"path": path, "name": path.rsplit("/", 1)[-1], "size": None}
    return list(seen.values())


def share_create(*, owner, thread, include_files: bool = False) -> Share:
    """A snapshot of the thread's visible conversation as it is now, behind a new link."""
    if not isinstance(include_files, bool):
        raise InvalidRequest("include_files must be true or false")
    messages = thread_transcript(thread)
    if not messages:
        raise InvalidRequest("This chat has no messages to share yet")
    share_id = uuid.uuid4()
    return Share.objects.create(
        id=share_id, owner=owner, thread=thread, title=(thread.title or "Untitled chat")[:256], messages=messages,
        include_files=include_files, files=_referenced_files(messages), token_digest=token_digest(share_token(share_id)))


def share_revoke(*, owner, share_id) -> Share:
    """Revoke one of ``owner``'s links (another user's, or an unknown id, is not found). Revoking
    twice keeps the first time."""
    with transaction.atomic():
        try:
            share = Share.objects.select_for_update().get(pk=uuid.UUID(str(share_id)), owner=owner)
        except (ValueError, Share.DoesNotExist):
            raise NotFound(f"Shared link {share_id} not found") from None
        if share.revoked_at is None:
            share.revoked_at = timezone.now()
            share.save(update_fields=["revoked_at"])
    return share
