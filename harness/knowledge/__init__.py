"""Knowledge bases on the harness side: chunking converted documents, the store port the
``knowledge_search`` tool reads through, the tool itself, and the embeddings client.

The server's adapter (``apps/knowledge/stores.py``) decides which collections a run may read,
on every call, so a share revoked mid-thread stops at the next search."""

from harness.knowledge.types import (
    CITATION_PATTERN,
    Chunk,
    KnowledgeStore,
    Passage,
    SearchScope,
)

__all__ = ["CITATION_PATTERN", "Chunk", "KnowledgeStore", "Passage", "SearchScope"]
