"""Skills in the agent loop: the prompt block, ``/skill`` activation, the tool policy.

- The user's skill set is resolved once per run, off the event loop (it reads the store and
  stats the skill folders), and kept for the run's calls: in the run's setup step
  (``SkillSetSnapshot``), or on the first model call of a run that had none (a resume).
- ``/skill-name task`` as the run's user message: an enabled skill's SKILL.md goes into
  each model request as hidden context and the skill is active for the run; an unknown or
  disabled one is answered at once and the model is never called. No graph step is added:
  the activation is derived from the message on every call.
- ``wrap_model_call`` appends the enabled skills block to the system prompt (same bytes for
  the same set) and shows the model only the tools the active skills allow.
- ``wrap_tool_call`` refuses a tool the active skills do not allow, and notes a skill as
  active when the agent reads its SKILL.md.
- Each activation, and each change of the secrets the active skills bind or miss, is written
  to the run's journal as ``middleware:skill_activation`` / ``middleware:skill_secrets``
  (names only; harness/runtime/journal_events.py).
The decisions are recomputed from state on every call (harness/skills/activation.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.types import Command

from harness.agents.markers import context_block, hidden_message, is_real_user_message, message_text, run_value
from harness.agents.thread_state import ThreadState
from harness.runtime import journal_events
from harness.skills import activation
from harness.skills.loader import Skill
from harness.skills.state import SkillSet, resolve_skill_set
from harness.tools._context import DEFAULT_USER_ID, request_secrets


def _last_user_text(messages) -> str | None:
    for m in reversed(messages or []):
        if is_real_user_message(m):
            return message_text(m).strip()
    return None


class SkillsMiddleware(AgentMiddleware):
    state_schema = ThreadState

    def __init__(self, *, skills_path: str | None = None, container_path: str = "/mnt/skills", deferred: bool = False,
                 allowed: tuple[str, ...] | None = None):
        super().__init__()
        # A custom agent's skills allowlist (None: all the user's skills). Skills outside it
        # are left out of the set, so they are neither listed nor startable with /name.
        self.allowed = frozenset(allowed) if allowed is not None else None
        self._narrowed: tuple[SkillSet, SkillSet] | None = None
        self.skills_path = skills_path
        self.container_path = container_path
        self.deferred = deferred
        self.tools = [_describe_skill_tool(self)] if deferred else []

    # -- the run's skill set ----------------------------------------------------------

    def _resolve(self, runtime: Any) -> SkillSet:
        user_id = str(run_value(runtime, "user_id", None) or DEFAULT_USER_ID)
        return resolve_skill_set(user_id, skills_path=self.skills_path, virtual=self.container_path)

    def _narrow(self, found: SkillSet) -> SkillSet:
        """The run's snapshot is the user's whole set (a subagent type's list may differ from
        the lead's): each middleware narrows it to its own list, once per snapshot."""
        if self.allowed is None:
            return found
        last = self._narrowed
        if last is not None and last[0] is found:
            return last[1]
        narrowed = SkillSet(tuple(e for e in found.entries if e.skill.name in self.allowed))
        self._narrowed = (found, narrowed)
        return narrowed

    def _skills(self, runtime: Any) -> SkillSet:
        found = activation.snapshot(run_value(runtime, "run_id"))
        if found is None:
            found = self._resolve(runtime)
            activation.remember_snapshot(run_value(runtime, "run_id"), found)
        return self._narrow(found)

    async def _askills(self, runtime: Any) -> SkillSet:
        found = activation.snapshot(run_value(runtime, "run_id"))
        return self._narrow(found) if found is not None else await asyncio.to_thread(self._skills, runtime)

    # -- /skill-name ------------------------------------------------------------------

    def _slash(self, request: Any, skills: SkillSet) -> tuple[Any, AIMessage | None]:
        """(request with the skill's SKILL.md as hidden context, or a refusal to answer
        with instead of calling the model). Derived from the run's user message on every
        call, so it needs no graph step and holds for the whole tool loop."""
        # From the stored messages: the request's copy may carry the turn's context block.
        state_messages = (request.state or {}).get("messages") if isinstance(request.state, dict) else None
        parsed = activation.parse_slash(_last_user_text(state_messages or request.messages) or "")
        if parsed is None:
            return request, None
        name, _task = parsed
        entry = skills.get(name)
        if entry is None or not entry.enabled:
            enabled = ", ".join(f"/{s.name}" for s in skills.enabled()) or "none"
            why = f"The skill /{name} is turned off. Turn it on in Skills to use it." if entry else f"There is no skill called /{name}."
            return request, AIMessage(content=f"{why} Skills you can start: {enabled}.")
        skill = entry.skill
        body = _read_skill_md(skill)
        if body is None:
            return request, AIMessage(content=f"The skill /{name} could not be read; check its folder on the Skills page.")
        text = context_block(
            "skill",
            f"The user started the skill '{skill.name}' for this request. Its SKILL.md ({skill.skill_md_path}) follows; "
            f"files it mentions are relative to {skill.container_path}.\n\n{body}",
        )
        messages = list(request.messages)
        for i in range(len(messages) - 1, -1, -1):
            if is_real_user_message(messages[i]):
                messages.insert(i + 1, hidden_message("skill", text))
                break
        return request.override(messages=messages), None

    # -- model calls ------------------------------------------------------------------

    def _policy(self, state: Any, runtime: Any, skills: SkillSet) -> tuple[frozenset[str] | None, list]:
        active, slash = activation.active_skills(state, skills, run_value(runtime, "run_id"))
        return activation.allowed_tool_names(active, slash), active

    def _shape(self, request: Any, skills: SkillSet) -> Any:
        block = activation.skills_prompt_block(skills.enabled(), deferred=self.deferred)
        overrides: dict[str, Any] = {}
        if block:
            base = message_text(request.system_message) if request.system_message is not None else ""
            overrides["system_message"] = SystemMessage(content=base + block)
        allowed, _ = self._policy(request.state, request.runtime, skills)
        if allowed is not None:
            overrides["tools"] = [t for t in request.tools if _tool_name(t) in allowed]
        return request.override(**overrides) if overrides else request

    # -- the journal -------------------------------------------------------------------

    def _audit(self, runtime: Any, state: Any, skills: SkillSet, *, hook: str, loaded: Skill | None = None) -> None:
        run_id = str(run_value(runtime, "run_id", "") or "")
        if not run_id:
            return
        active, slash = activation.active_skills(state if isinstance(state, dict) else None, skills, run_id)
        if loaded is not None and loaded not in active:
            active.append(loaded)
        if not active:
            return
        activations, binding = activation.audit_changes(run_id, active, slash, request_secrets(runtime))
        for changes in activations:
            journal_events.emit("skill_activation", name="SkillsMiddleware", hook=hook, action="activate", changes=changes)
        if binding is not None:
            journal_events.emit("skill_secrets", name="SkillsMiddleware", hook=hook, action="bind_secrets", changes=binding)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        skills = self._skills(request.runtime)
        request, refusal = self._slash(request, skills)
        if refusal is not None:
            return refusal
        self._audit(request.runtime, request.state, skills, hook="wrap_model_call")
        return handler(self._shape(request, skills))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        skills = await self._askills(request.runtime)
        request, refusal = self._slash(request, skills)
        if refusal is not None:
            return refusal
        self._audit(request.runtime, request.state, skills, hook="wrap_model_call")
        return await handler(self._shape(request, skills))

    # -- tool calls -------------------------------------------------------------------

    def _refusal(self, request: Any, skills: SkillSet) -> ToolMessage | None:
        allowed, active = self._policy(request.state, request.runtime, skills)
        name = request.tool_call.get("name")
        if allowed is None or name in allowed:
            return None
        names = ", ".join(s.name for s in active)
        return ToolMessage(
            content=(f"Error: the tool '{name}' is not allowed while the skill {names} is active. "
                     f"Allowed tools: {', '.join(sorted(allowed))}."),
            tool_call_id=request.tool_call.get("id"), name=name, status="error",
        )

    def _note_read(self, request: Any, result: Any, skills: SkillSet) -> Any:
        call = request.tool_call
        if call.get("name") != "read_file" or not isinstance(result, ToolMessage) or result.status == "error":
            return result
        path = str((call.get("args") or {}).get("path", "")).rstrip("/")
        skill = skills.by_skill_md(path)
        if skill is None:
            return result
        run_id = str(run_value(request.runtime, "run_id", "") or "")
        self._audit(request.runtime, request.state, skills, hook="wrap_tool_call", loaded=skill)
        return Command(update={"messages": [result],
                               "skill_context": [activation.context_entry(skill, run_id=run_id, source="read")]})

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        skills = self._skills(request.runtime)
        refused = self._refusal(request, skills)
        return refused if refused is not None else self._note_read(request, handler(request), skills)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        skills = await self._askills(request.runtime)
        refused = self._refusal(request, skills)
        return refused if refused is not None else self._note_read(request, await handler(request), skills)


class SkillSetSnapshot(AgentMiddleware):
    """A part of the run's setup step (``RunSetupMiddleware``): resolves the run's skill set
    in the thread the setup already runs in, so the first model call finds it ready
    instead of hopping to a thread of its own. A run that starts without the setup step
    (a resumed interrupt) still resolves it on its first call."""

    def __init__(self, skills: SkillsMiddleware):
        super().__init__()
        self.skills = skills

    @property
    def name(self) -> str:
        return "SkillSetSnapshot"

    def before_agent(self, state: Any, runtime: Any) -> None:
        self.skills._skills(runtime)  # kept for the run; the setup writes no state for it


_md_cache: dict[tuple, str] = {}


def _read_skill_md(skill) -> str | None:
    """SKILL.md text, cached by file identity so a long tool loop reads it once."""
    path = skill.directory / "SKILL.md"
    try:
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size)
        if key not in _md_cache:
            if len(_md_cache) > 256:
                _md_cache.clear()
            _md_cache[key] = path.read_text(encoding="utf-8")
        return _md_cache[key]
    except (OSError, UnicodeDecodeError):
        return None


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, dict):
        return tool.get("name") or (tool.get("function") or {}).get("name")
    return getattr(tool, "name", None)


def _describe_skill_tool(middleware: SkillsMiddleware):
    @tool("describe_skill", parse_docstring=True)
    def describe_skill(query: str, runtime: ToolRuntime[Any, Any]) -> str:
        """Find enabled skills and show their description and SKILL.md path.

        Args:
            query: `select:name-a,name-b` for exact names, `+prefix` for names starting with it, or words to match in names and descriptions.
        """
        skills = middleware._skills(runtime)
        found = activation.search_skills(skills.enabled(), query)
        if not found:
            return "No enabled skill matches. Enabled skills: " + (", ".join(s.name for s in skills.enabled()) or "none")
        return "\n".join(f"- {s.name}: {s.meta.description} (read {s.skill_md_path})" for s in found)

    async def _adescribe(query: str, runtime: ToolRuntime[Any, Any]) -> str:
        return await asyncio.to_thread(describe_skill.func, query, runtime)

    describe_skill.coroutine = _adescribe
    return describe_skill
