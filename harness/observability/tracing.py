"""Tracing a run to LangSmith and/or Langfuse, from ``config.yaml``'s ``tracing:`` section or
the backends' usual environment variables.

Each backend's client is made once per process and per credentials, and sends from its own
background thread (LangSmith's batch queue, Langfuse's OpenTelemetry batch processor): a run
only hands spans over in memory, so a backend that is slow or down never slows or fails a
run; what cannot be delivered is dropped by the client after its own retries. Clients are
flushed when the process exits.

What is sent: the run's inputs, outputs, model and tool calls, and the metadata from
:func:`trace_metadata` (run, thread, request and user ids, agent, model). Request secrets
(``context.secrets``) live only on the runtime context, which no tracer reads; the
credentials here and the models' API keys are never part of a span.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langchain_core.runnables import RunnableLambda
from pydantic import BaseModel, ConfigDict

from harness.observability.context import is_otel_trace_id

logger = logging.getLogger(__name__)
T = TypeVar("T")


class LangSmithTracing(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    api_key: str | None = None  # default: LANGSMITH_API_KEY
    project: str | None = None  # default: LANGSMITH_PROJECT, else "deer-flow"
    endpoint: str | None = None  # default: LANGSMITH_ENDPOINT, else LangSmith's cloud


class LangfuseTracing(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    public_key: str | None = None  # default: LANGFUSE_PUBLIC_KEY
    secret_key: str | None = None  # default: LANGFUSE_SECRET_KEY
    host: str | None = None  # default: LANGFUSE_HOST / LANGFUSE_BASE_URL, else Langfuse's cloud
    environment: str | None = None


class TracingConfig(BaseModel):
    """``tracing:`` in config.yaml. A backend with no section is still on when its usual
    environment variables say so (LangSmith: handled by LangChain itself from
    ``LANGSMITH_TRACING``; Langfuse: ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY``)."""

    model_config = ConfigDict(extra="forbid")

    langsmith: LangSmithTracing | None = None
    langfuse: LangfuseTracing | None = None


_lock = threading.Lock()
_langsmith_clients: dict[tuple, Any] = {}
_langfuse_clients: dict[tuple, Any] = {}


def _env(name: str, *more: str) -> str | None:
    for key in (name, *more):
        value = os.environ.get(key)
        if value:
            return value
    return None


def _langsmith_client(cfg: LangSmithTracing) -> tuple[Any, str] | None:
    api_key = cfg.api_key or _env("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
    if not api_key:
        return None
    endpoint = cfg.endpoint or _env("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")
    project = cfg.project or _env("LANGSMITH_PROJECT", "LANGCHAIN_PROJECT") or "deer-flow"
    key = (endpoint, api_key)
    with _lock:
        client = _langsmith_clients.get(key)
        if client is None:
            from langsmith import Client

            # The client asks the server what it supports (compression, batch sizes) from its
            # background thread, never from the run's.
            client = Client(api_url=endpoint, api_key=api_key)
            _langsmith_clients[key] = client
    return client, project


def _langfuse_public_key(cfg: LangfuseTracing | None) -> str | None:
    """The public key of the Langfuse client to trace with, making the client on first use."""
    public_key = (cfg.public_key if cfg else None) or _env("LANGFUSE_PUBLIC_KEY")
    secret_key = (cfg.secret_key if cfg else None) or _env("LANGFUSE_SECRET_KEY")
    if not public_key or not secret_key:
        return None
    host = (cfg.host if cfg else None) or _env("LANGFUSE_HOST", "LANGFUSE_BASE_URL")
    environment = cfg.environment if cfg else None
    key = (public_key, secret_key, host, environment)
    with _lock:
        if key not in _langfuse_clients:
            from langfuse import Langfuse

            _langfuse_clients[key] = Langfuse(public_key=public_key, secret_key=secret_key, base_url=host, environment=environment)
    return public_key


def _langfuse_wanted(cfg: TracingConfig) -> bool:
    if cfg.langfuse is not None:
        return cfg.langfuse.enabled
    return bool(_env("LANGFUSE_PUBLIC_KEY") and _env("LANGFUSE_SECRET_KEY")) and _env("LANGFUSE_TRACING_ENABLED") != "false"


def run_callbacks(cfg: TracingConfig, *, trace_id: str | None = None, parent_span_id: str | None = None) -> list:
    """The tracer callbacks for one run: none (the usual case, at no cost) when no backend is
    configured.

    ``trace_id`` (an OpenTelemetry trace id, 32 hex) files the run's Langfuse trace under
    that id, so the ``X-Trace-Id`` a client got back finds it; ``parent_span_id`` (from the
    request's ``traceparent``) makes the run's root span a child of the caller's span. LangSmith
    has no W3C parent: its runs carry the ids as metadata (``deerflow_trace_id``,
    ``traceparent``) instead."""
    if cfg.langsmith is None and cfg.langfuse is None and not _env("LANGFUSE_PUBLIC_KEY"):
        return []
    callbacks: list = []
    if cfg.langsmith is not None and cfg.langsmith.enabled:
        made = _langsmith_client(cfg.langsmith)
        if made is None:
            logger.warning("tracing.langsmith: no api_key (nor LANGSMITH_API_KEY); not tracing to LangSmith")
        else:
            from langchain_core.tracers import LangChainTracer

            client, project = made
            callbacks.append(LangChainTracer(client=client, project_name=project))
    if _langfuse_wanted(cfg):
        public_key = _langfuse_public_key(cfg.langfuse)
        if public_key is None:
            logger.warning("tracing.langfuse: public_key and secret_key are needed; not tracing to Langfuse")
        else:
            from langfuse.langchain import CallbackHandler

            context = None
            if is_otel_trace_id(trace_id):
                context = {"trace_id": trace_id}
                if parent_span_id:
                    context["parent_span_id"] = parent_span_id
            callbacks.append(CallbackHandler(public_key=public_key, trace_context=context))
    return callbacks


def trace_metadata(*, run_id: str, thread_id: str, request_id: str, user_id: str, assistant_id: str,
                   agent_name: str | None, model_name: str | None, trace_id: str = "", traceparent: str = "") -> dict[str, Any]:
    """What every trace of a run carries; ``langfuse_*`` are the keys Langfuse files a trace
    under a user and a session (the thread) by; ``deerflow_trace_id`` is DeerFlow's name for
    the request's trace id (``X-Trace-Id``)."""
    metadata = {
        "run_id": run_id, "thread_id": thread_id, "request_id": request_id, "user_id": user_id,
        "assistant_id": assistant_id, "agent_name": agent_name or assistant_id, "model_name": model_name or "",
        "langfuse_user_id": user_id, "langfuse_session_id": thread_id,
    }
    if trace_id:
        metadata["deerflow_trace_id"] = trace_id
    if traceparent:
        metadata["traceparent"] = traceparent
    return metadata


# The keys of trace_metadata a call the run makes outside its graph carries over: the ones
# that tie it to the run, its user and its thread's session.
_CARRIED = ("run_id", "thread_id", "request_id", "user_id", "assistant_id", "agent_name", "deerflow_trace_id",
            "langfuse_user_id", "langfuse_session_id")


def standalone_config(cfg: TracingConfig, name: str, *, parent: dict[str, Any] | None = None, thread_id: str = "",
                      user_id: str = "", model_name: str = "") -> dict[str, Any]:
    """The ``RunnableConfig`` for a model call made outside a run's graph (memory updater,
    suggestions, compaction, the goal evaluator, a subagent): its own trace, named ``name``
    (LangSmith's run name, Langfuse's trace name), in the thread's session and under the
    user, with the ids of the run it serves (``parent``: that run's trace metadata).

    Not traced (no backend configured): just the name, and no tracer is made."""
    config: dict[str, Any] = {"run_name": name}
    callbacks = run_callbacks(cfg)
    if not callbacks:
        return config
    metadata = {key: parent[key] for key in _CARRIED if parent and parent.get(key)}
    if thread_id:
        metadata.update(thread_id=thread_id, langfuse_session_id=thread_id)
    if user_id:
        metadata.update(user_id=user_id, langfuse_user_id=user_id)
    if model_name:
        metadata["model_name"] = model_name
    metadata["langfuse_trace_name"] = name
    config.update(callbacks=callbacks, metadata=metadata)
    return config


def _root(config: dict[str, Any], call: Callable[[], Any]) -> RunnableLambda:
    # A chain, not the bare model call, at the root: Langfuse files a trace's name, session and
    # user from the root chain's metadata only; the model call inside is its child.
    async def _acall(_: Any) -> Any:
        return await call()

    def _call(_: Any) -> Any:
        return call()

    return RunnableLambda(_call, afunc=_acall, name=config["run_name"])


async def atraced(config: dict[str, Any], call: Callable[[], Awaitable[T]]) -> T:
    """Await ``call()`` as the root of its own trace, per :func:`standalone_config`'s
    ``config``; untraced, just await it."""
    if not config.get("callbacks"):
        return await call()
    return await _root(config, call).ainvoke(None, config=config)


def traced(config: dict[str, Any], call: Callable[[], T]) -> T:
    """:func:`atraced` for a blocking call (run it in a worker thread)."""
    if not config.get("callbacks"):
        return call()
    return _root(config, call).invoke(None, config=config)


def describe(cfg: TracingConfig) -> list[dict[str, Any]]:
    """Each backend's state for the operator's page: on or off, where from, where to. Never
    a key."""
    langsmith_on_env = (_env("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2") or "").lower() == "true"
    ls = cfg.langsmith
    if ls is not None:
        ls_state = {"active": ls.enabled and bool(ls.api_key or _env("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")), "source": "config.yaml",
                    "target": ls.endpoint or _env("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT") or "LangSmith cloud",
                    "project": ls.project or _env("LANGSMITH_PROJECT", "LANGCHAIN_PROJECT") or "deer-flow"}
    else:
        ls_state = {"active": langsmith_on_env, "source": "environment" if langsmith_on_env else "",
                    "target": _env("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT") or "LangSmith cloud",
                    "project": _env("LANGSMITH_PROJECT", "LANGCHAIN_PROJECT") or "default"}
    lf = cfg.langfuse
    has_keys = bool(((lf.public_key if lf else None) or _env("LANGFUSE_PUBLIC_KEY")) and ((lf.secret_key if lf else None) or _env("LANGFUSE_SECRET_KEY")))
    lf_state = {"active": _langfuse_wanted(cfg) and has_keys, "source": "config.yaml" if lf is not None else ("environment" if has_keys else ""),
                "target": (lf.host if lf else None) or _env("LANGFUSE_HOST", "LANGFUSE_BASE_URL") or "Langfuse cloud", "project": ""}
    return [{"backend": "LangSmith", **ls_state}, {"backend": "Langfuse", **lf_state}]


def flush() -> None:
    """Send what the clients hold (at exit, and for tests). Never raises."""
    with _lock:
        clients = list(_langsmith_clients.values()) + list(_langfuse_clients.values())
    for client in clients:
        try:
            client.flush()
        except Exception:  # a backend that is down must not fail a shutdown
            logger.warning("Could not flush the traces of %s", type(client).__name__, exc_info=True)


def shutdown() -> None:
    """Flush and close every client (at exit; tests between backends). Never raises."""
    with _lock:
        langsmith_clients = list(_langsmith_clients.values())
        langfuse_clients = list(_langfuse_clients.values())
        _langsmith_clients.clear()
        _langfuse_clients.clear()
    for client in langsmith_clients + langfuse_clients:
        try:
            if hasattr(client, "shutdown"):
                client.shutdown()
            else:
                client.flush()
        except Exception:
            logger.warning("Could not shut down the tracing client %s", type(client).__name__, exc_info=True)


atexit.register(shutdown)
