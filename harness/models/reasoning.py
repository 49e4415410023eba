"""``ChatOpenAI`` for OpenAI-compatible servers that return a reasoning field (vLLM, Qwen,
DeepSeek-style ``reasoning_content``).

The stock client drops that non-standard field. This subclass keeps it in
``additional_kwargs["reasoning_content"]`` on full responses and on every streamed chunk,
so the UI can show the model's thinking and aggregated chunks carry the whole text.
Configure it with ``use: harness.models.reasoning:ReasoningChatOpenAI``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI

_FIELDS = ("reasoning_content", "reasoning")


def _reasoning_of(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    for key in _FIELDS:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


class ReasoningChatOpenAI(ChatOpenAI):
    def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        raw = response if isinstance(response, dict) else response.model_dump(exclude={"choices": {"__all__": {"message": {"parsed"}}}}, warnings=False)
        for gen, choice in zip(result.generations, raw.get("choices") or [], strict=False):
            text = _reasoning_of(choice.get("message"))
            if text and isinstance(gen.message, AIMessage):
                gen.message.additional_kwargs["reasoning_content"] = text
        return result

    def _convert_chunk_to_generation_chunk(self, chunk: dict, default_chunk_class: type, base_generation_info: dict | None) -> ChatGenerationChunk | None:
        gen = super()._convert_chunk_to_generation_chunk(chunk, default_chunk_class, base_generation_info)
        choices = chunk.get("choices") or []
        if gen is not None and choices:
            text = _reasoning_of(choices[0].get("delta"))
            if text and isinstance(gen.message, AIMessageChunk):
                # additional_kwargs strings concatenate when chunks are added, so the
                # aggregated message holds the whole reasoning text.
                gen.message.additional_kwargs["reasoning_content"] = text
        return gen
