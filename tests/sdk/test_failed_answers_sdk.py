"""An empty answer after the retry, as an official langgraph-sdk user sees it: the stream ends
with an ``error`` event and the run's status is ``error`` with a message saying why (the real
lead agent, its model a loopback OpenAI-compatible server)."""

import pytest

from harness.testing import Reply

pytestmark = [pytest.mark.slow]


def test_an_empty_answer_after_the_retry_is_a_failed_run(sdk, script):
    script(Reply(text=""), Reply(text=""))
    tid = sdk.threads.create()["thread_id"]
    parts = list(sdk.runs.stream(tid, "lead_agent", input={"messages": [{"role": "user", "content": "hello?"}]}))
    assert [p.event for p in parts][-2:] == ["error", "end"]
    assert parts[-2].data["error"] == "empty_response" and "empty answer" in parts[-2].data["message"]

    run = sdk.runs.list(tid)[0]
    assert run["status"] == "error" and run["stop_reason"] == "error_fallback"
    assert "empty answer" in run["error"]
    assert sdk.threads.get(tid)["status"] == "error"
    # the notice stays in the thread, marked for the UI's retry
    last = sdk.threads.get_state(tid)["values"]["messages"][-1]
    assert last["type"] == "ai" and last["additional_kwargs"]["deerflow_error_fallback"] is True

    # runs.wait raises, as it does for any failed run
    script(Reply(text=""), Reply(text=""))
    with pytest.raises(Exception, match="RunError: The model returned an empty answer"):
        sdk.runs.wait(tid, "lead_agent", input={"messages": [{"role": "user", "content": "hello again?"}]})

    script("Here you go.")
    result = sdk.runs.wait(tid, "lead_agent", input={"messages": [{"role": "user", "content": "again"}]})
    assert result["messages"][-1]["content"] == "Here you go."
    assert sdk.runs.list(tid)[0]["status"] == "success"
