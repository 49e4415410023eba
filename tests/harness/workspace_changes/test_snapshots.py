"""Snapshots and change records on real directories: what a run changed, with diffs cut to
their limits, and unchanged files never read twice."""

from __future__ import annotations

import os
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from harness.workspace_changes import delivery, recorder, scanner
from harness.workspace_changes.diff import TRUNCATION_MARKER
from harness.workspace_changes.types import Limits, Root


def roots_in(tmp_path: Path) -> list[Root]:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    (tmp_path / "outputs").mkdir(exist_ok=True)
    return [Root("workspace", tmp_path / "workspace", "/mnt/user-data/workspace"),
            Root("outputs", tmp_path / "outputs", "/mnt/user-data/outputs")]


def by_path(payload: dict) -> dict[str, dict]:
    return {f["path"]: f for f in payload["files"]}


def test_created_modified_and_deleted_files_are_listed_with_their_diffs(tmp_path):
    roots = roots_in(tmp_path)
    (tmp_path / "workspace" / "notes.md").write_text("one\ntwo\n")
    (tmp_path / "workspace" / "old.txt").write_text("bye\n")
    before = recorder.snapshot_before(roots)
    (tmp_path / "workspace" / "notes.md").write_text("one\n2\nthree\n")
    (tmp_path / "workspace" / "old.txt").unlink()
    (tmp_path / "outputs" / "report.md").write_text("# Report\n")
    (tmp_path / "outputs" / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))

    payload, receipt = recorder.settle(roots, before, presented=[])
    files = by_path(payload)
    assert payload["summary"] == {"created": 2, "modified": 1, "deleted": 1, "symlink_created": 0,
                                  "additions": 3, "deletions": 2, "truncated": False}
    assert files["/mnt/user-data/workspace/notes.md"]["status"] == "modified"
    assert "-two\n+2\n+three" in files["/mnt/user-data/workspace/notes.md"]["diff"]
    assert files["/mnt/user-data/workspace/old.txt"]["status"] == "deleted"
    assert files["/mnt/user-data/outputs/report.md"]["diff"].endswith("+# Report")
    assert files["/mnt/user-data/outputs/chart.png"]["diff_unavailable_reason"] == "binary"
    assert receipt["produced_paths"] == ["/mnt/user-data/outputs/chart.png", "/mnt/user-data/outputs/report.md"]
    assert receipt["stage"] == "not_started" and receipt["satisfied"] is False
    assert delivery.delivery_error(receipt) == delivery.DELIVERY_INCOMPLETE


def test_nothing_changed_is_no_record_and_touching_a_file_is_no_change(tmp_path):
    roots = roots_in(tmp_path)
    target = tmp_path / "workspace" / "same.txt"
    target.write_text("same\n")
    before = recorder.snapshot_before(roots)
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    payload, receipt = recorder.settle(roots, before, presented=[])
    assert payload is None
    assert receipt == {"presented": 0, "paths": [], "by_tool": {}}
    assert delivery.delivery_error(receipt) is None


