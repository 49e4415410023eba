"""The ``task`` tool: the lead agent's way to hand a focused subtask to a subagent.

Built per lead-agent graph, so it knows the lead's tools and model. The tool validates the
call, runs the subagent (``executor.run_subagent``) and answers with one ToolMessage
carrying ``additional_kwargs.subagent_status`` (API_CONTRACT §5), plus a ``delegations``
ledger entry in thread state and the subagent's usage in ``token_usage``.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Sequence
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command

from harness.agents.markers import SUBAGENT_TASK_KEY, run_value
from harness.config.app_config import SubagentsConfig
from harness.observability.tracing import TracingConfig, standalone_config
from harness.subagents.executor import SubagentResult, bounded, build_subagent_graph, run_subagent
from harness.subagents.types import NEVER_DELEGATED, SubagentType, available_types

logger = logging.getLogger(__name__)

DEPTH_KEY = "subagent_depth"
# Never passed on: request secrets are bound to the lead's own tool calls, and the run's
# token budget is the lead's (a subagent has its own, subagents.token_budget).
_CONTEXT_DROP = frozenset({"secrets", "token_budget"})
# Of a result, what the delegation ledger keeps: after a summary has compacted the task's
# ToolMessage away, the ledger is what the lead still sees of it.
RESULT_BRIEF_CHARS = 1000

ModelFactory = Callable[[str | None], tuple[BaseChatModel, str]]
# (type, its model, the model's name, its tools) -> (the tools it is given, its middleware chain)
ChainFactory = Callable[[SubagentType, BaseChatModel, str, list[BaseTool]], tuple[list[BaseTool], list[Any]]]

TASK_DESCRIPTION = """Delegate a focused, self-contained subtask to a subagent that works on it alone and returns one answer.

Use it for independent pieces of work that can run in parallel (call `task` several times in one response), or for a deep subtask whose details would crowd your context. The subagent sees only your prompt, not this conversation: include every fact, path and constraint it needs, and say what answer you want back. It shares your sandbox files under /mnt/user-data.

Types: {types}"""


def _noop(_: dict[str, Any]) -> None:
    pass


def _writer() -> Callable[[dict[str, Any]], None]:
    """The lead's ``custom`` writer, callable from the subagent's own (empty) context: the
    writer looks up the lead's config in context variables, so it runs in a copy of ours."""
    try:
        from langgraph.config import get_stream_writer

        writer = get_stream_writer()
    except RuntimeError:  # outside a graph (a direct tool call in a test)
        return _noop
    here = contextvars.copy_context()
    return lambda event: here.run(writer, event)


def _error(tool_call_id: str, text: str) -> ToolMessage:
    return ToolMessage(content=f"Error: {text}", tool_call_id=tool_call_id, name="task", status="error")


def result_message(out: SubagentResult, tool_call_id: str) -> ToolMessage:
    if out.status == "completed":
        note = f" (stopped early: {out.stop_reason})" if out.stop_reason else ""
        content = f"Task completed{note}. Result:\n{out.result}"
    else:
        content = f"Task {out.status.replace('_', ' ')}: {out.error}"
        if out.result:
            content += f"\nPartial result:\n{out.result}"
    kwargs: dict[str, Any] = {"subagent_status": out.status, "subagent_usage": dict(out.usage), "subagent_model": out.model_name}
    if out.stop_reason:
        kwargs["subagent_stop_reason"] = out.stop_reason
    return ToolMessage(content=content, tool_call_id=tool_call_id, name="task", status="success" if out.status == "completed" else "error",
                       additional_kwargs=kwargs)


def subagent_tools(lead_tools: Sequence[BaseTool], stype: SubagentType) -> list[BaseTool]:
    """The type's allowlist, less its denylist; `task` never (DeerFlow's _filter_tools)."""
    denied = NEVER_DELEGATED | stype.disallowed
    pool = [t for t in lead_tools if t.name not in denied]
    if stype.tools is None:
        return pool
    names = set(stype.tools)
    return [t for t in pool if t.name in names]


