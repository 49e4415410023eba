"""Reads: which collections a user or a run may see, and the rows the pages and API show.

Two kinds of reach, never mixed up:
- *manage* (``collection_get_for_owner``): only the owner changes a collection or its documents;
- *read* (``collection_get_readable``, ``readable_collection_ids``): the owner, the users it is
  shared with, everyone when shared with everyone. An agent's collection is read by a run of
  that agent only (``readable_collection_ids(agent_id=…)``), never listed to its readers.
Anything out of reach answers ``NotFound``, so another user's ids are never confirmed.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import connections, router
from django.db.models import Count, Q, QuerySet

from apps.errors import NotFound
from apps.knowledge.models import (
    Collection,
    CollectionShare,
    Document,
    Passage,
    ThreadCollection,
)
from deerflow_site.db.prepared_sql import PerConnection


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


def _read_by(user_id: int) -> Q:
    """Collections *user_id* may read in a chat (not agent-bound)."""
    return Q(agent_id__isnull=True) & (Q(owner_id=user_id) | Q(shared_with_everyone=True) | Q(shares__user_id=user_id))


def collections_for_user(*, user) -> QuerySet[Collection]:
    """The Knowledge page's list: the user's own (agent-bound included) and those shared with them."""
    return (Collection.objects.filter(Q(owner_id=user.pk) | _read_by(user.pk)).distinct()
            .select_related("owner").annotate(document_count=Count("documents", filter=Q(documents__is_current=True), distinct=True)))


def collection_get_for_owner(*, user, collection_id: Any) -> Collection:
    pk = _uuid(collection_id)
    found = Collection.objects.filter(pk=pk, owner_id=user.pk).first() if pk else None
    if found is None:
        raise NotFound(f"Collection {collection_id} not found")
    return found


def collection_get_readable(*, user, collection_id: Any) -> Collection:
    pk = _uuid(collection_id)
    found = Collection.objects.filter(Q(owner_id=user.pk) | _read_by(user.pk), pk=pk).distinct().select_related("owner").first() if pk else None
    if found is None:
        raise NotFound(f"Collection {collection_id} not found")
    return found


def document_get_for_owner(*, user, document_id: Any) -> Document:
    pk = _uuid(document_id)
    found = Document.objects.filter(pk=pk, collection__owner_id=user.pk).select_related("collection").first() if pk else None
    if found is None:
        raise NotFound(f"Document {document_id} not found")
    return found


def document_get_readable(*, user, document_id: Any) -> Document:
    pk = _uuid(document_id)
    if pk is None:
        raise NotFound(f"Document {document_id} not found")
    found = (Document.objects.filter(pk=pk).filter(Q(collection__owner_id=user.pk) | Q(collection__in=Collection.objects.filter(_read_by(user.pk))))
             .select_related("collection").first())
    if found is None:
        raise NotFound(f"Document {document_id} not found")
    return found


def passage_get_readable(*, user, citation_id: str) -> Passage:
    found = Passage.objects.filter(citation_id=str(citation_id)).select_related("document", "document__collection").first()
    if found is None:
        raise NotFound(f"Passage {citation_id} not found")
    document_get_readable(user=user, document_id=found.document_id)  # the same 404 when out of reach
    return found


def documents_of(collection: Collection) -> QuerySet[Document]:
    return collection.documents.order_by("name", "-version")


def passages_of(document: Document) -> QuerySet[Passage]:
    return document.passages.order_by("ordinal").only("ordinal", "citation_id", "section", "page", "text")


def readable_collection_ids(*, user_id: int, thread_id: str = "", agent_id: str = "") -> list[uuid.UUID]:
    """What a run may search, decided now: the user's own collections, those attached to the
    run's thread that the user may still read, and the run's custom agent's."""
    reach = Q(owner_id=user_id, agent_id__isnull=True)
    if thread_id:
        attached = ThreadCollection.objects.filter(thread_id=thread_id, thread__owner_id=user_id).values("collection_id")
        reach |= Q(pk__in=attached) & _read_by(user_id)
    agent = _uuid(agent_id) if agent_id else None
    if agent is not None:
        reach |= Q(agent_id=agent)
    return list(Collection.objects.filter(reach).values_list("pk", flat=True).distinct())


def _reach_sql(connection) -> str:
    q = connection.ops.quote_name

    def col(model, name: str) -> str:
        return q(model._meta.get_field(name).column)

    thread = ThreadCollection._meta.get_field("thread").related_model
    collections, shares, attached, threads = (q(m._meta.db_table) for m in (Collection, CollectionShare, ThreadCollection, thread))
    c_id, c_owner, c_agent = col(Collection, "id"), col(Collection, "owner"), col(Collection, "agent_id")
    own = f"SELECT 1 FROM {collections} c WHERE c.{c_owner} = %s AND c.{c_agent} IS NULL"
    # Attached to the run's thread (which the user owns) and still readable by the user.
    via_thread = (
        f"SELECT 1 FROM {attached} tc JOIN {threads} t ON t.{q(thread._meta.pk.column)} = tc.{col(ThreadCollection, 'thread')}"
        f" JOIN {collections} c ON c.{c_id} = tc.{col(ThreadCollection, 'collection')}"
        f" WHERE tc.{col(ThreadCollection, 'thread')} = %s AND t.{q(thread._meta.get_field('owner').column)} = %s"
        f" AND c.{c_agent} IS NULL AND (c.{c_owner} = %s OR c.{col(Collection, 'shared_with_everyone')} = %s"
        f" OR EXISTS (SELECT 1 FROM {shares} s WHERE s.{col(CollectionShare, 'collection')} = c.{c_id}"
        f" AND s.{col(CollectionShare, 'user')} = %s))")
    agents = f"SELECT 1 FROM {collections} c WHERE c.{c_agent} = %s"
    return f"SELECT EXISTS ({own}) OR EXISTS ({via_thread}) OR EXISTS ({agents})"


_REACH_SQL = PerConnection(_reach_sql)


def run_reads_knowledge(*, user_id: int, thread_id: str = "", agent_id: str = "") -> bool:
    """Whether a run may read any collection at all: ``readable_collection_ids``' reach as one
    ``EXISTS`` per branch. Every run's start asks (knowledge's ``before_run`` hook), and the
    ORM's building of the list query cost about 1,600 Python calls a run; this costs a few
    dozen. Which collections a search reads is still decided by ``readable_collection_ids`` on
    each search."""
    connection = connections[router.db_for_read(Collection)]
    agent = _uuid(agent_id) if agent_id else None
    # An agent id that is no UUID matches no row, as the ORM's list leaves that branch out.
    agent_value = Collection._meta.get_field("agent_id").get_db_prep_value(agent, connection) if agent else None
    everyone = Collection._meta.get_field("shared_with_everyone").get_db_prep_value(True, connection)
    with connection.cursor() as cursor:
        cursor.execute(_REACH_SQL(connection), [user_id, thread_id or None, user_id, user_id, everyone, user_id, agent_value])
        return bool(cursor.fetchone()[0])


def thread_collections(*, thread_id: str) -> list[Collection]:
    return list(Collection.objects.filter(threads__thread_id=thread_id).select_related("owner").order_by("name"))
