"""Questions and approvals answered in the chat app.

A channel run can stop for a person: the agent asked a question (``ask_clarification``) or a
tool call waits at an approval gate (harness/governance/gate.py). The answer comes back the
way the web UI sends it: an approval through ``apps.governance.services.approval_answer``, a
clarification as a run with ``command.resume`` through ``start_run()``, as the connected user.

How the question reaches the chat: where the platform has buttons the adapter's
``send_choices`` shows them (Telegram inline keyboard, Slack blocks, Discord components,
Feishu card actions, DingTalk card buttons); elsewhere the answers
are numbered lines and the reply is the number (or, for a question, any text).

A button carries ``dfq:<user id>:<digest>:<index>``. The digest is of the thread and the
interrupt's tool call id, so a button pressed after the run moved on (answered already, a
new question since, ``/new``) no longer matches what the thread waits for and gets a clear
reply instead of answering something else. The user id is who was asked: anyone else
pressing it (in a group) is refused, and nothing runs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from apps.channels.base import Choice
from apps.errors import NotFound
from apps.governance.services import approval_answer
from apps.runs.schemas import parse_run_request
from apps.runs.selectors import run_with_thread, thread_last_run_kwargs
from apps.runs.services import start_run
from apps.runs.state import thread_state_get
from apps.threads.services import ThreadStatus

PREFIX = "dfq"
ANSWER_KEY = "question_answer"  # InboundMessage.extra key of a pressed button's answer

STALE = ("That question is no longer open: it was answered already, or the conversation moved on. "
         "Nothing was changed.")
NOT_YOURS = "Only the person who was asked can answer this; nothing was changed."
APPROVAL_CHOICES = (("approve", "Approve once"), ("approve_always", "Approve always in this chat"), ("deny", "Deny"))
_APPROVAL_WORDS = {"approve": "approve", "yes": "approve", "ok": "approve", "always": "approve_always",
                   "deny": "deny", "no": "deny", "reject": "deny"}


@dataclass(frozen=True)
class Pending:
    """What a thread waits for, in the shape the chat needs."""

    kind: str  # "approval" | "clarification"
    tool_call_id: str
    question: str
    options: tuple[str, ...]  # a clarification's choices ("" for free text and forms)
    digest: str

    def labels(self) -> list[str]:
        return [label for _, label in APPROVAL_CHOICES] if self.kind == "approval" else list(self.options)


def _digest(thread_id: str, tool_call_id: str) -> str:
    return hashlib.sha256(f"{thread_id}\x00{tool_call_id}".encode()).hexdigest()[:12]


def _approval_question(value: dict) -> str:
    lines = ["Approval needed before the agent goes on:"]
    for request in value.get("requests") or []:
        if isinstance(request, dict):
            rule = (request.get("rule") or {}).get("name", "")
            lines.append(f"• {request.get('tool')}: {request.get('summary') or ''}" + (f" (rule “{rule}”)" if rule else ""))
    return "\n".join(lines)


def pending_input(*, thread) -> Pending | None:
    """The question or approval ``thread`` waits on, or None. Blocking (ORM, checkpointer)."""

    if thread is None or thread.status != ThreadStatus.INTERRUPTED:
        return None
    try:
        state = thread_state_get(thread=thread)
    except NotFound:
        return None
    for item in state.get("interrupts") or []:
        value = item.get("value") if isinstance(item, dict) else None
        if not isinstance(value, dict) or not isinstance(value.get("tool_call_id"), str):
            continue
        call_id = value["tool_call_id"]
        if value.get("type") == "approval":
            return Pending("approval", call_id, _approval_question(value), (), _digest(thread.pk, call_id))
        if value.get("type") == "clarification":
            asked = value.get("human_input") or {}
            question = str(asked.get("question") or value.get("text") or "")
            if asked.get("context"):
                question = f"{asked['context']}\n\n{question}"
            if asked.get("mode") == "form":
                # A form's fields are listed in the readable text; the reply is free text.
                question = str(value.get("text") or question)
            options = tuple(str(o) for o in asked.get("options") or ()) if asked.get("mode") == "choice_with_other" else ()
            return Pending("clarification", call_id, question, options, _digest(thread.pk, call_id))
    return None


def pending_for_run(*, run_id: str) -> tuple[int, Pending] | None:
    """(owner id, what the run's thread waits for) after an interrupted run. Blocking."""

    run = run_with_thread(run_id=run_id)
    if run is None:
        return None
    pending = pending_input(thread=run.thread)
    return (run.owner_id, pending) if pending is not None else None


def choices(pending: Pending, user_id: int) -> list[Choice]:
    return [Choice(label=label[:64], data=f"{PREFIX}:{user_id}:{pending.digest}:{n}") for n, label in enumerate(pending.labels())]


def prompt_text(pending: Pending) -> str:
    if pending.kind == "clarification" and pending.options:
        return f"{pending.question}\n(Pick one, or reply in your own words.)"
    if pending.kind == "clarification":
        return f"{pending.question}\n(Reply with your answer.)"
    return pending.question


def parse(data: str) -> tuple[int, str, int] | None:
    """(user id, digest, index) of one of our buttons; None for anything else."""
    parts = (data or "").split(":")
    if len(parts) != 4 or parts[0] != PREFIX or not parts[1].isdigit() or not parts[3].isdigit():
        return None
    return int(parts[1]), parts[2], int(parts[3])


def value_for_index(pending: Pending, index: int) -> tuple[Any, str] | None:
    """(resume value, label) of the ``index``-th answer; None when there is no such answer."""
    labels = pending.labels()
    if not 0 <= index < len(labels):
        return None
    if pending.kind == "approval":
        return {"decision": APPROVAL_CHOICES[index][0]}, labels[index]
    return labels[index], labels[index]


def value_from_text(pending: Pending, text: str) -> Any | None:
    """The resume value a typed reply stands for; None when it answers nothing (an approval
    wants its number or approve/always/deny; a question takes any text)."""
    text = (text or "").strip()
    if not text:
        return None
    head, _, rest = text.partition(" ")
    if head.rstrip(".").isdigit():
        found = value_for_index(pending, int(head.rstrip(".")) - 1)
        if found is not None:
            value = found[0]
            if pending.kind == "approval" and value["decision"] == "deny" and rest.strip():
                value = {**value, "reason": rest.strip()[:2000]}
            return value
    if pending.kind == "approval":
        decision = _APPROVAL_WORDS.get(head.lower().rstrip(".,!:"))
        if decision is None:
            return None
        value = {"decision": decision}
        if decision == "deny" and rest.strip():
            value["reason"] = rest.strip()[:2000]
        return value
    return text


def retry_hint(pending: Pending) -> str:
    """What a reply that answers nothing gets: the question again, and how to answer it."""
    if pending.kind == "clarification":
        return f"{prompt_text(pending)}\n\nThe agent waits for this answer (or /new to leave it)."
    return (f"{pending.question}\n\nThe agent waits for this approval. Reply 1 (approve once), 2 (approve always in this chat) "
            "or 3 (deny; a reason may follow), or /new to leave it.")


def resume(*, user, thread_id: str, pending: Pending, value: Any) -> str:
    """Answer what the thread waits for, as ``user``; the new run's id. Blocking.

    Raises a domain error when the thread no longer waits (answered meanwhile): the caller
    tells the person their answer came too late."""

    if pending.kind == "approval":
        return str(approval_answer(user=user, thread_id=thread_id, body=value).run.pk)
    # As the web UI's answer does: the paused run's agent and context, with the answer.
    last = thread_last_run_kwargs(thread_id=thread_id)
    request = parse_run_request({"assistant_id": last.get("assistant_id") or "lead_agent", "command": {"resume": value},
                                 "context": dict(last.get("context") or {}),
                                 "metadata": {**(last.get("metadata") or {}), "origin": "channel"},
                                 "multitask_strategy": "reject", "stream_mode": ["messages-tuple", "values"]})
    return str(start_run(user=user, thread_id=thread_id, request=request).run.pk)


def still_open(pending: Pending | None, digest: str) -> bool:
    return pending is not None and pending.digest == digest

