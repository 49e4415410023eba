"""Thread actions: the goal the agent works towards (``/threads/{id}/goal``) and follow-up
suggestions (``/threads/{id}/suggestions``), answered as their routes answer.

The goal is written onto the thread's head checkpoint, as the server writes it; the server
also refuses the write while a run is active on the thread, which a client running its own
turns one at a time has no need for.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from harness.agents import goals as goal_logic
from harness.agents import suggestions
from harness.agents.markers import HIDE_KEY, message_text
from harness.client.events import serialize_message
from harness.client.sync import run_sync
from harness.errors import InvalidRequest, ServiceUnavailable
from harness.models import ModelError, create_chat_model, get_model_config
from harness.runtime.checkpoint_state import write_onto_head

logger = logging.getLogger(__name__)

SUGGESTIONS_TIMEOUT_SECONDS = 30
# The conversation a suggestion call sees when none is given: its latest messages.
SUGGESTIONS_CONTEXT_MESSAGES = 20


class ThreadActionsMixin:
    # -- goals -------------------------------------------------------------------------------

    def get_goal(self, thread_id: str) -> dict[str, Any]:
        """``{"thread_id", "goal"}``: the goal, or None."""
        return {"thread_id": self._thread_id(thread_id), "goal": self.get_state(thread_id).get("goal") or None}

    def set_goal(self, thread_id: str, objective: str, *, max_continuations: int | None = None) -> dict[str, Any]:
        goal = goal_logic.goal_from_request(objective, max_continuations, default_max=self.app_config.goals.max_continuations)
        self._write_goal(thread_id, goal)
        return {"thread_id": thread_id, "goal": goal}

    def clear_goal(self, thread_id: str) -> dict[str, Any]:
        self._write_goal(thread_id, None)
        return {"thread_id": thread_id, "goal": None}

    def _write_goal(self, thread_id: str, goal: dict[str, Any] | None) -> None:
        agent = self._default_agent()
        if "goal" not in agent.channels:
            raise InvalidRequest("this agent's thread state has no goal channel")
        config = {"configurable": {"thread_id": self._thread_id(thread_id)}}
        values = dict(agent.get_state(config).values or {})
        run_sync(write_onto_head(agent, config, {**values, "goal": goal}))

    # -- suggestions -------------------------------------------------------------------------

    def get_suggestions_config(self) -> dict[str, Any]:
        return suggestions.suggestions_config_json(self.app_config)

    def _visible_conversation(self, thread_id: str) -> list[dict[str, Any]]:
        out = []
        for m in self.get_state(thread_id).get("messages", [])[-SUGGESTIONS_CONTEXT_MESSAGES:]:
            if m.type in ("human", "ai") and message_text(m).strip() and not m.additional_kwargs.get(HIDE_KEY):
                out.append(serialize_message(m))
        return out

    def get_suggestions(self, thread_id: str, *, messages: list[dict] | None = None, n: int | None = None,
                        model_name: str | None = None) -> dict[str, Any]:
        """``{"suggestions": [...], "enabled": bool}``: follow-up questions for the thread (or for
        ``messages``, ``[{role, content}]``). Off unless ``suggestions.enabled``; a failed model
        call gives none, as on the server."""
        app = self.app_config
        count = suggestions.check_request(app, messages=messages, n=n, model_name=model_name)
        conversation = messages if messages is not None else self._visible_conversation(thread_id)
        if not app.suggestions.enabled or not conversation:
            return {"suggestions": [], "enabled": app.suggestions.enabled}
        model = self._model
        if model is None:
            try:
                model = create_chat_model(get_model_config(app.suggestions.model_name or model_name, config=app).name, config=app)
            except ModelError as exc:
                raise ServiceUnavailable(f"No model for suggestions: {exc}") from None
        try:
            found = run_sync(asyncio.wait_for(suggestions.suggest(model, conversation, count), SUGGESTIONS_TIMEOUT_SECONDS))
        except Exception as exc:  # a failed suggestion call costs the user nothing: no chips
            logger.info("No suggestions for thread %s: %s", thread_id, exc)
            found = []
        return {"suggestions": found, "enabled": True}
