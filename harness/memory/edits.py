"""Edits of one owner's memory, on any ``MemoryStore``: the API and Memory page (through
``apps.memory.services``, on the ORM store) and the embedded client call these.

Edits are deltas applied to a freshly loaded document and saved with its revision; a
conflict with the updater reloads and applies again. A caller that sends the revision it
saw gets Conflict when the memory changed since.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.errors import Conflict, InvalidRequest, NotFound
from harness.memory.store import MemoryStore, new_fact_id
from harness.memory.types import Fact, MemoryDoc, RevisionConflict, check_fact, now, parse_document

ATTEMPTS = 8


def _change(store: MemoryStore, owner: str, agent: str, change: Callable[[MemoryDoc], None], revision: int | None = None) -> MemoryDoc:
    for _ in range(ATTEMPTS):
        doc = store.load(owner, agent)
        if revision is not None and doc.revision != revision:
            raise Conflict(f"memory changed since revision {revision} (now {doc.revision}); reload and try again")
        change(doc)
        try:
            return store.save(doc)
        except RevisionConflict:
            continue
    raise Conflict("memory is being changed concurrently; try again")


def _checked(content, category, confidence) -> tuple[str, str, float]:
    if not isinstance(content, str):
        raise InvalidRequest("content must be a string")
    try:
        confidence = float(confidence)
        check_fact(content, str(category), confidence)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(str(exc)) from None
    return content.strip(), str(category), confidence


def memory_clear(store: MemoryStore, owner: str, *, agent: str = "") -> MemoryDoc:
    def clear(doc: MemoryDoc) -> None:
        doc.facts = []
        doc.summaries = {k: "" for k in doc.summaries}
    return _change(store, owner, agent, clear)


def memory_import(store: MemoryStore, owner: str, *, data, agent: str = "") -> MemoryDoc:
    """Replace the whole memory with *data*, or change nothing and say why."""
    try:
        incoming = parse_document(data, owner=owner, agent=agent)
    except ValueError as exc:
        raise InvalidRequest(f"cannot import: {exc}") from None

    def replace(doc: MemoryDoc) -> None:
        doc.summaries, doc.facts = incoming.summaries, incoming.facts
    return _change(store, owner, agent, replace)


def memory_set_paused(store: MemoryStore, owner: str, *, paused: bool, agent: str = "") -> MemoryDoc:
    def pause(doc: MemoryDoc) -> None:
        doc.paused = bool(paused)
    return _change(store, owner, agent, pause)


def fact_create(store: MemoryStore, owner: str, *, content, category="context", confidence=0.5, agent: str = "") -> MemoryDoc:
    content, category, confidence = _checked(content, category, confidence)

    def add(doc: MemoryDoc) -> None:
        doc.facts.append(Fact(id=new_fact_id(), content=content, category=category, confidence=confidence,
                              source_kind="user", last_confirmed_at=now()))
    return _change(store, owner, agent, add)


def fact_update(store: MemoryStore, owner: str, *, fact_id: str, changes: dict, agent: str = "", revision: int | None = None) -> MemoryDoc:
    def edit(doc: MemoryDoc) -> None:
        fact = doc.fact(fact_id)
        if fact is None:
            raise NotFound("fact not found")
        content, category, confidence = _checked(changes.get("content", fact.content), changes.get("category", fact.category),
                                                 changes.get("confidence", fact.confidence))
        fact.content, fact.category, fact.confidence = content, category, confidence
        # The owner's word: the updater may no longer remove or merge it away.
        fact.source_kind = "user"
        fact.last_confirmed_at = now()
        fact.revision += 1
    return _change(store, owner, agent, edit, revision=revision)


def fact_delete(store: MemoryStore, owner: str, *, fact_id: str, agent: str = "") -> MemoryDoc:
    def delete(doc: MemoryDoc) -> None:
        if doc.fact(fact_id) is None:
            raise NotFound("fact not found")
        doc.facts = [f for f in doc.facts if f.id != fact_id]
    return _change(store, owner, agent, delete)
