"""Tool mode (``memory.tool_mode: true``): the agent manages memory itself with four tools
instead of the passive updater. The tools act on the running user's memory (``user_id``
and ``agent_name`` of the run) through the store the runner registered; they are sync, so
LangChain runs them in a worker thread and the store's IO stays off the event loop."""

from __future__ import annotations

from langchain_core.tools import BaseTool, tool

from harness.memory.store import MemoryStore, new_fact_id
from harness.memory.types import Fact, RevisionConflict, check_fact, now

_store: MemoryStore | None = None
ATTEMPTS = 8


def set_memory_store(store: MemoryStore | None) -> None:
    """The store the memory tools use in this process (the server's ORM store, or a file store)."""
    global _store
    _store = store


def _owner() -> tuple[str, str]:
    from langgraph.config import get_config

    configurable = get_config().get("configurable") or {}
    owner = configurable.get("user_id")
    if not owner or _store is None:
        raise RuntimeError("memory is not available in this run")
    return str(owner), str(configurable.get("agent_name") or "")


def _change(fn) -> str:
    owner, agent = _owner()
    for _ in range(ATTEMPTS):
        doc = _store.load(owner, agent)
        if doc.paused:
            return "Memory is paused by the user: nothing was changed."
        answer = fn(doc)
        if answer.startswith("Error"):
            return answer
        try:
            _store.save(doc)
            return answer
        except RevisionConflict:
            continue
    return "Error: memory is being changed concurrently; try again."


@tool
def memory_search(query: str, limit: int = 10) -> str:
    """Search what you remember about the user. Returns matching facts with their ids."""
    owner, agent = _owner()
    ids = _store.search(owner, agent, query, max(1, min(limit, 50)))
    doc = _store.load(owner, agent)
    found = [doc.fact(i) for i in ids]
    lines = [f"{f.id}: [{f.category}] {f.content}" for f in found if f is not None]
    return "\n".join(lines) or "No matching facts."


@tool
def memory_add(content: str, category: str = "context", confidence: float = 0.8) -> str:
    """Remember a durable fact about the user (not an instruction for the current task)."""
    try:
        check_fact(content, category, confidence)
    except ValueError as exc:
        return f"Error: {exc}"
    from langgraph.config import get_config

    configurable = get_config().get("configurable") or {}

    def add(doc):
        fact = Fact(id=new_fact_id(), content=content.strip(), category=category, confidence=confidence, last_confirmed_at=now(),
                    source_thread_id=str(configurable.get("thread_id") or ""), source_run_id=str(configurable.get("run_id") or ""))
        doc.facts.append(fact)
        return f"Remembered as {fact.id}."
    return _change(add)


@tool
def memory_update(fact_id: str, content: str) -> str:
    """Correct a remembered fact by id."""
    def update(doc):
        fact = doc.fact(fact_id)
        if fact is None:
            return f"Error: no fact {fact_id}."
        if fact.protected:
            return "Error: the user wrote this fact; only they can change it."
        try:
            check_fact(content, fact.category, fact.confidence)
        except ValueError as exc:
            return f"Error: {exc}"
        fact.content, fact.last_confirmed_at, fact.revision = content.strip(), now(), fact.revision + 1
        return f"Updated {fact_id}."
    return _change(update)


@tool
def memory_delete(fact_id: str) -> str:
    """Forget a remembered fact by id."""
    def delete(doc):
        fact = doc.fact(fact_id)
        if fact is None:
            return f"Error: no fact {fact_id}."
        if fact.protected:
            return "Error: the user wrote this fact; only they can remove it."
        doc.facts = [f for f in doc.facts if f.id != fact_id]
        return f"Forgot {fact_id}."
    return _change(delete)


def memory_tools() -> list[BaseTool]:
    return [memory_search, memory_add, memory_update, memory_delete]
