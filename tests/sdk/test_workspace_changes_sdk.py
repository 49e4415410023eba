"""Workspace changes and the delivery receipt as a langgraph-sdk user reaches them: the run
through the SDK, the record through the SDK's own HTTP client, on the live stack (embedded, and
the distributed one where a Celery worker executes the run)."""

from __future__ import annotations

import httpx
import pytest

from harness.testing import Reply, call, tool_reply

pytestmark = [pytest.mark.slow]

OUT = "/mnt/user-data/outputs"


def write(path: str, content: str):
    return call("write_file", description=f"write {path}", path=path, content=content)


def ask(sdk, text: str) -> tuple[str, dict, dict]:
    tid = sdk.threads.create()["thread_id"]
    result = sdk.runs.wait(tid, "lead_agent", input={"messages": [{"role": "user", "content": text}]}, raise_error=False)
    return tid, sdk.runs.list(tid)[0], result


def test_three_files_written_two_presented(sdk, script):
    script(
        tool_reply(write(f"{OUT}/a.md", "# A\n"), write(f"{OUT}/b.md", "# B\n"), write("/mnt/user-data/workspace/c.txt", "c\n")),
        tool_reply(call("present_files", filepaths=[f"{OUT}/a.md", f"{OUT}/b.md"])),
        Reply(text="Two files for you."),
    )
    tid, run, _ = ask(sdk, "write them")
    assert run["status"] == "success"
    body = sdk.http.get(f"/threads/{tid}/runs/{run['run_id']}/workspace-changes")
    assert body["available"] is True
    assert sorted(f["path"] for f in body["files"]) == [f"{OUT}/a.md", f"{OUT}/b.md", "/mnt/user-data/workspace/c.txt"]
    assert all(f["diff"].startswith("--- a/mnt/user-data/") for f in body["files"])
    assert body["delivery"]["matched_paths"] == [f"{OUT}/a.md", f"{OUT}/b.md"] and body["delivery"]["satisfied"] is True
    events = sdk.http.get(f"/threads/{tid}/runs/{run['run_id']}/events", params={"event_types": "run.delivery"})
    assert [e["content"]["stage"] for e in events] == ["presented"]


def test_an_unpresented_output_fails_the_run_and_unknown_runs_are_404(sdk, script):
    script(tool_reply(write(f"{OUT}/lost.md", "# Lost\n")), Reply(text="Written."))
    tid, run, result = ask(sdk, "write it")
    assert run["status"] == "error"
    assert "Artifact delivery incomplete" in result["__error__"]["message"]  # what runs.wait raises by default
    body = sdk.http.get(f"/threads/{tid}/runs/{run['run_id']}/workspace-changes")
    assert body["delivery"]["stage"] == "not_started" and body["delivery"]["produced_paths"] == [f"{OUT}/lost.md"]
    with pytest.raises(httpx.HTTPStatusError) as err:
        sdk.http.get(f"/threads/{tid}/runs/00000000-0000-4000-8000-000000000000/workspace-changes")
    assert err.value.response.status_code == 404
