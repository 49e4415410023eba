"""Through the API, with the real lead agent and its sandbox tools around the scripted model:
a run's workspace changes and its delivery receipt, and the route's answers to bad requests."""

from __future__ import annotations

import uuid

import pytest

from apps.runs.models import Run, RunEvent
from harness.testing import call, tool_reply
from harness.workspace_changes.delivery import DELIVERY_INCOMPLETE
from tests.apps.threads.conftest import read_body

pytestmark = [pytest.mark.django_db(transaction=True)]

OUT = "/mnt/user-data/outputs"


@pytest.fixture
def lead_agent(scripted_agent, settings):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    return scripted_agent


def new_thread(client) -> str:
    response = client.post("/api/threads", {}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["thread_id"]


def run_wait(client, tid: str, text: str = "make the files") -> Run:
    response = client.post(f"/api/threads/{tid}/runs/wait", {"assistant_id": "lead_agent",
                           "input": {"messages": [{"role": "user", "content": text}]}}, format="json")
    read_body(response)
    return Run.objects.filter(thread_id=tid).order_by("-created_at").first()


def changes(client, tid: str, run_id, query: str = ""):
    return client.get(f"/api/threads/{tid}/runs/{run_id}/workspace-changes{query}")


def write(path: str, content: str):
    return call("write_file", description=f"write {path}", path=path, content=content)


def test_a_run_that_writes_three_files_and_presents_two_has_its_receipt_and_all_three_changes(user_client, lead_agent):
    lead_agent(
        tool_reply(write(f"{OUT}/report.md", "# Report\nall good\n"), write(f"{OUT}/data.csv", "a,b\n1,2\n"),
                   write("/mnt/user-data/workspace/scratch.py", "print('draft')\n")),
        tool_reply(call("present_files", filepaths=[f"{OUT}/report.md", f"{OUT}/data.csv"])),
        "Here are the report and the data.",
    )
    tid = new_thread(user_client)
    run = run_wait(user_client, tid)
    assert run.status == "success", run.error

    response = changes(user_client, tid, run.pk)
    assert response.status_code == 200
    body = response.json()
    assert body["available"] is True and body["version"] == 1
    files = {f["path"]: f for f in body["files"]}
    assert set(files) == {f"{OUT}/report.md", f"{OUT}/data.csv", "/mnt/user-data/workspace/scratch.py"}
    assert all(f["status"] == "created" for f in files.values())
    assert "+# Report\n+all good" in files[f"{OUT}/report.md"]["diff"]
    assert "+print('draft')" in files["/mnt/user-data/workspace/scratch.py"]["diff"]
    assert body["summary"]["created"] == 3 and body["summary"]["additions"] == 5
    assert set(body["limits"]) >= {"max_files", "max_scanned_files", "max_file_bytes_for_diff", "max_total_diff_bytes"}

    receipt = body["delivery"]
    assert receipt["produced_paths"] == [f"{OUT}/data.csv", f"{OUT}/report.md"]
    assert receipt["presented_paths"] == [f"{OUT}/report.md", f"{OUT}/data.csv"]
    assert receipt["matched_paths"] == [f"{OUT}/data.csv", f"{OUT}/report.md"]
    assert receipt["stage"] == "presented" and receipt["satisfied"] is True
    # Both are journal events of the run, in DeerFlow's names and categories.
    events = user_client.get(f"/api/threads/{tid}/runs/{run.pk}/events?event_types=workspace_changes,run.delivery").json()
    assert [(e["event_type"], e["category"]) for e in events] == [("workspace_changes", "workspace"), ("run.delivery", "outputs")]
    assert events[0]["content"] == "3 files changed +5 -0"

    without_diffs = changes(user_client, tid, run.pk, "?include_diff=false").json()
    assert len(without_diffs["files"]) == 3 and all(f["diff"] == "" for f in without_diffs["files"])
    assert changes(user_client, tid, run.pk, "?include_files=false").json()["files"] == []
    # The same route under DeerFlow's LangGraph prefix.
    assert user_client.get(f"/api/langgraph/threads/{tid}/runs/{run.pk}/workspace-changes").json()["summary"] == body["summary"]


def test_a_run_whose_changed_outputs_were_never_presented_is_an_error(user_client, lead_agent):
    lead_agent(tool_reply(write(f"{OUT}/summary.md", "# Summary\n")), "Done, the summary is written.")
    tid = new_thread(user_client)
    run = run_wait(user_client, tid)
    assert run.status == "error" and run.error == DELIVERY_INCOMPLETE
    info = user_client.get(f"/api/threads/{tid}/runs/{run.pk}").json()
    assert info["status"] == "error"
    body = changes(user_client, tid, run.pk).json()
    assert [f["path"] for f in body["files"]] == [f"{OUT}/summary.md"]
    assert body["delivery"]["stage"] == "not_started" and body["delivery"]["satisfied"] is False
    assert body["delivery"]["matched_paths"] == []
    # The thread is not stuck: the next run goes ahead.
    lead_agent("Anything else?")
    assert run_wait(user_client, tid, "thanks").status == "success"


def test_a_chat_answer_that_touches_no_files_has_a_receipt_and_no_changes(user_client, lead_agent):
    lead_agent("Just an answer.")
    tid = new_thread(user_client)
    run = run_wait(user_client, tid)
    assert run.status == "success"
    body = changes(user_client, tid, run.pk).json()
    assert body["available"] is False and body["files"] == [] and body["summary"]["created"] == 0
    assert body["delivery"] == {"presented": 0, "paths": [], "by_tool": {}}


def test_the_second_run_sees_only_its_own_changes_with_a_diff_of_the_edit(user_client, lead_agent):
    lead_agent(tool_reply(write("/mnt/user-data/workspace/notes.md", "one\ntwo\n")), "Noted.")
    tid = new_thread(user_client)
    run_wait(user_client, tid)
    lead_agent(tool_reply(call("read_file", description="look", path="/mnt/user-data/workspace/notes.md")),
               tool_reply(call("str_replace", description="fix", path="/mnt/user-data/workspace/notes.md",
                               old_str="two", new_str="2")), "Fixed.")
    second = run_wait(user_client, tid, "fix it")
    body = changes(user_client, tid, second.pk).json()
    assert [(f["path"], f["status"]) for f in body["files"]] == [("/mnt/user-data/workspace/notes.md", "modified")]
    assert "-two\n+2" in body["files"][0]["diff"]
    assert body["summary"]["additions"] == 1 and body["summary"]["deletions"] == 1


def test_an_oversized_diff_is_cut_with_a_marker(user_client, lead_agent):
    # ~110 KB of lines, past the per-file diff cut; made by a command, as a model would.
    lead_agent(tool_reply(call("bash", description="number the lines", command="seq 1 20000 > /mnt/user-data/workspace/big.txt")),
               "Wrote it.")
    tid = new_thread(user_client)
    run = run_wait(user_client, tid)
    body = changes(user_client, tid, run.pk).json()
    change = body["files"][0]
    assert change["path"] == "/mnt/user-data/workspace/big.txt" and change["size_after"] > 100_000
    assert change["diff_truncated"] is True and body["summary"]["truncated"] is True
    lines = change["diff"].splitlines()
    assert lines[-1].startswith("\\ diff truncated:") and lines[-1].endswith("more bytes not shown")
    assert lines[-2].startswith("+") and lines[-2][1:].isdigit()  # cut between lines
    assert len(change["diff"].encode()) <= body["limits"]["max_diff_bytes_per_file"] + 100
    assert change["additions"] == 20000  # counted on the whole file


def test_a_long_tool_result_saved_for_the_agent_is_not_an_output_to_deliver(user_client, lead_agent):
    # 20 000 numbered lines: past tool_output.externalize_min_chars, so the guard saves the
    # result under outputs/.tool-results/ for read_file; that file is scratch, not a deliverable.
    lead_agent(tool_reply(call("bash", description="count", command="seq 1 20000")), "Counted to 20000.")
    tid = new_thread(user_client)
    run = run_wait(user_client, tid)
    assert run.status == "success", run.error
    seen = RunEvent.objects.filter(run_id=run.pk, category="message", event_type="llm.tool.result").first()
    assert seen is not None and ".tool-results/" in str(seen.content)  # the guard did save it
    body = changes(user_client, tid, run.pk).json()
    assert body["files"] == [] and body["delivery"] == {"presented": 0, "paths": [], "by_tool": {}}


def test_unknown_foreign_and_running_runs(user_client, lead_agent, api_client, other_user, user):
    lead_agent("Hi.")
    tid = new_thread(user_client)
    run = run_wait(user_client, tid)
    unknown = changes(user_client, tid, uuid.uuid4())
    assert unknown.status_code == 404 and unknown.json()["detail"]
    assert changes(user_client, tid, "not-a-uuid").status_code == 404
    assert changes(user_client, "no-such-thread", run.pk).status_code == 404
    api_client.force_authenticate(other_user)
    assert changes(api_client, tid, run.pk).status_code == 404  # another user's run is not there
    bad = changes(user_client, tid, run.pk, "?include_diff=maybe")
    assert bad.status_code == 422 and "include_diff" in bad.json()["detail"]

    running = Run.objects.create(thread_id=tid, owner=user, status="running")
    busy = changes(user_client, tid, running.pk)
    assert busy.status_code == 409 and "still running" in busy.json()["detail"]
    assert not RunEvent.objects.filter(run=running).exists()


def test_a_cancelled_run_settles_with_its_receipt(user_client, user):
    """Cancelled while queued, or after its process died: the canceller settles it, and the run
    has the receipt of a run that delivered nothing, as a finished one would."""
    from datetime import timedelta

    from django.utils import timezone

    tid = new_thread(user_client)
    queued = Run.objects.create(thread_id=tid, owner=user, status="pending")
    orphan = Run.objects.create(thread_id=new_thread(user_client), owner=user, status="running", lease_owner="gone:1",
                                lease_expires_at=timezone.now() - timedelta(minutes=1))
    for run in (queued, orphan):
        response = user_client.post(f"/api/threads/{run.thread_id}/runs/{run.pk}/cancel")
        assert response.status_code in (200, 202, 204), response.content
        run.refresh_from_db()
        assert run.status == "interrupted"
        assert changes(user_client, run.thread_id, run.pk).json()["delivery"] == {"presented": 0, "paths": [], "by_tool": {}}
