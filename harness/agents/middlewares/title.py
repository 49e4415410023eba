"""Title the thread after its first complete exchange.

"Complete" means the model gave a final answer (no pending tool calls). It runs inside
the model step (no extra graph step); the title model's call is tagged ``nostream`` so its
tokens never reach the run's message stream. With
``title.model_name`` set, that model writes the title; otherwise — or when that call
fails — a local title is cut from the user's first message, which costs nothing.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from harness.agents.markers import is_error_fallback, is_real_user_message, message_text
from harness.agents.middlewares._base import ai_response

logger = logging.getLogger(__name__)

TITLE_PROMPT = """Write a short title (at most {max_words} words) for a conversation that starts like this.
Reply with the title only: no quotes, no trailing period.

User: {user}
Assistant: {assistant}"""


def local_title(text: str, max_words: int = 8, max_chars: int = 80) -> str:
    text = re.sub(r"<deerflow-context.*?</deerflow-context>", " ", text, flags=re.S)
    words = text.split()
    if not words:
        return "New conversation"
    title = " ".join(words[:max_words])
    if len(title) > max_chars:
        title = title[: max_chars - 1].rstrip() + "…"
    elif len(words) > max_words:
        title += "…"
    return title


def clean_model_title(text: str, max_chars: int) -> str:
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.strip().strip("\"'“”‘’*#").strip().rstrip(".")
    return line[:max_chars].strip()


class TitleMiddleware(AgentMiddleware):
    def __init__(self, *, enabled: bool = True, max_words: int = 8, max_chars: int = 80, model: Any = None) -> None:
        super().__init__()
        self.enabled = enabled
        self.max_words = max_words
        self.max_chars = max_chars
        # the title call must not show up as assistant tokens in the run's stream
        self.model = model.with_config(tags=["nostream"]) if model is not None else None

    def _exchange(self, request: Any, result: Any) -> tuple[str, str] | None:
        state = request.state or {}
        if not self.enabled or state.get("title"):
            return None
        ai = ai_response(result)
        if ai is None or ai.tool_calls or ai.invalid_tool_calls or is_error_fallback(ai) or not message_text(ai).strip():
            return None
        # the stored messages, not the request: the request's first user message carries
        # the per-turn context block
        user = next((m for m in state.get("messages") or [] if is_real_user_message(m)), None)
        if user is None:
            return None
        return message_text(user), message_text(ai)

    def _prompt(self, user: str, assistant: str) -> list[HumanMessage]:
        return [HumanMessage(TITLE_PROMPT.format(max_words=self.max_words, user=user[:1500], assistant=assistant[:1500]))]

    def _with_title(self, result: Any, title: str, user: str) -> Any:
        title = title or local_title(user, self.max_words, self.max_chars)
        return ExtendedModelResponse(model_response=result, command=Command(update={"title": title}))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        result = handler(request)
        pair = self._exchange(request, result)
        if pair is None:
            return result
        title = ""
        if self.model is not None:
            try:
                title = clean_model_title(message_text(self.model.invoke(self._prompt(*pair))), self.max_chars)
            except Exception:
                logger.warning("title model failed; using the local title", exc_info=True)
        return self._with_title(result, title, pair[0])

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        result = await handler(request)
        pair = self._exchange(request, result)
        if pair is None:
            return result
        title = ""
        if self.model is not None:
            try:
                title = clean_model_title(message_text(await self.model.ainvoke(self._prompt(*pair))), self.max_chars)
            except Exception:
                logger.warning("title model failed; using the local title", exc_info=True)
        return self._with_title(result, title, pair[0])
