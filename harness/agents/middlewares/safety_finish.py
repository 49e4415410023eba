"""A reply the provider stopped for safety reasons runs none of its tool calls.

A content filter (OpenAI ``finish_reason=content_filter``, Anthropic ``stop_reason=refusal``,
Gemini ``SAFETY`` and its kin) can cut a reply mid-stream while it still carries tool calls:
their arguments are whatever was written before the cut, so a ``write_file`` would write
half a document, the model would try to repair it, be filtered again, and loop. Such a
reply loses its tool calls and gains a sentence saying why; a reply the filter left empty
gets that sentence instead of nothing (an empty assistant message also poisons later
requests to strict providers). A filtered reply with text and no tool calls is kept as it
is: its partial answer is still worth reading. Either way ``stop_reason = safety_capped``
and ``additional_kwargs["safety_termination"]`` records what fired, never the arguments.

Detectors are small objects with a ``name`` and ``detect(message)``; ``config.yaml``'s
``safety_finish_reason.detectors`` replaces the built-in three with class paths.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage
from langgraph.types import Command

from harness.agents.markers import message_text
from harness.agents.middlewares._base import ai_response

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SafetyTermination:
    detector: str
    reason_field: str
    reason_value: str
    extras: dict[str, Any] = field(default_factory=dict)


class SafetyTerminationDetector(Protocol):
    name: str

    def detect(self, message: AIMessage) -> SafetyTermination | None: ...


def _signal(message: AIMessage, key: str) -> str | None:
    """Adapters put the provider's stop signal in ``response_metadata``, a few older ones in
    ``additional_kwargs``; only a non-empty string counts."""
    for container in (message.response_metadata, message.additional_kwargs):
        value = (container or {}).get(key)
        if isinstance(value, str) and value:
            return value
    return None


class _ReasonDetector:
    name = ""
    reason_field = "finish_reason"
    defaults: tuple[str, ...] = ()
    extras_key: str | None = None

    def __init__(self, reasons: Iterable[str] | None = None) -> None:
        self.reasons = frozenset(self._fold(r) for r in (self.defaults if reasons is None else reasons))

    @staticmethod
    def _fold(value: str) -> str:
        return value.lower()

    def detect(self, message: AIMessage) -> SafetyTermination | None:
        value = _signal(message, self.reason_field)
        if value is None or self._fold(value) not in self.reasons:
            return None
        extra = (message.response_metadata or {}).get(self.extras_key) if self.extras_key else None
        return SafetyTermination(self.name, self.reason_field, value, {self.extras_key: extra} if extra else {})


class OpenAICompatibleContentFilterDetector(_ReasonDetector):
    """OpenAI, Azure, DeepSeek, Moonshot, vLLM …; gateways with their own words (``sensitive``)
    list them in ``finish_reasons``."""

    name = "openai_compatible_content_filter"
    defaults = ("content_filter",)
    extras_key = "content_filter_results"

    def __init__(self, finish_reasons: Iterable[str] | None = None) -> None:
        super().__init__(finish_reasons)


class AnthropicRefusalDetector(_ReasonDetector):
    name = "anthropic_refusal"
    reason_field = "stop_reason"
    defaults = ("refusal",)

    def __init__(self, stop_reasons: Iterable[str] | None = None) -> None:
        super().__init__(stop_reasons)


class GeminiSafetyDetector(_ReasonDetector):
    """Gemini's safety, blocklist, PII and recitation stops; not MAX_TOKENS (that is a length
    cap, handled by the length layer) nor OTHER (too broad)."""

    name = "gemini_safety"
    defaults = ("SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "RECITATION", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION")
    extras_key = "safety_ratings"

    def __init__(self, finish_reasons: Iterable[str] | None = None) -> None:
        super().__init__(finish_reasons)

    @staticmethod
    def _fold(value: str) -> str:
        return value.upper()


def default_detectors() -> list[SafetyTerminationDetector]:
    return [OpenAICompatibleContentFilterDetector(), AnthropicRefusalDetector(), GeminiSafetyDetector()]


def _explanation(hit: SafetyTermination, suppressed: Sequence[str]) -> str:
    why = f"The model provider stopped this reply for safety reasons ({hit.reason_field}={hit.reason_value!r}, detector {hit.detector})."
    if suppressed:
        return (f"{why} Its tool calls ({', '.join(suppressed)}) were not run, because their arguments may be cut off. "
                "Please rephrase the request or ask for a smaller piece of output.")
    return f"{why} It returned no content. Please rephrase the request."


class SafetyFinishReasonMiddleware(AgentMiddleware):
    def __init__(self, detectors: Sequence[SafetyTerminationDetector] | None = None) -> None:
        super().__init__()
        self.detectors = list(detectors) if detectors else default_detectors()

    def _detect(self, message: AIMessage) -> SafetyTermination | None:
        for detector in self.detectors:
            try:
                hit = detector.detect(message)
            except Exception:  # an operator's detector must not break the run
                logger.exception("safety detector %r failed; treated as no match", getattr(detector, "name", detector))
                continue
            if hit is not None:
                return hit
        return None

    def _repair(self, result: Any) -> Any:
        ai = ai_response(result)
        # Cheap exit first: a reply that ended normally says "stop" or "tool_calls".
        if ai is None or (ai.response_metadata or {}).get("finish_reason") in ("stop", "tool_calls"):
            return result
        blank = not message_text(ai).strip()
        if not ai.tool_calls and not blank:
            return result
        hit = self._detect(ai)
        if hit is None:
            return result
        suppressed = [c.get("name") or "unknown" for c in ai.tool_calls]
        text = _explanation(hit, suppressed)
        content: Any = ai.content
        if isinstance(content, list):
            content = [*content, {"type": "text", "text": f"\n\n{text}"}]
        else:
            content = f"{content}\n\n{text}" if message_text(ai).strip() else text
        kwargs = {k: v for k, v in ai.additional_kwargs.items() if k not in ("tool_calls", "function_call")}
        kwargs["safety_termination"] = {"detector": hit.detector, "reason_field": hit.reason_field, "reason_value": hit.reason_value,
                                        "suppressed_tool_call_count": len(suppressed), "suppressed_tool_call_names": suppressed,
                                        "extras": dict(hit.extras)}
        repaired = ai.model_copy(update={"content": content, "tool_calls": [], "invalid_tool_calls": [], "additional_kwargs": kwargs})
        logger.warning("provider safety stop (%s=%s): %d tool call(s) suppressed", hit.reason_field, hit.reason_value, len(suppressed))
        inner = getattr(result, "model_response", result)
        messages = [repaired if m is ai else m for m in getattr(inner, "result", [ai])] if isinstance(inner, ModelResponse) else [repaired]
        response = ModelResponse(result=messages, structured_response=getattr(inner, "structured_response", None))
        return ExtendedModelResponse(model_response=response, command=Command(update={"stop_reason": "safety_capped"}))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._repair(handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._repair(await handler(request))
