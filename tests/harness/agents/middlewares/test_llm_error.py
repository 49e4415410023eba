"""Provider errors: transient ones are retried, anything left ends the turn with a marked message."""

import pytest

from harness.agents.markers import ERROR_FALLBACK_KEY
from harness.agents.middlewares.llm_error import is_transient
from harness.testing import Reply, ScriptedProviderError


async def test_transient_error_is_retried_then_succeeds(agent_factory):
    h = agent_factory([Reply(status=429), Reply(status=503), "recovered"])
    result = await h.send("hi")
    assert result["messages"][-1].content == "recovered"
    assert len(h.model.requests) == 3
    assert not result["messages"][-1].additional_kwargs.get(ERROR_FALLBACK_KEY)


async def test_exhausted_retries_end_with_a_marked_error_message(agent_factory):
    h = agent_factory([Reply(status=500, error_message="boom")] * 3)
    result = await h.send("hi")
    last = result["messages"][-1]
    assert last.type == "ai" and last.additional_kwargs[ERROR_FALLBACK_KEY] is True
    assert last.additional_kwargs["error"]["type"] == "provider_unavailable"
    assert last.additional_kwargs["error"]["attempts"] == 3
    assert "try again" in last.content
    assert h.state()["stop_reason"] == "error_fallback"
    assert len(h.model.requests) == 3  # 1 try + 2 retries


async def test_non_transient_error_is_not_retried_but_does_not_crash(agent_factory):
    h = agent_factory([Reply(status=400, error_message="bad request")])
    result = await h.send("hi")
    assert result["messages"][-1].additional_kwargs[ERROR_FALLBACK_KEY] is True
    assert len(h.model.requests) == 1


async def test_thread_stays_usable_after_a_fallback(agent_factory):
    h = agent_factory([Reply(status=401)] + ["fine now"])
    await h.send("hi")
    result = await h.send("again")
    assert result["messages"][-1].content == "fine now"


@pytest.mark.parametrize(("exc", "expected"), [
    (ScriptedProviderError(429, "x"), True), (ScriptedProviderError(502, "x"), True), (ScriptedProviderError(400, "x"), False),
    (TimeoutError(), True), (ConnectionResetError(), True), (ValueError("x"), False),
])
def test_transient_classification(exc, expected):
    assert is_transient(exc) is expected
