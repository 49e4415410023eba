"""ask_clarification interrupts the run with a readable and a structured request; resume continues."""

from langgraph.types import Command

from harness.agents.middlewares.clarification import MAX_FIELDS, build_request, readable_text
from harness.testing import call, tool_reply
from harness.tools.builtins import get_builtin_tools


async def test_clarification_interrupts_and_resumes_with_the_answer(agent_factory):
    h = agent_factory([
        tool_reply(call("ask_clarification", question="Which format?", options=["PDF", "Markdown", "PDF", " "])),
        "Writing it as Markdown.",
    ], tools=get_builtin_tools())
    result = await h.send("write a report")
    interrupts = result["__interrupt__"]
    value = interrupts[0].value
    assert value["type"] == "clarification"
    assert value["human_input"] == {"question": "Which format?", "mode": "choice_with_other", "version": 1, "options": ["PDF", "Markdown"]}
    assert "1. PDF" in value["text"] and "2. Markdown" in value["text"]
    assert len(h.model.requests) == 1  # paused, the model was not called again

    resumed = await h.graph.ainvoke(Command(resume="Markdown"), h.config())
    tool_msg = [m for m in resumed["messages"] if m.type == "tool"][-1]
    assert tool_msg.name == "ask_clarification" and "The user answered:\nMarkdown" in tool_msg.content
    assert tool_msg.artifact["human_input"]["mode"] == "choice_with_other"
    assert resumed["messages"][-1].content == "Writing it as Markdown."
    # the model saw the answer
    assert "Markdown" in h.model.requests[-1].messages[-1].content


async def test_a_new_message_instead_of_an_answer_repairs_the_pending_call(agent_factory):
    h = agent_factory([tool_reply(call("ask_clarification", question="Which?")), "ok, going with your message"], tools=get_builtin_tools())
    await h.send("do it")
    result = await h.send("just pick one")
    assert result["messages"][-1].content == "ok, going with your message"
    sent = h.model.requests[-1].messages
    pending = [m for m in sent if m.type == "tool"]
    assert pending and pending[0].status == "error"  # placeholder result, not an unanswered call


def test_valid_form_is_normalized():
    req = build_request({"question": "Details?", "fields": [
        {"name": "title", "label": "Title", "type": "text", "required": True},
        {"name": "tags", "type": "multi_select", "options": ["a", "a", "b", ""]},
        {"name": "agree", "type": "checkbox", "label": "I agree", "required": True},
        {"name": "weird", "type": ["x"]},
        {"name": "choice", "type": "select", "options": []},
    ]})
    assert req["mode"] == "form" and req["version"] == 2
    by_name = {f["name"]: f for f in req["fields"]}
    assert by_name["tags"]["options"] == ["a", "b"]
    assert by_name["agree"]["default"] is False
    assert by_name["weird"]["type"] == "text" and by_name["choice"]["type"] == "text"
    assert "- Title (required)" in readable_text(req)


def test_malformed_form_degrades_to_a_plain_question_never_half_a_form():
    for fields in (
        [{"name": "ok"}, {"name": "ok"}],                       # duplicate
        [{"name": "__proto__"}],                                # reserved
        [{"name": f"f{i}"} for i in range(MAX_FIELDS + 1)],     # too many
        [{"name": "ok"}, "not a dict"],
        [{"name": "x", "type": "select", "options": [str(i) for i in range(30)]}],
        [{"name": "x", "label": "L" * 500}],
    ):
        req = build_request({"question": "Q?", "fields": fields, "options": ["yes", "no"]})
        assert req["mode"] == "choice_with_other" and "fields" not in req
    assert build_request({"question": "Q?", "fields": [{"name": 1}]})["mode"] == "free_text"


async def test_non_interactive_run_never_waits_for_an_answer(agent_factory):
    h = agent_factory([tool_reply(call("ask_clarification", question="Which?")), "Proceeding with defaults."],
                      configurable={"non_interactive": True}, tools=get_builtin_tools())
    result = await h.send("scheduled job")
    assert "__interrupt__" not in result
    tool_msg = [m for m in result["messages"] if m.type == "tool"][0]
    assert tool_msg.status == "error"  # the tool is not offered; the call is an unknown-tool error
    assert result["messages"][-1].content == "Proceeding with defaults."
