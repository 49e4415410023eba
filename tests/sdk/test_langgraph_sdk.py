"""The official langgraph-sdk client against a live Daphne server running the lead agent,
whose model is a loopback OpenAI-compatible server: compatibility as users see it."""

import threading
import time

import httpx
import pytest
from langgraph_sdk.schema import Command

from harness.testing import Reply, call, tool_reply
from tests.support.waiting import HANG_SECONDS

pytestmark = [pytest.mark.slow]

USER = {"messages": [{"role": "user", "content": "hello"}]}


def wait_status(sdk, thread_id, run_id, statuses, timeout=HANG_SECONDS):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = sdk.runs.get(thread_id, run_id)
        if run["status"] in statuses:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run stayed {run['status']}")


def live_logs(live, lines=80) -> str:
    """The last lines each process of the stack wrote, for a failure message."""
    home = live.log_path.parent
    return "\n".join(f"--- {path.name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
                     for path in sorted(home.glob("*.log")))


def wait_requests(model_server, count, timeout=HANG_SECONDS):
    """Until the model server has received ``count`` requests since the script was set."""
    deadline = time.monotonic() + timeout
    while len(model_server.requests) < count:
        assert time.monotonic() < deadline, f"model got {len(model_server.requests)} requests, expected {count}"
        time.sleep(0.05)


def first_event_ids(base_url, headers, tid, run_id, count):
    """The ids of a run's first ``count`` events, read as a client that then drops off would."""
    ids = []
    with httpx.Client(base_url=base_url, headers=headers) as raw:
        with raw.stream("GET", f"/threads/{tid}/runs/{run_id}/stream") as response:
            for line in response.iter_lines():
                if line.startswith("id: "):
                    ids.append(line[4:])
                    if len(ids) == count:
                        break
    return ids


def read_stream(base_url, headers, tid, run_id, *, count=None, last_event_id=None):
    """A run's SSE events as (event, data, id), the first ``count`` of them (all when None), read
    as a client that then drops off would; ``last_event_id`` resumes after that id."""
    import json

    events, current = [], {}
    extra = {"Last-Event-ID": last_event_id} if last_event_id else {}
    with httpx.Client(base_url=base_url, headers={**headers, **extra}, timeout=60) as raw:
        with raw.stream("GET", f"/threads/{tid}/runs/{run_id}/stream", params={"cancel_on_disconnect": "false"}) as response:
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if line.startswith("event: "):
                    current = {"event": line[7:], "id": None, "data": None}
                elif line.startswith("data: "):
                    current["data"] = json.loads(line[6:])
                elif line.startswith("id: "):
                    current["id"] = line[4:]
                elif not line and current:
                    events.append((current["event"], current["data"], current["id"]))
                    current = {}
                    if count is not None and len(events) == count:
                        break
    return events


def answer_text(events, message_id):
    return "".join(data[0]["content"] for event, data, _ in events
                   if event == "messages" and data[0].get("id") == message_id and isinstance(data[0].get("content"), str))


def resume_a_long_answer_anywhere(admitting, admitting_url, resuming_url, headers, script):
    """A 2,000-chunk answer's stream, cut after k events (right after `metadata`, inside the
    answer, after `end`) and resumed with Last-Event-ID on ``resuming_url``: what was read before
    the cut and after it reassembles exactly the answer the thread's state holds, nothing comes
    twice, and the resumed stream ends with `end`."""
    import random

    words = "".join(f"w{i} " for i in range(2000))
    script(Reply(text=words, chunk_size=6))
    tid = admitting.threads.create()["thread_id"]
    run_id = admitting.runs.create(tid, "lead_agent", input=USER, stream_mode=["messages-tuple", "values"])["run_id"]
    cuts = [1, 2, 40, 255, 600, *random.sample(range(3, 1900), 3)]
    reads = [(cut, read_stream(admitting_url, headers, tid, run_id, count=cut)) for cut in cuts]
    assert admitting.runs.join(tid, run_id)["messages"][-1]["content"] == words
    final = admitting.threads.get_state(tid)["values"]["messages"][-1]
    assert final["content"] == words
    whole = read_stream(admitting_url, headers, tid, run_id)
    reads.append((len(whole), whole))  # cut after `end`
    for cut, seen in reads:
        resumed = read_stream(resuming_url, headers, tid, run_id, last_event_id=seen[-1][2])
        assert resumed[-1][0] == "end", cut
        if seen[-1][0] == "end":  # cut after `end` (or the run was shorter than the cut)
            assert [(event, event_id) for event, _, event_id in resumed] == [("end", seen[-1][2])]
            assert answer_text(seen, final["id"]) == words
            continue
        assert answer_text(seen, final["id"]) + answer_text(resumed, final["id"]) == words, cut
        ids = [event_id for _, _, event_id in seen + resumed if event_id]
        assert len(ids) == len(set(ids)), cut


