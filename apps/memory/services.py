"""Writes on a user's memory: the API and the Memory page call these. The edits themselves
are ``harness.memory.edits`` (shared with the embedded client), here on the ORM store."""

from __future__ import annotations

from apps.memory.stores import DjangoMemoryStore
from harness.memory import MemoryDoc
from harness.memory import edits


def memory_clear(*, user, agent: str = "") -> MemoryDoc:
    return edits.memory_clear(DjangoMemoryStore(), str(user.pk), agent=agent)


def memory_import(*, user, data, agent: str = "") -> MemoryDoc:
    return edits.memory_import(DjangoMemoryStore(), str(user.pk), data=data, agent=agent)


def memory_set_paused(*, user, paused: bool, agent: str = "") -> MemoryDoc:
    return edits.memory_set_paused(DjangoMemoryStore(), str(user.pk), paused=paused, agent=agent)


def fact_create(*, user, content, category="context", confidence=0.5, agent: str = "") -> MemoryDoc:
    return edits.fact_create(DjangoMemoryStore(), str(user.pk), content=content, category=category, confidence=confidence,
                             agent=agent)


def fact_update(*, user, fact_id: str, changes: dict, agent: str = "", revision: int | None = None) -> MemoryDoc:
    return edits.fact_update(DjangoMemoryStore(), str(user.pk), fact_id=fact_id, changes=changes, agent=agent,
                             revision=revision)


def fact_delete(*, user, fact_id: str, agent: str = "") -> MemoryDoc:
    return edits.fact_delete(DjangoMemoryStore(), str(user.pk), fact_id=fact_id, agent=agent)
