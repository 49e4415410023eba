"""Reads for threads, always scoped to the caller."""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import Count, Exists, OuterRef, Prefetch, Q
from django.db.models.functions import Lower

from apps.errors import InvalidRequest, NotFound
from apps.threads.metadata import PAGE_THREADS, metadata_limit, metadata_size, metadata_within
from apps.threads.models import Feedback, Thread, ThreadTag
from deerflow_site.db.prepared_sql import ModelLookup

_SEARCH_CHUNK = 20  # rows read from the database at a time by a search
SORTABLE = {"thread_id": "id", "created_at": "created_at", "updated_at": "updated_at", "status": "status"}


# Every thread route and every run's admission look a thread up: prepared, not built by the ORM.
_thread_of_owner = ModelLookup(Thread, "id", "owner_id")


def thread_get_for_user(*, user, thread_id: str) -> Thread:
    """The caller's thread, or NotFound — also for another user's id, which is never revealed."""
    if not isinstance(thread_id, str) or user.pk is None:
        raise NotFound(f"Thread {thread_id} not found")
    thread = _thread_of_owner.first(thread_id, user.pk)
    if thread is None:
        raise NotFound(f"Thread {thread_id} not found")
    return thread


def thread_of_owner(*, thread_id: str, owner_id: int) -> Thread | None:
    """The thread if it (still) belongs to ``owner_id``; None otherwise. For callers that hold
    an id from elsewhere (a channel conversation) rather than a request's user."""
    return _thread_of_owner.first(thread_id, owner_id)


