"""The approval gate: tool calls the rules cover wait for a person, or are refused.

It works in two places, so it holds whatever the model does:

- ``after_model``: when the model's reply asks for tool calls, each is checked against the
  rules before any of them runs. ``deny`` answers the call with a tool error naming the
  rule; ``ask`` pauses the run with one LangGraph interrupt listing every call that needs a
  yes (``{"type": "approval", "requests": [...]}``). ``Command(resume=...)`` carries the
  answer: ``"approve"``, ``"approve_always"`` (this rule, for the rest of the thread) or
  ``"deny"``, or ``{"decision": ..., "reason": ...}``, or per call
  ``{"decisions": {tool_call_id: ...}}``. A denied call gets a tool error with the reason; the
  approved ones run. Anything not understood is a denial.
- ``wrap_tool_call``: a covered call that reaches execution without having been cleared
  (say a later hook rewrote the reply) is refused. Uncovered tools pass with one set lookup.

Nobody watches a non-interactive run (scheduled tasks): ``ask`` follows the run's
``approval_policy`` (``deny``, the default, or ``auto_approve``) instead of waiting.
Subagents cannot ask either: their covered calls are refused unless the run auto-approves.
``deny`` rules are never auto-approved. Every decision is written to the audit store.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from typing import Annotated, Any, NotRequired

from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import interrupt

from harness.agents.markers import TOOL_META_KEY, run_value
from harness.governance.policy import Decision, Policy, Rule, args_digest, compile_policy, decide
from harness.governance.stores import ApprovalRecord, get_approval_store

logger = logging.getLogger(__name__)

DECISIONS = ("approve", "approve_always", "deny")
_USER_RULES_CACHE = 256


def _union(current: list[str] | None, update: list[str] | None) -> list[str]:
    out = list(current or [])
    out.extend(x for x in update or [] if x not in out)
    return out


class ApprovalState(AgentState):
    # Rule keys approved "always" in this thread.
    approval_grants: NotRequired[Annotated[list[str], _union]]
    # Tool call ids the gate let through (the execution-time check reads them).
    approval_cleared: NotRequired[Annotated[list[str], _union]]


def parse_answer(answer: Any, call_ids: list[str]) -> dict[str, tuple[str, str]]:
    """{tool_call_id: (decision, reason)} from a resume value; unknown shapes deny."""
    def one(value: Any) -> tuple[str, str]:
        if isinstance(value, str):
            value = {"decision": value}
        if isinstance(value, dict):
            decision = str(value.get("decision") or "").strip().lower()
            reason = str(value.get("reason") or "").strip()[:2000]
            if decision in DECISIONS:
                return decision, reason
        return "deny", "the approval answer was not understood, so the call was not run"

    if isinstance(answer, dict) and isinstance(answer.get("decisions"), dict):
        per_call = answer["decisions"]
        return {cid: one(per_call[cid]) if cid in per_call else ("deny", "no decision was given for this call") for cid in call_ids}
    decided = one(answer)
    return {cid: decided for cid in call_ids}


def _denial(call: dict, text: str) -> ToolMessage:
    # status "error" for the model and LangGraph; the meta's "denied" lets the UI say what happened.
    return ToolMessage(content=text, tool_call_id=call["id"], name=call["name"], status="error",
                       additional_kwargs={TOOL_META_KEY: {"status": "denied", "error_type": "not_approved",
                                                          "recoverable_by_model": True, "recommended_next_action": "report_to_user"}})


def _summary(call: dict) -> str:
    args = call.get("args") or {}
    for key in ("command", "path", "url", "file_path"):
        if isinstance(args.get(key), str):
            return args[key][:300]
    return ", ".join(f"{k}={str(v)[:80]}" for k, v in list(args.items())[:4])


class ApprovalGateMiddleware(AgentMiddleware):
    state_schema = ApprovalState

    def __init__(self, policy: Policy, *, user_rules: bool = False, interactive: bool = True, subagent: bool = False) -> None:
        super().__init__()
        self.policy = policy
        self.user_rules = user_rules
        self.interactive = interactive and not subagent
        self.subagent = subagent
        self._user_policies: OrderedDict[str, Policy] = OrderedDict()
        self._lock = threading.Lock()

    # -- the rules for this run ------------------------------------------------------

    def _cached_user_policy(self, run_id: str) -> Policy | None:
        with self._lock:
            return self._user_policies.get(run_id)

    def _load_user_policy(self, user_id: str, run_id: str) -> Policy:
        raws = get_approval_store().user_rules(user_id) if user_id else []
        try:
            policy = compile_policy(raws, source="user")
        except ValueError:  # saved rules are validated; a broken one must not open the gate
            logger.warning("user %s has an approval rule that does not compile; asking for every call of its tools", user_id)
            policy = Policy(tuple(Rule(name=str(r.get("name") or "?"), tools=tuple(_as_list(r.get("tool"))), action="ask", source="user")
                                  for r in raws if _as_list(r.get("tool"))))
        with self._lock:
            self._user_policies[run_id] = policy
            while len(self._user_policies) > _USER_RULES_CACHE:
                self._user_policies.popitem(last=False)
        return policy

    def _layers(self, runtime: Any) -> list[Policy] | None:
        """The layers if known without IO, else None (the user's rules must be loaded)."""
        if not self.user_rules:
            return [self.policy]
        cached = self._cached_user_policy(str(run_value(runtime, "run_id", "") or ""))
        return None if cached is None else [self.policy, cached]

    def _layers_sync(self, runtime: Any) -> list[Policy]:
        layers = self._layers(runtime)
        if layers is None:
            layers = [self.policy, self._load_user_policy(str(run_value(runtime, "user_id", "") or ""), str(run_value(runtime, "run_id", "") or ""))]
        return layers

    async def _alayers(self, runtime: Any) -> list[Policy]:
        layers = self._layers(runtime)
        if layers is None:
            user_id, run_id = str(run_value(runtime, "user_id", "") or ""), str(run_value(runtime, "run_id", "") or "")
            layers = [self.policy, await asyncio.to_thread(self._load_user_policy, user_id, run_id)]
        return layers

    # -- after the model: decide before anything runs ------------------------------------

    @staticmethod
    def _pending_calls(state: Any) -> list[dict]:
        messages = (state or {}).get("messages") or []
        if not messages or not isinstance(messages[-1], AIMessage) or not messages[-1].tool_calls:
            return []
        return [c for c in messages[-1].tool_calls if c.get("id")]

    def _might_gate(self, calls: list[dict]) -> bool:
        return self.user_rules or any(self.policy.may_gate(c["name"]) for c in calls)

    def _review(self, state: Any, runtime: Any, layers: list[Policy]) -> tuple[dict | None, list[ApprovalRecord]]:
        calls = self._pending_calls(state)
        agent = run_value(runtime, "agent_name")
        ruled = [(c, decide(layers, c["name"], c.get("args"), agent)) for c in calls]
        ruled = [(c, d) for c, d in ruled if d.rule is not None and d.action != "allow"]
        if not ruled:
            return None, []
        base = {"user_id": str(run_value(runtime, "user_id", "") or ""), "thread_id": str(run_value(runtime, "thread_id", "") or ""),
                "run_id": str(run_value(runtime, "run_id", "") or "")}
        grants = set((state or {}).get("approval_grants") or [])
        records: list[ApprovalRecord] = []
        messages: list[ToolMessage] = []
        cleared: list[str] = []
        new_grants: list[str] = []
        asking: list[tuple[dict, Decision]] = []

        def note(call: dict, rule: Rule, decision: str, by: str, reason: str = "") -> None:
            records.append(ApprovalRecord(tool_call_id=call["id"], tool=call["name"], args_digest=args_digest(call.get("args") or {}),
                                          rule_name=rule.name, rule_source=rule.source, decision=decision, decided_by=by, reason=reason, **base))

        non_interactive = not self.interactive or bool(run_value(runtime, "non_interactive", False))
        auto = str(run_value(runtime, "approval_policy", "deny") or "deny") == "auto_approve" and non_interactive
        for call, d in ruled:
            rule = d.rule
            if d.action == "deny":
                note(call, rule, "denied_by_rule", "policy")
                messages.append(_denial(call, f"This {call['name']} call was blocked by the approval policy (rule '{rule.name}'). "
                                              "It was not run; do not retry it. Tell the user what you wanted to do, or find another way."))
            elif rule.key in grants:
                note(call, rule, "approved_by_grant", base["user_id"])
                cleared.append(call["id"])
            elif auto:
                note(call, rule, "auto_approved", "subagent" if self.subagent else "schedule")
                cleared.append(call["id"])
            elif non_interactive:
                who = "subagent" if self.subagent else "schedule"
                why = ("a subagent cannot ask the user for approval; do this step in the main conversation" if self.subagent
                       else "this run is not interactive and its setting is to deny calls that need approval")
                note(call, rule, "auto_denied", who, why)
                messages.append(_denial(call, f"This {call['name']} call needs the user's approval (rule '{rule.name}'), and {why}. It was not run."))
            else:
                asking.append((call, d))

        if asking:
            requests = [{"tool_call_id": c["id"], "tool": c["name"], "args": c.get("args") or {}, "rule": d.rule.describe(),
                         "summary": _summary(c)} for c, d in asking]
            text = "Approval needed before the agent runs:\n" + "\n".join(
                f"- {r['tool']}: {r['summary']} (rule '{r['rule']['name']}')" for r in requests)
            answer = interrupt({"type": "approval", "tool_call_id": asking[0][0]["id"], "text": text, "requests": requests})
            decided = parse_answer(answer, [c["id"] for c, _ in asking])
            for call, d in asking:
                decision, reason = decided[call["id"]]
                if decision == "deny":
                    note(call, d.rule, "denied", base["user_id"], reason)
                    said = f" Their reason: {reason}" if reason else ""
                    messages.append(_denial(call, f"The user denied this {call['name']} call; it was not run.{said} "
                                                  "Do not retry it unchanged."))
                else:
                    note(call, d.rule, "approved_always" if decision == "approve_always" else "approved", base["user_id"], reason)
                    cleared.append(call["id"])
                    if decision == "approve_always":
                        new_grants.append(d.rule.key)
        update: dict[str, Any] = {}
        if messages:
            update["messages"] = messages
        if cleared:
            update["approval_cleared"] = cleared
        if new_grants:
            update["approval_grants"] = new_grants
        return update or None, records

    def after_model(self, state: Any, runtime: Any) -> dict | None:
        calls = self._pending_calls(state)
        if not calls or not self._might_gate(calls):
            return None
        update, records = self._review(state, runtime, self._layers_sync(runtime))
        if records:
            get_approval_store().record(records)
        return update

    async def aafter_model(self, state: Any, runtime: Any) -> dict | None:
        calls = self._pending_calls(state)
        if not calls or not self._might_gate(calls):
            return None
        update, records = self._review(state, runtime, await self._alayers(runtime))
        if records:
            await asyncio.to_thread(get_approval_store().record, records)
        return update

    # -- at execution: the backstop ------------------------------------------------------

    def _blocked(self, request: Any, layers: list[Policy]) -> ToolMessage | None:
        call = request.tool_call
        d = decide(layers, call["name"], call.get("args"), run_value(request.runtime, "agent_name"))
        if d.rule is None or d.action == "allow":
            return None
        if d.action == "ask" and call.get("id") in set((request.state or {}).get("approval_cleared") or []):
            return None
        return _denial(call, f"This {call['name']} call was not approved (rule '{d.rule.name}'), so it was not run.")

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        if not (self.user_rules or self.policy.may_gate(request.tool_call["name"])):
            return handler(request)
        return self._blocked(request, self._layers_sync(request.runtime)) or handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        if not (self.user_rules or self.policy.may_gate(request.tool_call["name"])):
            return await handler(request)
        return self._blocked(request, await self._alayers(request.runtime)) or await handler(request)


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value or [] if isinstance(v, str)]


def approval_middleware(approvals: Any, *, interactive: bool = True, subagent: bool = False) -> ApprovalGateMiddleware | None:
    """The gate for a build, or None when no rules can apply (then it costs nothing)."""
    if approvals is None or not approvals.active:
        return None
    return ApprovalGateMiddleware(approvals.policy, user_rules=approvals.user_rules, interactive=interactive, subagent=subagent)
