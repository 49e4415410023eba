"""Create the thread's directories and record their host paths in state.

Uploads, the sandbox and read-before-write all need ``thread_data``; making the
directories here means no tool has to guess whether they exist.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents.middleware import AgentMiddleware

from harness.agents.markers import run_value
from harness.config import thread_user_data_dir

SUBDIRS = ("workspace", "uploads", "outputs")


def thread_ids(runtime: Any) -> tuple[str, str | None]:
    return str(run_value(runtime, "user_id", "default")), run_value(runtime, "thread_id")


def _ensure_dirs(user_id: str, thread_id: str) -> dict[str, str]:
    root = thread_user_data_dir(user_id, thread_id)
    paths = {}
    for sub in SUBDIRS:
        path = root / sub
        path.mkdir(parents=True, exist_ok=True)
        paths[f"{sub}_path"] = str(path)
    return paths


class ThreadDataMiddleware(AgentMiddleware):
    def before_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        user_id, thread_id = thread_ids(runtime)
        if not thread_id:
            return None  # a stateless run has no thread directories
        paths = _ensure_dirs(user_id, str(thread_id))
        return None if state.get("thread_data") == paths else {"thread_data": paths}

    async def abefore_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        user_id, thread_id = thread_ids(runtime)
        if not thread_id:
            return None
        paths = await asyncio.to_thread(_ensure_dirs, user_id, str(thread_id))
        return None if state.get("thread_data") == paths else {"thread_data": paths}
