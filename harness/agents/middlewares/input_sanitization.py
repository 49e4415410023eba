"""Strip server-owned markers from the user's input before anything else sees it.

Hidden context messages are trusted by later middlewares because only the server makes
them; a client that sends a message with those markers (or a reserved id) could otherwise
forge system context. Framework tags in the text are neutralized for the same reason.
Runs first so every later hook, including retries, sees the cleaned input.
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from harness.agents.markers import HIDDEN_ID_PREFIX, SERVER_OWNED_KWARGS, neutralize_tags, run_value


def _clean_content(content: Any) -> Any:
    if isinstance(content, str):
        return neutralize_tags(content)
    if isinstance(content, list):
        out = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                block = {**block, "text": neutralize_tags(str(block.get("text", "")))}
            out.append(block)
        return out
    return content


class InputSanitizationMiddleware(AgentMiddleware):
    def before_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        if run_value(runtime, "trusted_input", False):
            return None
        messages = state.get("messages") or []
        start = 0
        for i in range(len(messages) - 1, -1, -1):
            if isinstance(messages[i], AIMessage | ToolMessage):
                start = i + 1
                break
        incoming = messages[start:]
        dirty = False
        any_bad_id = False
        cleaned = []
        for m in incoming:
            # any message a client sends may carry forged markers (a fake read mark on a
            # tool result, say); only user text gets its tags neutralized
            kwargs = {k: v for k, v in m.additional_kwargs.items() if k not in SERVER_OWNED_KWARGS}
            content = _clean_content(m.content) if isinstance(m, HumanMessage) else m.content
            bad_id = str(m.id or "").startswith(HIDDEN_ID_PREFIX)
            if kwargs != m.additional_kwargs or content != m.content or bad_id:
                dirty = True
            any_bad_id = any_bad_id or bad_id
            cleaned.append(m.model_copy(update={"additional_kwargs": kwargs, "content": content}))
        if not dirty:
            return None
        if not any_bad_id:
            return {"messages": cleaned}  # same ids: replaced in place
        # A reserved id must change; re-add the whole input tail under fresh ids so the
        # order is kept.
        fresh = [m.model_copy(update={"id": str(uuid.uuid4())}) for m in cleaned]
        return {"messages": [RemoveMessage(id=m.id) for m in incoming] + fresh}

    async def abefore_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)
