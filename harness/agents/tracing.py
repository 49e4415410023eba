"""LangSmith's span bookkeeping, kept on the event loop while tracing is off.

LangChain's agent factory wraps every middleware ``wrap_model_call`` / ``wrap_tool_call``
hook in ``langsmith.traceable``. Its async wrapper hands its setup and teardown to a worker
thread twice per hook, tracing or not: with a dozen wrapping middlewares that is two dozen
thread hops per model call, most of an instant model's latency. With tracing off that
bookkeeping is a few dict operations, so it runs inline; with tracing on (LANGSMITH_TRACING
or a tracing context) LangSmith's own thread hand-off is kept, unchanged.
"""

from __future__ import annotations

import contextvars
from typing import Any

import langsmith
from langsmith import utils as ls_utils

_installed = False


async def _inline_unless_tracing(default_aio_to_thread: Any, ctx: contextvars.Context, func: Any, /, *args: Any, **kwargs: Any) -> Any:
    if ctx.run(ls_utils.tracing_is_enabled):
        return await default_aio_to_thread(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def install_inline_trace_setup() -> None:
    """Idempotent; leaves an override someone else installed alone."""
    global _installed
    if _installed:
        return
    from langsmith._runtime_overrides import get_runtime_overrides

    if get_runtime_overrides().aio_to_thread is None:
        langsmith.set_runtime_overrides(aio_to_thread=_inline_unless_tracing)
    _installed = True
