"""LangSmith span bookkeeping runs inline while tracing is off, and is untouched when on."""

import asyncio
import contextvars

import pytest
from langsmith import Client, traceable, tracing_context
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


class _RecordingClient(Client):
    """A LangSmith client that keeps span names instead of sending them."""

    def __init__(self):
        super().__init__(api_key="unused", api_url="http://127.0.0.1:9", auto_batch_tracing=False)
        self.spans = []

    def create_run(self, name, *args, **kwargs):
        self.spans.append(name)

    def update_run(self, *args, **kwargs):
        """Span ends and outputs: these tests only look at which spans were opened."""


@pytest.fixture
def no_tracing_env(monkeypatch):
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.delenv(name, raising=False)


async def _one_turn(**config) -> str:
    from harness.agents import make_lead_agent
    from harness.testing import ScriptedChatModel

    graph = make_lead_agent(model=ScriptedChatModel(script=["hello there"]), tools=[])
    result = await graph.ainvoke({"messages": [{"role": "user", "content": "hi"}]}, config or None)
    return result["messages"][-1].content


def test_middleware_hooks_skip_langsmiths_wrapper_when_nothing_traces(no_tracing_env, monkeypatch):
    from langsmith import run_helpers

    spans = []
    original = run_helpers._setup_run
    monkeypatch.setattr(run_helpers, "_setup_run", lambda *a, **k: spans.append(1) or original(*a, **k))
    assert asyncio.run(_one_turn()) == "hello there"
    assert spans == []


def test_middleware_hooks_are_spans_when_tracing_is_on(no_tracing_env):
    client = _RecordingClient()

    async def traced_turn():
        with tracing_context(enabled=True, client=client):
            return await _one_turn()

    assert asyncio.run(traced_turn()) == "hello there"
    assert "DanglingToolCallMiddleware.awrap_model_call" in client.spans
    assert "TerminalResponseMiddleware.awrap_model_call" in client.spans


def test_a_langchain_tracer_among_the_callbacks_counts_as_tracing(no_tracing_env):
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tracers.langchain import LangChainTracer

    from harness.agents.tracing import tracing_active

    probe = RunnableLambda(lambda _: tracing_active())
    assert probe.invoke(None) is False
    client = _RecordingClient()
    assert probe.invoke(None, {"callbacks": [LangChainTracer(client=client)]}) is True
    # and a turn traced that way still gets its middleware spans
    assert asyncio.run(_one_turn(callbacks=[LangChainTracer(client=client)])) == "hello there"
    assert "DanglingToolCallMiddleware.awrap_model_call" in client.spans
