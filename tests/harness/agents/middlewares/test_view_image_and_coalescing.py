"""Images reach a vision model for one call only; one leading system message per request."""

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command
from typing_extensions import Annotated

from harness.testing import call, tool_reply

from ..conftest import app_config


@tool
def look(path: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """View an image."""
    return Command(update={"viewed_images": {path: {"base64": "iVBORw0KGgo=", "mime_type": "image/png"}},
                           "messages": [ToolMessage("image loaded", tool_call_id=tool_call_id)]})


async def test_image_injected_for_one_call_then_cleared(agent_factory):
    h = agent_factory([tool_reply(call("look", path="/mnt/user-data/uploads/cat.png")), "a cat", "bye"], tools=[look])
    await h.send("what is this?")
    sent = h.model.requests[1].messages[-1]
    assert any(b.get("type") == "image_url" and b["image_url"]["url"].startswith("data:image/png;base64,") for b in sent.content)
    assert h.state()["viewed_images"] == {}
    assert not any(isinstance(m.content, list) for m in h.state()["messages"])  # no pixels stored
    await h.send("ok")
    assert not any(isinstance(m.content, list) for m in h.model.requests[2].messages)


async def test_non_vision_model_gets_a_note(agent_factory):
    app = app_config().model_copy()
    app.models[0] = app.models[0].model_copy(update={"supports_vision": False})
    h = agent_factory([tool_reply(call("look", path="/p.png")), "no eyes"], tools=[look], app=app)
    await h.send("see")
    assert "no vision support" in h.model.requests[1].messages[-1].content


class AddsSystemText(AgentMiddleware):
    def wrap_model_call(self, request, handler):
        return handler(request.override(messages=[*request.messages, SystemMessage("Extra rule.")]))

    async def awrap_model_call(self, request, handler):
        return await handler(request.override(messages=[*request.messages, SystemMessage("Extra rule.")]))


async def test_system_messages_are_coalesced():
    from langchain.agents import create_agent

    from harness.agents.middlewares.system_coalescing import SystemMessageCoalescingMiddleware
    from harness.testing import ScriptedChatModel

    model = ScriptedChatModel(script=["ok"])
    # the extra layer sits outside the coalescing one, as extensions and plan mode do
    agent = create_agent(model, tools=[], system_prompt="Base.", middleware=[AddsSystemText(), SystemMessageCoalescingMiddleware()])
    await agent.ainvoke({"messages": [{"role": "user", "content": "hi"}]})
    sent = model.requests[-1].messages
    assert [m.type for m in sent].count("system") == 1 and sent[0].type == "system"
    assert sent[0].content == "Base.\n\nExtra rule."
