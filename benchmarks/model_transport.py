"""What one streamed model call costs the caller's process, by HTTP transport: the SDK's aiohttp
transport (what a configured OpenAI-SDK model uses, harness/models/aiohttp_transport.py) against
langchain_openai's httpx client (what an entry with ``http_socket_options`` of its own keeps).

Both models are built by ``create_chat_model`` from one config entry each, on one uvloop loop
(as the runs loop), and stream the same answer from the loopback OpenAI server, which runs in a
process of its own so that only the client is counted. ``--chunks`` sets the answer's length
in streamed chunks (the user_setup.py answer is about 17, a 500-token answer about 500). The
transports alternate in ``--phases`` of ``--calls`` calls each; the figure is the median
phase, in ms of CPU (user and system) per call, with the machine's load.

    .venv/bin/python benchmarks/model_transport.py [--calls 200] [--phases 6] [--chunks 17]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
from pathlib import Path

import uvloop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import held_streams  # noqa: E402
from harness.config import parse_config  # noqa: E402
from harness.models import create_chat_model  # noqa: E402
from harness.models.aiohttp_transport import sends_through_aiohttp  # noqa: E402

_MODEL_PROCESS = """
import sys, threading
from harness.testing import LoopbackOpenAIServer, Reply
server = LoopbackOpenAIServer([Reply(text=sys.argv[2], chunk_size=4)], loop=True).start()
print(server.base_url, flush=True)
threading.Event().wait()
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _model(base_url: str, own_socket_options: bool):
    extra = "    http_socket_options: []\n" if own_socket_options else ""
    return create_chat_model("m", config=parse_config(f"""
models:
  - name: m
    use: langchain_openai:ChatOpenAI
    model: test-model
    base_url: {base_url}
    api_key: unused
    max_retries: 0
{extra}"""))


async def _calls(model, calls: int) -> float:
    start = _cpu()
    for _ in range(calls):
        async for _chunk in model.astream("What is a good name for a cat?"):
            pass
    return (_cpu() - start) * 1000 / calls


async def measure(base_url: str, calls: int, phases: int) -> dict:
    models = {"aiohttp": _model(base_url, False), "httpx": _model(base_url, True)}
    if not sends_through_aiohttp(models["aiohttp"]) or sends_through_aiohttp(models["httpx"]):
        raise RuntimeError("the two models do not use the two transports (a proxy in the environment?)")
    for model in models.values():  # connections, imports, TLS contexts: outside the count
        await _calls(model, 3)
    per_call: dict[str, list[float]] = {name: [] for name in models}
    for phase in range(phases):
        order = list(models) if phase % 2 == 0 else list(reversed(models))
        for name in order:
            per_call[name].append(round(await _calls(models[name], calls), 3))
    medians = {name: round(statistics.median(values), 3) for name, values in per_call.items()}
    return {"cpu_ms_per_call": per_call, "median_ms": medians,
            "ratio_aiohttp_to_httpx": round(medians["aiohttp"] / medians["httpx"], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--phases", type=int, default=6)
    parser.add_argument("--chunks", type=int, default=17)
    args = parser.parse_args()
    answer = ("word " * (args.chunks * 4 // 5 + 1))[: args.chunks * 4]  # chunk_size 4: --chunks text chunks
    model = held_streams.ModelProcess(0.0, code=_MODEL_PROCESS, answer=answer)
    try:
        start_load = round(os.getloadavg()[0], 1)
        out = uvloop.run(measure(model.base_url, args.calls, args.phases))
        out.update(chunks=args.chunks, calls=args.calls, load=[start_load, round(os.getloadavg()[0], 1)])
    finally:
        model.stop()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
