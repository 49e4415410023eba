"""Empty final answers are retried once then reported; length cut-offs are recorded."""

from harness.agents.markers import ERROR_FALLBACK_KEY
from harness.testing import Reply


async def test_empty_answer_retried_once_then_succeeds(agent_factory):
    h = agent_factory(["", "real answer"])
    result = await h.send("hi")
    assert result["messages"][-1].content == "real answer"
    assert "previous reply was empty" in h.model.requests[1].messages[-1].content


async def test_two_empty_answers_become_an_error_fallback(agent_factory):
    h = agent_factory(["", ""])
    result = await h.send("hi")
    last = result["messages"][-1]
    assert last.additional_kwargs[ERROR_FALLBACK_KEY] is True and last.additional_kwargs["error"]["type"] == "empty_response"
    assert h.state()["stop_reason"] == "error_fallback"


async def test_length_finish_reason_is_recorded_and_text_kept(agent_factory):
    h = agent_factory([Reply(text="The answer is long and", finish_reason="length")])
    result = await h.send("hi")
    assert result["messages"][-1].content == "The answer is long and"
    assert h.state()["stop_reason"] == "model_length_capped"


async def test_a_second_failed_answer_in_a_row_leaves_the_thread_readable(agent_factory):
    # The stale error_fallback of the first run is cleared in the same model call that sets the
    # second one: the two writes must fold into one value, not break the step.
    h = agent_factory(["", "", "", ""])
    await h.send("hi")
    result = await h.send("hi again")
    assert result["messages"][-1].additional_kwargs[ERROR_FALLBACK_KEY] is True
    assert h.state()["stop_reason"] == "error_fallback"
