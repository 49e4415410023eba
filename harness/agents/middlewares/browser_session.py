"""Close the thread's live browser when its run ends.

Only in the chain when the agent has a browser tool, so other runs pay nothing. A run that
stops without this hook (cancelled, crashed, waiting for the user) leaves its browser to the
next run of the thread, which closes what it finds, or to the idle timeout.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware

from harness.agents.middlewares.thread_data import thread_ids
from harness.tools.browser import close_thread_session


class BrowserSessionMiddleware(AgentMiddleware):
    def after_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        return None  # sync graphs (the embedded client's invoke) leave it to the idle timeout

    async def aafter_agent(self, state: dict[str, Any], runtime: Any) -> dict[str, Any] | None:
        user_id, thread_id = thread_ids(runtime)
        if thread_id and await close_thread_session(str(user_id), str(thread_id)):
            from langgraph.config import get_stream_writer

            try:
                get_stream_writer()({"type": "browser_closed"})
            except (RuntimeError, KeyError):
                pass
        return None
