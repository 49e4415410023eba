"""What a run's stream costs the process that holds it, and what a resume gets back.

Publishes ``--runs`` runs of a ``--chunks``-chunk answer (the worker's ``messages-tuple``
payloads: the JSON form of an ``AIMessageChunk`` and its callback metadata, plus a ``values``
event every 500 chunks) into the memory bridge, then prints the memory the bridge holds per run
(tracemalloc), and for a resume after the 10th event: how many items it sends and whether the
text reassembles to the whole answer.

    .venv/bin/python benchmarks/stream_retention.py [--runs 20] [--chunks 2000] [--root DIR]

``--root`` runs it against another checkout's bridge (e.g. a ``git worktree`` of an older
commit), for a before/after figure.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tracemalloc
from pathlib import Path


def chunk(text: str) -> list:
    return [{"content": text, "additional_kwargs": {}, "response_metadata": {}, "type": "AIMessageChunk", "name": None,
             "id": "chatcmpl-answer", "tool_calls": [], "invalid_tool_calls": [], "usage_metadata": None,
             "tool_call_chunks": [], "chunk_position": None},
            {"langgraph_node": "model", "langgraph_step": 3, "ls_provider": "openai", "ls_model_name": "gpt-4o"}]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    from harness.runtime.stream_bridge import MemoryStreamBridge

    words = [f"word{i} " for i in range(args.chunks)]
    bridge = MemoryStreamBridge()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    tenth = None
    for run in range(args.runs):
        run_id = f"run-{run}"
        bridge.publish(run_id, "metadata", {"run_id": run_id})
        meta = chunk("")[1]  # one metadata dict per model call, as the worker shares it
        for index, word in enumerate(words):
            event_id = await bridge.apublish(run_id, "messages", [chunk(word)[0], meta])
            if run == 0 and index == 8:
                tenth = event_id
            if index % 500 == 0:
                await bridge.apublish(run_id, "values", {"messages": [{"type": "ai", "content": "".join(words[:index])}]})
        await bridge.aend(run_id)
    after = tracemalloc.take_snapshot()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    tracemalloc.stop()
    resumed = [item async for item in bridge.subscribe("run-0", last_event_id=tenth)]
    text = "".join(words[:9]) + "".join(i.data[0]["content"] for i in resumed if i.event == "messages")
    print(f"{args.runs} runs of {args.chunks} chunks ({len(''.join(words))} characters of answer each)")
    print(f"held per run: {held / args.runs / 1024:.1f} KiB")
    print(f"resume after the 10th event: {len(resumed)} items, last {resumed[-1].event!r}, "
          f"text {'complete' if text == ''.join(words) else f'INCOMPLETE ({len(text)} of {len(chr(0).join(words)) - len(words) + 1} characters)'}")


if __name__ == "__main__":
    asyncio.run(main())
