"""Server-owned markers and the helpers middlewares share.

Hidden messages the harness adds (date context, upload notices, image payloads, recovery
prompts) carry ``additional_kwargs[INTERNAL_KEY]`` naming their kind and an id starting
with ``HIDDEN_ID_PREFIX``. Users must not be able to forge them, so input sanitization
strips both from incoming messages, and framework tags inside untrusted text are
neutralized so they read as data.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

INTERNAL_KEY = "deerflow_internal"
HIDE_KEY = "hide_from_ui"
ERROR_FALLBACK_KEY = "deerflow_error_fallback"
TOOL_META_KEY = "deerflow_tool_meta"
READ_MARK_KEY = "deerflow_read"
HIDDEN_ID_PREFIX = "deerflow-hidden-"
# A message's place in the thread's journal (RunEvent.seq), added when the server serializes state
# for a client (harness/runtime/message_seq.py) and never stored: a message sent back with it must
# not carry a thread-scoped number into a checkpoint, where a branch would make it wrong.
MESSAGE_SEQ_KEY = "deerflow_seq"
# Keys later layers trust. ``hide_from_ui`` is not among them: it only affects display,
# and UIs legitimately send hidden messages of their own.
SERVER_OWNED_KWARGS = (INTERNAL_KEY, ERROR_FALLBACK_KEY, TOOL_META_KEY, READ_MARK_KEY, MESSAGE_SEQ_KEY, "original_user_content")

# In a subagent's run context: its task (the tool call id). Subagents share the lead's thread
# and run ids and a compiled graph per type, so the guards that count per run count per task too.
SUBAGENT_TASK_KEY = "subagent_task_id"
# On a task's ToolMessage: its subagent's usage has been added to the AI message that dispatched it.
SUBAGENT_USAGE_MERGED_KEY = "subagent_usage_merged"

CONTEXT_TAG = "deerflow-context"
_FRAMEWORK_TAG = re.compile(r"<\s*(/?)\s*(deerflow-[\w-]*|system-reminder|system|tool_result|function_results|im_start|im_end)\b", re.IGNORECASE)


def neutralize_tags(text: str) -> str:
    """Make framework tags in untrusted text inert (``<system>`` -> ``&lt;system>``)."""
    return _FRAMEWORK_TAG.sub(lambda m: "&lt;" + m.group(1) + m.group(2), text)


def hidden_message(kind: str, text: str, *, extra: Mapping[str, Any] | None = None, content: Any = None) -> HumanMessage:
    return HumanMessage(
        content=content if content is not None else text,
        id=f"{HIDDEN_ID_PREFIX}{kind}-{uuid.uuid4().hex[:12]}",
        additional_kwargs={INTERNAL_KEY: kind, HIDE_KEY: True, **(extra or {})},
    )


def is_hidden(message: BaseMessage, kind: str | None = None) -> bool:
    marker = message.additional_kwargs.get(INTERNAL_KEY)
    if not marker or not str(message.id or "").startswith(HIDDEN_ID_PREFIX):
        return False
    return kind is None or marker == kind


def context_block(kind: str, body: str) -> str:
    return f"<{CONTEXT_TAG} kind=\"{kind}\">\n{body}\n</{CONTEXT_TAG}>"


def error_fallback(text: str, *, error_type: str, detail: str = "", **extra: Any) -> AIMessage:
    """An assistant message that ends the turn and tells the run worker it was an error."""
    return AIMessage(
        content=text,
        id=f"deerflow-fallback-{uuid.uuid4().hex}",  # an id up front keeps stream dedup exact
        additional_kwargs={ERROR_FALLBACK_KEY: True, "error": {"type": error_type, "detail": detail[:2000], **extra}},
    )


def is_error_fallback(message: BaseMessage) -> bool:
    return bool(message.additional_kwargs.get(ERROR_FALLBACK_KEY))


def message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def is_real_user_message(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and not message.additional_kwargs.get(INTERNAL_KEY)


def guard_key(runtime: Any) -> tuple[str, str, str]:
    """What a guard keeps its per-run counts under: thread, run, and subagent task (if any)."""
    return (str(run_value(runtime, "thread_id", "") or ""), str(run_value(runtime, "run_id", "") or ""),
            str(run_value(runtime, SUBAGENT_TASK_KEY, "") or ""))


def run_value(runtime: Any, key: str, default: Any = None) -> Any:
    """A per-run option: the runtime context (dict or object) first, then
    ``config["configurable"]`` of the running graph."""
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, Mapping) and ctx.get(key) is not None:
        return ctx[key]
    if ctx is not None and not isinstance(ctx, Mapping) and getattr(ctx, key, None) is not None:
        return getattr(ctx, key)
    try:
        from langgraph.config import get_config

        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # outside a running graph
        configurable = {}
    value = configurable.get(key)
    return default if value is None else value
