"""A thread goal and its evaluator, as DeerFlow runs them: after each turn a separate model call
(not the lead model's own say-so) decides whether the goal is met, and if not, what blocks it.

The goal is a plain dict in the thread state's ``goal`` channel, in DeerFlow's shape:
``objective``, ``status`` (``active``; here also ``met``, kept so the chat can say so),
``created_at``, ``updated_at``, ``continuation_count``, ``max_continuations`` (0–8),
``no_progress_count``, ``max_no_progress_continuations`` and ``last_evaluation`` (``satisfied``,
``blocker``, ``reason``, ``evidence_summary``, ``run_id``, ``evaluated_at``, ``progress_key``,
and ``stand_down_reason`` when the loop stopped without the goal met).

Only the ``goal_not_met_yet`` blocker continues; the others (``missing_evidence``,
``needs_user_input``, ``run_failed``, ``external_wait``) stand down until the next user turn,
which is evaluated again. No Django here: the engine's hook (``apps/chat/actions/goals.py``)
calls these.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from harness.agents.markers import HIDE_KEY, message_text, neutralize_tags
from harness.errors import InvalidRequest

MAX_CONTINUATIONS = 8
DEFAULT_MAX_NO_PROGRESS = 2
MAX_OBJECTIVE_CHARS = 4000
MAX_REASON_CHARS = 1000
MAX_CONVERSATION_CHARS = 12000
MAX_CONVERSATION_MESSAGES = 30

BLOCKERS = ("none", "missing_evidence", "needs_user_input", "run_failed", "external_wait", "goal_not_met_yet")
CONTINUABLE = frozenset({"goal_not_met_yet"})
CONTINUATION_KEY = "deerflow_goal_continuation"

EVALUATOR_PROMPT = (
    "You are a strict completion evaluator for an AI agent.\n"
    "Decide whether the active goal is fully satisfied using ONLY the visible conversation evidence.\n"
    "Do not assume files, commands, tests or outside state changed unless the conversation shows it.\n"
    "If the evidence is too weak to prove progress, fail closed with blocker missing_evidence.\n"
    "Use blocker needs_user_input when the assistant is waiting on the user, run_failed when the turn failed, "
    "external_wait when the work waits on an outside system, goal_not_met_yet when useful autonomous work can continue, "
    "and none only when satisfied is true.\n"
    'Answer with exactly one JSON object: {"satisfied": boolean, "blocker": string, "reason": string, "evidence_summary": string}.'
)

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


def new_goal(objective: str, max_continuations: int, *, max_no_progress: int = DEFAULT_MAX_NO_PROGRESS) -> dict[str, Any]:
    at = now_iso()
    return {"objective": " ".join(objective.split()), "status": "active", "created_at": at, "updated_at": at,
            "continuation_count": 0, "max_continuations": max_continuations, "no_progress_count": 0,
            "max_no_progress_continuations": max_no_progress}


def goal_from_request(objective: Any, max_continuations: Any, *, default_max: int) -> dict[str, Any]:
    """A new goal from what a caller asked (the API's PUT, the embedded client's ``set_goal``),
    or InvalidRequest naming the field."""
    if not isinstance(objective, str) or not objective.strip():
        raise InvalidRequest("objective: a non-empty string is required")
    if len(objective) > MAX_OBJECTIVE_CHARS:
        raise InvalidRequest(f"objective: at most {MAX_OBJECTIVE_CHARS} characters (got {len(objective)})")
    if max_continuations is None:
        max_continuations = default_max
    if not isinstance(max_continuations, int) or isinstance(max_continuations, bool) or not 0 <= max_continuations <= MAX_CONTINUATIONS:
        raise InvalidRequest(f"max_continuations: an integer from 0 to {MAX_CONTINUATIONS} is required")
    return new_goal(objective, max_continuations)


@dataclass(frozen=True)
class Evaluation:
    satisfied: bool
    blocker: str
    reason: str = ""
    evidence_summary: str = ""


def _flat(value: Any, limit: int) -> str:
    return " ".join(value.split())[:limit] if isinstance(value, str) else ""


def parse_evaluation(text: str) -> Evaluation:
    """The evaluator's JSON verdict; ValueError when there is none. An unknown blocker on a
    verdict that is not satisfied fails closed (``missing_evidence``)."""
    text = _THINK.sub("", text or "")
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start:
        raise ValueError("the evaluator's answer holds no JSON object")
    try:
        data = json.loads(text[start:end + 1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the evaluator's answer is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("satisfied"), bool):
        raise ValueError("the evaluator's answer has no boolean 'satisfied'")
    satisfied = data["satisfied"]
    blocker = data.get("blocker")
    if satisfied:
        blocker = "none"
    elif blocker not in BLOCKERS or blocker == "none":
        blocker = "missing_evidence"
    return Evaluation(satisfied, blocker, _flat(data.get("reason"), MAX_REASON_CHARS), _flat(data.get("evidence_summary"), MAX_REASON_CHARS))


def _visible(messages: list[Any]) -> list[tuple[str, str]]:
    out = []
    for message in messages:
        if not isinstance(message, BaseMessage) or message.additional_kwargs.get(HIDE_KEY):
            continue
        if isinstance(message, HumanMessage | AIMessage):
            text = message_text(message).strip()
            if text:
                out.append(("User" if isinstance(message, HumanMessage) else "Assistant", text))
    return out[-MAX_CONVERSATION_MESSAGES:]


def evaluator_messages(goal: dict[str, Any], messages: list[Any]) -> list[BaseMessage] | None:
    """The evaluator's prompt; None when there is no visible answer to judge yet."""
    visible = _visible(messages)
    if not any(role == "Assistant" for role, _ in visible):
        return None
    conversation = "\n\n".join(f"{role}: {neutralize_tags(text)}" for role, text in visible)[-MAX_CONVERSATION_CHARS:]
    return [SystemMessage(EVALUATOR_PROMPT),
            HumanMessage(f"Active goal:\n{goal['objective']}\n\nVisible conversation evidence:\n{conversation}\n\n"
                         "Is the active goal fully satisfied?")]


