"""Two snapshots -> the run's change record: what was created, modified or deleted, with
size-limited unified diffs of text files.

A diff longer than its share (``max_diff_bytes_per_file``, and what is left of
``max_total_diff_bytes``) is cut at a line and ends with a marker line saying how much was left
out; ``diff_truncated`` is then true. Additions and deletions always count the whole diff.
"""

from __future__ import annotations

import difflib

from harness.workspace_changes.types import (BINARY, LARGE, SENSITIVE, SYMLINK, TRUNCATED, VERSION, FileEntry, Limits,
                                             Snapshot)

TRUNCATION_MARKER = "\\ diff truncated: {omitted} more bytes not shown"


def same(before: FileEntry, after: FileEntry) -> bool:
    if before.symlink or after.symlink:
        return before.symlink == after.symlink and before.symlink_target == after.symlink_target
    if before.sha256 is not None and after.sha256 is not None:
        return before.sha256 == after.sha256  # a touch that changed nothing is no change
    return before.size == after.size and before.mtime_ns == after.mtime_ns


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    out = []
    for path in sorted(set(before.files) | set(after.files)):
        b, a = before.files.get(path), after.files.get(path)
        if b is None or a is None or not same(b, a):
            out.append(path)
    return out


def produced_output_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """Regular files under outputs that the run created or modified: what it should present."""
    return [p for p in changed_paths(before, after)
            if (a := after.files.get(p)) is not None and a.root == "outputs" and not a.symlink]


def _status(before: FileEntry | None, after: FileEntry | None) -> str:
    if after is not None and after.symlink and not (before is not None and before.symlink):
        return "symlink_created"  # surfaced apart: a link may point anywhere
    if before is None:
        return "created"
    if after is None:
        return "deleted"
    return "modified"


def _no_diff_reason(before: FileEntry | None, after: FileEntry | None, limits: Limits) -> str | None:
    sides = [e for e in (before, after) if e is not None]
    for reason in (SYMLINK, SENSITIVE, BINARY, LARGE):
        if any(e.reason == reason for e in sides):
            return reason
    if any(e.size > limits.max_file_bytes_for_diff for e in sides):
        return LARGE
    if any(e.text is None for e in sides):
        return TRUNCATED  # its text was past the snapshot's allowance
    return None


def _cut(diff: str, allowance: int) -> str:
    """``diff`` shortened to at most ``allowance`` bytes at a line end, plus the marker."""
    encoded = diff.encode("utf-8")
    head = encoded[:max(0, allowance)].decode("utf-8", "ignore")
    if "\n" in head:
        head = head[: head.rindex("\n")]
    omitted = len(encoded) - len(head.encode("utf-8"))
    marker = TRUNCATION_MARKER.format(omitted=omitted)
    return f"{head}\n{marker}" if head else marker


def compare(before: Snapshot, after: Snapshot, *, limits: Limits | None = None) -> dict:
    """The ``workspace_changes`` payload: ``{version, summary, files, limits}``."""
    limits = limits or Limits()
    summary = {"created": 0, "modified": 0, "deleted": 0, "symlink_created": 0, "additions": 0, "deletions": 0,
               "truncated": before.truncated or after.truncated}
    files: list[dict] = []
    diff_left = limits.max_total_diff_bytes
    for path in changed_paths(before, after):
        b, a = before.files.get(path), after.files.get(path)
        status = _status(b, a)
        summary[status] += 1
        sample = a or b
        change = {
            "path": path, "root": sample.root, "status": status, "binary": sample.binary, "sensitive": sample.sensitive,
            "size_before": b.size if b else None, "size_after": a.size if a else None,
            "sha256_before": b.sha256 if b else None, "sha256_after": a.sha256 if a else None,
            "diff": "", "diff_truncated": False, "diff_unavailable_reason": None, "additions": 0, "deletions": 0,
            "symlink": sample.symlink, "symlink_target_before": b.symlink_target if b else None,
            "symlink_target_after": a.symlink_target if a else None,
        }
        reason = _no_diff_reason(b, a, limits)
        if reason is not None:
            change["diff_unavailable_reason"] = reason
            if reason in (LARGE, TRUNCATED):
                summary["truncated"] = True
        else:
            lines = list(difflib.unified_diff((b.text if b else "").splitlines(), (a.text if a else "").splitlines(),
                                              fromfile=f"a{path}", tofile=f"b{path}", lineterm=""))
            # The two header lines come first; a body line may itself start with "--" or "++".
            change["additions"] = sum(1 for line in lines[2:] if line.startswith("+"))
            change["deletions"] = sum(1 for line in lines[2:] if line.startswith("-"))
            diff = "\n".join(lines)
            allowance = min(limits.max_diff_bytes_per_file, diff_left)
            size = len(diff.encode("utf-8"))
            if size > allowance:
                diff = _cut(diff, allowance) if allowance > 0 else ""
                change["diff_truncated"] = True
                summary["truncated"] = True
                if not diff:
                    change["diff_unavailable_reason"] = TRUNCATED
            change["diff"] = diff
            diff_left = max(0, diff_left - len(diff.encode("utf-8")))
        summary["additions"] += change["additions"]
        summary["deletions"] += change["deletions"]
        if len(files) < limits.max_files:
            files.append(change)
        else:
            summary["truncated"] = True
    return {"version": VERSION, "summary": summary, "files": files, "limits": limits.to_dict()}


def has_changes(payload: dict) -> bool:
    s = payload["summary"]
    return bool(s["created"] or s["modified"] or s["deleted"] or s["symlink_created"])


def describe(payload: dict) -> str:
    """The event's one-line content: ``3 files changed +12 -4``."""
    s = payload["summary"]
    n = s["created"] + s["modified"] + s["deleted"] + s["symlink_created"]
    return f"{n} file{'s' if n != 1 else ''} changed +{s['additions']} -{s['deletions']}"
