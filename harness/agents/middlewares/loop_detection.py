"""Stop a model that keeps making the same tool calls, or one tool over and over.

Two counts per run (``loop_detection:`` in config.yaml, DeerFlow's keys):

* identical call sets: each reply's tool calls, as an order-free set of (name, the
  arguments that matter), over the last ``window_size`` replies. At ``warn_threshold`` the
  next request carries a hidden warning (once per set while it stays in the window); at
  ``hard_limit`` the model is called once more without tools and told to answer.
* calls of one tool, whatever the arguments (reading forty files one by one), over a window
  as long as the largest hard limit: ``tool_freq_warn`` warns, ``tool_freq_hard_limit``
  stops; ``tool_freq_overrides`` sets both per tool.

A stop gives the user a real final answer and ``stop_reason = loop_capped``; tool calls in
that last reply are dropped. The counts are updated from each reply as it comes back, so a
step costs a look at its own calls, never a walk over the thread. They live in memory per
run (the run's process runs all its steps), at most ``max_tracked_threads`` runs, and a
run's entry goes when it ends with an answer.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langgraph.types import Command

from harness.agents.markers import context_block, guard_key, hidden_message
from harness.agents.middlewares._base import ai_response

# Arguments that say what a call is about; the rest (a timeout, a description) are noise.
_SALIENT = ("path", "url", "query", "command", "pattern", "glob", "cmd")
_READ_BUCKET_LINES = 200


def _call_key(call: Mapping[str, Any]) -> str:
    name = str(call.get("name") or "")
    args = call.get("args")
    if not isinstance(args, Mapping):
        return f"{name}:{args!r}"
    if name == "read_file":
        # Paging through one file in small steps is one read: lines bucketed by 200.
        def line(key: str, default: int) -> int:
            try:
                return max(int(args.get(key) or default), 1)
            except (TypeError, ValueError):
                return default
        start = line("start_line", 1)
        end = line("end_line", start)
        lo, hi = sorted((start, end))
        return f"{name}:{args.get('path')}:{(lo - 1) // _READ_BUCKET_LINES}-{(hi - 1) // _READ_BUCKET_LINES}"
    if name not in ("write_file", "str_replace"):  # edits differ by content: all of it counts
        salient = {k: args[k] for k in _SALIENT if args.get(k) is not None}
        if salient:
            args = salient
    return f"{name}:{json.dumps(args, sort_keys=True, default=str)}"


def call_set_signature(calls: list[Mapping[str, Any]]) -> str:
    keys = sorted(_call_key(c) for c in calls)
    return hashlib.blake2b("\x00".join(keys).encode(), digest_size=12).hexdigest()


@dataclass
class _RunTrack:
    window: deque
    names: deque
    name_counts: Counter = field(default_factory=Counter)
    warned_sets: set[str] = field(default_factory=set)
    warned_names: set[str] = field(default_factory=set)
    pending: list[str] = field(default_factory=list)  # warnings for the next request
    stop: str | None = None  # why the next request is the last, without tools


class LoopDetectionMiddleware(AgentMiddleware):
    def __init__(self, warn_threshold: int = 3, hard_limit: int = 5, *, window_size: int = 20, max_tracked_threads: int = 100,
                 tool_freq_warn: int = 30, tool_freq_hard_limit: int = 50,
                 tool_freq_overrides: Mapping[str, tuple[int, int]] | None = None) -> None:
        super().__init__()
        self.warn_threshold = warn_threshold
        self.hard_limit = max(hard_limit, warn_threshold)
        self.window_size = window_size
        self.max_tracked = max_tracked_threads
        self.tool_freq_warn = tool_freq_warn
        self.tool_freq_hard_limit = tool_freq_hard_limit
        self.overrides = dict(tool_freq_overrides or {})
        # The per-tool count can never exceed its window, so the window must reach the
        # largest hard limit in play, or that limit could never fire.
        self.freq_window = max(window_size, tool_freq_hard_limit, *(hard for _, hard in self.overrides.values()))
        self._runs: OrderedDict[tuple[str, str, str], _RunTrack] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, cfg: Any, *, warn_threshold: int | None = None, hard_limit: int | None = None) -> LoopDetectionMiddleware:
        return cls(warn_threshold or cfg.warn_threshold, hard_limit or cfg.hard_limit, window_size=cfg.window_size,
                   max_tracked_threads=cfg.max_tracked_threads, tool_freq_warn=cfg.tool_freq_warn,
                   tool_freq_hard_limit=cfg.tool_freq_hard_limit,
                   tool_freq_overrides={name: (o.warn, o.hard_limit) for name, o in cfg.tool_freq_overrides.items()})

    @staticmethod
    def _key(request: Any) -> tuple[str, str, str]:
        return guard_key(getattr(request, "runtime", None))

    def _plan(self, request: Any, key: tuple[str, str, str]) -> tuple[Any, bool]:
        with self._lock:
            track = self._runs.get(key)
            if track is None or (not track.pending and not track.stop):
                return request, False
            pending, track.pending = track.pending, []
            stop = track.stop
        if stop:
            note = context_block("loop", f"{stop} Tools are now disabled. Give the user your final answer with what you have, "
                                         "and say what did not work.")
            return request.override(tools=[], messages=[*request.messages, hidden_message("loop_stop", note)]), True
        note = context_block("loop", "\n\n".join(pending))
        return request.override(messages=[*request.messages, hidden_message("loop_warning", note)]), False

    def _track(self, key: tuple[str, str, str], result: Any) -> None:
        ai = ai_response(result)
        calls = ai.tool_calls if ai is not None else []
        with self._lock:
            if not calls:  # an answer ends the run (or it asks the user): nothing left to guard
                self._runs.pop(key, None)
                return
            track = self._runs.get(key)
            if track is None:
                track = self._runs[key] = _RunTrack(deque(maxlen=self.window_size), deque())
                while len(self._runs) > self.max_tracked:
                    self._runs.popitem(last=False)
            else:
                self._runs.move_to_end(key)
            self._count(track, calls)

    def _count(self, track: _RunTrack, calls: list[dict[str, Any]]) -> None:
        signature = call_set_signature(calls)
        track.window.append(signature)
        track.warned_sets.intersection_update(track.window)
        repeats = track.window.count(signature)
        names = ", ".join(f"`{n}`" for n in dict.fromkeys(c.get("name") or "?" for c in calls))
        if repeats >= self.hard_limit:
            track.stop = f"You have made the same call ({names}) {repeats} times without progress."
            return
        if repeats >= self.warn_threshold and signature not in track.warned_sets:
            track.warned_sets.add(signature)
            track.pending.append(f"Warning: you have made the same call ({names}) {repeats} times. Repeating it will not give "
                                 "a different result; change your approach or give your final answer now.")
        for call in calls:
            name = str(call.get("name") or "")
            track.names.append(name)
            track.name_counts[name] += 1
            while len(track.names) > self.freq_window:
                old = track.names.popleft()
                track.name_counts[old] -= 1
                if track.name_counts[old] <= 0:
                    del track.name_counts[old]
            count = track.name_counts[name]
            warn, hard = self.overrides.get(name, (self.tool_freq_warn, self.tool_freq_hard_limit))
            if count >= hard:
                track.stop = f"You have called `{name}` {count} times in this run, past its safety limit."
                return
            if count >= warn:
                if name not in track.warned_names:
                    track.warned_names.add(name)
                    track.pending.append(f"Warning: you have called `{name}` {count} times in this run without giving an answer. "
                                         "Finish with what you have unless another call is really needed.")
            else:
                track.warned_names.discard(name)  # decayed below the threshold: a later burst warns again

    def _finish(self, key: tuple[str, str, str], result: Any) -> Any:
        with self._lock:
            self._runs.pop(key, None)
        ai = ai_response(result)
        if ai is not None and ai.tool_calls:
            ai.tool_calls = []
            ai.additional_kwargs.pop("tool_calls", None)
        if ai is not None and not ai.text.strip():
            ai.content = "I stopped because I kept repeating the same action without making progress."
        response = result if isinstance(result, ModelResponse) else ModelResponse(result=[ai] if ai else [])
        return ExtendedModelResponse(model_response=response, command=Command(update={"stop_reason": "loop_capped"}))

    def _before(self, request: Any) -> tuple[Any, tuple[str, str, str] | None, bool]:
        # The run key costs two context look-ups: only taken once some run has made a tool call.
        key = self._key(request) if self._runs else None
        if key is None:
            return request, None, False
        request, stop = self._plan(request, key)
        return request, key, stop

    def _after(self, request: Any, key: tuple[str, str, str] | None, stop: bool, result: Any) -> Any:
        if stop and key is not None:
            return self._finish(key, result)
        ai = ai_response(result)
        if key is None and not (ai is not None and ai.tool_calls):
            return result
        self._track(key or self._key(request), result)
        return result

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        request, key, stop = self._before(request)
        return self._after(request, key, stop, handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        request, key, stop = self._before(request)
        return self._after(request, key, stop, await handler(request))
