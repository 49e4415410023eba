"""Acquire the thread's sandbox at the start of a run; optionally release it at the end.

The id goes into ``state["sandbox"]`` where the tools look for it; tools can still acquire
on their own when this middleware is absent (the contract with the sandbox side).
Release after each run is opt-in (:class:`ReleasingSandboxMiddleware`): the built-in
providers keep a bounded LRU of handles and the files stay on disk, so releasing every run
would only force a rebuild on the next one (and an ``after_agent`` hook is one more graph
step per run). Providers holding real resources (containers) want it on.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from harness.agents.middlewares.thread_data import thread_ids

logger = logging.getLogger(__name__)


def _provider() -> Any | None:
    try:
        from harness.sandbox import get_sandbox_provider
    except ImportError:
        logger.debug("harness.sandbox is not available; tools acquire sandboxes themselves")
        return None
    return get_sandbox_provider()


class SandboxMiddleware(AgentMiddleware):
    def before_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        user_id, thread_id = thread_ids(runtime)
        provider = _provider() if thread_id else None
        if provider is None:
            return None
        sandbox_id = provider.acquire(user_id, str(thread_id))
        return None if (state.get("sandbox") or {}).get("sandbox_id") == sandbox_id else {"sandbox": {"sandbox_id": sandbox_id}}

    async def abefore_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        user_id, thread_id = thread_ids(runtime)
        # the first call may probe the host (is bwrap usable?), so keep it off the loop
        provider = await asyncio.to_thread(_provider) if thread_id else None
        if provider is None:
            return None
        sandbox_id = await provider.aacquire(user_id, str(thread_id))
        return None if (state.get("sandbox") or {}).get("sandbox_id") == sandbox_id else {"sandbox": {"sandbox_id": sandbox_id}}


class ReleasingSandboxMiddleware(SandboxMiddleware):
    """Also hands the sandbox back to the provider when the run ends."""

    def after_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        sandbox_id = (state.get("sandbox") or {}).get("sandbox_id")
        provider = _provider() if (sandbox_id) else None
        if provider is not None:
            provider.release(sandbox_id)
        return None

    async def aafter_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        sandbox_id = (state.get("sandbox") or {}).get("sandbox_id")
        provider = _provider() if (sandbox_id) else None
        if provider is not None:
            await asyncio.to_thread(provider.release, sandbox_id)
        return None
