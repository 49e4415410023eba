"""Subagents through the API: streamed task events, persisted subagent events, paging one
subagent's steps, and its usage in the run."""

import pytest

from apps.runs.models import Run, RunEvent
from harness.testing import call, tool_reply
from tests.support.subagents import Router, task_call

from .test_runs_api import new_thread, stream

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def lead_with_subagents(scripted_agent, settings):
    settings.DEERFLOW_AGENT_FACTORY = "tests.support.agents:make_scripted_lead_agent"
    return scripted_agent


def two_subagents():
    return Router(lead=[tool_reply(task_call("List files", "job A"), task_call("Count lines", "job B")), "Both done."],
                  subs={"job A": [tool_reply(call("ls", description="look", path="/mnt/user-data/workspace")), "A: the workspace is empty"],
                        "job B": ["B: zero lines"]})


def run_body(**extra):
    return {"input": {"messages": [{"role": "user", "content": "two things"}]}, "stream_mode": ["custom", "values"],
            "context": {"subagent_enabled": True, **extra}}


def test_task_events_stream_in_order_and_are_persisted_and_paged(user_client, lead_with_subagents):
    lead_with_subagents(two_subagents(), loop=True)
    tid = new_thread(user_client)
    response, events = stream(user_client, f"/api/threads/{tid}/runs/stream", run_body())
    custom = [e["data"] for e in events if e["event"] == "custom"]
    by_task: dict[str, list[str]] = {}
    for item in custom:
        by_task.setdefault(item["task_id"], []).append(item["type"])
    assert len(by_task) == 2
    for kinds in by_task.values():
        assert kinds[0] == "task_started" and kinds[-1] == "task_completed"
        assert set(kinds[1:-1]) == {"task_running"}
    a_id = next(i["task_id"] for i in custom if i["type"] == "task_started" and i["description"] == "List files")
    a_running = [i for i in custom if i["task_id"] == a_id and i["type"] == "task_running"]
    assert [i["message_index"] for i in a_running] == [1, 2, 3]  # ls call, its result, the answer
    assert a_running[-1]["usage"]["total_tokens"] > 0

    run_id = response["Content-Location"].rsplit("/", 1)[1]
    rows = RunEvent.objects.filter(run_id=run_id, category="subagent").order_by("seq")
    assert [r.event_type for r in rows if r.metadata["task_id"] == a_id] == ["subagent.start", "subagent.step", "subagent.step",
                                                                             "subagent.step", "subagent.end"]
    end = next(r for r in rows if r.event_type == "subagent.end" and r.metadata["task_id"] == a_id)
    assert end.content["status"] == "completed" and end.content["result"] == "A: the workspace is empty"

    # one subagent's steps, a page at a time
    url = f"/api/threads/{tid}/runs/{run_id}/events"
    first = user_client.get(url, {"event_types": "subagent.step", "task_id": a_id, "limit": 2}).json()
    assert [e["content"]["message_index"] for e in first] == [1, 2]
    assert first[0]["content"]["kind"] == "ai" and first[0]["content"]["tool_calls"][0]["name"] == "ls"
    assert first[1]["content"]["kind"] == "tool" and first[1]["content"]["tool_name"] == "ls"
    rest = user_client.get(url, {"event_types": "subagent.step", "task_id": a_id, "limit": 2, "after_seq": first[-1]["seq"]}).json()
    assert [e["content"]["message_index"] for e in rest] == [3]
    assert user_client.get(url, {"limit": 0}).status_code == 422


def test_subagent_usage_is_summed_into_the_run(user_client, lead_with_subagents):
    lead_with_subagents(two_subagents(), loop=True)
    tid = new_thread(user_client)
    response, events = stream(user_client, f"/api/threads/{tid}/runs/stream", run_body())
    run = Run.objects.get(thread_id=tid)
    ends = RunEvent.objects.filter(run=run, event_type="subagent.end")
    sub_tokens = sum(e.content["usage"]["total_tokens"] for e in ends)
    assert sub_tokens > 0 and run.token_usage["subagent_tokens"] == sub_tokens
    lead_tokens = sum((e.metadata.get("usage") or {}).get("total_tokens", 0) for e in RunEvent.objects.filter(run=run, event_type="llm.ai.response"))
    assert run.input_tokens + run.output_tokens == lead_tokens + sub_tokens
    # three lead-or-subagent model calls for A's 2 + B's 1, plus the lead's two
    assert run.token_usage["llm_call_count"] == 5
    info = user_client.get(f"/api/threads/{tid}/runs/{run.pk}").json()
    assert info["subagent_tokens"] == sub_tokens and info["lead_agent_tokens"] == lead_tokens


def test_without_the_run_option_there_is_no_task_tool(user_client, lead_with_subagents):
    model = lead_with_subagents("plain answer", loop=True)
    tid = new_thread(user_client)
    stream(user_client, f"/api/threads/{tid}/runs/stream", {"input": {"messages": [{"role": "user", "content": "hi"}]}})
    assert "task" not in model.requests[0].tools
    stream(user_client, f"/api/threads/{tid}/runs/stream", run_body())
    assert "task" in model.requests[-1].tools and "Delegation" in model.requests[-1].system_text


def test_with_stream_subgraphs_task_events_stay_root_and_subagents_send_no_frames(user_client, lead_with_subagents):
    lead_with_subagents(two_subagents(), loop=True)
    tid = new_thread(user_client)
    body = {**run_body(), "stream_mode": ["custom", "values", "messages-tuple"], "stream_subgraphs": True}
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream", body)
    names = {e["event"] for e in events}
    assert "custom" in names and not any(n.startswith("custom|") for n in names)
    # a subagent is its own graph, not a subgraph: none of its tokens pose as the lead's
    texts = "".join(e["data"][0].get("content") or "" for e in events if e["event"].split("|")[0] == "messages"
                    and e["data"][0].get("type") == "AIMessageChunk" and isinstance(e["data"][0].get("content"), str))
    assert "A: the workspace is empty" not in texts and "Both done." in texts
    assert not any("|" in n for n in names)


def test_cancelling_the_run_cancels_its_subagent_and_records_it(user_client, lead_with_subagents):
    from .test_runs_api import wait_for_model_calls

    router = Router(lead=[tool_reply(task_call("Wait", "job W")), "unreachable"],
                    subs={"job W": [tool_reply(call("bash", description="wait", command="sleep 30")), "unreachable"]})
    model = lead_with_subagents(router, loop=True)
    tid = new_thread(user_client)
    run = user_client.post(f"/api/threads/{tid}/runs", run_body(), format="json").json()
    wait_for_model_calls(model, 2)  # the lead's call, then the subagent's: the subagent is running its command
    assert user_client.post(f"/api/threads/{tid}/runs/{run['run_id']}/cancel?wait=true").status_code == 204
    row = Run.objects.get(pk=run["run_id"])
    assert row.status == "interrupted" and row.stop_reason == "cancelled"
    ends = RunEvent.objects.filter(run_id=run["run_id"], event_type="subagent.end")
    assert [e.content["status"] for e in ends] == ["cancelled"]
    assert len(model.requests) == 2  # nothing ran after the cancel
