"""LangSmith span bookkeeping runs inline while tracing is off, and is untouched when on."""

import asyncio
import contextvars

import pytest
from langsmith import traceable, tracing_context
from langsmith._internal import _aiter

from harness.agents.tracing import _inline_unless_tracing, install_inline_trace_setup


@pytest.fixture
def thread_handoffs(monkeypatch):
    calls = []
    original = _aiter._default_aio_to_thread

    async def counting(ctx, func, /, *args, **kwargs):
        calls.append(getattr(func, "__name__", repr(func)))
        return await original(ctx, func, *args, **kwargs)

    monkeypatch.setattr(_aiter, "_default_aio_to_thread", counting)
    install_inline_trace_setup()
    return calls


@traceable(name="hook")
async def _hook(value: int) -> int:
    await asyncio.sleep(0)
    return value * 2


def test_no_thread_handoff_when_tracing_is_off(thread_handoffs, monkeypatch):
    monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
    monkeypatch.delenv("LANGCHAIN_TRACING_V2", raising=False)

    async def go():
        return [await _hook(i) for i in range(5)]

    assert asyncio.run(go()) == [0, 2, 4, 6, 8]
    assert thread_handoffs == []


def test_langsmiths_own_handoff_is_kept_when_tracing_is_on():
    handed_off = []

    async def default(ctx, func, /, *args, **kwargs):
        handed_off.append(func)
        return ctx.run(func, *args, **kwargs)

    with tracing_context(enabled=True):
        traced = contextvars.copy_context()
    untraced = contextvars.copy_context()

    async def go():
        return [await _inline_unless_tracing(default, ctx, lambda: 7) for ctx in (traced, untraced)]

    assert asyncio.run(go()) == [7, 7]
    assert len(handed_off) == 1  # only the traced call went through LangSmith's hand-off


def test_the_lead_agent_installs_it():
    from langsmith._runtime_overrides import get_runtime_overrides

    from harness.agents import make_lead_agent
    from harness.testing import ScriptedChatModel

    make_lead_agent(model=ScriptedChatModel(script=["hi"]))
    assert get_runtime_overrides().aio_to_thread is not None
