"""The JSON the knowledge API answers with (described by ``api_types.py``)."""

from __future__ import annotations

from django.urls import reverse

from apps.knowledge.models import Collection, Document, Passage


def collection_json(collection: Collection, *, user) -> dict:
    own = collection.owner_id == user.pk
    shared = sorted(collection.shares.values_list("user__username", flat=True)) if own else []
    count = getattr(collection, "document_count", None)
    if count is None:
        count = collection.documents.filter(is_current=True).count()
    return {"id": str(collection.pk), "name": collection.name, "description": collection.description,
            "owner": collection.owner.username, "is_owner": own, "agent": str(collection.agent_id) if collection.agent_id else None,
            "shared_with": shared, "shared_with_everyone": collection.shared_with_everyone, "document_count": count,
            "created_at": collection.created_at, "updated_at": collection.updated_at}


def document_json(document: Document) -> dict:
    return {"id": str(document.pk), "collection_id": str(document.collection_id), "name": document.name,
            "title": document.title or document.name, "version": document.version, "is_current": document.is_current,
            "source_kind": document.source_kind, "source": document.source, "content_type": document.content_type,
            "size": document.size, "status": document.status, "progress": document.progress, "error": document.error,
            "passage_count": document.chunk_count, "embedded": document.embedded,
            "created_at": document.created_at, "updated_at": document.updated_at}


def passage_url(document_id, citation_id: str) -> str:
    return reverse("knowledge-document", args=[str(document_id)]) + f"#{citation_id}"


def passage_json(passage: Passage) -> dict:
    return {"citation_id": passage.citation_id, "ordinal": passage.ordinal, "section": passage.section, "page": passage.page,
            "text": passage.text}
