"""The ORM side of ``harness.agents.custom.AgentStore``: what ``setup_agent`` and
``update_agent`` write, with the same validation and ownership as the API."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from apps.agents import services
from apps.agents.models import Agent
from apps.errors import DomainError
from harness.agents.custom import AgentStoreError


def _message(exc: DomainError) -> str:
    return str(getattr(exc, "detail", exc))


class DjangoAgentStore:
    def setup(self, owner_id: str, spec: dict[str, Any]) -> dict[str, Any]:
        owner = get_user_model().objects.filter(pk=int(owner_id)).first()
        if owner is None:
            raise AgentStoreError("unknown user")
        try:
            agent = services.agent_create(owner=owner, data=spec)
        except DomainError as exc:
            raise AgentStoreError(_message(exc)) from None
        return {"name": agent.name, "assistant_id": str(agent.pk), "version": agent.version}

    def update(self, owner_id: str, agent_id: str, changes: dict[str, Any]) -> dict[str, Any]:
        agent = Agent.objects.select_related("owner").filter(pk=agent_id, owner_id=int(owner_id)).first()
        if agent is None:  # deleted meanwhile, or not this user's: the tool is never bound then
            raise AgentStoreError("this agent no longer exists or is not yours to change")
        try:
            agent = services.agent_update(agent=agent, data=changes)
        except DomainError as exc:
            raise AgentStoreError(_message(exc)) from None
        return {"name": agent.name, "assistant_id": str(agent.pk), "version": agent.version}