def test_a_long_answer_resumes_from_any_point_without_loss(live, sdk, token, script):
    resume_a_long_answer_anywhere(sdk, f"{live.url}/api", f"{live.urls[-1]}/api", {"Authorization": f"Bearer {token}"}, script)


def test_a_made_up_last_event_id_gets_no_replay(live, sdk, token, script):
    script("Short answer.")
    tid = sdk.threads.create()["thread_id"]
    run_id = sdk.runs.create(tid, "lead_agent", input=USER)["run_id"]
    sdk.runs.join(tid, run_id)
    headers = {"Authorization": f"Bearer {token}"}
    unknown = read_stream(f"{live.url}/api", headers, tid, run_id, last_event_id="99999999999999-9999")
    assert [event for event, _, _ in unknown] == ["gap"] and unknown[0][1]["code"] == "stream_event_id_unknown"
    with httpx.Client(base_url=f"{live.url}/api", headers={**headers, "Last-Event-ID": "not an id"}) as raw:
        response = raw.get(f"/threads/{tid}/runs/{run_id}/stream")
    assert response.status_code == 422 and "Last-Event-ID" in response.json()["detail"]


def test_stream_values_messages_and_custom(sdk, script):
    script("Hello from the loopback model, streamed in pieces.")
    thread = sdk.threads.create(metadata={"purpose": "sdk-test"})
    parts = list(sdk.runs.stream(thread["thread_id"], "lead_agent", input=USER, stream_mode=["values", "messages-tuple", "custom"]))
    events = [p.event for p in parts]
    assert events[0] == "metadata" and events[-1] == "end"
    assert {"values", "messages"} <= set(events)
    ai_chunks = [p.data[0] for p in parts if p.event == "messages" and p.data[0]["type"] == "AIMessageChunk"]
    assert len(ai_chunks) > 1  # really streamed
    assert "".join(c["content"] for c in ai_chunks if isinstance(c["content"], str)) == "Hello from the loopback model, streamed in pieces."
    values = [p.data for p in parts if p.event == "values"][-1]
    assert values["messages"][0]["content"] == "hello"
    assert values["messages"][-1]["content"] == "Hello from the loopback model, streamed in pieces."

    fetched = sdk.threads.get(thread["thread_id"])
    assert fetched["status"] == "idle" and fetched["metadata"]["purpose"] == "sdk-test"
    assert sdk.threads.search(metadata={"purpose": "sdk-test"})[0]["thread_id"] == thread["thread_id"]


def test_wait_create_join_state_and_history(sdk, script):
    script("first", "second")
    thread = sdk.threads.create()
    tid = thread["thread_id"]
    result = sdk.runs.wait(tid, "lead_agent", input=USER)
    assert result["messages"][-1]["content"] == "first"

    run = sdk.runs.create(tid, "lead_agent", input={"messages": [{"role": "user", "content": "more"}]})
    joined = sdk.runs.join(tid, run["run_id"])
    assert joined["messages"][-1]["content"] == "second"
    assert sdk.runs.get(tid, run["run_id"])["status"] == "success"
    assert [r["run_id"] for r in sdk.runs.list(tid)][0] == run["run_id"]

    state = sdk.threads.get_state(tid)
    assert [m["content"] for m in state["values"]["messages"] if m["type"] in ("human", "ai")] == ["hello", "first", "more", "second"]
    assert len(sdk.threads.get_history(tid, limit=2)) == 2
    history = sdk.threads.get_history(tid, limit=100)
    assert history[0]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    assert len(history) < 100  # the whole history, newest first
    older = sdk.threads.get_state(tid, checkpoint_id=history[-1]["checkpoint"]["checkpoint_id"])
    assert len(older["values"].get("messages", [])) < len(state["values"]["messages"])

    sdk.threads.update(tid, metadata={"pinned": True})
    assert sdk.threads.get(tid)["metadata"]["pinned"] is True
    sdk.threads.delete(tid)
    with pytest.raises(httpx.HTTPStatusError) as err:
        sdk.threads.get(tid)
    assert err.value.response.status_code == 404


