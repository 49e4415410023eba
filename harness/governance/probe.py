"""A short battery that tells whether a configured model works the way the agent needs.

Steps, in order (each a few small requests through the model's own configured class, so
the probe sees exactly what a run would): ``completion``, ``usage`` (the reply reports
token counts), ``streaming``, ``reasoning_round_trip`` (a second turn that sends the first
reply back; providers that need their reasoning passed back answer 400 here),
``tool_call`` (one tool round trip), ``parallel_tool_calls``, ``vision`` (only when the
model declares it) and ``context_window`` (a prompt of a few thousand tokens is accepted
and the declared window is larger than what it counted). A step that fails records the
provider's error; later steps still run, so one probe names every problem. A model whose
key is missing is ``not_configured`` and is not called at all.
"""

from __future__ import annotations

import base64
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

STEPS = ("completion", "usage", "streaming", "reasoning_round_trip", "tool_call", "parallel_tool_calls", "vision", "context_window")
# The steps without which the agent cannot work: a model failing one is not offered for runs.
BLOCKING_STEPS = frozenset({"tool_call"})
LONG_PROMPT_WORDS = 2500
# A 1x1 red PNG: the smallest image a vision model must accept.
_PIXEL = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cfc000000301"
    "0100c9fe92ef0000000049454e44ae426082")).decode()


@tool
def probe_lookup(key: str) -> str:
    """Look up the value stored under ``key``. Always call this when asked for a stored value."""
    return f"value-of-{key}"


@dataclass
class StepResult:
    name: str
    status: str  # passed | failed | skipped
    detail: str = ""
    error: str = ""
    seconds: float = 0.0


@dataclass
class ProbeResult:
    model: str
    status: str  # passed | failed | not_configured
    steps: list[StepResult] = field(default_factory=list)

    @property
    def failed_steps(self) -> list[str]:
        return [s.name for s in self.steps if s.status == "failed"]

    @property
    def blocks_agent(self) -> bool:
        return any(s in BLOCKING_STEPS for s in self.failed_steps)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "status": self.status, "failed_steps": self.failed_steps, "steps": [asdict(s) for s in self.steps]}


class StepFailed(Exception):
    pass


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text[:2000]


def _text(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content or [])


