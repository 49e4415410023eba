"""Scripting a lead agent and its subagents with one scripted model: each request is
answered by who is asking (a subagent's request carries its own system prompt and task)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from harness.testing import call


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

    def __init__(self, lead, subs):
        self.lead, self.subs = list(lead), {k: list(v) for k, v in subs.items()}

    def __call__(self, messages):
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
