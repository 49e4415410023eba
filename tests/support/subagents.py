"""Scripting a lead agent and its subagents with one scripted model: each request is
answered by who is asking (a subagent's request carries its own system prompt and task)."""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from harness.testing import call, tool_reply


def is_summary_request(messages) -> bool:
    """The summarization middleware's own call: one user message with its prompt."""
    return bool(messages) and messages[0].type == "human" and "You compress a conversation" in str(messages[0].content)


def is_subagent(messages) -> bool:
    return bool(messages) and messages[0].type == "system" and "subagent of DeerFlow" in str(messages[0].content)


def task_prompt(messages) -> str:
    for m in messages:
        if isinstance(m, HumanMessage):
            return str(m.content)
    return ""


def turns(messages) -> int:
    return sum(1 for m in messages if isinstance(m, AIMessage))


class Router:
    """``lead`` answers the lead's requests by turn; ``subs[key]`` answers the subagent whose
    prompt contains ``key``, by its turn. A list runs out into its last item."""

    def __init__(self, lead, subs, summary="Summary: the earlier steps were done."):
        self.lead, self.subs = list(lead), {k: list(v) for k, v in subs.items()}
        self.summary, self.summaries = summary, 0

    def __call__(self, messages):
        if is_summary_request(messages):
            self.summaries += 1
            return self.summary
        if is_subagent(messages):
            prompt = task_prompt(messages)
            for key, replies in self.subs.items():
                if key in prompt:
                    item = replies[min(turns(messages), len(replies) - 1)]
                    return item(messages) if callable(item) else item
            raise AssertionError(f"no script for subagent prompt {prompt!r}")
        item = self.lead[min(turns(messages), len(self.lead) - 1)]
        return item(messages) if callable(item) else item


def task_call(description, prompt, **extra):
    return call("task", description=description, prompt=prompt, **extra)


@tool
def same(q: str) -> str:
    """Look something up."""
    return "nothing new"


def looping(messages):
    """A subagent that repeats one lookup: its wrap-up after a turn cap, its answer once the
    loop guard took its tools, else the same call again (small fixed usage, so it reaches the
    loop guard whatever the size of its prompt)."""
    if "reached your limit" in str(messages[-1].content):
        return "What I have so far."
    if any("Tools are now disabled" in str(m.content) for m in messages):
        return "Stopping: the lookups kept returning the same."
    return tool_reply(call("same", q="x"), usage={"input_tokens": 10, "output_tokens": 5})


STAMP = "[stamped by the extension middleware]"


class StampMiddleware(AgentMiddleware):
    """An extension middleware (loaded by class path): marks each model request it wraps."""

    def wrap_model_call(self, request, handler):
        return handler(request.override(messages=[*request.messages, HumanMessage(STAMP)]))

    async def awrap_model_call(self, request, handler):
        return await handler(request.override(messages=[*request.messages, HumanMessage(STAMP)]))