def answer_signature(messages: list[Any]) -> str:
    """The latest visible answer, hashed: a continuation that adds no new answer made no progress."""
    for role, text in reversed(_visible(messages)):
        if role == "Assistant":
            return hashlib.sha256(text.encode()).hexdigest()
    return ""


def _progress_key(evaluation: Evaluation, signature: str) -> str:
    return json.dumps({"satisfied": evaluation.satisfied, "blocker": evaluation.blocker, "evidence": signature}, sort_keys=True)


def judge(goal: dict[str, Any], evaluation: Evaluation, messages: list[Any], *, run_id: str) -> tuple[dict[str, Any], bool]:
    """(the goal with this evaluation recorded, whether to continue)."""
    signature = answer_signature(messages)
    key = _progress_key(evaluation, signature)
    previous = goal.get("last_evaluation") or {}
    stalled = not evaluation.satisfied and previous.get("progress_key") == key
    no_progress = int(goal.get("no_progress_count", 0)) + 1 if stalled else 0
    count = int(goal.get("continuation_count", 0))
    stand_down = None
    if not evaluation.satisfied:
        if evaluation.blocker not in CONTINUABLE:
            stand_down = f"blocked:{evaluation.blocker}"
        elif count >= int(goal.get("max_continuations", MAX_CONTINUATIONS)):
            stand_down = "max_continuations_reached"
        elif no_progress >= int(goal.get("max_no_progress_continuations", DEFAULT_MAX_NO_PROGRESS)):
            stand_down = "no_progress_detected"
    go_on = not evaluation.satisfied and stand_down is None
    at = now_iso()
    updated = copy.deepcopy(goal)
    updated.update(updated_at=at, no_progress_count=no_progress, continuation_count=count + 1 if go_on else count)
    if evaluation.satisfied:
        updated["status"] = "met"
    updated["last_evaluation"] = {"satisfied": evaluation.satisfied, "blocker": evaluation.blocker, "reason": evaluation.reason,
                                  "evidence_summary": evaluation.evidence_summary, "run_id": run_id, "evaluated_at": at,
                                  "progress_key": key}
    if stand_down:
        updated["last_evaluation"]["stand_down_reason"] = stand_down
    return updated, go_on


def failed_evaluation(goal: dict[str, Any], why: str, *, run_id: str) -> dict[str, Any]:
    """The goal after an evaluator that could not answer: the loop stands down, saying why."""
    updated = copy.deepcopy(goal)
    at = now_iso()
    updated["updated_at"] = at
    updated["last_evaluation"] = {"satisfied": False, "blocker": "missing_evidence", "reason": why[:MAX_REASON_CHARS],
                                  "evidence_summary": "", "run_id": run_id, "evaluated_at": at, "progress_key": "",
                                  "stand_down_reason": "evaluator_failed"}
    return updated


def continuation_message(goal: dict[str, Any]) -> HumanMessage:
    """The hidden user turn that asks the agent to keep going, inside the same run."""
    last = goal.get("last_evaluation") or {}
    text = ("<goal_continuation>\n"
            f"Active goal: {goal['objective']}\n"
            f"Evaluator result: not satisfied. Blocker: {last.get('blocker')}. Reason: {last.get('reason') or 'none given'}.\n"
            f"This is continuation {goal['continuation_count']} of at most {goal['max_continuations']}. "
            "Continue working toward the goal with the tools and context you have; do not ask the user to continue "
            "unless you are genuinely blocked.\n"
            "</goal_continuation>")
    return HumanMessage(content=text, additional_kwargs={HIDE_KEY: True, CONTINUATION_KEY: goal["continuation_count"]})
