"""Custom agents, answered as ``/api/agents`` answers. They are rows of the server's database:
the client reaches them through the agent store port (``harness.agents.custom``), which the
server registers at startup and so is there under ``server_client``; a standalone client has
none and says so."""

from __future__ import annotations

from typing import Any

from harness.agents.custom import AgentStore, get_agent_store
from harness.errors import ServiceUnavailable


class AgentsMixin:
    def _agent_store(self) -> AgentStore:
        store = get_agent_store()
        if store is None:
            raise ServiceUnavailable("custom agents are kept in the server's database: make the client with "
                                     "deerflow_site.embedded.server_client() (docs/agent.md, 'The embedded client')")
        return store

    def list_agents(self) -> dict[str, Any]:
        """``{"agents": [...]}``: this user's agents, then the ones shared with them."""
        return {"agents": self._agent_store().list_agents(self.user_id)}

    def get_agent(self, name: str) -> dict[str, Any]:
        """By the user's name for it, or by its assistant id (a shared one only by id)."""
        return self._agent_store().get_agent(self.user_id, name)

    def create_agent(self, name: str, **settings: Any) -> dict[str, Any]:
        """``settings``: ``description``, ``soul``, ``model``, ``tool_groups``, ``skills``, … as the
        API's POST body."""
        return self._agent_store().create_agent(self.user_id, {"name": name, **settings})

    def update_agent(self, name: str, **settings: Any) -> dict[str, Any]:
        result = self._agent_store().update_agent(self.user_id, name, settings)
        self.reset_agent()
        return result

    def delete_agent(self, name: str) -> None:
        self._agent_store().delete_agent(self.user_id, name)
        self.reset_agent()
