"""The cost of delegation itself, with an instant scripted model (no network, no LLM).

The real lead agent (full middleware chain, in-memory checkpointer) delegates through the
``task`` tool; each subagent makes one instant model call with a ``probe`` tool call, then
answers. Two figures:

- ``dispatch_ms``: from the lead's ``task`` tool call starting to the subagent's first model
  call (the tool's checks, building the subagent graph, starting its loop);
- ``one_ms`` vs ``three_ms``: wall time of a lead turn that delegates one subtask against one
  that delegates three in parallel; each subagent's tool waits ``--work`` seconds (simulated
  work, as a slow tool or model would), so parallel delegation should cost about one wait,
  not three. Target: ``ratio`` = three / one <= 1.3.

Usage:  .venv/bin/python benchmarks/subagent_overhead.py [--rounds 20] [--work 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CONFIG = """config_version: 1
models:
  - name: bench
    use: langchain_openai:ChatOpenAI
    model: bench
    base_url: http://127.0.0.1:9/v1
    api_key: unused
    context_window: 128000
subagents:
  enabled: true
  max_concurrent: 3
  max_total_per_run: 50
"""


def build(work: float, marks: dict):
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from harness.agents.lead_agent import make_lead_agent
    from harness.config import parse_config
    from harness.testing import ScriptedChatModel, call, tool_reply

    @tool
    async def probe(n: int) -> str:
        """Simulated work."""
        await asyncio.sleep(work)
        return "done"

    def reply(messages):
        system = str(messages[0].content) if messages and messages[0].type == "system" else ""
        turns = sum(isinstance(m, AIMessage) for m in messages)
        if "subagent of DeerFlow" in system:
            if turns == 0:
                marks.setdefault("first_sub_call", time.perf_counter())
                return tool_reply(call("probe", n=1))
            return "subtask done"
        prompt = str(messages[-1].content)
        if turns == 0 or not any(m.type == "tool" for m in messages[-4:]):
            count = 3 if "three" in prompt else 1
            return tool_reply(*[call("task", description=f"part {i}", prompt=f"do part {i}") for i in range(count)])
        return "all done"

    model = ScriptedChatModel(script=[reply], loop=True)
    graph = make_lead_agent({"configurable": {"subagent_enabled": True}}, model=model, tools=[probe],
                            app_config=parse_config(CONFIG), checkpointer=InMemorySaver())
    return graph


async def turn(graph, text: str, marks: dict) -> float:
    from langchain_core.callbacks import AsyncCallbackHandler

    class ToolStart(AsyncCallbackHandler):
        async def on_tool_start(self, serialized, input_str, **kwargs):
            if (serialized or {}).get("name") == "task":
                marks.setdefault("task_start", time.perf_counter())

    thread = f"bench-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread, "user_id": "bench", "run_id": uuid.uuid4().hex}, "callbacks": [ToolStart()]}
    start = time.perf_counter()
    await graph.ainvoke({"messages": [{"role": "user", "content": text}]}, config, context=dict(config["configurable"]))
    return (time.perf_counter() - start) * 1000


async def main(rounds: int, work: float) -> dict:
    marks: dict = {}
    graph = build(work, marks)
    for _ in range(3):  # warm-up
        marks.clear()
        await turn(graph, "one", marks)
    dispatch, one, three = [], [], []
    for _ in range(rounds):
        marks.clear()
        one.append(await turn(graph, "one", marks))
        dispatch.append((marks["first_sub_call"] - marks["task_start"]) * 1000)
        marks.clear()
        three.append(await turn(graph, "three", marks))
    med = statistics.median
    return {"rounds": rounds, "work_s": work, "dispatch_ms_median": round(med(dispatch), 2),
            "dispatch_ms_p90": round(sorted(dispatch)[int(0.9 * (len(dispatch) - 1))], 2),
            "one_ms_median": round(med(one), 1), "three_ms_median": round(med(three), 1),
            "ratio": round(med(three) / med(one), 3)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--work", type=float, default=0.2)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.rounds, args.work)), indent=2))
