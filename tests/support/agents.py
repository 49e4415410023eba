"""Graph factories for API tests: a real LangChain agent (create_agent) around a scripted or
loopback model, with a few tools that exercise what the run machinery must handle."""

from __future__ import annotations

import asyncio
import os
import threading

from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.config import get_stream_writer
from langgraph.types import interrupt

from harness.testing import ScriptedChatModel
from tests.support.waiting import wait_until

# Tests replace this; graphs built for state reads share it without consuming the script.
MODEL = ScriptedChatModel(script=["hello"], loop=True)


# Calls of the slow tool begun in this process since the last set_script: a test that must
# act while a run is inside its tool waits on this, not on a pause after the model's answer
# (under load the step between the two took longer than any pause).
_slow_started = 0
_slow_lock = threading.Lock()


def set_script(*items, loop: bool = False) -> ScriptedChatModel:
    global MODEL, _slow_started
    MODEL = ScriptedChatModel(script=list(items), loop=loop)
    with _slow_lock:
        _slow_started = 0
    return MODEL


def wait_for_slow_tool(count: int = 1) -> None:
    """Until ``count`` calls of the slow tool have begun here (runs executed in this process)."""
    wait_until(lambda: _slow_started >= count, f"{count} slow tool call(s) to begin", interval=0.02)


@tool
async def slow(seconds: float) -> str:
    """Wait for the given number of seconds."""
    global _slow_started
    with _slow_lock:
        _slow_started += 1
    await asyncio.sleep(seconds)
    return f"waited {seconds}s"


@tool
def ask_user(question: str) -> str:
    """Ask the user a question and wait for the answer."""
    answer = interrupt({"question": question})
    return f"user said: {answer}"


@tool
def progress(note: str) -> str:
    """Report progress to the client."""
    get_stream_writer()({"type": "progress", "note": note})
    return "reported"


TOOLS = [slow, ask_user, progress]


def make_scripted_agent(config):
    return create_agent(model=MODEL, tools=TOOLS, system_prompt="You are a test agent.")


def make_loopback_agent(config):
    """For a server in another process: the model is ChatOpenAI at DEERFLOW_TEST_MODEL_URL."""
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model="test-model", base_url=os.environ["DEERFLOW_TEST_MODEL_URL"], api_key="test-key", max_retries=0, timeout=20, stream_usage=True)
    return create_agent(model=model, tools=TOOLS, system_prompt="You are a test agent.")


def make_scripted_lead_agent(config):
    """The real lead agent (all middlewares, sandbox tools) around the scripted model."""
    from harness.agents import make_lead_agent

    return make_lead_agent(config, model=MODEL)


def make_scripted_lead_agent_with_tools(config):
    """The real lead agent (its state schema follows checkpoints.mode) with the test tools."""
    from harness.agents import make_lead_agent

    return make_lead_agent(config, model=MODEL, extra_tools=TOOLS)
def make_scripted_delta_agent(config):
    """The scripted agent with the lead agent's delta-mode thread state (checkpoints.mode: delta)."""
    from harness.agents.state_schema import thread_state_schema

    return create_agent(model=MODEL, tools=TOOLS, system_prompt="You are a test agent.", state_schema=thread_state_schema("delta"))


def make_scripted_full_agent(config):
    """The scripted agent with the lead agent's full-mode thread state (title, artifacts, …)."""
    from harness.agents.state_schema import thread_state_schema

    return create_agent(model=MODEL, tools=TOOLS, system_prompt="You are a test agent.", state_schema=thread_state_schema("full"))
