"""One leading system message per request.

Several layers add system text (the prompt, plan mode, extensions); strict backends
(vLLM, SGLang, Qwen templates, Anthropic) reject a system message anywhere but first.
Only the request is changed; stored state is untouched.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import SystemMessage

from harness.agents.markers import message_text


def _plain_blocks(content: Any) -> bool:
    return isinstance(content, list) and all(isinstance(b, dict) and set(b) <= {"type", "text"} and b.get("type") == "text" for b in content)


def coalesce(request: Any) -> Any:
    # Every model call passes here with the whole history: look at the types present first.
    has_system = any(issubclass(kind, SystemMessage) for kind in set(map(type, request.messages)))
    stray = [m for m in request.messages if isinstance(m, SystemMessage)] if has_system else []
    if not stray:
        # layers that append system text produce content blocks; plain text is what
        # every backend accepts (blocks with provider extras such as cache hints stay)
        if request.system_message is not None and _plain_blocks(request.system_message.content):
            return request.override(system_message=SystemMessage(content="\n\n".join(b["text"] for b in request.system_message.content)))
        return request
    parts = [message_text(request.system_message)] if request.system_message is not None else []
    parts += [message_text(m) for m in stray]
    merged = SystemMessage(content="\n\n".join(p for p in parts if p))
    return request.override(system_message=merged, messages=[m for m in request.messages if not isinstance(m, SystemMessage)])


class SystemMessageCoalescingMiddleware(AgentMiddleware):
    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(coalesce(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(coalesce(request))
