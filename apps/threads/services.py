"""Writes for threads.

Runs live a floor above threads (DESIGN.md §3): this app does not know them. The engine says
whether a run still holds a thread, drops what it keeps for a deleted thread (its
checkpoints) and reserves a thread while it is deleted, through the lists below, filled in
``RunsConfig.ready()``.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Callable

from django.db import IntegrityError, transaction

from apps.errors import Conflict, InvalidRequest, NotFound
from apps.threads.metadata import check_metadata_size
from apps.threads.models import THREAD_ID_PATTERN, Thread, ThreadTag, new_thread_id
from deerflow_site.db.prepared_sql import ModelInsert, ModelUpdate
from harness.sandbox import sandbox_thread_deleted

_THREAD_ID = re.compile(THREAD_ID_PATTERN)
# Ownership is the server's to decide; clients cannot smuggle it in through metadata.
_RESERVED_METADATA_KEYS = frozenset({"owner_id", "user_id"})
# The chat's mode selector (static/chat/modes.js) keeps its choice here; anything else would
# leave the page guessing, so it is refused at the door.
THREAD_MODES = ("fast", "thinking", "plan", "pro")
# The statuses ``thread_status_set`` takes, for the apps above, which do not read this app's models.
ThreadStatus = Thread.Status

# fn(thread_id) -> True while a run is active on the thread (called under the thread's row lock).
active_run_checks: list[Callable[[str], bool]] = []
# fn(thread_id): drop what another app keeps for a thread being deleted.
thread_cleanups: list[Callable[[str], None]] = []
# fn(thread) -> a context manager held around a thread's delete: the engine's reservation of
# the thread, which refuses (Conflict) while a run holds it and admits no run until it is gone.
delete_guards: list[Callable[[Thread], contextlib.AbstractContextManager]] = []


def _has_active_run(thread_id: str) -> bool:
    return any(check(thread_id) for check in active_run_checks)


def _check_mode(metadata: dict) -> None:
    mode = metadata.get("mode")
    if mode is not None and mode not in THREAD_MODES:
        raise InvalidRequest(f"metadata.mode: one of {', '.join(THREAD_MODES)} (or null to clear it), not {mode!r}")


def validate_thread_id(thread_id: object) -> str:
    if not isinstance(thread_id, str) or not _THREAD_ID.fullmatch(thread_id):
        raise InvalidRequest("thread_id must be 1 to 64 characters of letters, digits, '_' and '-'")
    return thread_id


_insert_thread = ModelInsert(Thread)  # prepared SQL: deerflow_site/db/prepared_sql.py


def thread_create(*, owner, thread_id: str | None = None, assistant_id: str = "", metadata: dict | None = None) -> Thread:
    """Create a thread, or return the caller's existing one with that id (idempotent)."""
    generated = thread_id is None
    thread_id = new_thread_id() if generated else validate_thread_id(thread_id)
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidRequest("metadata must be an object")
    _check_mode(metadata or {})
    clean_metadata = {k: v for k, v in (metadata or {}).items() if k not in _RESERVED_METADATA_KEYS}
    check_metadata_size(clean_metadata)
    # A fresh uuid4 names no existing thread; the insert would still catch the impossible clash.
    existing = None if generated else Thread.objects.filter(pk=thread_id).first()
    if existing is not None:
        if existing.owner_id != owner.pk:
            # Another user's id: answered like every other route does for it.
            raise NotFound(f"Thread {thread_id} not found")
        return existing
    try:
        # A savepoint only inside a caller's transaction, where a failed insert would break it;
        # alone, the insert is its own transaction and holds SQLite's write lock for less time.
        with transaction.atomic() if transaction.get_connection().in_atomic_block else contextlib.nullcontext():
            thread = _insert_thread.create(id=thread_id, owner=owner, assistant_id=assistant_id or "", metadata=clean_metadata)
    except IntegrityError:
        # A concurrent create with the same id won the race.
        existing = Thread.objects.filter(pk=thread_id, owner=owner).first()
        if existing is None:
            raise NotFound(f"Thread {thread_id} not found") from None
        return existing
    thread.tag_names = []  # a new thread has none: its JSON needs no query for them
    return thread


def thread_update(*, thread: Thread, metadata: dict | None) -> Thread:
    """Merge metadata (a null value removes a key); ownership keys stay the server's."""
    if metadata is None:
        return thread
    if not isinstance(metadata, dict):
        raise InvalidRequest("metadata must be an object")
    _check_mode(metadata)
    merged = dict(thread.metadata)
    for key, value in metadata.items():
        if key in _RESERVED_METADATA_KEYS:
            continue
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    check_metadata_size(merged, before=thread.metadata)
    thread.metadata = merged
    thread.save(update_fields=["metadata", "updated_at"])
    return thread


def thread_set_pinned(*, thread: Thread, pinned: bool) -> Thread:
    """Pin or unpin. Pinning is not activity: ``updated_at`` stays, so the thread keeps its
    place in Today / Previous 7 days when it is unpinned again."""
    from django.utils import timezone

    if pinned and thread.pinned_at is None:
        thread.pinned_at = timezone.now()
    elif not pinned:
        thread.pinned_at = None
    Thread.objects.filter(pk=thread.pk).update(pinned_at=thread.pinned_at)
    return thread


def thread_branch_create(*, owner, assistant_id: str, title: str, metadata: dict) -> Thread:
    """A new thread carrying on from another (its metadata copied and already checked there)."""
    return Thread.objects.create(id=new_thread_id(), owner=owner, assistant_id=assistant_id, title=title[:255], metadata=metadata)