def test_an_oversized_diff_is_cut_at_a_line_with_a_marker(tmp_path):
    roots = roots_in(tmp_path)
    before = recorder.snapshot_before(roots)
    (tmp_path / "outputs" / "big.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    limits = Limits(max_diff_bytes_per_file=2000)
    payload, _ = recorder.settle(roots, before, presented=[], limits=limits)
    change = by_path(payload)["/mnt/user-data/outputs/big.txt"]
    assert change["diff_truncated"] is True and payload["summary"]["truncated"] is True
    assert len(change["diff"].encode()) <= 2000 + 100
    last = change["diff"].splitlines()[-1]
    assert last.startswith("\\ diff truncated:") and last.endswith("more bytes not shown")
    assert change["diff"].splitlines()[-2].startswith("+line ")  # cut between lines
    assert change["additions"] == 5000  # counted on the whole diff
    assert TRUNCATION_MARKER.split("{")[0] in change["diff"]


def test_the_total_diff_budget_leaves_later_files_without_a_diff(tmp_path):
    roots = roots_in(tmp_path)
    before = recorder.snapshot_before(roots)
    for name in ("a.txt", "b.txt"):
        (tmp_path / "workspace" / name).write_text("x" * 50 + "\n")
    payload, _ = recorder.settle(roots, before, presented=[], limits=Limits(max_total_diff_bytes=120))
    files = by_path(payload)
    assert files["/mnt/user-data/workspace/a.txt"]["diff"]
    assert files["/mnt/user-data/workspace/b.txt"]["diff_truncated"] is True


def test_secrets_links_and_caches_are_never_read(tmp_path):
    roots = roots_in(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("host secret\n")
    before = recorder.snapshot_before(roots)
    (tmp_path / "workspace" / ".env").write_text("API_KEY=sk-123\n")
    (tmp_path / "workspace" / "link").symlink_to(outside)
    (tmp_path / "workspace" / "node_modules").mkdir()
    (tmp_path / "workspace" / "node_modules" / "pkg.js").write_text("module.exports = 1\n")
    payload, _ = recorder.settle(roots, before, presented=[])
    files = by_path(payload)
    assert set(files) == {"/mnt/user-data/workspace/.env", "/mnt/user-data/workspace/link"}
    assert files["/mnt/user-data/workspace/.env"]["diff"] == "" and files["/mnt/user-data/workspace/.env"]["sensitive"]
    assert files["/mnt/user-data/workspace/.env"]["sha256_after"] is None
    link = files["/mnt/user-data/workspace/link"]
    assert link["status"] == "symlink_created" and link["diff_unavailable_reason"] == "symlink"
    assert "host secret" not in str(payload)


def test_a_huge_tree_is_cut_at_the_scan_limit(tmp_path):
    roots = roots_in(tmp_path)
    before = recorder.snapshot_before(roots)
    for i in range(30):
        (tmp_path / "workspace" / f"f{i:02}.txt").write_text(str(i))
    limits = Limits(max_scanned_files=10, max_files=5)
    payload, _ = recorder.settle(roots, before, presented=[], limits=limits)
    assert payload["summary"]["truncated"] is True
    assert payload["summary"]["created"] == 10 and len(payload["files"]) == 5


def test_unchanged_files_are_not_read_again(tmp_path, monkeypatch):
    roots = roots_in(tmp_path)
    for i in range(20):
        (tmp_path / "workspace" / f"keep{i}.txt").write_text(f"keep {i}\n")
    cache = recorder.SnapshotCache()
    key = ("u", "t")
    before = recorder.snapshot_before(roots, cache=cache, key=key)
    (tmp_path / "workspace" / "new.txt").write_text("new\n")
    opened: list[str] = []
    real_entry = scanner._file_entry

    def counting(root, host, *args, **kwargs):
        opened.append(Path(host).name)
        return real_entry(root, host, *args, **kwargs)

    monkeypatch.setattr(scanner, "_file_entry", counting)
    recorder.settle(roots, before, presented=[], cache=cache, key=key)
    assert opened == ["new.txt"]
    opened.clear()
    recorder.snapshot_before(roots, cache=cache, key=key)  # the next run: all known from the cache
    assert opened == []


def test_the_receipt_matches_presented_paths_to_produced_ones():
    produced = ["/mnt/user-data/outputs/a.md", "/mnt/user-data/outputs/b.md", "/mnt/user-data/outputs/c.md"]
    content = delivery.receipt(presented=["/mnt/user-data/outputs/a.md", "/mnt/user-data/outputs/b.md"], produced=produced)
    assert content["matched_paths"] == produced[:2] and content["stage"] == "presented" and content["satisfied"]
    assert content["by_tool"] == {"present_files": produced[:2]} and content["presented"] == 2
    mismatched = delivery.receipt(presented=["/mnt/user-data/outputs/other.md"], produced=produced)
    assert mismatched["stage"] == "mismatched" and delivery.delivery_error(mismatched)
    folder = delivery.receipt(presented=["/mnt/user-data/outputs/"], produced=produced)
    assert folder["matched_paths"] == produced


def test_presented_paths_come_from_the_latest_turns_successful_calls():
    def present(call_id, paths):
        return AIMessage("", tool_calls=[{"id": call_id, "name": "present_files", "args": {"filepaths": paths}}])

    messages = [
        HumanMessage("first"), present("c0", ["/mnt/user-data/outputs/old.md"]),
        ToolMessage("Presented to the user: /mnt/user-data/outputs/old.md", tool_call_id="c0", name="present_files"),
        HumanMessage("second"), present("c1", ["/mnt/user-data/outputs/x/../a.md"]),
        ToolMessage("Presented to the user: /mnt/user-data/outputs/a.md", tool_call_id="c1", name="present_files"),
        present("c2", ["/mnt/user-data/outputs/missing.md"]),
        ToolMessage("Error: nothing was presented.", tool_call_id="c2", name="present_files", status="error"),
    ]
    assert delivery.presented_in_turn(messages) == ["/mnt/user-data/outputs/a.md"]
