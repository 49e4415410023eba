"""The official langgraph-sdk client reads a subagent's ``custom`` task events from
``runs.stream``, and finds its steps through the run's events route."""

import httpx
import pytest

from harness.testing import call, tool_reply

pytestmark = [pytest.mark.slow]


def test_sdk_stream_carries_task_events(sdk, script, live, token):
    script(tool_reply(call("task", description="Check the date", prompt="Say what day it is.")), "It is Tuesday.", "The subagent says Tuesday.")
    thread = sdk.threads.create()
    tid = thread["thread_id"]
    parts = list(sdk.runs.stream(tid, "lead_agent", input={"messages": [{"role": "user", "content": "what day?"}]},
                                 stream_mode=["custom", "values"], context={"subagent_enabled": True}))
    custom = [p.data for p in parts if p.event == "custom"]
    kinds = [c["type"] for c in custom]
    assert kinds[0] == "task_started" and kinds[-1] == "task_completed" and "task_running" in kinds
    assert custom[0]["description"] == "Check the date"
    assert custom[-1]["result"] == "It is Tuesday."
    values = [p.data for p in parts if p.event == "values"][-1]
    assert values["messages"][-1]["content"] == "The subagent says Tuesday."
    assert values["delegations"][0]["status"] == "completed"

    run_id = sdk.runs.list(tid)[0]["run_id"]
    with httpx.Client(base_url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"}) as raw:
        steps = raw.get(f"/threads/{tid}/runs/{run_id}/events",
                        params={"event_types": "subagent.step", "task_id": custom[0]["task_id"]}).json()
    assert [s["content"]["text"] for s in steps] == ["It is Tuesday."]
