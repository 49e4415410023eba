"""The user's long-term memory, answered as ``/api/memory*`` answers: every call returns the
document (``get_memory_status`` and ``get_memory_config`` as their routes do).

``agent=`` names an agent's own bucket, as the routes' ``?agent=``. The store is the client's
``memory_store`` (the server's database under ``server_client``), else JSON files under
``DEER_FLOW_HOME/memory``.
"""

from __future__ import annotations

from typing import Any

from harness.config import deer_flow_home
from harness.memory import FileMemoryStore, MemoryStore
from harness.memory import edits
from harness.memory.report import memory_config_json, memory_status_json


class MemoryMixin:
    def _memory_store(self) -> MemoryStore:
        if self.memory_store is None:
            self.memory_store = FileMemoryStore(deer_flow_home() / "memory", retrieval_adapter=self.app_config.memory.retrieval_adapter)
        return self.memory_store

    def get_memory(self, *, agent: str = "") -> dict[str, Any]:
        return self._memory_store().load(self.user_id, agent).to_api()

    def export_memory(self, *, agent: str = "") -> dict[str, Any]:
        return self.get_memory(agent=agent)

    def reload_memory(self, *, agent: str = "") -> dict[str, Any]:
        """The document as stored now (nothing is cached here)."""
        return self.get_memory(agent=agent)

    def import_memory(self, memory_data: dict[str, Any], *, agent: str = "") -> dict[str, Any]:
        """Replace the whole memory with a document (an export of this or DeerFlow's server)."""
        return edits.memory_import(self._memory_store(), self.user_id, data=memory_data, agent=agent).to_api()

    def clear_memory(self, *, agent: str = "") -> dict[str, Any]:
        return edits.memory_clear(self._memory_store(), self.user_id, agent=agent).to_api()

    def create_memory_fact(self, content: str, category: str = "context", confidence: float = 0.5, *, agent: str = "") -> dict[str, Any]:
        return edits.fact_create(self._memory_store(), self.user_id, content=content, category=category, confidence=confidence,
                                 agent=agent).to_api()

    def update_memory_fact(self, fact_id: str, content: str | None = None, category: str | None = None,
                           confidence: float | None = None, *, revision: int | None = None, agent: str = "") -> dict[str, Any]:
        changes = {k: v for k, v in (("content", content), ("category", category), ("confidence", confidence)) if v is not None}
        return edits.fact_update(self._memory_store(), self.user_id, fact_id=fact_id, changes=changes, revision=revision,
                                 agent=agent).to_api()

    def delete_memory_fact(self, fact_id: str, *, agent: str = "") -> dict[str, Any]:
        return edits.fact_delete(self._memory_store(), self.user_id, fact_id=fact_id, agent=agent).to_api()

    def get_memory_config(self, *, agent: str = "") -> dict[str, Any]:
        """Every ``memory:`` setting as loaded, and whether this user's memory is paused."""
        return memory_config_json(self.app_config.memory, self._memory_store().load(self.user_id, agent))

    def set_memory_paused(self, paused: bool, *, agent: str = "") -> dict[str, Any]:
        doc = edits.memory_set_paused(self._memory_store(), self.user_id, paused=paused, agent=agent)
        return memory_config_json(self.app_config.memory, doc)

    def get_memory_status(self, *, agent: str = "") -> dict[str, Any]:
        return memory_status_json(self.app_config.memory, self._memory_store().load(self.user_id, agent))
