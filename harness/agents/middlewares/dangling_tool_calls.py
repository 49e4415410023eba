"""Keep tool-call/result pairs well-formed for strict providers.

- A tool call left without a result (the run was cancelled or crashed mid-tool, or the
  user answered a question with a new message) gets a placeholder result in the request,
  right after its call, on the next turn. Providers reject unanswered calls.
- Tool calls with names a provider would refuse are renamed in the request, and
  non-object arguments become ``{}``.
- Calls the provider returned with unparsable JSON arguments (``invalid_tool_calls``)
  become ordinary calls answered by an error result, so the model learns what went wrong
  and can retry, instead of the turn ending silently.
- Calls in a reply cut off by the output token limit are not run: LangChain's stream
  aggregation repairs truncated JSON into valid-looking arguments (a ``write_file`` whose
  content stops mid-sentence), so they are answered with an error asking for smaller calls.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.types import Command

from harness.agents.markers import TOOL_META_KEY
from harness.agents.middlewares._base import ai_response

_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
PLACEHOLDER = "[No result: this tool call was interrupted before it finished. Check its effect before relying on it.]"


def _safe_name(name: Any) -> str:
    text = str(name or "")
    if _VALID_NAME.match(text):
        return text
    return (re.sub(r"[^A-Za-z0-9_-]", "_", text)[:64]) or "invalid_tool_name"


def _fixed_calls(m: AIMessage) -> tuple[list[dict], bool]:
    calls, changed = [], False
    for tc in m.tool_calls:
        name, args = _safe_name(tc.get("name")), tc.get("args")
        if not isinstance(args, dict):
            args, changed = {}, True
        changed = changed or name != tc.get("name")
        calls.append({**tc, "name": name, "args": args})
    return calls, changed


def repair_request_messages(messages: list[BaseMessage]) -> list[BaseMessage]:
    # Runs on every model call over the whole history, and only messages with tool calls and
    # tool results can need a change: find those by type first (one pass in C), and copy the
    # rest over in slices.
    kinds = list(map(type, messages))
    present = set(kinds)
    ai_kinds = {k for k in present if issubclass(k, AIMessage)}
    tool_kinds = {k for k in present if issubclass(k, ToolMessage)}
    marks = [i for i, k in enumerate(kinds) if (k in ai_kinds and messages[i].tool_calls) or k in tool_kinds]
    if not marks:
        return list(messages)
    answered = {messages[i].tool_call_id for i in marks if kinds[i] in tool_kinds}
    called: set[str] = set()
    replaced: dict[int, BaseMessage | None] = {}  # None: left out of the request
    placeholders: dict[int, list[ToolMessage]] = {}  # go in before this index
    for i in marks:
        m = messages[i]
        if kinds[i] in tool_kinds:
            if m.tool_call_id not in called:
                replaced[i] = None  # an orphan result (its call was summarized away) would be rejected
            continue
        calls, changed = _fixed_calls(m)
        if changed:
            replaced[i] = m.model_copy(update={"tool_calls": calls})
        missing = []
        for tc in calls:
            called.add(tc.get("id"))
            if tc.get("id") not in answered:
                missing.append(ToolMessage(content=PLACEHOLDER, tool_call_id=tc.get("id"), name=tc["name"], status="error"))
        if missing:  # after the call's results, before whatever comes next
            end = i + 1
            while end < len(kinds) and kinds[end] in tool_kinds:
                end += 1
            placeholders.setdefault(end, []).extend(missing)
    if not replaced and not placeholders:
        return list(messages)
    out: list[BaseMessage] = []
    start = 0
    for i in sorted({*replaced, *placeholders}):
        out.extend(messages[start:i])
        out.extend(placeholders.get(i, ()))
        if i in replaced:
            if replaced[i] is not None:
                out.append(replaced[i])
            start = i + 1
        else:
            start = i
    out.extend(messages[start:])
    return out


LENGTH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})


def _error_meta(action: str) -> dict[str, Any]:
    return {TOOL_META_KEY: {"status": "error", "error_type": "invalid_arguments", "recoverable_by_model": True, "recommended_next_action": action}}


def _truncated_calls(ai: AIMessage, skip: set[str]) -> list[ToolMessage]:
    meta = ai.response_metadata or {}
    if not ai.tool_calls or (meta.get("finish_reason") not in LENGTH_REASONS and meta.get("stop_reason") not in LENGTH_REASONS):
        return []
    return [ToolMessage(
        content=f"Error: your reply hit the output token limit while writing this `{tc['name']}` call, so its arguments are "
                "incomplete and it was NOT run. Make smaller calls (for a long file, write it in parts with append).",
        tool_call_id=tc["id"], name=tc["name"], status="error", additional_kwargs=_error_meta("split_into_smaller_calls"),
    ) for tc in ai.tool_calls if tc["id"] not in skip]


def repair_reply(ai: AIMessage) -> tuple[AIMessage, list[ToolMessage]] | None:
    """The reply with unparsable calls turned into ordinary ones, and the error results
    that answer them (and any call cut off by the length limit); None when all is well."""
    calls = list(ai.tool_calls)
    results: list[ToolMessage] = []
    for bad in ai.invalid_tool_calls or []:
        call_id = bad.get("id") or f"call_invalid_{uuid.uuid4().hex[:10]}"
        name = _safe_name(bad.get("name"))
        calls.append({"name": name, "args": {}, "id": call_id, "type": "tool_call"})
        raw = str(bad.get("args") or "")[:300]
        results.append(ToolMessage(
            content=f"Error: the arguments of this `{name}` call were not valid JSON ({bad.get('error') or 'parse error'}). "
                    f"Received: {raw!r}. Call the tool again with a JSON object of arguments.",
            tool_call_id=call_id, name=name, status="error", additional_kwargs=_error_meta("retry_with_valid_json"),
        ))
    fixed = ai.model_copy(update={"tool_calls": calls, "invalid_tool_calls": []}) if results else ai
    results += _truncated_calls(fixed, {m.tool_call_id for m in results})
    return (fixed, results) if results else None


class DanglingToolCallMiddleware(AgentMiddleware):
    @staticmethod
    def _repair_response(result: Any) -> Any:
        ai = ai_response(result)
        repaired = repair_reply(ai) if ai is not None else None
        if repaired is None:
            return result
        fixed, tool_results = repaired
        response = ModelResponse(result=[fixed if m is ai else m for m in result.result], structured_response=result.structured_response)
        # the results are applied after the reply, so every call is answered and the agent
        # goes straight back to the model with the errors
        return ExtendedModelResponse(model_response=response, command=Command(update={"messages": tool_results}))

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._repair_response(handler(request.override(messages=repair_request_messages(request.messages))))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._repair_response(await handler(request.override(messages=repair_request_messages(request.messages))))
