"""One model call outside any run, from a request thread: the composer's Polish and the
follow-up suggestions (DeerFlow's one-shot LLM path). The model comes from config.yaml, the call
runs on the runs runtime's loop under its own named trace, bounded in time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from apps.errors import ServiceUnavailable
from apps.runs.runtime import get_runtime
from harness.models import ModelError, create_chat_model, get_model_config
from harness.observability.tracing import atraced, standalone_config


def one_shot(app: Any, *, model_name: str | None, purpose: str, trace_name: str, thread_id: str = "", user_id: str = "",
             call: Callable[[Any], Awaitable[Any]], timeout: float) -> Any:
    """``call(model)``'s result. No model: ServiceUnavailable naming ``purpose``; a failed or
    timed-out call raises its own exception, for the caller to turn into what its user sees."""
    try:
        name = get_model_config(model_name, config=app).name
        model = create_chat_model(name, config=app)
    except ModelError as exc:
        raise ServiceUnavailable(f"No model {purpose}: {exc}") from None
    trace = standalone_config(app.tracing, trace_name, thread_id=thread_id, user_id=user_id, model_name=name)

    async def _call() -> Any:
        return await asyncio.wait_for(atraced(trace, lambda: call(model)), timeout=timeout)

    return get_runtime().call(_call, timeout=timeout + 10)
