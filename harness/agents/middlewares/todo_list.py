"""Plan mode: the ``write_todos`` tool, with one item in progress at a time.

Reuses LangChain's ``TodoListMiddleware`` (tool, state key, parallel-call guard) with our
own instructions, and refuses a list with more than one ``in_progress`` item so the UI
always shows a single current step.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import TodoListMiddleware
from langchain_core.messages import ToolMessage

from harness.agents.markers import TOOL_META_KEY
from harness.agents.thread_state import ThreadState

PLAN_PROMPT = """## Plan mode
For a task with three or more steps, keep a todo list with the `write_todos` tool:
- Write the list before you start, with the first item `in_progress` and the rest `pending`.
- Exactly one item may be `in_progress` at a time. Mark it `completed` as soon as it is done,
  and set the next one `in_progress` in the same update.
- Send the whole list on every update; never call `write_todos` twice in one reply.
- Skip the list for simple one-step requests."""

TOOL_DESCRIPTION = """Replace the todo list for the current task. Each item has `content` and `status`
(`pending`, `in_progress`, `completed`). Exactly one item may be `in_progress` at a time."""


class PlanTodoMiddleware(TodoListMiddleware):
    state_schema = ThreadState  # the same `todos` key the thread state declares

    def __init__(self) -> None:
        super().__init__(system_prompt=PLAN_PROMPT, tool_description=TOOL_DESCRIPTION)

    @staticmethod
    def _too_many_in_progress(request: Any) -> ToolMessage | None:
        if request.tool_call["name"] != "write_todos":
            return None
        todos = (request.tool_call.get("args") or {}).get("todos") or []
        active = [t for t in todos if isinstance(t, dict) and t.get("status") == "in_progress"]
        if len(active) <= 1:
            return None
        names = ", ".join(repr(str(t.get("content", ""))[:60]) for t in active)
        return ToolMessage(
            content=f"Error: {len(active)} items are in_progress ({names}). Keep exactly one in_progress and the others pending, then call write_todos again.",
            tool_call_id=request.tool_call["id"], name="write_todos", status="error",
            additional_kwargs={TOOL_META_KEY: {"status": "error", "error_type": "invalid_arguments", "recoverable_by_model": True,
                                               "recommended_next_action": "fix_arguments"}},
        )

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        return self._too_many_in_progress(request) or handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return self._too_many_in_progress(request) or await handler(request)
