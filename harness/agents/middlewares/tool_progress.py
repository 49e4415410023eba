"""Notice a tool that has stopped producing anything new, warn the model, then block it.

Loop detection looks at the calls the model makes; this looks at what comes back. Each
result's ``deerflow_tool_meta`` (stamped by the tool-error layer, which is why this one sits
outside it) and, for successes, whether the text is a near copy of one of the tool's last
three results (word-set Jaccard at ``jaccard_similarity_threshold``, texts of at least
``min_word_count_for_similarity`` words) make it a *problem* or not. Per tool and run
(``tool_progress:``, DeerFlow's state machine):

* ACTIVE → WARNED after ``stagnation_threshold`` consecutive problems: the next request
  carries a hidden hint (``inject_assessment``);
* problems the model can fix (not found, no results, near-duplicates) stay WARNED, with the
  hint repeated; ones it cannot (a network failure) become BLOCKED after
  ``warn_escalation_count`` more, and an internal error blocks at once;
* a BLOCKED tool answers with an error result without running; a good result resets to ACTIVE.

The state is in memory per run (a new run starts clean: the model never saw the old
hints), at most ``max_tracked_threads`` runs. Off by default, as in DeerFlow.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage

from harness.agents.markers import TOOL_META_KEY, context_block, guard_key, hidden_message

_WORDS = re.compile(r"\b\w{3,}\b")
_MAX_WORDSET_CHARS = 8192  # a heuristic: the head of a page says whether it is the same page
_MAX_PENDING = 3
_BLOCK_AT_ONCE = frozenset({"internal", "auth", "config"})
_HINTS = {
    "not_found": "The resource was not found several times in a row. Check the path or name, or try a different resource.",
    "no_results": "The searches returned no results several times in a row. Rephrase the query with different words.",
    "duplicate": "The tool keeps returning the same content. Change the query, use a different tool, or answer with what you have.",
    "network": "The tool keeps failing to reach its service. Summarize what you have and move on.",
    "timeout": "The tool keeps timing out. Ask for less at a time, or move on.",
}


def word_set(text: str) -> frozenset[str]:
    return frozenset(_WORDS.findall(text[:_MAX_WORDSET_CHARS].lower()))


@dataclass
class _ToolState:
    phase: str = "active"
    problems: int = 0
    block_reason: str | None = None
    recent: list[frozenset[str]] = field(default_factory=list)


@dataclass
class _Run:
    tools: dict[str, _ToolState] = field(default_factory=dict)
    hints: list[str] = field(default_factory=list)


class ToolProgressMiddleware(AgentMiddleware):
    def __init__(self, *, stagnation_threshold: int = 3, warn_escalation_count: int = 2, inject_assessment: bool = True,
                 jaccard_threshold: float = 0.8, min_words: int = 10, exempt_tools: set[str] | None = None,
                 max_tracked_threads: int = 100) -> None:
        super().__init__()
        self.stagnation = stagnation_threshold
        self.escalation = warn_escalation_count
        self.inject = inject_assessment
        self.jaccard = jaccard_threshold
        self.min_words = min_words
        self.exempt = frozenset({"ask_clarification", "write_todos", "present_files", "task"} if exempt_tools is None else exempt_tools)
        self.max_tracked = max_tracked_threads
        self._runs: OrderedDict[tuple[str, str, str], _Run] = OrderedDict()
        self._lock = threading.Lock()  # parallel tool calls of one message update one run

    @classmethod
    def from_config(cls, cfg: Any) -> ToolProgressMiddleware:
        return cls(stagnation_threshold=cfg.stagnation_threshold, warn_escalation_count=cfg.warn_escalation_count,
                   inject_assessment=cfg.inject_assessment, jaccard_threshold=cfg.jaccard_similarity_threshold,
                   min_words=cfg.min_word_count_for_similarity, exempt_tools=set(cfg.exempt_tools),
                   max_tracked_threads=cfg.max_tracked_threads)

    @staticmethod
    def _key(request: Any) -> tuple[str, str, str]:
        return guard_key(getattr(request, "runtime", None))

    def _run(self, key: tuple[str, str, str]) -> _Run:
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = _Run()
            while len(self._runs) > self.max_tracked:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(key)
        return run

    def _near_duplicate(self, words: frozenset[str], recent: list[frozenset[str]]) -> bool:
        if len(words) < self.min_words:
            return False
        for prev in recent:
            if len(prev) >= self.min_words and len(words & prev) / len(words | prev) >= self.jaccard:
                return True
        return False

    def _assess(self, state: _ToolState, name: str, msg: ToolMessage) -> str | None:
        """Move ``state`` on by one result; the hint for the model, if it earned one."""
        meta = msg.additional_kwargs.get(TOOL_META_KEY) or {}
        status = meta.get("status") or ("error" if msg.status == "error" else "success")
        kind = meta.get("error_type") or ""
        recoverable = bool(meta.get("recoverable_by_model", True))
        if status == "success":
            words = word_set(msg.content) if isinstance(msg.content, str) else frozenset()
            if not self._near_duplicate(words, state.recent):
                state.phase, state.problems, state.block_reason = "active", 0, None
                state.recent = [*state.recent, words][-3:]
                return None
            kind = "duplicate"
        state.problems += 1
        if not recoverable and (kind in _BLOCK_AT_ONCE or meta.get("recommended_next_action") == "stop"):
            state.phase, state.block_reason = "blocked", f"`{name}` failed with an internal error; it cannot be used in this run."
            return None
        if state.problems < self.stagnation:
            return None
        hint = f"`{name}`: {_HINTS.get(kind, 'It has not produced new information for several calls. Change your approach, or summarize and move on.')}"
        if state.problems >= self.stagnation + self.escalation and not recoverable:
            state.phase, state.block_reason = "blocked", f"`{name}` kept failing ({kind or 'error'}); it is blocked for the rest of this run."
            return None
        state.phase = "warned"
        return hint

    def _blocked(self, request: Any, reason: str) -> ToolMessage:
        call = request.tool_call
        return ToolMessage(content=f"Error: {reason} Summarize what you have or use a different tool.", tool_call_id=call["id"],
                           name=call["name"], status="error",
                           additional_kwargs={TOOL_META_KEY: {"status": "error", "error_type": "blocked_by_progress_guard",
                                                              "recoverable_by_model": True, "recommended_next_action": "summarize"}})

    def _before(self, request: Any) -> tuple[tuple[str, str, str], ToolMessage | None]:
        key = self._key(request)
        with self._lock:
            run = self._runs.get(key)
            state = run.tools.get(request.tool_call["name"]) if run else None
            reason = state.block_reason if state is not None and state.phase == "blocked" else None
        return key, (self._blocked(request, reason) if reason else None)

    def _after(self, key: tuple[str, str, str], name: str, result: Any) -> Any:
        if not isinstance(result, ToolMessage):
            return result
        with self._lock:
            run = self._run(key)
            hint = self._assess(run.tools.setdefault(name, _ToolState()), name, result)
            if hint and self.inject and hint not in run.hints and len(run.hints) < _MAX_PENDING:
                run.hints.append(hint)
        return result

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        name = request.tool_call["name"]
        if name in self.exempt:
            return handler(request)
        key, blocked = self._before(request)
        return blocked or self._after(key, name, handler(request))

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        name = request.tool_call["name"]
        if name in self.exempt:
            return await handler(request)
        key, blocked = self._before(request)
        return blocked or self._after(key, name, await handler(request))

    def _with_hints(self, request: Any) -> Any:
        if not self._runs:  # nothing tracked at all: the common case costs one check
            return request
        key = self._key(request)
        with self._lock:
            run = self._runs.get(key)
            hints = run.hints if run else []
            if run:
                run.hints = []
        if not hints:
            return request
        return request.override(messages=[*request.messages, hidden_message("progress_hint", context_block("progress", "\n".join(hints)))])

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(self._with_hints(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(self._with_hints(request))
