"""Guardrail providers for tests, loaded by class path from ``guardrails.provider.use``."""

from __future__ import annotations

from harness.governance.guardrails import GuardrailDecision, GuardrailRequest

# Every request a provider here was asked about, in order (tests clear it).
SEEN: list[GuardrailRequest] = []


class DenyToolProvider:
    """Denies one tool by name, allows the rest; sync and async."""

    def __init__(self, tool: str = "progress", reason: str = "progress reports are switched off here") -> None:
        self.tool = tool
        self.reason = reason

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        SEEN.append(request)
        if request.tool_name == self.tool:
            return GuardrailDecision.deny(self.reason, code="test.tool_denied", policy_id="test-policy")
        return GuardrailDecision.permit()

    async def aevaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        return self.evaluate(request)


class SyncOnlyDenyProvider(DenyToolProvider):
    """No aevaluate: async runs call evaluate in a worker thread."""

    aevaluate = None


class RaisingProvider:
    """A provider whose backend is down."""

    def evaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        SEEN.append(request)
        raise ConnectionError("policy service unreachable")

    async def aevaluate(self, request: GuardrailRequest) -> GuardrailDecision:
        return self.evaluate(request)


class NotAProvider:
    """Has no evaluate method."""
