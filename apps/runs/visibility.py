"""Which runs' messages the visible history leaves out after regenerate and edit-rerun.

The journal is append-only: a replay never deletes the rows of the answer it replaces.
Visibility is derived when the history is read, from the replay runs' metadata
(``metadata.replay.source_run_id``):

- a replay that is pending, running, finished, or waiting for input hides its source run and
  the runs that came after it (``superseded_run_ids``: an edited question may have had goal
  continuations after it);
- a replay that failed or was cancelled hides only itself (the thread's state was restored
  to the source's, so the source shows again).

Chains follow from that: regenerating a regenerated answer hides both older attempts.
"""

from __future__ import annotations

from apps.runs.models import Run

FAILED_STOP_REASONS = ("cancelled", "rolled_back", "error")


def replay_failed(status: str, stop_reason: str) -> bool:
    return status == Run.Status.ERROR or (status == Run.Status.INTERRUPTED and stop_reason in FAILED_STOP_REASONS)


def hidden_run_ids(*, thread_id: str) -> set[str]:
    return hidden_run_ids_of_threads([thread_id])


def hidden_run_ids_of_threads(thread_ids: list[str]) -> set[str]:
    """The hidden runs of several threads at once (run ids are unique across threads)."""
    rows = Run.objects.filter(thread_id__in=thread_ids, metadata__has_key="replay").values_list("pk", "status", "stop_reason", "metadata")
    hidden: set[str] = set()
    for pk, status, stop_reason, metadata in rows:
        if replay_failed(status, stop_reason or ""):
            hidden.add(str(pk))
        else:
            replay = (metadata or {}).get("replay") or {}
            hidden.update(str(r) for r in replay.get("superseded_run_ids") or [replay.get("source_run_id")] if r)
    return hidden
