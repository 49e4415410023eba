"""Title the thread after its first complete exchange.

"Complete" means the model gave a final answer (no pending tool calls). With
``title.model_name`` set, that model writes the title; otherwise — or when that call
fails — a local title is cut from the user's first message, which costs nothing.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage

from harness.agents.markers import is_error_fallback, is_real_user_message, message_text

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

    def _exchange(self, state: dict[str, Any]) -> tuple[str, str] | None:
        if not self.enabled or state.get("title"):
            return None
        messages = state.get("messages") or []
        if not messages or not isinstance(messages[-1], AIMessage) or messages[-1].tool_calls or is_error_fallback(messages[-1]):
            return None
        user = next((m for m in messages if is_real_user_message(m)), None)
        if user is None:
            return None
        return message_text(user), message_text(messages[-1])

    def _prompt(self, user: str, assistant: str) -> list[HumanMessage]:
        return [HumanMessage(TITLE_PROMPT.format(max_words=self.max_words, user=user[:1500], assistant=assistant[:1500]))]

    def after_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        pair = self._exchange(state)
        if pair is None:
            return None
        title = ""
        if self.model is not None:
            try:
                title = clean_model_title(message_text(self.model.invoke(self._prompt(*pair))), self.max_chars)
            except Exception:
                logger.warning("title model failed; using the local title", exc_info=True)
        return {"title": title or local_title(pair[0], self.max_words, self.max_chars)}

    async def aafter_model(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        pair = self._exchange(state)
        if pair is None:
            return None
        title = ""
        if self.model is not None:
            try:
                title = clean_model_title(message_text(await self.model.ainvoke(self._prompt(*pair))), self.max_chars)
            except Exception:
                logger.warning("title model failed; using the local title", exc_info=True)
        return {"title": title or local_title(pair[0], self.max_words, self.max_chars)}
