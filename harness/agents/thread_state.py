"""The lead agent's graph state: LangChain's ``AgentState`` (messages) plus DeerFlow keys.

Each key's reducer follows what the value means:

- ``artifacts``: files presented to the user; appended in order, never duplicated.
- ``viewed_images``: images the model asked to see; updates merge by path, and an empty
  dict clears them (the view-image middleware does that after the model call).
- ``delegations``: subagent tasks; the same id is updated in place (latest wins) but a
  finished task never goes back to running, and only the most recent entries are kept.
- ``skill_context``: skills the agent has loaded; one entry per path, most recent last.
- ``token_usage``: per-model counters summed over the thread.
- ``summarized_usage``: per run, the tokens of the replies a summary removed, summed (the
  newest runs only), so a run's token budget keeps counting them.
- ``stop_reason``: the latest write wins, also between two writes of one step: a model call
  both clears a stale reason (the length layer) and sets a new one (an outer layer).
- everything else is last-value: a writer replaces it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langchain.agents import AgentState

MAX_DELEGATIONS = 50
MAX_SKILL_CONTEXT = 8
TERMINAL_DELEGATION_STATUSES = frozenset({"completed", "failed", "cancelled", "timed_out"})


class SandboxState(TypedDict):
    sandbox_id: str


class ThreadDataState(TypedDict):
    workspace_path: str
    uploads_path: str
    outputs_path: str


class ViewedImage(TypedDict):
    base64: str
    mime_type: str


class TodoItem(TypedDict):
    content: str
    status: Literal["pending", "in_progress", "completed"]


def merge_artifacts(current: list[str] | None, update: list[str] | None) -> list[str]:
    out = list(current or [])
    seen = set(out)
    for path in update or []:
        if path not in seen:
            seen.add(path)
            out.append(path)
    return out


def merge_viewed_images(current: dict[str, Any] | None, update: dict[str, Any] | None) -> dict[str, Any]:
    if update is None:
        return dict(current or {})
    if not update:  # an explicit empty dict is the "clear" signal
        return {}
    return {**(current or {}), **update}


def merge_delegations(current: list[dict[str, Any]] | None, update: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = [dict(d) for d in current or []]
    index = {d.get("id"): i for i, d in enumerate(out)}
    for entry in update or []:
        key = entry.get("id")
        if key is not None and key in index:
            old = out[index[key]]
            if old.get("status") in TERMINAL_DELEGATION_STATUSES and entry.get("status") not in TERMINAL_DELEGATION_STATUSES:
                continue  # a late "running" report must not reopen a finished task
            out[index[key]] = {**old, **entry}
        else:
            index[key] = len(out)
            out.append(dict(entry))
    return out[-MAX_DELEGATIONS:]


def merge_skill_context(current: list[dict[str, Any]] | None, update: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    out = [d for d in current or []]
    for entry in update or []:
        out = [d for d in out if d.get("path") != entry.get("path")]
        out.append(dict(entry))
    return out[-MAX_SKILL_CONTEXT:]


_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens", "cache_read", "calls")


def merge_token_usage(current: dict[str, dict[str, int]] | None, update: dict[str, dict[str, int]] | None) -> dict[str, dict[str, int]]:
    out = {name: dict(counts) for name, counts in (current or {}).items()}
    for name, counts in (update or {}).items():
        slot = out.setdefault(name, dict.fromkeys(_USAGE_KEYS, 0))
        for key in _USAGE_KEYS:
            slot[key] = slot.get(key, 0) + int(counts.get(key, 0) or 0)
    return out


MAX_SUMMARIZED_RUNS = 32


def merge_summarized_usage(current: dict[str, list[int]] | None, update: dict[str, list[int]] | None) -> dict[str, list[int]]:
    """(input, output, total) per run id of the replies summaries removed, added up; the newest
    runs only (a run's budget needs its own entry while it runs, not forever)."""
    out = {run: list(counts) for run, counts in (current or {}).items()}
    for run, counts in (update or {}).items():
        prev = out.pop(run, [0, 0, 0])
        out[run] = [a + int(b or 0) for a, b in zip(prev, counts, strict=False)]
    return dict(list(out.items())[-MAX_SUMMARIZED_RUNS:])


def merge_promoted(current: list[str] | None, update: list[str] | None) -> list[str]:
    """Deferred tools the model loaded with tool_search: a union, in first-loaded order."""
    return list(dict.fromkeys([*(current or []), *(update or [])]))


def latest_stop_reason(current: str | None, update: str | None) -> str | None:
    """Writes in the order the middlewares applied them: the outer layer's reason is the last."""
    return update


class ThreadState(AgentState):
    sandbox: NotRequired[SandboxState | None]
    thread_data: NotRequired[ThreadDataState | None]
    title: NotRequired[str | None]
    artifacts: NotRequired[Annotated[list[str], merge_artifacts]]
    todos: NotRequired[list[TodoItem] | None]
    uploaded_files: NotRequired[list[dict[str, Any]] | None]
    viewed_images: NotRequired[Annotated[dict[str, ViewedImage], merge_viewed_images]]
    goal: NotRequired[dict[str, Any] | None]
    delegations: NotRequired[Annotated[list[dict[str, Any]], merge_delegations]]
    skill_context: NotRequired[Annotated[list[dict[str, Any]], merge_skill_context]]
    summary_text: NotRequired[str | None]
    token_usage: NotRequired[Annotated[dict[str, dict[str, int]], merge_token_usage]]
    # What the replies a summary removed had used, per run: the run's token budget still counts it.
    summarized_usage: NotRequired[Annotated[dict[str, list[int]], merge_summarized_usage]]
    promoted: NotRequired[Annotated[list[str], merge_promoted]]
    # Why the last run stopped early (model_length_capped, loop_capped, token_budget_exhausted, safety_capped,
    # error_fallback); reset at the start of every run.
    stop_reason: NotRequired[Annotated[str | None, latest_stop_reason]]
