"""``additional_kwargs.deerflow_seq`` on checkpoint messages (DeerFlow #4666): a client that
reloads merges the thread's state with its message feed, and places every message once and in
order after regenerate, branch and compaction; streamed root ``values`` frames carry the seqs of
the messages from before the run; a seq a client sends back is never stored."""

import pytest

from apps.runs.models import Run, RunEvent
from harness.testing import call, tool_reply
from tests.apps.runs.test_runs_api import new_thread, stream, wait_for_status
from tests.apps.threads.test_compaction import lead  # noqa: F401 (the real lead agent, a kept window of 2)
from tests.apps.threads.test_thread_actions import agent, ask  # noqa: F401 (the two-mode agent fixture)

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=["in_list", "whole_feed"])
def seq_lookup(request, monkeypatch):
    """Both ways the seqs are looked up: an IN list of identities, and (from a long thread's
    many identities on) one read of the thread's message rows, matched in Python."""
    import apps.runs.selectors

    monkeypatch.setattr(apps.runs.selectors, "_SEQ_SCAN_FROM", 10**9 if request.param == "in_list" else 1)
    return request.param


def identity(message):
    return ("tool", message["tool_call_id"]) if message.get("tool_call_id") else ("message", message["id"])


def feed(client, tid, limit=200):
    return client.get(f"/api/threads/{tid}/messages/page?limit={limit}").json()["data"]


def reload_merge(state_messages, rows):
    """What a client shows after a reload, by the seq rule: the feed's rows at their seqs, each
    state message at its ``deerflow_seq`` (replacing the feed's copy there), one without a seq
    after everything (it is newer than the feed)."""
    placed = {row["seq"]: row["content"] for row in rows}
    tail = []
    for message in state_messages:
        seq = (message.get("additional_kwargs") or {}).get("deerflow_seq")
        if seq is None:
            tail.append(message)
        else:
            placed[seq] = message
    return [placed[seq] for seq in sorted(placed)] + tail


def shown(messages):
    return [(m["type"], m["content"]) for m in messages if m["content"] and not (m.get("additional_kwargs") or {}).get("hide_from_ui")]


def assert_exact(client, tid):
    """Every state message carries the seq of its row in the visible feed, and the merge shows
    the feed's conversation once, in order."""
    rows = feed(client, tid)
    seq_of = {identity(r["content"]): r["seq"] for r in rows}
    messages = client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]
    assert [m["additional_kwargs"].get("deerflow_seq") for m in messages] == [seq_of[identity(m)] for m in messages]
    merged = reload_merge(messages, rows)
    assert shown(merged) == shown([r["content"] for r in rows])
    assert len({identity(m) for m in merged}) == len(merged)
    return messages


def test_state_and_history_place_every_message_after_regenerate_and_edit(user_client, agent, seq_lookup):
    agent(tool_reply(call("progress", note="looking")), "a1", "a2", "a2 again", "a2 edited")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    messages = assert_exact(user_client, tid)
    assert any(m["type"] == "tool" for m in messages)  # a tool result is placed by its call

    run = user_client.post(f"/api/threads/{tid}/runs/regenerate", {}, format="json").json()
    wait_for_status(run["run_id"], {"success"})
    messages = assert_exact(user_client, tid)
    assert shown(messages)[-2:] == [("human", "q2"), ("ai", "a2 again")]

    run = user_client.post(f"/api/threads/{tid}/runs/edit-regenerate", {"content": "q2, edited"}, format="json").json()
    wait_for_status(run["run_id"], {"success"})
    messages = assert_exact(user_client, tid)
    assert shown(messages)[-2:] == [("human", "q2, edited"), ("ai", "a2 edited")]

    # the newest history entry is the state; older ones carry the seqs their messages had
    history = user_client.post(f"/api/threads/{tid}/history", {"limit": 50}, format="json").json()
    assert history[0]["values"]["messages"] == messages
    replaced = [m for h in history for m in h["values"].get("messages", []) if m["content"] == "a2"]
    assert replaced and all("deerflow_seq" not in m["additional_kwargs"] for m in replaced)  # not in the feed