def build_task_tool(*, config: SubagentsConfig, lead_tools: Sequence[BaseTool], model_factory: ModelFactory,
                    chain: ChainFactory, tracing: TracingConfig | None = None, summarization_enabled: bool = False) -> BaseTool:
    """``chain`` builds a type's tools and middleware (for its model) the first time it is
    used. ``tracing``: config.yaml's tracing section; each subagent is then traced
    on its own, as ``subagent:<type>``, in the lead run's session with the lead run's ids.
    ``summarization_enabled`` picks the default subagent token budget (DeerFlow's coupling)."""
    types = available_types(config, summarization_enabled=summarization_enabled)
    # Compiled subagent graphs, per (type, model): building one costs some 30 ms of CPU, on the
    # event loop, while parallel tasks wait. A graph without a checkpointer keeps nothing of a
    # run, and the guards in it keep their counts per task (SUBAGENT_TASK_KEY).
    graphs: dict[tuple[str, str], Any] = {}

    async def task(description: str, prompt: str, runtime: ToolRuntime[Any, Any], subagent_type: str = "general-purpose",
                   model: str | None = None) -> Command | ToolMessage:
        """Delegate a subtask.

        Args:
            description: A short label for the subtask (3-8 words), shown to the user.
            prompt: The complete, self-contained instructions for the subagent.
            subagent_type: Which kind of subagent to use.
            model: Optional model name from the configured models; default the type's or yours.
        """
        call_id = runtime.tool_call_id or ""
        if run_value(runtime, DEPTH_KEY, 0):
            return _error(call_id, "a subagent cannot delegate: `task` is only for the lead agent. Do the work yourself.")
        if not (prompt or "").strip():
            return _error(call_id, "`prompt` is empty: give the subagent a self-contained description of the subtask.")
        stype = types.get(subagent_type)
        if stype is None:
            return _error(call_id, f"unknown subagent_type {subagent_type!r}; use one of: {', '.join(sorted(types))}.")
        description = (description or "").strip() or prompt.strip()[:60]
        emit = _writer()
        run_id = str(run_value(runtime, "run_id", "") or "")
        try:
            chat_model, model_name = model_factory(model or stype.model)
        except Exception as exc:  # an unknown or unusable model fails this task at once, with the reason
            out = SubagentResult(task_id=call_id, status="failed", error=f"model unavailable: {exc}", model_name=model or stype.model or "")
            emit({"type": "task_started", "task_id": call_id, "description": description, "subagent_type": stype.name, "model_name": out.model_name})
            from harness.subagents.executor import terminal_event

            emit(terminal_event(out))
        else:
            raw = runtime.context
            context = {k: v for k, v in (raw.items() if isinstance(raw, dict) else ()) if k not in _CONTEXT_DROP}
            for key in ("thread_id", "user_id", "run_id"):
                value = run_value(runtime, key)
                if value is not None:
                    context[key] = value
            context[DEPTH_KEY] = 1
            parent = runtime.state or {}
            state = {k: parent[k] for k in ("sandbox", "thread_data") if parent.get(k)}
            context[SUBAGENT_TASK_KEY] = call_id  # the guards count this task on its own
            key = (stype.name, model_name)
            if key not in graphs:
                graphs[key] = build_subagent_graph(stype, chat_model, *chain(stype, chat_model, model_name, subagent_tools(lead_tools, stype)))
            trace = None
            if tracing is not None:
                lead_metadata = (getattr(runtime, "config", None) or {}).get("metadata") or {}
                trace = standalone_config(tracing, f"subagent:{stype.name.lower().replace('_', '-')}", parent=lead_metadata,
                                          model_name=model_name)
            out = await run_subagent(task_id=call_id, description=description, prompt=prompt, stype=stype, model=chat_model,
                                     model_name=model_name, graph=graphs[key], context=context, state=state, emit=emit, trace=trace)
        entry = {"id": call_id, "run_id": run_id, "description": description, "subagent_type": stype.name, "status": out.status,
                 "stop_reason": out.stop_reason, "model_name": out.model_name, "usage": dict(out.usage), "steps": out.steps,
                 "result_brief": bounded((out.result or out.error).strip(), RESULT_BRIEF_CHARS)[0]}
        update: dict[str, Any] = {"messages": [result_message(out, call_id)], "delegations": [entry]}
        if out.artifacts:  # files a subagent presented (its type allows present_files) are the user's too
            update["artifacts"] = out.artifacts
        if out.usage.get("calls") and out.model_name:
            update["token_usage"] = {out.model_name: dict(out.usage)}
        return Command(update=update)

    listing = "; ".join(f"`{t.name}`: {t.description}" for t in types.values())
    return StructuredTool.from_function(coroutine=task, name="task", description=TASK_DESCRIPTION.format(types=listing),
                                        parse_docstring=True)
