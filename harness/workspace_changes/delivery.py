"""The ``run.delivery`` receipt: which output files the run produced, which it showed the user
with ``present_files``, and whether the two meet.

Field names and the verdict follow DeerFlow: a run that created or modified files under
``/mnt/user-data/outputs`` and presented none of them is a failed delivery, and a run that would
have succeeded is recorded as an error saying so. A run that changed no outputs keeps ordinary
chat behaviour; its receipt only lists what it presented.
"""

from __future__ import annotations

import posixpath
from typing import Any

from harness.sandbox.paths import WORKSPACE

EVENT_TYPE = "run.delivery"
EVENT_CATEGORY = "outputs"
PRESENT_TOOL = "present_files"
DELIVERY_INCOMPLETE = "Artifact delivery incomplete: no produced output artifact was presented"


def _get(message: Any, key: str, default: Any = None) -> Any:
    if isinstance(message, dict):
        return message.get(key, default)
    return getattr(message, key, default)


def _type(message: Any) -> str:
    kind = _get(message, "type") or _get(message, "role") or ""
    return {"user": "human", "assistant": "ai", "AIMessageChunk": "ai"}.get(kind, kind)


def _normalize(path: str) -> str:
    # The tool resolves a relative path from the workspace, as the sandbox does.
    path = path.strip()
    if not path.startswith("/"):
        path = f"{WORKSPACE}/{path}"
    return posixpath.normpath(path)


def presented_in_turn(messages: list) -> list[str]:
    """The paths the latest turn (the messages after the last human one) presented with
    successful ``present_files`` calls, in order. The tool is all or nothing, so a call whose
    result is an error presented nothing."""
    start = 0
    for i in range(len(messages) - 1, -1, -1):
        if _type(messages[i]) == "human":
            start = i + 1
            break
    asked: dict[str, list[str]] = {}
    presented: list[str] = []
    for message in messages[start:]:
        kind = _type(message)
        if kind == "ai":
            for call in _get(message, "tool_calls") or []:
                if _get(call, "name") == PRESENT_TOOL:
                    paths = (_get(call, "args") or {}).get("filepaths")
                    if isinstance(paths, list):
                        asked[str(_get(call, "id"))] = [_normalize(p) for p in paths if isinstance(p, str) and p.strip()]
        elif kind == "tool" and _get(message, "name") == PRESENT_TOOL and _get(message, "status") != "error":
            presented.extend(asked.get(str(_get(message, "tool_call_id")), []))
    return list(dict.fromkeys(presented))


def _covers(presented: str, produced: str) -> bool:
    presented = presented.rstrip("/")
    return bool(presented) and (produced == presented or produced.startswith(presented + "/"))


def receipt(*, presented: list[str], produced: list[str]) -> dict:
    """The receipt's content. With produced outputs it carries the verdict: ``stage`` is
    ``presented`` (at least one produced file was shown), ``mismatched`` (files were shown, none
    of them produced) or ``not_started`` (nothing was shown)."""
    content: dict = {"presented": len(presented), "paths": list(presented),
                     "by_tool": {PRESENT_TOOL: list(presented)} if presented else {}}
    if not produced:
        return content
    matched = [p for p in produced if any(_covers(shown, p) for shown in presented)]
    return {
        **content,
        "verification": {"source": "outputs_changed", "requirement": "present_files_matches_produced_output"},
        "produced_paths": list(produced),
        "presented_paths": list(presented),
        "matched_paths": matched,
        "stage": "presented" if matched else ("mismatched" if presented else "not_started"),
        "satisfied": bool(matched),
    }


def delivery_error(content: dict) -> str | None:
    """The run's error when it produced outputs and presented none of them."""
    if not content.get("produced_paths") or content.get("satisfied") is True:
        return None
    return DELIVERY_INCOMPLETE
