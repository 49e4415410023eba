"""The composer's Polish button: one model call turns a rough draft into a clearer request.

The model is told to rewrite, never to answer, and to keep what the user wrote verbatim where it
matters (paths, URLs, code, a leading ``/skill``). Its reply is cleaned of closed reasoning blocks
and a wrapping code fence; an unclosed ``<think>`` is kept as text, since a draft may be about
the tag itself."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from harness.agents.markers import neutralize_tags

PROMPT = """You improve a message before the user sends it to an AI agent. Rewrite the draft so the
agent understands it at once: state the goal, the scope, any constraints and the output wanted,
where the draft implies them. Do not answer or carry out the request.
Keep the user's language, intent, names, numbers, file paths, URLs, code and any leading /command
exactly as written. Add no facts, files, tools or preferences the draft does not imply. Turn vague
words ("nicer", "better") into concrete criteria. Stay short: one paragraph or a few bullets,
under 180 words unless the draft is longer.
Reply with the rewritten draft only: no preface, no quotes, no code fence, no alternatives."""

_CLOSED_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCED = re.compile(r"^```[\w-]*\n(.*)\n```$", re.S)


def clean_rewrite(text: str) -> str:
    text = _CLOSED_THINK.sub("", text or "").strip()
    fenced = _FENCED.match(text)
    return (fenced.group(1) if fenced else text).strip()


def _request(draft: str, locale: str | None) -> str:
    language = f"The user's interface language is {locale}; keep the draft's own language." if locale else "Keep the draft's language."
    # The draft cannot close its own wrapper and speak as the instructions.
    body = neutralize_tags(draft).replace("</draft>", "&lt;/draft>")
    return f"{language}\n\nThe draft:\n<draft>\n{body}\n</draft>"


async def polish(model: Any, draft: str, locale: str | None = None, *, metadata: dict[str, Any] | None = None) -> str:
    reply = await model.ainvoke([SystemMessage(content=PROMPT), HumanMessage(content=_request(draft, locale))],
                                config={"run_name": "input_polish", "metadata": dict(metadata or {})})
    content = reply.content if isinstance(reply.content, str) else " ".join(
        p.get("text", "") for p in reply.content if isinstance(p, dict))
    return clean_rewrite(content)
