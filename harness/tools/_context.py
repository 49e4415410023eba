"""Finding the caller's user, thread, sandbox and request secrets from a ``ToolRuntime``.

User and thread come from the run context (a dict or an object with attributes), then
``config["configurable"]``; the sandbox id from ``state["sandbox"]``. A sandbox id from
state is trusted only if it belongs to that user and thread: state can be edited through
the API, and an id naming another user's thread must not open that thread's files. With
no usable id the tool acquires the sandbox itself, so tools also work without the
sandbox middleware (subagents, tests, embedded use).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.sandbox import Sandbox, SandboxError, get_sandbox_provider
from harness.sandbox.env_policy import mask_secrets

DEFAULT_USER_ID = "default"
SECRETS_CONTEXT_KEY = "secrets"
# Names of request secrets every command of the run gets, whatever skill is active.
COMMAND_SECRETS_KEY = "command_secrets"


def _lookup(source: Any, key: str) -> Any:
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(key)
    return getattr(source, key, None)


def runtime_ids(runtime: Any) -> tuple[str, str]:
    context = getattr(runtime, "context", None)
    configurable = (getattr(runtime, "config", None) or {}).get("configurable") or {}
    user_id = _lookup(context, "user_id") or configurable.get("user_id") or DEFAULT_USER_ID
    thread_id = _lookup(context, "thread_id") or configurable.get("thread_id")
    if not thread_id:
        info = getattr(runtime, "execution_info", None)
        thread_id = getattr(info, "thread_id", None)
    if not thread_id:
        raise SandboxError("Error: this run has no thread id, so there is no sandbox to use.")
    return str(user_id), str(thread_id)


def request_secrets(runtime: Any) -> dict[str, str]:
    """Request-scoped secrets to inject into commands and mask in every tool result."""
    raw = _lookup(getattr(runtime, "context", None), SECRETS_CONTEXT_KEY)
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, str)}


def skill_secrets(runtime: Any) -> dict[str, str]:
    """The request secrets bash may see: those the run names in ``command_secrets``, and those
    declared by skills active in this run.

    Everything else in ``context.secrets`` stays out of the command's environment (it is
    still masked in output). Blocking: resolving the skill set may stat skill folders.
    """
    secrets = request_secrets(runtime)
    if not secrets:
        return {}
    # Named by the run itself for all its commands (a GitHub agent's GH_TOKEN), not by a skill.
    named = _lookup(getattr(runtime, "context", None), COMMAND_SECRETS_KEY)
    always = {k: secrets[k] for k in named if isinstance(k, str) and k in secrets} if isinstance(named, list | tuple) else {}
    return {**always, **_skill_bound_secrets(runtime, secrets)}


def _skill_bound_secrets(runtime: Any, secrets: dict[str, str]) -> dict[str, str]:
    from harness.skills import activation
    from harness.skills.state import resolve_skill_set

    context = getattr(runtime, "context", None)
    configurable = (getattr(runtime, "config", None) or {}).get("configurable") or {}
    run_id = _lookup(context, "run_id") or configurable.get("run_id")
    state = getattr(runtime, "state", None)
    entries = _lookup(state, "skill_context") or []
    if not any(isinstance(e, Mapping) and e.get("run_id") == run_id for e in entries) and not _starts_with_slash(state):
        return {}  # nothing can be active in this run: no lookup needed
    skills = activation.snapshot(run_id)
    if skills is None:
        from harness.config import get_app_config

        cfg = get_app_config().skills
        skills = resolve_skill_set(runtime_ids(runtime)[0], skills_path=cfg.path, virtual=cfg.container_path)
    active, slash = activation.active_skills(getattr(runtime, "state", None), skills, run_id)
    return activation.bound_secrets(active, secrets, slash)


def _starts_with_slash(state: Any) -> bool:
    from harness.agents.markers import is_real_user_message, message_text

    for m in reversed(_lookup(state, "messages") or []):
        if is_real_user_message(m):
            return message_text(m).lstrip().startswith("/")
    return False


def get_sandbox(runtime: Any) -> Sandbox:
    provider = get_sandbox_provider()
    user_id, thread_id = runtime_ids(runtime)
    state = getattr(runtime, "state", None)
    sandbox_state = _lookup(state, "sandbox")
    sandbox_id = _lookup(sandbox_state, "sandbox_id")
    if isinstance(sandbox_id, str) and sandbox_id:
        sandbox = provider.get(sandbox_id)
        if sandbox is not None and sandbox.user_id == user_id and sandbox.thread_id == thread_id:
            return sandbox
    try:
        sandbox_id = provider.acquire(user_id, thread_id)
    except ValueError as exc:
        raise SandboxError(f"Error: cannot open the sandbox: {exc}") from None
    sandbox = provider.get(sandbox_id)
    if sandbox is None:
        raise SandboxError("Error: the sandbox could not be opened; try again.")
    return sandbox


def masked(runtime: Any, text: str) -> str:
    return mask_secrets(text, request_secrets(runtime))
