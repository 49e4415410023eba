"""Streamed Chat Completions chunks as plain dicts, for models on the OpenAI SDK.

For every streamed chunk the OpenAI SDK builds a typed ``ChatCompletionChunk`` (about 70 µs
here, with the ``model_dump()`` that follows), and ``langchain_openai`` at once turns it back
into a dict before reading it: a 500-token answer spent some 35 ms of server CPU on objects
nobody used. ``langchain_openai`` reads dict chunks as they are, so the SDK client of a
configured model hands the parsed JSON over instead.

What the typed chunk would have added is kept: a choice without a ``delta`` gets
``"delta": None`` (what the typed chunk dumps as). Every other key LangChain reads with
``.get``. Responses of other types (a non-streamed completion, the Responses API, errors)
are built by the SDK as before. An SDK without the hook point leaves the client untouched:
slower, never wrong.
"""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

_HOOK = "_process_response_data"


def _chunk_type() -> type | None:
    try:
        from openai.types.chat import ChatCompletionChunk
    except ImportError:
        return None
    return ChatCompletionChunk


def _as_dict(chunk: dict) -> dict:
    for choice in chunk.get("choices") or ():
        if isinstance(choice, dict):
            choice.setdefault("delta", None)
    return chunk


def _install(client: Any, chunk_type: type) -> bool:
    typed = getattr(client, _HOOK, None)
    if typed is None or getattr(typed, "_deerflow_dict_chunks", False):
        return typed is not None

    def process_response_data(*, data: object, cast_to: Any, response: Any) -> Any:
        if cast_to is chunk_type and isinstance(data, dict):
            return _as_dict(data)
        return typed(data=data, cast_to=cast_to, response=response)

    process_response_data._deerflow_dict_chunks = True  # type: ignore[attr-defined]
    setattr(client, _HOOK, process_response_data)
    return True


def stream_chunks_as_dicts(model: Any) -> bool:
    """Install the dict decoding on ``model``'s SDK clients (sync and async); False when the
    model has none (not an OpenAI-SDK model) or the SDK lacks the hook."""
    clients = [c for c in (getattr(model, "root_client", None), getattr(model, "root_async_client", None)) if c is not None]
    chunk_type = _chunk_type()
    if not clients or chunk_type is None:
        return False
    installed = [_install(client, chunk_type) for client in clients]
    if not all(installed):
        logger.debug("openai SDK without %s: %s streams typed chunks", _HOOK, type(model).__name__)
    return all(installed)
