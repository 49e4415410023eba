"""The ORM side of ``harness.agents.custom.AgentStore``: what ``setup_agent`` and
``update_agent`` write, with the same validation and ownership as the API, and the Agents API
as the embedded client calls it (the same selectors and services the views call)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from apps.agents import selectors, services
from apps.agents.models import Agent
from apps.errors import DomainError, Forbidden, NotFound
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

    @staticmethod
    def _user(owner_id: str):
        user = get_user_model().objects.filter(pk=int(owner_id)).first() if str(owner_id).isdigit() else None
        if user is None:
            raise NotFound("unknown user")
        return user

    def _owned(self, user, key: str) -> Agent:
        agent = selectors.agent_get_for_user(user=user, key=key)
        if agent.owner_id != user.pk:
            raise Forbidden(f"Agent {key} is shared with you read-only; duplicate it to make your own copy")
        return agent

    def list_agents(self, owner_id: str) -> list[dict[str, Any]]:
        user = self._user(owner_id)
        return [selectors.agent_to_dict(a, user=user) for a in selectors.agent_list_for_user(user=user)]

    def get_agent(self, owner_id: str, key: str) -> dict[str, Any]:
        user = self._user(owner_id)
        return selectors.agent_to_dict(selectors.agent_get_for_user(user=user, key=key), user=user)

    def create_agent(self, owner_id: str, data: dict[str, Any]) -> dict[str, Any]:
        user = self._user(owner_id)
        return selectors.agent_to_dict(services.agent_create(owner=user, data=data), user=user)

    def update_agent(self, owner_id: str, key: str, data: dict[str, Any]) -> dict[str, Any]:
        user = self._user(owner_id)
        return selectors.agent_to_dict(services.agent_update(agent=self._owned(user, key), data=data), user=user)

    def delete_agent(self, owner_id: str, key: str) -> None:
        user = self._user(owner_id)
        services.agent_delete(agent=self._owned(user, key))
