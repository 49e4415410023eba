"""Reading a run's change record and receipt back from its journal."""

from __future__ import annotations

from apps.errors import Conflict
from apps.runs.lifecycle import ACTIVE_RUN_STATUSES
from apps.runs.selectors import run_events_page
from harness.workspace_changes import delivery
from harness.workspace_changes.types import EVENT_TYPE, METADATA_KEY, VERSION

_EMPTY_SUMMARY = {"created": 0, "modified": 0, "deleted": 0, "symlink_created": 0, "additions": 0, "deletions": 0,
                  "truncated": False}


def run_workspace_changes(*, run, include_files: bool = True, include_diff: bool = True) -> dict:
    """DeerFlow's ``workspace-changes`` answer (``available`` false when the run changed
    nothing), plus the run's ``delivery`` receipt (null for a run from before receipts)."""
    if run.status in ACTIVE_RUN_STATUSES:
        raise Conflict(f"Run {run.pk} is still {run.status}: its workspace changes are recorded when it finishes")
    changes = None
    receipt = None
    for event in run_events_page(run=run, event_types=[EVENT_TYPE, delivery.EVENT_TYPE], limit=10):
        if event["event_type"] == EVENT_TYPE:
            payload = (event.get("metadata") or {}).get(METADATA_KEY)
            changes = payload if isinstance(payload, dict) else changes
        elif isinstance(event.get("content"), dict):
            receipt = event["content"]
    if changes is None:
        answer = {"available": False, "version": VERSION, "summary": dict(_EMPTY_SUMMARY), "files": [], "limits": {}}
    else:
        answer = {**changes, "available": True}
        answer.setdefault("summary", dict(_EMPTY_SUMMARY))
        files = list(answer.get("files") or []) if include_files else []
        answer["files"] = files if include_diff else [{**f, "diff": ""} for f in files]
    answer["delivery"] = receipt
    return answer
