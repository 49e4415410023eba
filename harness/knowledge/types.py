"""What crosses the wall between the knowledge tool and the store that backs it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

# A citation names one passage for good: ``kb-`` + the first 12 hex digits of its document's id
# + its position in the document. The chat turns ``[kb-…]`` in an answer into a link.
CITATION_PATTERN = re.compile(r"kb-[0-9a-f]{12}-\d{1,6}")


def citation_id(document_hex: str, ordinal: int) -> str:
    return f"kb-{document_hex[:12]}-{ordinal}"


@dataclass(frozen=True)
class Chunk:
    """One passage of a converted document, before it is stored."""

    ordinal: int
    text: str
    section: str = ""  # the headings above it, "Guide > Refunds > Timing"
    page: int | None = None  # 1-based, for paged formats (PDF)


@dataclass(frozen=True)
class SearchScope:
    """Who is searching, from where: the store turns this into the collections the run may
    read (its user's own, those attached to its thread, its custom agent's)."""

    user_id: str
    thread_id: str = ""
    agent_id: str = ""  # set by the server from the run's custom agent, never by the client


@dataclass(frozen=True)
class Passage:
    citation_id: str
    document_id: str
    document_title: str
    collection_name: str
    text: str
    section: str = ""
    page: int | None = None
    score: float = 0.0
    document_name: str = ""  # the file name, when the title is the document's own heading


class KnowledgeStore(Protocol):
    def search(self, scope: SearchScope, query: str, limit: int, collection: str = "") -> list[Passage]:
        """Passages best first, only from collections *scope* may read now; ``collection``
        narrows to one of them by id or name."""
        ...

    def collections(self, scope: SearchScope) -> list[dict]:
        """``[{"id", "name", "description", "documents"}]`` the scope may read now."""
        ...