def thread_delete(*, thread: Thread) -> None:
    """Delete the thread with its runs, events, checkpoints and files. Refused while a run is active."""
    from harness.config import thread_user_data_dir

    with contextlib.ExitStack() as guards:
        for guard in delete_guards:
            guards.enter_context(guard(thread))
        with transaction.atomic():
            locked = Thread.objects.select_for_update().get(pk=thread.pk)
            if _has_active_run(locked.pk):
                raise Conflict(f"Thread {thread.pk} has an active run; cancel it before deleting the thread")
            for cleanup in thread_cleanups:
                cleanup(locked.pk)
            locked.delete()
    # Its container and disk image first: a mounted image would keep its files out of rmtree's reach.
    sandbox_thread_deleted(thread.owner_id, thread.pk)
    shutil.rmtree(thread_user_data_dir(thread.owner_id, thread.pk).parent, ignore_errors=True)


def thread_mark_idle(*, thread: Thread) -> bool:
    """Free a thread left busy (or in error) by a run that is gone. Refused while a run is
    still active on it: that run would then write into a thread that looks free."""
    if _has_active_run(thread.pk):
        raise Conflict(f"Thread {thread.pk} has an active run; cancel the run instead")
    return bool(Thread.objects.filter(pk=thread.pk).exclude(status=Thread.Status.IDLE).update(status=Thread.Status.IDLE))


# The run engine's writes to a thread, as prepared SQL: they are on every run's path.
_update_thread = ModelUpdate(Thread)
_update_busy_thread = ModelUpdate(Thread, "pk", "status")
_update_untitled_thread = ModelUpdate(Thread, "pk", "title")


def thread_status_set(*, thread_id: str, status: str, now, only_if_busy: bool = False, **columns) -> bool:
    """Set a thread's status (and ``assistant_id``/``title`` when given); with ``only_if_busy``
    only a thread still marked busy changes, so a settle never overwrites a newer run's state."""
    if only_if_busy:
        return bool(_update_busy_thread(thread_id, Thread.Status.BUSY, status=status, updated_at=now, **columns))
    return bool(_update_thread(thread_id, status=status, updated_at=now, **columns))


def thread_title_set(*, thread_id: str, title: str, only_if_untitled: bool = False) -> bool:
    """Name a thread; with ``only_if_untitled`` a title someone already gave it stays."""
    title = title[:255]
    if only_if_untitled:
        return bool(_update_untitled_thread(thread_id, "", title=title))
    return bool(_update_thread(thread_id, title=title))


# ---------------------------------------------------------------- tags

TAG_NAME_MAX = 40
TAGS_PER_USER_MAX = 200
TAGS_PER_THREAD_MAX = 20


def _tag_name(name: object) -> str:
    """A tag's name as kept: trimmed, inner runs of whitespace made one space."""
    if not isinstance(name, str):
        raise InvalidRequest("a tag name must be a string")
    clean = " ".join(name.split())
    if not clean:
        raise InvalidRequest("a tag name cannot be empty")
    if len(clean) > TAG_NAME_MAX:
        raise InvalidRequest(f"a tag name is at most {TAG_NAME_MAX} characters")
    return clean


def _tag_named(*, owner, name: str) -> ThreadTag | None:
    return ThreadTag.objects.filter(owner_id=owner.pk, name__iexact=name).first()


def tag_create(*, owner, name: str) -> ThreadTag:
    """The owner's tag of that name (any case), made if it does not exist yet."""
    clean = _tag_name(name)
    existing = _tag_named(owner=owner, name=clean)
    if existing is not None:
        return existing
    if ThreadTag.objects.filter(owner_id=owner.pk).count() >= TAGS_PER_USER_MAX:
        raise InvalidRequest(f"at most {TAGS_PER_USER_MAX} tags per user: delete one first")
    try:
        with transaction.atomic():
            return ThreadTag.objects.create(owner=owner, name=clean)
    except IntegrityError:
        # A concurrent create of the same name won the race (uq_thread_tag_owner_name).
        return _tag_named(owner=owner, name=clean)


def tag_rename(*, tag: ThreadTag, name: str) -> ThreadTag:
    clean = _tag_name(name)
    other = _tag_named(owner=tag.owner, name=clean)
    if other is not None and other.pk != tag.pk:
        raise Conflict(f"you already have a tag named {other.name!r}")
    tag.name = clean
    tag.save(update_fields=["name"])
    return tag


def tag_delete(*, tag: ThreadTag) -> None:
    """The tag goes; its chats stay, without it."""
    tag.delete()


def thread_tags_set(*, thread: Thread, names: list) -> list[ThreadTag]:
    """Give the thread exactly these tags (by name, any case), making the owner's missing ones.
    Tagging is not activity: ``updated_at`` stays, as for pins."""
    if not isinstance(names, list):
        raise InvalidRequest("tags must be a list of names")
    clean: list[str] = []
    for name in names:
        value = _tag_name(name)
        if value.casefold() not in {c.casefold() for c in clean}:
            clean.append(value)
    if len(clean) > TAGS_PER_THREAD_MAX:
        raise InvalidRequest(f"at most {TAGS_PER_THREAD_MAX} tags per chat")
    with transaction.atomic():
        tags = [tag_create(owner=thread.owner, name=name) for name in clean]
        # Both ends are the thread owner's: a tag of another user can never be named here.
        thread.tags.set(tags)
    return sorted(tags, key=lambda t: t.name.casefold())
