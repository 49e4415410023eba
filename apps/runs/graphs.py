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
import time
import weakref
from collections import OrderedDict
from typing import Any

from django.conf import settings

from harness.config import class_path
from harness.config.extensions import get_extensions_config
from harness.config.loader import get_app_config
from harness.observability.context import parse_traceparent
from harness.observability.tracing import run_callbacks

LEAD_AGENT = "lead_agent"


def _factory():
    return class_path.resolve(settings.DEERFLOW_AGENT_FACTORY)


# Keys that differ per run but do not change the graph: the agent reads them at run time.
_PER_RUN_KEYS = frozenset({"thread_id", "run_id", "user_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "secrets"})
_GRAPH_CACHE_SIZE = 32
_graphs: OrderedDict[tuple, Any] = OrderedDict()
_graphs_lock = threading.Lock()
_built_from: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # graph -> its AppConfig


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


_recent_sources: tuple[float, tuple] | None = None


async def _sources() -> tuple:
    """The config objects, looked at again at most every ``CONFIG_RECHECK_SECONDS`` (1 s):
    noticing an edit is file IO, so it needs a thread, and a burst of runs made one hop each."""
    global _recent_sources
    now = time.monotonic()
    recent = _recent_sources
    if recent is not None and now - recent[0] < getattr(settings, "CONFIG_RECHECK_SECONDS", 1.0):
        return recent[1]
    sources = await asyncio.to_thread(_read_sources)
    _recent_sources = (now, sources)
    return sources


async def run_app_config() -> Any:
    """The config.yaml runs are built from now, read as ``build_graph`` reads it (off the loop,
    at most once per ``CONFIG_RECHECK_SECONDS``)."""
    return (await _sources())[0]


async def build_graph(config: dict, checkpointer: Any) -> Any:
    """The compiled graph for these run options, with the checkpointer attached; the
    tracing callbacks config.yaml asks for are added to ``config``.

    Building the lead agent costs tens of milliseconds, so graphs are cached per set of
    options: one compiled graph serves many threads and concurrent runs (per-run facts come
    from the run's config and state, never from the graph object). A config edit yields new
    config objects, and a cached graph built from older ones is not used.
    """
    key = _cache_key(config)
    app_config, extensions, mcp_tools = await _sources()
    # The run's tracers (config.yaml's tracing:), from the config just read; none by default.
    run_metadata = config.get("metadata") or {}
    parent = parse_traceparent(run_metadata.get("traceparent"))
    tracers = run_callbacks(app_config.tracing, trace_id=run_metadata.get("deerflow_trace_id"),
                            parent_span_id=parent[1] if parent else None)
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
    _built_from[graph] = app_config
    if key is not None:
        with _graphs_lock:
            _graphs[key] = (graph, sources)
            while len(_graphs) > _GRAPH_CACHE_SIZE:
                _graphs.popitem(last=False)
    return graph


def default_durability(graph: Any) -> str:
    """When a run that did not ask for one writes its checkpoints: ``checkpoints.durability``
    of the config the graph was built from (no file IO on the loop)."""
    app_config = _built_from.get(graph)
    return app_config.checkpoints.durability if app_config is not None else "async"


def state_reader(checkpointer: Any) -> Any:
    """A state-only graph of the lead agent's thread state in this config's checkpoint mode
    (harness/runtime/checkpoint_state.py): for reads that must not need the agent."""
    from harness.agents.state_schema import thread_state_schema
    from harness.runtime.checkpoint_state import schema_reader

    checkpoints = get_app_config().checkpoints
    return schema_reader(thread_state_schema(checkpoints.mode, checkpoints.snapshot_frequency), checkpointer)


def clear_graph_cache() -> None:
    global _recent_sources
    with _graphs_lock:
        _graphs.clear()
        _recent_sources = None


def thread_config(thread_id: str, checkpoint_id: str | None = None, **configurable: Any) -> dict:
    conf = {"thread_id": thread_id, "checkpoint_ns": "", **configurable}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}
