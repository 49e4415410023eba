"""The guardrails hook: an operator's provider vets every tool call before it runs.

``config.yaml``::

    guardrails:
      enabled: true
      fail_closed: true          # a provider that raises denies the call (false: the call runs, with a warning)
      passport: null             # passed to the provider as ``agent_id`` (DeerFlow's OAP passport)
      provider:
        use: my_package.guard:MyProvider
        config: {key: value}     # keyword arguments for the class

The provider is any class with ``evaluate(request) -> decision``; ``aevaluate`` (a coroutine
function) is used by async runs when present, otherwise ``evaluate`` runs in a worker thread so a
provider that does IO never blocks the event loop. ``request`` is a :class:`GuardrailRequest`;
the decision is a :class:`GuardrailDecision` or anything with a boolean ``allow`` and, optionally,
``reasons`` (objects with ``code`` and ``message``) and ``policy_id`` — the shape of DeerFlow's
own, so a provider written for DeerFlow's interface works unchanged. A denied call is answered
with an error tool result saying why, and the run carries on: the model reads the refusal and
chooses another way. Provider exceptions follow ``fail_closed``; LangGraph's control-flow
signals (an interrupt inside a provider) are never swallowed.

Cost when off: nothing (no middleware). When on: one provider call per tool call.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp

from harness.agents.markers import run_value

logger = logging.getLogger(__name__)

# A provider's reason reaches the model and the event journal; bound what it can put there.
_REASON_LIMIT = 500


@dataclass(frozen=True)
class GuardrailRequest:
    """One tool call about to run, and whose run it is."""

    tool_name: str
    tool_input: dict[str, Any]
    tool_call_id: str | None = None
    thread_id: str | None = None
    run_id: str | None = None
    user_id: str | None = None
    agent_name: str | None = None  # the custom agent running, if any
    agent_id: str | None = None  # guardrails.passport
    is_subagent: bool = False
    timestamp: str = ""  # ISO 8601, UTC


@dataclass(frozen=True)
class GuardrailReason:
    code: str
    message: str = ""


@dataclass(frozen=True)
class GuardrailDecision:
    allow: bool
    reasons: list[GuardrailReason] = field(default_factory=list)
    policy_id: str | None = None

    @classmethod
    def deny(cls, message: str, code: str = "denied", policy_id: str | None = None) -> GuardrailDecision:
        return cls(allow=False, reasons=[GuardrailReason(code, message)], policy_id=policy_id)

    @classmethod
    def permit(cls) -> GuardrailDecision:
        return cls(allow=True)


@runtime_checkable
class GuardrailProvider(Protocol):
    """What ``guardrails.provider.use`` names. ``aevaluate`` is optional."""

    def evaluate(self, request: GuardrailRequest) -> Any: ...


class _ProviderFailed(Exception):
    """The provider raised or answered something that is not a decision."""


def _normalize(decision: Any) -> tuple[bool, str, str, str | None]:
    """(allow, code, message, policy_id) from a provider's answer."""
    allow = getattr(decision, "allow", None)
    if not isinstance(allow, bool):
        raise _ProviderFailed(f"the provider answered {type(decision).__name__}, not a decision with a boolean 'allow'")
    reasons = list(getattr(decision, "reasons", None) or [])
    first = reasons[0] if reasons else None
    code = str(getattr(first, "code", "") or ("allowed" if allow else "denied"))
    message = str(getattr(first, "message", "") or "")[:_REASON_LIMIT]
    policy = getattr(decision, "policy_id", None)
    return allow, code[:64], message, str(policy)[:128] if policy else None


class GuardrailMiddleware(AgentMiddleware):
    """Asks the provider about each tool call before the call runs."""

    def __init__(self, provider: Any, *, fail_closed: bool = True, passport: str | None = None, subagent: bool = False) -> None:
        super().__init__()
        self.provider = provider
        self.fail_closed = fail_closed
        self.passport = passport
        self.subagent = subagent
        evaluate_async = getattr(provider, "aevaluate", None)
        self._aevaluate = evaluate_async if inspect.iscoroutinefunction(evaluate_async) else None

    def _request(self, request: Any) -> GuardrailRequest:
        call = request.tool_call
        runtime = request.runtime

        def ident(key: str) -> str | None:
            value = run_value(runtime, key)
            return None if value is None else str(value)

        args = call.get("args")
        return GuardrailRequest(
            tool_name=str(call.get("name") or ""), tool_input=dict(args) if isinstance(args, dict) else {},
            tool_call_id=call.get("id"), thread_id=ident("thread_id"), run_id=ident("run_id"), user_id=ident("user_id"),
            agent_name=ident("agent_name"), agent_id=self.passport, is_subagent=self.subagent,
            timestamp=datetime.now(UTC).isoformat(timespec="seconds"))

    def _failed(self, gr: GuardrailRequest, exc: BaseException) -> ToolMessage | None:
        """A denial when failing closed, else None (the call runs)."""
        if self.fail_closed:
            logger.warning("guardrail provider failed on %s (%s: %s); the call is denied (guardrails.fail_closed)",
                           gr.tool_name, type(exc).__name__, exc)
            return self._denial(gr, "provider_error", "the guardrail provider failed, and guardrails.fail_closed is on")
        logger.warning("guardrail provider failed on %s (%s: %s); the call runs anyway (guardrails.fail_closed is off)",
                       gr.tool_name, type(exc).__name__, exc)
        return None

    def _verdict(self, gr: GuardrailRequest, decision: Any) -> ToolMessage | None:
        allow, code, message, policy = _normalize(decision)
        if allow:
            return None
        logger.info("guardrail denied %s (%s%s) in run %s", gr.tool_name, code, f", policy {policy}" if policy else "", gr.run_id)
        return self._denial(gr, code, message or "the guardrail policy does not allow it")

    @staticmethod
    def _denial(gr: GuardrailRequest, code: str, reason: str) -> ToolMessage:
        text = (f"The guardrail refused this {gr.tool_name} call ({code}): {reason}. "
                "It was not run; do not repeat it — find another way, or tell the user it is not allowed.")
        return ToolMessage(content=text, tool_call_id=gr.tool_call_id or "", name=gr.tool_name, status="error",
                           additional_kwargs={"deerflow_guardrail": {"code": code}})

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        gr = self._request(request)
        try:
            refusal = self._verdict(gr, self.provider.evaluate(gr))
        except GraphBubbleUp:
            raise
        except Exception as exc:
            refusal = self._failed(gr, exc)
        return refusal or handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        gr = self._request(request)
        try:
            if self._aevaluate is not None:
                decision = await self._aevaluate(gr)
            else:
                decision = await asyncio.to_thread(self.provider.evaluate, gr)
            refusal = self._verdict(gr, decision)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            refusal = self._failed(gr, exc)
        return refusal or await handler(request)


def guardrail_middleware(guardrails: Any, *, subagent: bool = False) -> GuardrailMiddleware | None:
    """The middleware for a build, or None when guardrails are off (then it costs nothing)."""
    if guardrails is None or not guardrails.enabled or guardrails.provider_instance is None:
        return None
    return GuardrailMiddleware(guardrails.provider_instance, fail_closed=guardrails.fail_closed,
                               passport=guardrails.passport, subagent=subagent)