def thread_search(*, user, metadata: dict | None = None, status: str | None = None, ids: list[str] | None = None,
                  limit: int = 10, offset: int = 0, sort_by: str | None = None, sort_order: str | None = None,
                  query: str | None = None, pinned: bool | None = None, started: bool | None = None,
                  tags: list[str] | None = None,
                  message_search: Callable[..., dict[str, str] | None] | None = None) -> list[Thread]:
    """The caller's threads. DeerFlow's additions to LangGraph's search body:

    - ``query``: words in the title or in any message (full text, each word a prefix); each
      thread found by its messages carries ``search_snippet``, the passage that matched.
      The messages are the run journal's: ``message_search(user=, query=)`` (the engine's
      ``apps.runs.search.thread_text_matches``) gives {thread id: snippet}, or None when the
      query has no words to look for; without it only titles are searched.
    - ``pinned``: only pinned (true) or unpinned (false) threads.
    - ``started``: only threads that had a run (true): a thread created for an upload and
      then left is a draft, not a chat the sidebar should list.
    - ``tags``: only threads carrying every one of these tag names (any case). Each thread of
      the page has its own tags in ``tag_names``.
    """
    qs = Thread.objects.filter(owner_id=user.pk)
    snippets: dict[str, str] = {}
    if query is not None:
        if not isinstance(query, str) or len(query) > 200:
            raise InvalidRequest("query must be a string of at most 200 characters")
        found = message_search(user=user, query=query) if message_search is not None else ({} if query.strip() else None)
        if found is not None:
            snippets = found
            phrase = query.strip()
            qs = qs.filter(Q(title__icontains=phrase) | Q(metadata__title__icontains=phrase) | Q(pk__in=list(snippets)))
    if pinned is not None:
        if not isinstance(pinned, bool):
            raise InvalidRequest("pinned must be true or false")
        qs = qs.filter(pinned_at__isnull=not pinned)
    if started is not None:
        if not isinstance(started, bool):
            raise InvalidRequest("started must be true or false")
        # The runs point at their thread; follow that relation rather than the engine's code.
        runs = Thread._meta.get_field("runs").related_model
        has_run = Exists(runs.objects.filter(thread_id=OuterRef("pk")))
        qs = qs.filter(has_run if started else ~has_run)
    if tags is not None:
        if not isinstance(tags, list) or not all(isinstance(name, str) for name in tags) or len(tags) > 20:
            raise InvalidRequest("tags must be a list of at most 20 tag names")
        for name in tags:
            # Through the caller's own tags only: another user's tag of the same name matches nothing.
            qs = qs.filter(tags__in=ThreadTag.objects.filter(owner_id=user.pk, name__iexact=" ".join(name.split())))
    if metadata:
        if not isinstance(metadata, dict):
            raise InvalidRequest("metadata must be an object")
        for key, value in metadata.items():
            # "__" would turn a key into a nested lookup path.
            if not key or "__" in key:
                raise InvalidRequest(f"metadata filter key {key!r} is not allowed")
            qs = qs.filter(**{f"metadata__{key}": value})
    if status is not None:
        if status not in Thread.Status.values:
            raise InvalidRequest(f"status must be one of {', '.join(Thread.Status.values)}")
        qs = qs.filter(status=status)
    if ids is not None:
        qs = qs.filter(pk__in=list(ids))
    if not (isinstance(limit, int) and 1 <= limit <= 1000):
        raise InvalidRequest("limit must be an integer from 1 to 1000")
    if not (isinstance(offset, int) and offset >= 0):
        raise InvalidRequest("offset must be a non-negative integer")
    field = SORTABLE.get(sort_by or "updated_at")
    if field is None:
        raise InvalidRequest(f"sort_by must be one of {', '.join(SORTABLE)}")
    if sort_order not in (None, "asc", "desc"):
        raise InvalidRequest("sort_order must be 'asc' or 'desc'")
    page = qs.order_by(field if sort_order == "asc" else f"-{field}").prefetch_related(
        Prefetch("tags", queryset=ThreadTag.objects.only("id", "name"), to_attr="tag_list"))[offset : offset + limit]
    # Each thread's metadata is cut to what a list carries as its row is read (a few rows at a
    # time), so a page of rows from before the metadata limit never sits in memory whole.
    cap = metadata_limit()
    budget = PAGE_THREADS * cap
    threads = []
    for thread in page.iterator(chunk_size=_SEARCH_CHUNK):
        thread.search_snippet = snippets.get(thread.pk, "")
        thread.tag_names = [tag.name for tag in thread.tag_list]
        thread.list_metadata, thread.metadata_truncated = metadata_within(thread.metadata, min(cap, budget))
        if thread.metadata_truncated:
            del thread.metadata  # deferred from now on: reading it again loads it, save() leaves it alone
        budget -= metadata_size(thread.list_metadata)
        threads.append(thread)
    return threads


def tag_list_for_user(*, user) -> list[ThreadTag]:
    """The caller's tags by name, each with ``thread_count``: how many of their chats carry it."""
    # Meta.ordering does not apply to an aggregate query: name the order.
    return list(ThreadTag.objects.filter(owner_id=user.pk).annotate(thread_count=Count("threads")).order_by(Lower("name"), "pk"))


def tag_get_for_user(*, user, tag_id) -> ThreadTag:
    """The caller's tag, or NotFound — also for another user's tag id."""
    tag = ThreadTag.objects.filter(pk=tag_id, owner_id=user.pk).first() if isinstance(tag_id, int) else None
    if tag is None:
        raise NotFound(f"Tag {tag_id} not found")
    return tag


def thread_tag_names(*, thread: Thread) -> list[str]:
    return [tag.name for tag in thread.tags.all()]


def thread_titles_taken(*, owner_id: int, prefix: str) -> set[str]:
    """The owner's thread titles that start with ``prefix`` (to number a new branch's title)."""
    return set(Thread.objects.filter(owner_id=owner_id, title__startswith=prefix).values_list("title", flat=True))


def thread_titles(thread_ids) -> dict[str, str]:
    return dict(Thread.objects.filter(pk__in=list(thread_ids)).values_list("pk", "title"))


def feedback_between(*, start, end):
    """Everyone's ratings given in [start, end): a queryset the console scopes and pages."""
    return Feedback.objects.filter(created_at__gte=start, created_at__lt=end)