def test_cancel_interrupt_and_rollback(sdk, script, model_server):
    script("kept", Reply(text="never seen", delay=HANG_SECONDS))
    tid = sdk.threads.create()["thread_id"]
    sdk.runs.wait(tid, "lead_agent", input=USER)
    before = sdk.threads.get_state(tid)["values"]["messages"]

    run = sdk.runs.create(tid, "lead_agent", input={"messages": [{"role": "user", "content": "slow one"}]})
    wait_requests(model_server, 2)
    sdk.runs.cancel(tid, run["run_id"], wait=True, action="rollback")
    assert sdk.runs.get(tid, run["run_id"])["status"] == "interrupted"
    after = sdk.threads.get_state(tid)["values"]["messages"]
    assert [m["content"] for m in after] == [m["content"] for m in before]

    script(Reply(text="never seen", delay=HANG_SECONDS))
    run = sdk.runs.create(tid, "lead_agent", input={"messages": [{"role": "user", "content": "interrupt me"}]})
    wait_requests(model_server, 1)
    sdk.runs.cancel(tid, run["run_id"], wait=True)
    messages = sdk.threads.get_state(tid)["values"]["messages"]
    assert messages[-1]["content"] == "interrupt me"  # what the run did before the cancel stays


def test_busy_thread_reject_and_interrupt_strategy(sdk, script, model_server):
    script(Reply(text="slow", delay=HANG_SECONDS), "replacement")
    tid = sdk.threads.create()["thread_id"]
    first = sdk.runs.create(tid, "lead_agent", input=USER)
    wait_requests(model_server, 1)
    with pytest.raises(httpx.HTTPStatusError) as err:
        sdk.runs.create(tid, "lead_agent", input=USER)
    assert err.value.response.status_code == 409
    assert err.value.response.json()["detail"] == f"Thread {tid} already has an active run"

    second = sdk.runs.create(tid, "lead_agent", input={"messages": [{"role": "user", "content": "instead"}]}, multitask_strategy="interrupt")
    assert sdk.runs.get(tid, first["run_id"])["status"] == "interrupted"
    assert sdk.runs.join(tid, second["run_id"])["messages"][-1]["content"] == "replacement"


def test_join_stream_resumes_after_last_event_id_without_loss(sdk, script):
    script(Reply(text="one two three four five six seven eight nine ten", chunk_size=4))
    tid = sdk.threads.create()["thread_id"]
    parts = list(sdk.runs.stream(tid, "lead_agent", input=USER, stream_mode=["messages-tuple"]))
    run_id = parts[0].data["run_id"]
    full = [(p.event, p.data) for p in parts]
    assert len(full) > 6

    # Reconnect as a client that saw only the first three events would.
    first_three = first_event_ids(sdk.http.client.base_url, dict(sdk.http.client.headers), tid, run_id, 3)
    resumed = list(sdk.runs.join_stream(tid, run_id, last_event_id=first_three[-1]))
    assert [(p.event, p.data) for p in resumed] == full[3:]


def test_resumable_streams_asked_for_the_sdk_way(sdk, script):
    """``stream_resumable=True`` is how the SDK documents asking for a resumable stream; every
    stream here is resumable, so it is accepted and a background run is rejoined mid-way."""
    script("streamed and resumable", Reply(text="a b c d e f g h i j k l", chunk_size=2))
    tid = sdk.threads.create()["thread_id"]
    parts = list(sdk.runs.stream(tid, "lead_agent", input=USER, stream_mode=["messages-tuple", "values"], stream_resumable=True))
    assert parts[0].event == "metadata" and parts[-1].event == "end"
    assert [p.data for p in parts if p.event == "values"][-1]["messages"][-1]["content"] == "streamed and resumable"

    run = sdk.runs.create(tid, "lead_agent", input={"messages": [{"role": "user", "content": "again"}]},
                          stream_mode=["messages-tuple"], stream_resumable=True)
    wait_status(sdk, tid, run["run_id"], {"success"})
    full = [(p.event, p.data) for p in sdk.runs.join_stream(tid, run["run_id"])]
    assert full[-1][0] == "end" and len(full) > 5
    ids = first_event_ids(sdk.http.client.base_url, dict(sdk.http.client.headers), tid, run["run_id"], 4)
    resumed = list(sdk.runs.join_stream(tid, run["run_id"], last_event_id=ids[-1]))
    assert [(p.event, p.data) for p in resumed] == full[4:]
    text = "".join(d[0]["content"] for e, d in full if e == "messages" and d[0]["type"] == "AIMessageChunk")
    assert text == "a b c d e f g h i j k l"


