"""LangSmith's span bookkeeping, skipped or kept on the event loop while tracing is off.

LangChain's agent factory wraps every middleware ``wrap_model_call`` / ``wrap_tool_call``
hook in ``langsmith.traceable``. Tracing or not, each wrapped call builds a run tree from
the runnable config, enters a tracing context and (async) hands its setup and teardown to a
worker thread twice: with a dozen wrapping middlewares that was two dozen thread hops and
about 2 ms of CPU per model call, most of an instant model's latency.

- The factory's hook wrappers check at call time whether anything traces (LangSmith enabled
  by env or ``tracing_context``, or a trace in progress, such as one a LangChain tracer among
  the run's callbacks started) and call the hook directly when nothing does; otherwise
  LangSmith's wrapper runs unchanged, so traces keep their per-middleware spans.
- Other ``traceable`` code keeps its wrapper, with the thread hand-off run inline while
  tracing is off.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from typing import Any

import langsmith
from langsmith import utils as ls_utils

_installed = False


async def _inline_unless_tracing(default_aio_to_thread: Any, ctx: contextvars.Context, func: Any, /, *args: Any, **kwargs: Any) -> Any:
    if ctx.run(ls_utils.tracing_is_enabled):
        return await default_aio_to_thread(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def tracing_active() -> bool:
    """Would a ``traceable`` call made here record a span? True under LangSmith's env or
    ``tracing_context`` switch and inside any trace, including one a LangChain tracer among
    the run's callbacks started (it puts its run tree in LangSmith's context)."""
    return bool(ls_utils.tracing_is_enabled())


def traceable_when_tracing(*args: Any, **kwargs: Any) -> Any:
    """``langsmith.traceable`` whose wrapper steps aside while :func:`tracing_active` is false."""
    decorate = langsmith.traceable(*args, **kwargs)

    def wrap(fn: Any) -> Any:
        traced = decorate(fn)
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def hook(*a: Any, **k: Any) -> Any:
                return await (traced if tracing_active() else fn)(*a, **k)
        else:
            @functools.wraps(fn)
            def hook(*a: Any, **k: Any) -> Any:
                return (traced if tracing_active() else fn)(*a, **k)
        return hook

    return wrap


def install_inline_trace_setup() -> None:
    """Idempotent; leaves an override someone else installed alone."""
    global _installed
    if _installed:
        return
    from langchain.agents import factory
    from langsmith._runtime_overrides import get_runtime_overrides

    if get_runtime_overrides().aio_to_thread is None:
        langsmith.set_runtime_overrides(aio_to_thread=_inline_unless_tracing)
    if factory.traceable is langsmith.traceable:
        factory.traceable = traceable_when_tracing
    _installed = True
