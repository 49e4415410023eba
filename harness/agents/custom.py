"""Custom agents in the agent loop: the tools that create and refine an agent by talking.

- ``setup_agent`` is bound only in bootstrap runs (``is_bootstrap``): the model interviews
  the user, then saves the agent's SOUL.md and settings for the run's user.
- ``update_agent`` is bound only in a run of an agent its user owns (``agent_editable``):
  "be more concise from now on" becomes a new version of that agent.

Both act through the store the server registered (``set_agent_store``); the harness never
sees the database. The store checks ownership itself, so a forged run option cannot reach
another user's agent. The tools are sync: LangChain runs them in a worker thread, so the
store's IO stays off the event loop.
"""

from __future__ import annotations

from typing import Any, Protocol

from langchain_core.tools import BaseTool, tool


class AgentStoreError(ValueError):
    """Bad settings (unknown model, name taken, ...): the message is shown to the model."""


class AgentStore(Protocol):
    """``setup``/``update``: what the agent's own tools write. The rest is the Agents API as
    the embedded client calls it (same answers as ``/api/agents``: ``{name, description, soul,
    model, …, assistant_id, owner, editable, version, created_at, updated_at}``); they raise
    the domain errors of ``harness.errors``."""

    def setup(self, owner_id: str, spec: dict[str, Any]) -> dict[str, Any]: ...

    def update(self, owner_id: str, agent_id: str, changes: dict[str, Any]) -> dict[str, Any]: ...

    def list_agents(self, owner_id: str) -> list[dict[str, Any]]: ...

    def get_agent(self, owner_id: str, key: str) -> dict[str, Any]: ...

    def create_agent(self, owner_id: str, data: dict[str, Any]) -> dict[str, Any]: ...

    def update_agent(self, owner_id: str, key: str, data: dict[str, Any]) -> dict[str, Any]: ...

    def delete_agent(self, owner_id: str, key: str) -> None: ...


_store: AgentStore | None = None


def set_agent_store(store: AgentStore | None) -> None:
    global _store
    _store = store


def get_agent_store() -> AgentStore | None:
    return _store


def _run() -> dict:
    from langgraph.config import get_config

    configurable = get_config().get("configurable") or {}
    if not configurable.get("user_id") or _store is None:
        raise AgentStoreError("custom agents are not available in this run")
    return configurable


def _settings(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


@tool
def setup_agent(name: str, soul: str, description: str = "", display_name: str | None = None, model: str | None = None,
                tool_groups: list[str] | None = None, skills: list[str] | None = None, memory_enabled: bool | None = None,
                avatar: str | None = None) -> str:
    """Save the custom agent you designed with the user. Call it once the user agreed on the persona.

    Args:
        name: Short lowercase identifier: letters, digits, '-' or '_' (e.g. "release-notes").
        soul: The agent's SOUL.md in Markdown: who it is, how it works, its tone and rules.
        description: One sentence shown on the agent's card.
        display_name: Human-friendly name, e.g. "Release-notes writer".
        model: A configured model name; omit for the default.
        tool_groups: Tool groups the agent may use; omit for all.
        skills: Skills the agent may use; omit for all enabled skills.
        memory_enabled: Whether the agent keeps its own memory (default true).
        avatar: One emoji for its card.
    """
    configurable = _run()
    try:
        saved = _store.setup(str(configurable["user_id"]), _settings(
            name=name, soul=soul, description=description, display_name=display_name, model=model,
            tool_groups=tool_groups, skills=skills, memory_enabled=memory_enabled, avatar=avatar))
    except AgentStoreError as exc:
        return f"Error: {exc}"
    return (f"Saved the agent '{saved['name']}' (assistant_id {saved['assistant_id']}). "
            f"Tell the user it is ready and that they can chat with it from the Agents page.")


@tool
def update_agent(soul: str | None = None, description: str | None = None, display_name: str | None = None,
                 model: str | None = None, tool_groups: list[str] | None = None, skills: list[str] | None = None) -> str:
    """Change this agent's own definition when the user asks you to behave differently from now on.

    Pass only what changes. To refine the persona, pass the whole new SOUL.md (keep what still holds).

    Args:
        soul: The complete new SOUL.md in Markdown.
        description: New one-sentence description.
        display_name: New human-friendly name.
        model: A configured model name.
        tool_groups: Tool groups the agent may use.
        skills: Skills the agent may use.
    """
    configurable = _run()
    agent_id = configurable.get("agent_id")
    if not agent_id:
        return "Error: this chat is not with a custom agent"
    changes = _settings(soul=soul, description=description, display_name=display_name, model=model,
                        tool_groups=tool_groups, skills=skills)
    if not changes:
        return "Error: nothing to change"
    try:
        saved = _store.update(str(configurable["user_id"]), str(agent_id), changes)
    except AgentStoreError as exc:
        return f"Error: {exc}"
    return f"Updated the agent '{saved['name']}' (version {saved['version']}); the change applies from the next message."


BOOTSTRAP_SECTION = """
## Creating a custom agent
The user wants to create a custom agent. Interview them briefly: what the agent is for, who it serves, its tone, what it must always or never do. Ask one or two questions at a time; stop asking once you know enough.
Then write its SOUL.md (a Markdown persona: identity, how it works, style, rules) and call `setup_agent` with a short lowercase name. Show the user the SOUL.md you saved.
"""

AGENT_SECTION = """
## Refining yourself
You are a custom agent. When the user asks you to change how you behave from now on, call `update_agent` with the complete revised SOUL.md.
"""


def custom_agent_tools(*, is_bootstrap: bool, editable: bool) -> list[BaseTool]:
    tools: list[BaseTool] = []
    if is_bootstrap:
        tools.append(setup_agent)
    if editable:
        tools.append(update_agent)
    return tools