def test_resuming_a_finished_run_after_its_last_event_ends_at_once(sdk, script):
    # A client whose connection dropped just after `end` reconnects with that event's id.
    script("All done.")
    tid = sdk.threads.create()["thread_id"]
    run = sdk.runs.create(tid, "lead_agent", input=USER)
    sdk.runs.join(tid, run["run_id"])
    ids = first_event_ids(sdk.http.client.base_url, dict(sdk.http.client.headers), tid, run["run_id"], 10_000)
    # The read timeout is below the server's heartbeat: a stream that waits fails the test.
    with httpx.Client(base_url=sdk.http.client.base_url, headers=dict(sdk.http.client.headers), timeout=10) as raw:
        with raw.stream("GET", f"/threads/{tid}/runs/{run['run_id']}/stream", headers={"Last-Event-ID": ids[-1]}) as response:
            lines = [line for line in response.iter_lines() if line]
    assert lines[0] == "event: end"


def test_clarification_interrupt_resumed_with_command(sdk, script):
    script(tool_reply(call("ask_clarification", question="Which city should the trip start from?", options=["Paris", "Berlin"])),
           "Great, starting from Berlin.")
    tid = sdk.threads.create()["thread_id"]
    parts = list(sdk.runs.stream(tid, "lead_agent", input={"messages": [{"role": "user", "content": "plan a trip"}]}, stream_mode=["updates"]))
    interrupts = [p.data["__interrupt__"] for p in parts if p.event == "updates" and "__interrupt__" in p.data]
    assert interrupts and interrupts[0][0]["value"]["type"] == "clarification"
    assert "Which city" in interrupts[0][0]["value"]["text"]
    assert sdk.threads.get(tid)["status"] == "interrupted"
    state = sdk.threads.get_state(tid)
    assert state["next"] and state["tasks"][0]["interrupts"]

    result = sdk.runs.wait(tid, "lead_agent", command=Command(resume="Berlin"))
    assert result["messages"][-1]["content"] == "Great, starting from Berlin."
    tool_results = [m for m in result["messages"] if m["type"] == "tool"]
    assert "Berlin" in tool_results[-1]["content"]
    assert sdk.threads.get(tid)["status"] == "idle"


def test_disconnect_cancels_by_default_and_continue_finishes(sdk, script, live):
    # The answer takes a minute: a cancel that works ends the run at once, so the slack costs
    # nothing, and a loaded CI machine still notices the disconnect long before the answer.
    script(Reply(text="slow", delay=60))
    headers = dict(sdk.http.client.headers)
    tid = sdk.threads.create()["thread_id"]

    def stream_and_drop(body):
        with httpx.Client(base_url=f"{live.url}/api", headers=headers, timeout=HANG_SECONDS) as raw:
            with raw.stream("POST", f"/threads/{tid}/runs/stream", json=body) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line.startswith("data: ") and "run_id" in line:
                        return line.split('"run_id":"')[1].split('"')[0]

    run_id = stream_and_drop({"assistant_id": "lead_agent", "input": USER})
    run = wait_status(sdk, tid, run_id, {"interrupted", "success", "error"})
    assert run["status"] == "interrupted", f"run {run_id} was not cancelled; the servers said:\n{live_logs(live)}"

    script(Reply(text="finished anyway", delay=1))
    run_id = stream_and_drop({"assistant_id": "lead_agent", "input": USER, "on_disconnect": "continue"})
    assert sdk.runs.join(tid, run_id)["messages"][-1]["content"] == "finished anyway"
    assert sdk.runs.get(tid, run_id)["status"] == "success"


def test_stateless_runs_and_assistants(sdk, script):
    script("stateless answer")
    parts = list(sdk.runs.stream(None, "lead_agent", input=USER))
    assert parts[-1].event == "end" and parts[0].data["thread_id"]
    assert [a["assistant_id"] for a in sdk.assistants.search()] == ["lead_agent"]
    assert sdk.assistants.get("lead_agent")["graph_id"] == "lead_agent"


