"""The scripted test agent with one more tool, ``wait_for_gate``, that holds a run until the
test opens the gate: a thread stays busy exactly as long as a test needs, with no timing."""

from __future__ import annotations

import asyncio
import threading

from langchain.agents import create_agent
from langchain_core.tools import tool

from tests.support import agents

GATE = threading.Event()


@tool
async def wait_for_gate() -> str:
    """Wait until the test lets the run go on."""
    opened = await asyncio.to_thread(GATE.wait, 120)
    return "the gate opened" if opened else "the gate stayed shut"


def make_gated_agent(config):
    return create_agent(model=agents.MODEL, tools=[*agents.TOOLS, wait_for_gate], system_prompt="You are a test agent.")
