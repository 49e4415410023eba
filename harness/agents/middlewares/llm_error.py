"""Retry transient provider errors, then end the turn with a marked error message.

Built on LangChain's ``ModelRetryMiddleware`` (exponential backoff with jitter). What we
add: only transient failures are retried (429, 5xx, timeouts, dropped connections); any
failure that remains ends the turn with an assistant message flagged
``deerflow_error_fallback`` instead of crashing the run, and ``stop_reason`` says so.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents.middleware import ModelRetryMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command

from harness.agents.markers import error_fallback

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
_TRANSIENT_NAMES = frozenset({"APITimeoutError", "APIConnectionError", "ReadTimeout", "ConnectTimeout", "ConnectError",
                              "RemoteProtocolError", "ServiceUnavailableError", "InternalServerError", "RateLimitError"})


def status_of(exc: BaseException) -> int | None:
    for attr in ("status_code", "status", "http_status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def is_transient(exc: BaseException) -> bool:
    status = status_of(exc)
    if status is not None:
        return status in TRANSIENT_STATUS or status >= 500
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | ConnectionError):
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def describe(exc: BaseException) -> tuple[str, str]:
    status = status_of(exc)
    if status == 429:
        return "rate_limited", "The model provider is rate-limiting requests right now."
    if status in {401, 403}:
        return "auth", "The model provider rejected the credentials configured for this model."
    if status is not None and status >= 500:
        return "provider_unavailable", "The model provider returned a server error."
    if is_transient(exc):
        return "timeout", "The model provider did not answer in time."
    return "model_error", "The model call failed."


class LLMErrorHandlingMiddleware(ModelRetryMiddleware):
    def __init__(self, max_retries: int = 2, initial_delay: float = 1.0, backoff_factor: float = 2.0, max_delay: float = 20.0, jitter: bool = True) -> None:
        super().__init__(max_retries=max_retries, retry_on=is_transient, on_failure="continue",
                         initial_delay=initial_delay, backoff_factor=backoff_factor, max_delay=max_delay, jitter=jitter)

    def _fallback(self, exc: BaseException, attempts: int) -> ExtendedModelResponse:
        kind, text = describe(exc)
        msg = error_fallback(
            f"{text} I could not finish this reply (after {attempts} attempt{'s' if attempts != 1 else ''}). Please try again in a moment.",
            error_type=kind, detail=f"{type(exc).__name__}: {exc}", status=status_of(exc), attempts=attempts,
        )
        return ExtendedModelResponse(model_response=ModelResponse(result=[msg]), command=Command(update={"stop_reason": "error_fallback"}))

    def _handle_failure(self, exc: Exception, attempts_made: int) -> Any:
        return self._fallback(exc, attempts_made)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        try:
            return super().wrap_model_call(request, handler)
        except GraphBubbleUp:
            raise
        except Exception as exc:  # not transient: no retry, but never crash the run
            return self._fallback(exc, 1)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        try:
            return await super().awrap_model_call(request, handler)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            return self._fallback(exc, 1)
