"""``skill_manage``: the agent keeps the user's own skills (``skill_evolution.enabled``).

Only the run's user's custom skills are written (``harness.skills.manage``): never another
user's, never a public or global one. Each write is scanned (and read by the moderation model
when one is configured) before it lands; a refused write is a tool error listing the findings.
Changes to one (user, skill) run one at a time; each lands in the history store (the database,
through ``apps/skills/stores.py``), and the run's skill set is resolved again so the agent's
next model call already lists the new or changed skill.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any, Literal

from langchain.tools import ToolRuntime, tool
from langchain_core.tools import ToolException

from harness.agents.markers import run_value
from harness.config import get_app_config
from harness.skills import activation
from harness.skills.loader import load_global_skills, load_public_skills
from harness.skills.manage import (
    SkillChange,
    SkillChangeRefused,
    change_summary,
    commit_change,
    get_skill_history_store,
    prepare_change,
    render_findings,
)
from harness.skills.moderation import moderate
from harness.skills.state import get_skill_state_store, resolve_skill_set
from harness.tools._context import DEFAULT_USER_ID, _lookup

Action = Literal["create", "edit", "patch", "write_file", "remove_file", "delete"]
# One lock per (user, skill): two calls of one message, or two threads of one user, must not
# both build on the same live copy and have the second rename drop the first one's change.
_locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = weakref.WeakValueDictionary()


def _ids(runtime: Any) -> tuple[str, str | None]:
    context = getattr(runtime, "context", None)
    configurable = (getattr(runtime, "config", None) or {}).get("configurable") or {}
    user_id = _lookup(context, "user_id") or configurable.get("user_id") or DEFAULT_USER_ID
    thread_id = _lookup(context, "thread_id") or configurable.get("thread_id")
    return str(user_id), (str(thread_id) if thread_id else None)


def _lock_for(user_id: str, name: str) -> asyncio.Lock:
    key = (user_id, name)
    lock = _locks.get(key)
    if lock is None:
        lock = _locks[key] = asyncio.Lock()
    return lock


def _refresh(runtime: Any, user_id: str) -> None:
    run_id = run_value(runtime, "run_id")
    if run_id and activation.snapshot(run_id) is not None:
        cfg = get_app_config().skills
        activation.remember_snapshot(run_id, resolve_skill_set(user_id, skills_path=cfg.path, virtual=cfg.container_path))


async def _manage(runtime: Any, action: str, name: str, content: str | None, path: str | None, find: str | None,
                  replace: str | None, expected_count: int | None) -> str:
    app = get_app_config()
    user_id, thread_id = _ids(runtime)
    name = (name or "").strip()
    async with _lock_for(user_id, name):
        public = {s.name for s in await asyncio.to_thread(load_public_skills, app.skills.path, app.skills.container_path)}
        shared = {s.name for s in await asyncio.to_thread(load_global_skills, app.skills.container_path)}
        candidate = await asyncio.to_thread(
            prepare_change, user_id=user_id, name=name, action=action, content=content, path=path, find=find,
            replace=replace, expected_count=expected_count, public_names=public, global_names=shared,
            content_rules=app.skill_scan.enabled)
        try:
            verdict = None
            if candidate.new_content is not None:
                verdict = await moderate(app, location=f"{name}/{candidate.file_path}", content=candidate.new_content,
                                         executable=candidate.executable, findings=render_findings(candidate.findings))
            if verdict is not None and not verdict.allowed:
                raise SkillChangeRefused(f"the moderation model refused the change to '{name}': {verdict.note}")
        except BaseException:
            candidate.discard()
            raise
        await asyncio.to_thread(commit_change, candidate)
        change = SkillChange(user_id=user_id, name=name, action=action, file_path=candidate.file_path,
                             prev_content=candidate.prev_content, new_content=candidate.new_content, thread_id=thread_id,
                             findings=[f.to_dict() for f in candidate.findings], moderation=verdict.note if verdict else "")
        await asyncio.to_thread(get_skill_history_store().record, change)
        forget = getattr(get_skill_state_store(), "forget", None)
        if action == "create" and callable(forget):
            # A new skill starts on, whatever choice the user made about an older one of that name.
            await asyncio.to_thread(forget, user_id, name)
        await asyncio.to_thread(_refresh, runtime, user_id)
        return change_summary(candidate)


@tool("skill_manage", parse_docstring=True)
async def skill_manage_tool(action: Action, name: str, runtime: ToolRuntime[Any, Any], content: str | None = None,
                            path: str | None = None, find: str | None = None, replace: str | None = None,
                            expected_count: int | None = None) -> str:
    """Create, change or delete one of the user's own skills (kept in their skill library for later runs).

    Every write is scanned first; a refused write changes nothing and lists the findings.

    Args:
        action: create (new skill; content is the whole SKILL.md), edit (replace SKILL.md), patch (replace the find text in SKILL.md), write_file (add or replace a supporting file), remove_file, or delete (the whole skill).
        name: The skill's name: lowercase letters, digits and hyphens; SKILL.md's front matter must carry the same name.
        content: The file text for create, edit and write_file.
        path: For write_file and remove_file: the file's path inside the skill, e.g. references/checklist.md or scripts/report.py.
        find: For patch: the exact text in SKILL.md to replace.
        replace: For patch: the text to put in its place.
        expected_count: For patch: how many times find must occur; all of them are replaced. Left out: exactly the first one.
    """
    try:
        return await _manage(runtime, action, name, content, path, find, replace, expected_count)
    except SkillChangeRefused as exc:
        text = f"Error: nothing was changed: {exc.message}."
        if exc.findings:
            text += "\nFindings:\n" + render_findings(exc.findings)
        raise ToolException(text) from None


skill_manage_tool.handle_tool_error = True

__all__ = ["skill_manage_tool"]
