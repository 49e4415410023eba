"""Run one subagent to its end and report it: the ``task`` tool's engine.

A subagent is its own graph (``create_agent``) with no checkpointer, started from a fresh
state holding only its prompt, the thread's sandbox and user-data paths. It runs in an
empty ``contextvars`` context: LangGraph finds a parent graph through context variables,
and a subagent that found the lead's would write into the lead's checkpoints and stream
its tokens as the lead's own messages.

Every step is reported through ``emit`` (the lead's ``custom`` stream writer) as the
events of API_CONTRACT §2. Limits end the loop with the best answer there is and a
``stop_reason``; a provider error fails this subagent only; cancelling the awaiting task
(the parent run was cancelled) cancels the subagent at its next await.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool

from harness.agents.middlewares.loop_detection import LoopDetectionMiddleware
from harness.agents.middlewares.token_usage import TokenUsageMiddleware
from harness.agents.middlewares.tool_call_order import ToolCallOrderMiddleware
from harness.agents.middlewares.tool_errors import ToolErrorHandlingMiddleware
from harness.agents.middlewares.tool_output_budget import ToolOutputBudgetMiddleware
from harness.agents.thread_state import ThreadState
from harness.runtime.serialize import to_jsonable
from harness.subagents.types import SubagentType

logger = logging.getLogger(__name__)

STEP_TEXT_CHARS = 2000
RESULT_CHARS = 20000
ARGS_CHARS = 500
FINAL_NUDGE = ("You have reached your limit for this subtask. Do not call tools. Give your final answer now with what you have, "
               "and say what is left undone.")

Emit = Callable[[dict[str, Any]], None]


@dataclass
class SubagentResult:
    task_id: str
    status: str  # completed | failed | cancelled | timed_out
    result: str = ""
    error: str = ""
    stop_reason: str | None = None
    model_name: str = ""
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "cache_read": 0, "calls": 0})
    steps: int = 0
    started: float = 0.0


def bounded(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit] + "…", True)


def message_text(msg: BaseMessage) -> str:
    if isinstance(msg, AIMessage):
        return msg.text
    content = msg.content
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)


def step_record(msg: BaseMessage, index: int) -> dict[str, Any]:
    """What a persisted ``subagent.step`` keeps of a message: bounded text and call names."""
    text, truncated = bounded(message_text(msg), STEP_TEXT_CHARS)
    step: dict[str, Any] = {"message_index": index, "kind": "ai" if isinstance(msg, AIMessage) else "tool", "text": text, "truncated": truncated}
    if isinstance(msg, AIMessage):
        calls = []
        for call in msg.tool_calls:
            args, cut = bounded(str(to_jsonable(call.get("args") or {})), ARGS_CHARS)
            calls.append({"name": call.get("name"), "args": args, "args_truncated": cut})
        step["tool_calls"] = calls
    else:
        step["tool_name"] = getattr(msg, "name", None) or ""
    return step


def _add_usage(total: dict[str, int], msg: AIMessage) -> None:
    usage = msg.usage_metadata or {}
    inp, out = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    total["input_tokens"] += inp
    total["output_tokens"] += out
    total["total_tokens"] += int(usage.get("total_tokens") or inp + out)
    total["cache_read"] += int((usage.get("input_token_details") or {}).get("cache_read") or 0)
    total["calls"] += 1


def build_subagent_graph(stype: SubagentType, model: BaseChatModel, tools: Sequence[BaseTool], model_name: str,
                         extra_middleware: Sequence[Any] = ()) -> Any:
    """``extra_middleware``: what the lead shares with its subagents (the user's skills)."""
    # A subagent batches tool calls on the thread's files like the lead does: the same order
    # (outermost, so every call settles and releases the ones after it).
    middleware = [ToolCallOrderMiddleware(), ToolOutputBudgetMiddleware(24000), ToolErrorHandlingMiddleware(), *extra_middleware,
                  TokenUsageMiddleware(model_name), LoopDetectionMiddleware(3, 5)]
    return create_agent(model, tools=list(tools), system_prompt=stype.prompt, middleware=middleware, state_schema=ThreadState,
                        checkpointer=None, name=f"subagent:{stype.name}")


class _Run:
    """One subagent's loop and bookkeeping."""

    def __init__(self, *, task_id: str, stype: SubagentType, model: BaseChatModel, model_name: str, graph: Any, emit: Emit) -> None:
        self.stype, self.model, self.graph, self.emit = stype, model, graph, emit
        self.out = SubagentResult(task_id=task_id, status="completed", model_name=model_name, started=time.monotonic())
        self.messages: list[BaseMessage] = []
        self.turns = 0

    def _report(self, msg: BaseMessage) -> None:
        self.out.steps += 1
        record = step_record(msg, self.out.steps)
        self.emit({"type": "task_running", "task_id": self.out.task_id, "message": to_jsonable(msg), "message_index": self.out.steps,
                   "total_messages": self.out.steps, "step": record, "usage": dict(self.out.usage)})

    async def loop(self, state: dict[str, Any], config: dict[str, Any], context: dict[str, Any]) -> None:
        seen = len(state["messages"])
        async for values in self.graph.astream(state, config, context=context, stream_mode="values"):
            messages = list(values.get("messages") or [])
            new, seen = messages[seen:], len(messages)
            self.messages = messages
            if values.get("stop_reason") == "loop_capped":
                self.out.stop_reason = "loop_capped"
            for msg in new:
                if isinstance(msg, AIMessage):
                    self.turns += 1
                    _add_usage(self.out.usage, msg)
                if isinstance(msg, (AIMessage, ToolMessage)):
                    self._report(msg)
            last = messages[-1] if messages else None
            if not (isinstance(last, AIMessage) and last.tool_calls):
                continue  # tools are running, or the loop is about to end
            if self.stype.max_tokens and self.out.usage["total_tokens"] >= self.stype.max_tokens:
                self.out.stop_reason = "token_capped"
                return
            if self.turns >= self.stype.max_turns:
                self.out.stop_reason = "turn_capped"
                return

    def answer(self) -> str:
        for msg in reversed(self.messages):
            if isinstance(msg, AIMessage) and msg.text.strip() and (not msg.tool_calls or self.out.stop_reason):
                return msg.text.strip()
        return ""

    async def final_answer(self) -> None:
        """A capped subagent gets one call without tools to turn its work into an answer."""
        # Tool calls in the last AI message were never run: a provider rejects them unanswered.
        history = list(self.messages)
        if history and isinstance(history[-1], AIMessage) and history[-1].tool_calls:
            history = history[:-1]
        try:
            reply = await self.model.ainvoke([SystemMessage(self.stype.prompt), *history, HumanMessage(FINAL_NUDGE)])
        except Exception as exc:  # keep what there is; the cap, not this call, is the story
            logger.info("final answer of subagent %s failed: %s", self.out.task_id, exc)
            return
        if isinstance(reply, AIMessage):
            reply = AIMessage(content=reply.content, usage_metadata=reply.usage_metadata, id=reply.id)
            _add_usage(self.out.usage, reply)
            self.messages.append(reply)
            self._report(reply)


async def run_subagent(*, task_id: str, description: str, prompt: str, stype: SubagentType, model: BaseChatModel, model_name: str,
                       tools: Sequence[BaseTool], context: dict[str, Any], state: dict[str, Any], emit: Emit,
                       graph: Any = None, trace: dict[str, Any] | None = None) -> SubagentResult:
    """Run to a terminal status; re-raises CancelledError after reporting it. ``graph``: a
    compiled subagent graph to reuse (it holds no per-run state). ``trace``: the tracing
    config (run name, tracer callbacks, metadata) of the subagent's own trace."""
    emit({"type": "task_started", "task_id": task_id, "description": description, "subagent_type": stype.name,
          "model_name": model_name, "prompt": bounded(prompt, STEP_TEXT_CHARS)[0]})
    run = _Run(task_id=task_id, stype=stype, model=model, model_name=model_name,
               graph=graph or build_subagent_graph(stype, model, tools, model_name), emit=emit)
    config = {"configurable": {k: context[k] for k in ("thread_id", "user_id", "run_id") if k in context},
              # Each turn is a model step and a tools step; the turn cap stops the loop first.
              "recursion_limit": stype.max_turns * 2 + 10}
    if trace:
        config.update({k: v for k, v in trace.items() if k != "metadata"})
    config["metadata"] = {**((trace or {}).get("metadata") or {}), "subagent_task_id": task_id}
    initial = {**state, "messages": [HumanMessage(prompt)]}
    out = run.out
    # A fresh context (see the module docstring); the task is ours to cancel with the parent.
    child = asyncio.get_running_loop().create_task(run.loop(initial, config, context), context=contextvars.Context())
    try:
        async with asyncio.timeout(stype.timeout_seconds):
            await asyncio.shield(child)
        if out.stop_reason in ("token_capped", "turn_capped"):
            await asyncio.wait_for(run.final_answer(), timeout=max(1.0, stype.timeout_seconds - (time.monotonic() - out.started)))
    except TimeoutError:
        child.cancel()
        out.status, out.stop_reason = "timed_out", None
        out.error = f"the subagent did not finish within {stype.timeout_seconds}s"
    except asyncio.CancelledError:
        child.cancel()
        out.status, out.error = "cancelled", "the parent run was cancelled"
        emit(terminal_event(out))
        raise
    except Exception as exc:  # a provider or tool failure ends this subagent, not the lead
        logger.info("subagent %s failed", task_id, exc_info=True)
        out.status, out.error = "failed", f"{type(exc).__name__}: {exc}"
    out.result = run.answer()
    if out.status == "completed" and not out.result:
        out.status = "failed"
        out.stop_reason = out.stop_reason or "turn_capped"
        out.error = "the subagent ended without an answer"
    emit(terminal_event(out))
    return out


def terminal_event(out: SubagentResult) -> dict[str, Any]:
    kind = {"completed": "task_completed", "failed": "task_failed", "cancelled": "task_cancelled", "timed_out": "task_timed_out"}[out.status]
    event: dict[str, Any] = {"type": kind, "task_id": out.task_id, "usage": dict(out.usage), "model_name": out.model_name,
                             "status": out.status, "stop_reason": out.stop_reason}
    if out.status == "completed":
        event["result"] = bounded(out.result, RESULT_CHARS)[0]
    else:
        event["error"] = out.error
        if out.result:
            event["result"] = bounded(out.result, RESULT_CHARS)[0]
    return event
