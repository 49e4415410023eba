"""The memory storage port and its file implementation (the embedded client's store).

A store saves whole documents with an optimistic revision: ``save(doc)`` succeeds only
when the stored revision is still ``doc.revision`` and raises :class:`RevisionConflict`
otherwise, so concurrent updaters retry on fresh data instead of overwriting each other.
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from pathlib import Path
from typing import Protocol

from harness.memory.retrieval import matches, query_terms, substring_terms
from harness.memory.types import Fact, MemoryDoc, RevisionConflict, now


def new_fact_id() -> str:
    return f"fact_{uuid.uuid4().hex[:16]}"


class MemoryStore(Protocol):
    def load(self, owner: str, agent: str = "") -> MemoryDoc:
        """The document; an empty one (revision 0) when nothing is stored."""

    def save(self, doc: MemoryDoc) -> MemoryDoc:
        """Store *doc* if the stored revision is still ``doc.revision``; returns it with the new
        revision. Raises RevisionConflict otherwise."""

    def search(self, owner: str, agent: str, query: str, limit: int, adapter: str | None = None) -> list[str]:
        """Fact ids matching *query*, most relevant first, by ``memory.retrieval_adapter``
        *adapter* (None: the store's configured one)."""


class FileMemoryStore:
    """One JSON file per owner and bucket under *root*. A process-wide lock and an atomic
    rename keep concurrent writers in one process from losing updates."""

    _lock = threading.Lock()

    def __init__(self, root: str | os.PathLike, retrieval_adapter: str = "fts5") -> None:
        self.root = Path(root)
        self.retrieval_adapter = retrieval_adapter

    def _path(self, owner: str, agent: str) -> Path:
        safe = re.sub(r"[^\w.-]", "_", f"{owner}__{agent or 'default'}")
        return self.root / f"{safe}.json"

    def load(self, owner: str, agent: str = "") -> MemoryDoc:
        path = self._path(owner, agent)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return MemoryDoc(owner=owner, agent=agent)
        doc = MemoryDoc(owner=owner, agent=agent, revision=int(raw.get("revision", 0)), paused=bool(raw.get("paused")))
        doc.summaries.update(raw.get("summaries") or {})
        doc.facts = [Fact.from_api(f) for f in raw.get("facts") or []]
        from harness.memory.types import parse_time

        doc.updated_at = parse_time(raw.get("updated_at"))
        return doc

    def save(self, doc: MemoryDoc) -> MemoryDoc:
        path = self._path(doc.owner, doc.agent)
        with self._lock:
            current = self.load(doc.owner, doc.agent).revision
            if current != doc.revision:
                raise RevisionConflict(f"stored revision {current}, expected {doc.revision}")
            saved = doc.copy()
            saved.revision = current + 1
            saved.updated_at = now()
            data = {"revision": saved.revision, "paused": saved.paused, "summaries": saved.summaries,
                    "updated_at": saved.updated_at.isoformat(), "facts": [f.to_api() for f in saved.facts]}
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{uuid.uuid4().hex[:6]}.tmp")
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
            return saved

    def search(self, owner: str, agent: str, query: str, limit: int, adapter: str | None = None) -> list[str]:
        adapter = self.retrieval_adapter if adapter is None else adapter
        terms = substring_terms(query) if adapter == "" else query_terms(query, adapter=adapter)
        if not terms:
            return []
        scored = []
        for f in self.load(owner, agent).facts:
            hits = matches(f.content, terms, adapter)
            if hits:
                scored.append((-hits, f.id))
        return [fid for _, fid in sorted(scored)[:limit]]
