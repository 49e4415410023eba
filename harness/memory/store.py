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

from harness.memory.types import Fact, MemoryDoc, RevisionConflict, now

_WORD = re.compile(r"\w{2,}", re.UNICODE)


def query_terms(text: str, limit: int = 32) -> list[str]:
    """Words of the current message worth matching (FTS-safe: letters and digits only)."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        seen.setdefault(w, None)
        if len(seen) >= limit:
            break
    return list(seen)


def new_fact_id() -> str:
    return f"fact_{uuid.uuid4().hex[:16]}"


class MemoryStore(Protocol):
    def load(self, owner: str, agent: str = "") -> MemoryDoc:
        """The document; an empty one (revision 0) when nothing is stored."""

    def save(self, doc: MemoryDoc) -> MemoryDoc:
        """Store *doc* if the stored revision is still ``doc.revision``; returns it with the new
        revision. Raises RevisionConflict otherwise."""

    def search(self, owner: str, agent: str, query: str, limit: int) -> list[str]:
        """Fact ids matching *query*, most relevant first (full-text retrieval)."""


class FileMemoryStore:
    """One JSON file per owner and bucket under *root*. A process-wide lock and an atomic
    rename keep concurrent writers in one process from losing updates."""

    _lock = threading.Lock()

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

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

    def search(self, owner: str, agent: str, query: str, limit: int) -> list[str]:
        terms = set(query_terms(query))
        if not terms:
            return []
        scored = []
        for f in self.load(owner, agent).facts:
            hits = len(terms & set(query_terms(f.content, limit=200)))
            if hits:
                scored.append((-hits, f.id))
        return [fid for _, fid in sorted(scored)[:limit]]
