"""Which graph a run executes, and reading/writing thread state through it.

The graph factory is ``settings.DEERFLOW_AGENT_FACTORY`` (default the harness's
``make_lead_agent``): called with the run's RunnableConfig, it returns a compiled graph to
which the process's checkpointer is attached.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections import OrderedDict
from typing import Any

from django.conf import settings

from harness.config import class_path
from harness.config.extensions import get_extensions_config
from harness.config.loader import get_app_config
from harness.observability.tracing import run_callbacks

LEAD_AGENT = "lead_agent"


def known_assistant(assistant_id: str | None) -> bool:
    return assistant_id in (None, "", LEAD_AGENT)


def _factory():
    return class_path.resolve(settings.DEERFLOW_AGENT_FACTORY)


# Keys that differ per run but do not change the graph: the agent reads them at run time.
_PER_RUN_KEYS = frozenset({"thread_id", "run_id", "user_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "secrets"})
_GRAPH_CACHE_SIZE = 32
_graphs: OrderedDict[tuple, Any] = OrderedDict()
_graphs_lock = threading.Lock()


def _cache_key(config: dict) -> tuple | None:
    options = {k: v for k, v in (config.get("configurable") or {}).items() if k not in _PER_RUN_KEYS}
    try:
        return (settings.DEERFLOW_AGENT_FACTORY, json.dumps(options, sort_keys=True, default=str))
    except TypeError:
        return None


def _read_sources() -> tuple:
    app_config, extensions = get_app_config(), get_extensions_config()
    # MCP servers connect here, in a worker thread, so the factory finds them ready; the
    # tools object changes when a server's tool set does, which retires cached graphs.
    from harness.mcp import get_mcp_tools

    return app_config, extensions, get_mcp_tools(extensions, app_config=app_config)


async def build_graph(config: dict, checkpointer: Any) -> Any:
    """The compiled graph for these run options, with the checkpointer attached; the
    tracing callbacks config.yaml asks for are added to ``config``.

    Building the lead agent costs tens of milliseconds, so graphs are cached per set of
    options: one compiled graph serves many threads and concurrent runs (per-run facts come
    from the run's config and state, never from the graph object). A config edit yields new
    config objects, and a cached graph built from older ones is not used.
    """
    key = _cache_key(config)
    # Reading the config files (to notice edits) is file IO: not on the event loop.
    app_config, extensions, mcp_tools = await asyncio.to_thread(_read_sources)
    # The run's tracers (config.yaml's tracing:), from the config just read; none by default.
    tracers = run_callbacks(app_config.tracing)
    if tracers:
        config["callbacks"] = [*(config.get("callbacks") or []), *tracers]
        metadata = config.setdefault("metadata", {})
        default_model = app_config.get_model()
        if not metadata.get("model_name") and default_model is not None:
            metadata["model_name"] = default_model.name  # the run asked for none: the first one answers
    sources = (app_config, extensions, mcp_tools, checkpointer)
    if key is not None:
        with _graphs_lock:
            cached = _graphs.get(key)
            if cached is not None and all(a is b for a, b in zip(cached[1], sources, strict=True)):
                _graphs.move_to_end(key)
                return cached[0]
    graph = _factory()(config)
    if inspect.isawaitable(graph):
        graph = await graph
    graph = graph.copy(update={"checkpointer": checkpointer})
    if key is not None:
        with _graphs_lock:
            _graphs[key] = (graph, sources)
            while len(_graphs) > _GRAPH_CACHE_SIZE:
                _graphs.popitem(last=False)
    return graph


def clear_graph_cache() -> None:
    with _graphs_lock:
        _graphs.clear()


def thread_config(thread_id: str, checkpoint_id: str | None = None, **configurable: Any) -> dict:
    conf = {"thread_id": thread_id, "checkpoint_ns": "", **configurable}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}