def test_bad_tokens_and_other_users_are_refused(live, sdk, script):
    from langgraph_sdk import get_sync_client

    tid = sdk.threads.create()["thread_id"]
    other = get_sync_client(url=f"{live.url}/api", headers={"Authorization": f"Bearer {live.create_user_token('someone-else')}"})
    with pytest.raises(httpx.HTTPStatusError) as err:
        other.threads.get(tid)
    assert err.value.response.status_code == 404
    anonymous = get_sync_client(url=f"{live.url}/api", headers={"Authorization": "Bearer dfp_not-a-real-token"})
    with pytest.raises(httpx.HTTPStatusError) as err:
        anonymous.threads.create()
    assert err.value.response.status_code == 401


def test_a_run_executed_by_a_worker_is_joined_and_cancelled_through_another_server(live, sdk, token, script, model_server):
    """The distributed stack: server A admits, the Celery worker executes, server B serves the
    stream (resumed after an id) and cancels — nothing depends on which process got what."""
    if len(live.urls) < 2:
        pytest.skip("the embedded stack has one server; this runs on the distributed one")
    from langgraph_sdk import get_sync_client

    other = get_sync_client(url=f"{live.urls[1]}/api", headers={"Authorization": f"Bearer {token}"})
    script(Reply(text="one two three four five six seven eight", chunk_size=4))
    tid = sdk.threads.create()["thread_id"]
    parts = list(sdk.runs.stream(tid, "lead_agent", input=USER, stream_mode=["messages-tuple"]))
    run_id = parts[0].data["run_id"]
    full = [(p.event, p.data) for p in parts]

    ids = first_event_ids(f"{live.urls[1]}/api", {"Authorization": f"Bearer {token}"}, tid, run_id, 2)
    assert [(p.event, p.data) for p in other.runs.join_stream(tid, run_id, last_event_id=ids[-1])] == full[2:]
    executed_by = live.shell(f"from apps.runs.models import Run; print(Run.objects.get(pk='{run_id}').lease_owner)")
    assert executed_by.endswith(f":{live.others[-1].pid}")  # the Celery worker, not a server

    cancel_through_another_server(sdk, other, tid, script, model_server)


def cancel_through_another_server(admitting, other, tid, script, model_server):
    """A slow run admitted through one server is cancelled through the other."""
    script(Reply(text="never seen", delay=HANG_SECONDS))
    run = admitting.runs.create(tid, "lead_agent", input={"messages": [{"role": "user", "content": "stop me"}]})
    wait_requests(model_server, 1)
    assert admitting.runs.get(tid, run["run_id"])["status"] == "running"
    other.runs.cancel(tid, run["run_id"], wait=True)
    assert admitting.runs.get(tid, run["run_id"])["status"] == "interrupted"
    assert other.threads.get(tid)["status"] == "idle"
    assert admitting.threads.get_state(tid)["values"]["messages"][-1]["content"] == "stop me"


def test_deerflows_base_url_api_langgraph(live, token, script):
    """DeerFlow's frontend and SDK settings point the client at ``<origin>/api/langgraph``: the
    same API, the same token. A rename the way DeerFlow's frontend does it (update_state with a
    title) shows in the thread list."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=f"{live.url}/api/langgraph", headers={"Authorization": f"Bearer {token}"})
    script("Answer through the langgraph prefix.")
    tid = client.threads.create(metadata={"via": "api-langgraph"})["thread_id"]
    parts = list(client.runs.stream(tid, "lead_agent", input=USER, stream_mode=["values", "messages-tuple"]))
    assert parts[0].event == "metadata" and parts[-1].event == "end"
    assert parts[0].data["thread_id"] == tid
    state = client.threads.get_state(tid)
    assert state["values"]["messages"][-1]["content"] == "Answer through the langgraph prefix."
    assert client.runs.list(tid)[0]["status"] == "success"

    client.threads.update_state(tid, {"title": "Renamed via DeerFlow"})
    assert client.threads.get_state(tid)["values"]["title"] == "Renamed via DeerFlow"
    found = client.threads.search(metadata={"via": "api-langgraph"})
    assert [(t["thread_id"], t["values"].get("title")) for t in found] == [(tid, "Renamed via DeerFlow")]

    anonymous = get_sync_client(url=f"{live.url}/api/langgraph")
    with pytest.raises(httpx.HTTPStatusError) as err:
        anonymous.threads.get(tid)
    assert err.value.response.status_code in (401, 403)
