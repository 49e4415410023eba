"""The lead agent's own overhead per turn, with the scripted model (no network, no LLM).

Runs 50 turns (after 5 warm-up turns) through ``DeerFlowClient.chat`` on one thread with
the full middleware chain, an in-memory checkpointer and the real sandbox provider, and
prints the median and p90 wall time per turn, through ``chat`` (sync) and ``achat``
(async, the server's path), for two shapes:

- ``text``: user message -> streamed text answer;
- ``tool``: user message -> one tool call (an in-process echo tool) -> streamed answer.

It also prints the median time of ``make_lead_agent`` (the server builds the graph per run).

Usage:  .venv/bin/python benchmarks/agent_turn_overhead.py [--turns 50]
Compare the median before and after a change to the agent or its middlewares.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
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
"""


def measure(turns: int, shape: str, use_async: bool = False) -> list[float]:
    from langchain_core.tools import tool

    from harness.client import DeerFlowClient
    from harness.testing import Reply, ScriptedChatModel, call, tool_reply

    @tool
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    answer = Reply(text="Here is a short answer of about twenty words, streamed in small chunks like a provider would.", chunk_size=8,
                   usage={"input_tokens": 500, "output_tokens": 20})
    script = [answer] if shape == "text" else [tool_reply(call("echo", text="ping")), answer]
    model = ScriptedChatModel(script=script, loop=True)
    client = DeerFlowClient(model=model, tools=[echo], user_id="bench")
    thread = f"bench-{shape}"
    thread += "-async" if use_async else ""

    async def run_async() -> list[float]:
        out = []
        for i in range(turns + 5):
            start = time.perf_counter()
            text = await client.achat(f"turn {i}: tell me something", thread_id=thread)
            elapsed = time.perf_counter() - start
            assert text.startswith("Here is a short answer"), text
            if i >= 5:
                out.append(elapsed)
        return out

    if use_async:
        import asyncio

        return asyncio.run(run_async())
    times = []
    for i in range(turns + 5):
        start = time.perf_counter()
        text = client.chat(f"turn {i}: tell me something", thread_id=thread)
        elapsed = time.perf_counter() - start
        assert text.startswith("Here is a short answer"), text
        if i >= 5:
            times.append(elapsed)
    return times


def measure_build(n: int) -> list[float]:
    """``make_lead_agent`` as the server calls it once per run (configured model and tools)."""
    from harness.agents import make_lead_agent

    make_lead_agent({"configurable": {}})  # imports and first-use setup
    times = []
    for _ in range(n):
        start = time.perf_counter()
        make_lead_agent({"configurable": {}})
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="deerflow-bench-")
    cfg = Path(home) / "config.yaml"
    cfg.write_text(CONFIG)
    os.environ["DEER_FLOW_HOME"] = home
    os.environ["DEER_FLOW_CONFIG_PATH"] = str(cfg)
    os.environ.setdefault("DEER_FLOW_EXTENSIONS_CONFIG_PATH", str(Path(home) / "extensions_config.json"))
    import logging

    logging.disable(logging.WARNING)
    build = sorted(t * 1000 for t in measure_build(20))
    print(f"agent build (make_lead_agent): median {statistics.median(build):.1f} ms over {len(build)} builds")
    for use_async in (False, True):
        for shape in ("text", "tool"):
            times = measure(args.turns, shape, use_async)
            ms = sorted(t * 1000 for t in times)
            p90 = ms[int(len(ms) * 0.9) - 1]
            label = f"{shape}, {'async' if use_async else 'sync'}"
            print(f"agent turn overhead [{label}]: median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms over {len(ms)} turns")


if __name__ == "__main__":
    main()
