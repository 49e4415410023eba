"""Which runs' messages the visible history leaves out after regenerate, edit-rerun and a
switch between answer versions.

The journal is append-only: a replay never deletes the rows of the answer it replaces.
Visibility is derived when the history is read, from the replay runs' metadata
(``metadata.replay.source_run_id``) and the ``VisibilitySwitch`` rows, folded in time order:

- a replay that is pending, running, finished, or waiting for input hides its source run and
  the runs that came after it (``superseded_run_ids``: an edited question may have had goal
  continuations after it);
- a replay that failed or was cancelled hides only itself (the thread's state was restored
  to the source's, so the source shows again);
- a switch (the chat's ‹ 1/2 › arrows) hides the version shown until then with the turns that
  continued from it, and shows the chosen version with the turns that had continued from it.

Chains follow from that: regenerating a regenerated answer hides both older attempts. Without
switches the fold is the plain union of what the replays hide, as it always was.

The **versions** of a turn are a run and the replays made of it, and of those, transitively
(a regenerate of an edit is a third version of the same turn); failed replays are not versions.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.runs.models import Run, VisibilitySwitch

FAILED_STOP_REASONS = ("cancelled", "rolled_back", "error")


def replay_failed(status: str, stop_reason: str) -> bool:
    return status == Run.Status.ERROR or (status == Run.Status.INTERRUPTED and stop_reason in FAILED_STOP_REASONS)


@dataclass(frozen=True)
class Change:
    """One step of the fold: at ``at``, ``hide`` leaves the history and ``show`` comes back."""
    at: object
    hide: frozenset[str]
    show: frozenset[str]


@dataclass(frozen=True)
class Replay:
    run_id: str
    source_run_id: str
    kind: str
    created_at: object


def _history(thread_ids: list[str]) -> tuple[list[Change], set[str], list[Replay]]:
    """(the changes in time order, the failed replays, the standing replays)."""
    changes: list[Change] = []
    failed: set[str] = set()
    replays: list[Replay] = []
    rows = Run.objects.filter(thread_id__in=thread_ids, metadata__has_key="replay").values_list(
        "pk", "status", "stop_reason", "metadata", "created_at")
    for pk, status, stop_reason, metadata, created_at in rows:
        if replay_failed(status, stop_reason or ""):
            failed.add(str(pk))
            continue
        replay = (metadata or {}).get("replay") or {}
        hide = frozenset(str(r) for r in replay.get("superseded_run_ids") or [replay.get("source_run_id")] if r)
        changes.append(Change(created_at, hide, frozenset()))
        if replay.get("source_run_id"):
            replays.append(Replay(str(pk), str(replay["source_run_id"]), replay.get("kind") or "regenerate", created_at))
    switches = VisibilitySwitch.objects.filter(thread_id__in=thread_ids).values_list("created_at", "hidden_run_ids", "shown_run_ids")
    for created_at, hidden, shown in switches:
        changes.append(Change(created_at, frozenset(map(str, hidden or [])), frozenset(map(str, shown or []))))
    changes.sort(key=lambda c: c.at)  # stable: a replay and a switch never share an instant in practice
    return changes, failed, replays


def _fold(changes: list[Change], failed: set[str]) -> set[str]:
    hidden: set[str] = set()
    for change in changes:
        hidden |= change.hide
        hidden -= change.show
    return hidden | failed


def hidden_run_ids(*, thread_id: str) -> set[str]:
    return hidden_run_ids_of_threads([thread_id])


def hidden_run_ids_of_threads(thread_ids: list[str]) -> set[str]:
    """The hidden runs of several threads at once (run ids are unique across threads)."""
    return _fold(*_history(thread_ids)[:2])


@dataclass(frozen=True)
class VersionGroup:
    """A turn with more than one version: run ids oldest first, which one the history shows
    (None when the whole turn sits in a hidden part of the history), and each one's kind
    (``original``, ``regenerate`` or ``edit``)."""
    run_ids: tuple[str, ...]
    kinds: tuple[str, ...]
    shown: str | None


def version_groups(*, thread_id: str) -> list[VersionGroup]:
    """The thread's turns that have versions, in the order they were first answered."""
    changes, failed, replays = _history([thread_id])
    hidden = _fold(changes, failed)
    source_of = {r.run_id: r.source_run_id for r in replays}
    kind_of = {r.run_id: r.kind for r in replays}

    def root(run_id: str) -> str:
        seen = set()
        while run_id in source_of and run_id not in seen:
            seen.add(run_id)
            run_id = source_of[run_id]
        return run_id

    members: dict[str, set[str]] = {}
    for r in replays:
        members.setdefault(root(r.run_id), {root(r.run_id)}).add(r.run_id)
    created = dict(Run.objects.filter(thread_id=thread_id, pk__in={m for ms in members.values() for m in ms})
                   .values_list("pk", "created_at"))
    created = {str(k): v for k, v in created.items()}
    groups = []
    for ids in members.values():
        ordered = tuple(sorted((m for m in ids if m in created), key=lambda m: created[m]))
        if len(ordered) < 2:
            continue
        shown = next((m for m in ordered if m not in hidden), None)
        groups.append(VersionGroup(ordered, tuple(kind_of.get(m, "original") for m in ordered), shown))
    groups.sort(key=lambda g: created[g.run_ids[0]])
    return groups


def switch_plan(*, thread_id: str, run_id: str) -> tuple[set[str], set[str]] | None:
    """What showing version ``run_id`` changes: (runs to hide, runs to show again), or None
    when it is shown already. Raises LookupError when it is no version of a shown turn."""
    changes, failed, _ = _history([thread_id])
    hidden = _fold(changes, failed)
    group = next((g for g in version_groups(thread_id=thread_id) if run_id in g.run_ids), None)
    if group is None or group.shown is None:
        raise LookupError(run_id)
    if group.shown == run_id:
        return None
    current = Run.objects.filter(pk=group.shown).values_list("created_at", flat=True).first()
    later = Run.objects.filter(thread_id=thread_id, created_at__gt=current).values_list("pk", flat=True)
    hide = {group.shown} | {str(pk) for pk in later if str(pk) not in hidden}
    # What continued from the chosen version is what was hidden with it, the last time it was.
    show = {run_id}
    for change in changes:
        if run_id in change.hide:
            show = set(change.hide)
    return hide, (show & hidden) | {run_id}