class _Battery:
    def __init__(self, model: Any, entry: Any) -> None:
        self.model = model
        self.entry = entry
        self.first: AIMessage | None = None
        self.steps: list[StepResult] = []

    def run(self, name: str, fn: Any) -> None:
        started = time.monotonic()
        try:
            detail = fn()
            result = StepResult(name, "skipped", detail[len("skipped: "):]) if detail.startswith("skipped: ") else StepResult(name, "passed", detail)
        except StepFailed as exc:
            result = StepResult(name, "failed", str(exc))
        except Exception as exc:  # the provider's own error, reported as it came
            result = StepResult(name, "failed", "the provider answered with an error", _error_text(exc))
        result.seconds = round(time.monotonic() - started, 3)
        self.steps.append(result)

    def completion(self) -> str:
        reply = self.model.invoke([HumanMessage("Reply with the single word: ready")])
        self.first = reply
        if not _text(reply).strip():
            raise StepFailed("the reply was empty")
        return f"replied {_text(reply).strip()[:40]!r}"

    def usage(self) -> str:
        if self.first is None:
            return "skipped: the completion step failed"
        usage = self.first.usage_metadata or {}
        if not usage or not (usage.get("input_tokens") or usage.get("output_tokens")):
            raise StepFailed("the reply reported no token usage; budgets and the usage console would count nothing for this model")
        return f"{usage.get('input_tokens', 0)} in, {usage.get('output_tokens', 0)} out"

    def streaming(self) -> str:
        chunks, text, usage = 0, "", None
        for chunk in self.model.stream([HumanMessage("Count from 1 to 3.")]):
            chunks += 1
            text += _text(chunk)
            usage = chunk.usage_metadata or usage
        if not chunks or not text.strip():
            raise StepFailed(f"the stream produced no text ({chunks} chunks)")
        return f"{chunks} chunks" + ("" if usage else "; no usage in the stream")

    def reasoning_round_trip(self) -> str:
        if self.first is None:
            return "skipped: the completion step failed"
        reply = self.model.invoke([HumanMessage("Reply with the single word: ready"), self.first, HumanMessage("Now reply with the word: again")])
        if not _text(reply).strip():
            raise StepFailed("the second turn's reply was empty")
        carried = "reasoning_content" in (self.first.additional_kwargs or {})
        return "second turn accepted" + (" (the first reply carried reasoning)" if carried else "")

    def tool_call(self) -> str:
        bound = self.model.bind_tools([probe_lookup])
        ask = HumanMessage("Use the probe_lookup tool to find the value stored under the key 'alpha'. Do not answer without calling it.")
        reply = bound.invoke([ask])
        calls = [c for c in reply.tool_calls if c.get("name") == "probe_lookup"]
        if not calls:
            raise StepFailed(f"the model answered without calling the tool: {_text(reply)[:200]!r}")
        result = ToolMessage(content=probe_lookup.invoke(calls[0].get("args") or {"key": "alpha"}), tool_call_id=calls[0]["id"])
        final = bound.invoke([ask, reply, result])
        if not _text(final).strip() and not final.tool_calls:
            raise StepFailed("after the tool result the model gave no answer")
        return "called probe_lookup and answered with its result"

    def parallel_tool_calls(self) -> str:
        bound = self.model.bind_tools([probe_lookup])
        reply = bound.invoke([HumanMessage("Call the probe_lookup tool twice in one reply, for the keys 'alpha' and 'beta', in parallel.")])
        n = len([c for c in reply.tool_calls if c.get("name") == "probe_lookup"])
        if n < 2:
            raise StepFailed(f"asked for two calls in one reply, got {n}")
        return f"{n} calls in one reply"

    def vision(self) -> str:
        if not getattr(self.entry, "supports_vision", False):
            return "skipped: the model does not declare supports_vision"
        reply = self.model.invoke([HumanMessage(content=[{"type": "text", "text": "What colour is this image? One word."},
                                                         {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_PIXEL}"}}])])
        if not _text(reply).strip():
            raise StepFailed("the reply to an image was empty")
        return f"described the image: {_text(reply).strip()[:40]!r}"

    def context_window(self) -> str:
        window = getattr(self.entry, "context_window", None)
        if not window:
            return "skipped: no context_window declared (summarization then assumes 32000 tokens)"
        words = min(LONG_PROMPT_WORDS, max(100, window // 4))
        prompt = " ".join(f"word{i % 97}" for i in range(words))
        reply = self.model.invoke([HumanMessage(f"{prompt}\n\nReply with the single word: read")])
        counted = int((reply.usage_metadata or {}).get("input_tokens") or 0)
        if counted and counted > window:
            raise StepFailed(f"a {words}-word prompt counted {counted} tokens, more than the declared context_window of {window}")
        return f"a {words}-word prompt was accepted" + (f" ({counted} tokens of {window})" if counted else "")


def probe_model(name: str, *, config: Any) -> ProbeResult:
    """Run the battery against model *name* of *config*. Never raises for a model's fault."""
    from harness.models import ModelError, create_chat_model, get_model_config

    try:
        entry = get_model_config(name, config=config)
    except ModelError as exc:
        return ProbeResult(name, "not_configured", [StepResult("configuration", "failed", str(exc))])
    if entry.unavailable_reason:
        return ProbeResult(name, "not_configured", [StepResult("configuration", "failed", f"not configured: {entry.unavailable_reason}")])
    try:
        model = create_chat_model(name, config=config)
    except ModelError as exc:
        return ProbeResult(name, "not_configured", [StepResult("configuration", "failed", f"not configured: {exc}")])
    battery = _Battery(model, entry)
    for step in STEPS:
        battery.run(step, getattr(battery, step))
    status = "failed" if any(s.status == "failed" for s in battery.steps) else "passed"
    return ProbeResult(name, status, battery.steps)
