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


_CONTEXT_BLOCK = re.compile(r"<deerflow-context.*?</deerflow-context>", re.S)
# Directive syntax a user types to steer the agent, not what the chat is about: a leading
# "/skill" command, "@skill" or "@agent" mentions.
_SLASH_COMMAND = re.compile(r"^\s*/[a-z0-9][a-z0-9-]{0,63}(?=\s|$)", re.I)
_MENTION = re.compile(r"(?<![\w.])@[a-z0-9][a-z0-9_-]{0,63}\b", re.I)
# Markdown that reads as noise in a one-line title.
_FENCE = re.compile(r"^\s*(```|~~~).*$", re.M)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LINE_MARKERS = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+\[[ xX]\]\s+|[-*+]\s+|\d+[.)]\s+)", re.M)
_INLINE_MARKERS = re.compile(r"(\*\*|__|~~|`+|(?<!\w)[*_](?=\S)|(?<=\S)[*_](?!\w))")


def title_source_text(text: str) -> str:
    """The user's words without directive syntax or markdown markers: what a title is cut from."""
    text = _CONTEXT_BLOCK.sub(" ", text)
    text = _SLASH_COMMAND.sub(" ", text, count=1)
    text = _MENTION.sub(" ", text)
    text = _FENCE.sub(" ", text)
    text = _LINK.sub(r"\1", text)
    text = _LINE_MARKERS.sub("", text)
    return _INLINE_MARKERS.sub("", text)


def local_title(text: str, max_words: int = 8, max_chars: int = 80) -> str:
    words = title_source_text(text).split()
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
