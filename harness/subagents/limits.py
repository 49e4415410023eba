"""Caps on delegation, applied to the lead's model response before any tool runs.

``max_concurrent`` bounds the ``task`` calls of one response; ``max_total`` bounds a run's
delegations, counted from the ``delegations`` ledger in thread state (checkpointed, so a
resumed or long run cannot step around it). Calls past either cap do not run: each gets an
answering ToolMessage that says why, so the model sees the limit and works with what it
has instead of asking again. Admitted calls enter the ledger as ``running`` at once.

After the lead's next model reply, each finished task's usage is added to the usage of the
AI message that dispatched it (DeerFlow's attribution, in the step the hook already has): that
message then tells what its step cost, subagents included. The task's ToolMessage is marked
so a usage is added once; until then the per-run token budget counts it from there.
"""

from __future__ import annotations

from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage

from harness.agents.markers import SUBAGENT_USAGE_MERGED_KEY, run_value
from harness.agents.thread_state import ThreadState


def run_delegations(state: Any, run_id: str) -> int:
    return sum(1 for d in (state.get("delegations") or []) if d.get("run_id") == run_id)


class SubagentLimitMiddleware(AgentMiddleware):
    state_schema = ThreadState

    def __init__(self, max_concurrent: int, max_total: int) -> None:
        super().__init__()
        self.max_concurrent = max_concurrent
        self.max_total = max_total

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state.get("messages") or []
        ai = messages[-1] if messages else None
        if not isinstance(ai, AIMessage):
            return None
        merged = merge_task_usage(messages[:-1])
        calls = [c for c in ai.tool_calls if c.get("name") == "task"]
        if not calls:
            return {"messages": merged} if merged else None
        run_id = str(run_value(runtime, "run_id", "") or "")
        used = run_delegations(state, run_id)
        room = max(0, self.max_total - used)
        allowed = min(self.max_concurrent, room)
        keep, dropped = calls[:allowed], calls[allowed:]
        notes = []
        for call in dropped:
            if room <= self.max_concurrent and len(calls) > room:
                why = (f"this run's limit of {self.max_total} subagents is reached ({used} already ran)." if room == 0 else
                       f"only {room} more subagent(s) may run in this run (limit {self.max_total}).")
            else:
                why = f"at most {self.max_concurrent} subagents run at once; this response asked for {len(calls)}."
            notes.append(ToolMessage(content=f"Not run: {why} Do not retry it now; continue with the results you have.",
                                     tool_call_id=call["id"], name="task", status="error",
                                     additional_kwargs={"subagent_status": "failed", "subagent_skipped": "limit"}))
        ledger = [{"id": c["id"], "run_id": run_id, "status": "running", "subagent_type": (c.get("args") or {}).get("subagent_type") or "general-purpose",
                   "description": str((c.get("args") or {}).get("description") or "")[:200]} for c in keep]
        update: dict[str, Any] = {}
        if notes or merged:
            update["messages"] = [*merged, *notes]
        if ledger:
            update["delegations"] = ledger
        return update or None


def merge_task_usage(messages: list[Any]) -> list[Any]:
    """Replacements that add the usage of the task results ending ``messages`` to their
    dispatching AI message; only the trailing tool results are looked at (the last tools step)."""
    updates: dict[int, Any] = {}
    i = len(messages) - 1
    while i >= 0 and isinstance(messages[i], ToolMessage):
        msg = messages[i]
        usage = msg.additional_kwargs.get("subagent_usage")
        if msg.name == "task" and usage and not msg.additional_kwargs.get(SUBAGENT_USAGE_MERGED_KEY):
            j = i - 1
            while j >= 0 and not (isinstance(messages[j], AIMessage) and any(c.get("id") == msg.tool_call_id for c in messages[j].tool_calls)):
                j -= 1
            if j >= 0:
                ai = updates.get(j, messages[j])
                prev = dict(ai.usage_metadata or {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
                for key in ("input_tokens", "output_tokens", "total_tokens"):
                    prev[key] = int(prev.get(key) or 0) + int(usage.get(key) or 0)
                updates[j] = ai.model_copy(update={"usage_metadata": prev})
                updates[i] = msg.model_copy(update={"additional_kwargs": {**msg.additional_kwargs, SUBAGENT_USAGE_MERGED_KEY: True}})
        i -= 1
    return [updates[k] for k in sorted(updates)]
