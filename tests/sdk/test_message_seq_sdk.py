"""A reload as an official langgraph-sdk client does it: the thread's state (``get_state``,
``get_history``) merged with the message feed (``/messages/page``) by ``deerflow_seq`` shows every
message once and in order after regenerate, branch and compaction; ``runs.stream`` frames carry
the seqs of the messages from before the run (the real lead agent, a loopback model)."""

import pytest

pytestmark = [pytest.mark.slow]


def identity(message):
    return ("tool", message["tool_call_id"]) if message.get("tool_call_id") else ("message", message["id"])


def shown(messages):
    return [(m["type"], m["content"]) for m in messages if m["content"] and not (m.get("additional_kwargs") or {}).get("hide_from_ui")]


def feed(sdk, tid, limit=200):
    return sdk.http.get(f"/threads/{tid}/messages/page", params={"limit": limit})["data"]


def reload(sdk, tid, limit=200):
    """(what the merge shows, the state's messages): the feed's rows at their seqs, each state
    message at its deerflow_seq, one without a seq after them."""
    rows = feed(sdk, tid, limit)
    messages = sdk.threads.get_state(tid)["values"]["messages"]
    placed = {r["seq"]: r["content"] for r in rows}
    tail = [m for m in messages if "deerflow_seq" not in m["additional_kwargs"]]
    placed.update({m["additional_kwargs"]["deerflow_seq"]: m for m in messages if "deerflow_seq" in m["additional_kwargs"]})
    merged = [placed[s] for s in sorted(placed)] + tail
    assert len({identity(m) for m in merged}) == len(merged), "a message shown twice"
    return merged, messages


def ask(sdk, tid, text):
    return sdk.runs.wait(tid, "lead_agent", input={"messages": [{"role": "user", "content": text}]})


def test_a_reload_places_every_message_after_regenerate_branch_and_compaction(sdk, script):
    script("a1", "a2", "a2 again", "on the branch")
    tid = sdk.threads.create()["thread_id"]
    ask(sdk, tid, "q1")
    ask(sdk, tid, "q2")
    run = sdk.http.post(f"/threads/{tid}/runs/regenerate", json={})
    sdk.runs.join(tid, run["run_id"])
    merged, messages = reload(sdk, tid)
    expected = [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2 again")]
    assert shown(merged) == expected and shown(messages) == expected
    assert all("deerflow_seq" in m["additional_kwargs"] for m in messages)
    # a client that loaded only the newest page still places the older turn first
    assert shown(reload(sdk, tid, limit=2)[0]) == expected
    assert sdk.threads.get_history(tid, limit=1)[0]["values"]["messages"] == messages

    branch = sdk.http.post(f"/threads/{tid}/branches", json={"message_id": messages[1]["id"]})
    bid = branch["thread_id"]
    ask(sdk, bid, "and then?")
    merged, messages = reload(sdk, bid)
    assert shown(merged) == [("human", "q1"), ("ai", "a1"), ("human", "and then?"), ("ai", "on the branch")]
    assert [m["additional_kwargs"]["deerflow_seq"] for m in messages] == [r["seq"] for r in feed(sdk, bid)]

    # past the kept window (20 messages) a compaction summarizes the oldest turns away
    script(*[f"more {n}" for n in range(10)], "SUMMARY: q1 and q2 were asked.", "after the summary")
    for n in range(10):
        ask(sdk, tid, f"more q{n}")
    compacted = sdk.http.post(f"/threads/{tid}/compact", json={})
    assert compacted["summarized_messages"] == 4 and compacted["kept_messages"] == 20
    ask(sdk, tid, "one more")
    merged, messages = reload(sdk, tid)
    assert len(shown(messages)) == 22  # q1 and q2 are gone from the state, not from the thread
    assert shown(merged) == expected + [t for n in range(10) for t in (("human", f"more q{n}"), ("ai", f"more {n}"))] + [
        ("human", "one more"), ("ai", "after the summary")]
    assert shown(reload(sdk, tid, limit=4)[0]) == shown(merged)[4:]  # the state reaches back past the page, in order


def test_stream_frames_carry_the_seqs_of_the_messages_from_before_the_run(sdk, script):
    script("a1", "a2")
    tid = sdk.threads.create()["thread_id"]
    ask(sdk, tid, "q1")
    seqs = [r["seq"] for r in feed(sdk, tid)]
    frames = [p.data["messages"] for p in sdk.runs.stream(tid, "lead_agent", input={"messages": [{"role": "user", "content": "q2"}]},
                                                            stream_mode="values") if p.event == "values"]
    assert frames and all([m["additional_kwargs"].get("deerflow_seq") for m in f[:2]] == seqs for f in frames)
    assert shown(frames[-1]) == [("human", "q1"), ("ai", "a1"), ("human", "q2"), ("ai", "a2")]