def test_a_branch_stamps_the_seqs_of_its_own_feed(user_client, agent):
    agent("a1", "a2", "on the branch")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    first = Run.objects.get(thread_id=tid).pk
    ask(user_client, tid, "q2")
    branch = user_client.post(f"/api/threads/{tid}/branches", {"run_id": str(first)}, format="json")
    assert branch.status_code == 201, branch.content
    bid = branch.json()["thread_id"]
    messages = assert_exact(user_client, bid)
    assert shown(messages) == [("human", "q1"), ("ai", "a1")]
    ask(user_client, bid, "q3")
    assert shown(assert_exact(user_client, bid)) == [("human", "q1"), ("ai", "a1"), ("human", "q3"), ("ai", "on the branch")]


def test_after_compaction_the_kept_window_is_placed_where_it_was(user_client, lead, script):
    lead("a1", "a2", "a3")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    ask(user_client, tid, "q2")
    script("SUMMARY: q1 was asked.")
    assert user_client.post(f"/api/threads/{tid}/compact").status_code == 200
    messages = assert_exact(user_client, tid)
    assert shown(messages) == [("human", "q2"), ("ai", "a2")]  # the kept window, placed after q1 and a1
    ask(user_client, tid, "q3")
    messages = assert_exact(user_client, tid)
    assert shown(reload_merge(messages, feed(user_client, tid))) == [
        ("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2"), ("human", "q3"), ("ai", "a3")]


def test_a_reload_with_a_short_page_places_the_older_state_messages_before_it(user_client, agent):
    agent("a1", "a2", "a3")
    tid = new_thread(user_client)
    for q in ("q1", "q2", "q3"):
        ask(user_client, tid, q)
    messages = user_client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]
    window = feed(user_client, tid, limit=2)  # the first page a client loads: q3, a3
    assert shown([r["content"] for r in window]) == [("human", "q3"), ("ai", "a3")]
    assert shown(reload_merge(messages, window)) == [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2"),
                                                     ("human", "q3"), ("ai", "a3")]


def test_streamed_values_frames_carry_the_seqs_of_older_messages(user_client, agent, seq_lookup):
    agent("a1", "a2")
    tid = new_thread(user_client)
    ask(user_client, tid, "q1")
    seq_of = {identity(r["content"]): r["seq"] for r in feed(user_client, tid)}
    _, events = stream(user_client, f"/api/threads/{tid}/runs/stream",
                       {"input": {"messages": [{"role": "user", "content": "q2"}]}, "stream_mode": ["values"]})
    frames = [e["data"]["messages"] for e in events if e["event"] == "values"]
    assert frames
    for frame in frames:
        older, new = frame[:2], frame[2:]
        assert [m["additional_kwargs"]["deerflow_seq"] for m in older] == [seq_of[identity(m)] for m in older]
        assert all("deerflow_seq" not in m["additional_kwargs"] for m in new)  # journaled as the run goes
    assert shown(frames[-1]) == [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2")]
    # nothing of the stamp reached the checkpoint or the journal
    assert not RunEvent.objects.filter(thread_id=tid, content__additional_kwargs__has_key="deerflow_seq").exists()


def test_a_seq_sent_back_by_a_client_is_not_stored(user_client, agent):
    agent("a1", "a2")
    tid = new_thread(user_client)
    body = {"input": {"messages": [{"role": "user", "content": "q1", "additional_kwargs": {"deerflow_seq": 999}}]}}
    run = user_client.post(f"/api/threads/{tid}/runs", body, format="json").json()
    wait_for_status(run["run_id"], {"success"})
    assert "deerflow_seq" not in Run.objects.get(pk=run["run_id"]).kwargs["input"]["messages"][0].get("additional_kwargs", {})
    human = user_client.get(f"/api/threads/{tid}/state").json()["values"]["messages"][0]
    row = RunEvent.objects.get(thread_id=tid, event_type="llm.human.input")
    assert human["additional_kwargs"]["deerflow_seq"] == row.seq != 999
    assert "deerflow_seq" not in row.content["additional_kwargs"]

    # a state update writing back a message as read: the stamp is not kept
    state = user_client.get(f"/api/threads/{tid}/state").json()
    note = {"type": "ai", "content": "a note", "id": "note-1", "additional_kwargs": {"deerflow_seq": 12345}}
    response = user_client.post(f"/api/threads/{tid}/state", {"values": {"messages": [note]}}, format="json")
    assert response.status_code == 200, response.content
    messages = user_client.get(f"/api/threads/{tid}/state").json()["values"]["messages"]
    assert messages[-1]["id"] == "note-1" and "deerflow_seq" not in messages[-1]["additional_kwargs"]
    assert len(messages) == len(state["values"]["messages"]) + 1
