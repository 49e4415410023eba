"""The model gets each tool's definition as bind_tools would build it, built once."""

from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from harness.agents.middlewares import tool_schemas
from harness.agents.middlewares.tool_schemas import openai_definition


@tool
def lookup(city: str, days: int = 3) -> str:
    """Weather for a city."""
    return city


def test_definition_is_what_bind_tools_would_send_and_is_built_once(monkeypatch):
    calls = []
    real = tool_schemas.convert_to_openai_tool
    monkeypatch.setattr(tool_schemas, "convert_to_openai_tool", lambda t: calls.append(t.name) or real(t))
    tool_schemas._cache.clear()
    first = openai_definition(lookup)
    assert first == convert_to_openai_tool(lookup)
    assert openai_definition(lookup) is first
    assert calls == ["lookup"]


def test_a_changed_description_is_a_new_definition():
    tool_schemas._cache.clear()
    other = lookup.model_copy(update={"description": "Rain forecast."})
    assert openai_definition(other)["function"]["description"] == "Rain forecast."
    assert openai_definition(lookup)["function"]["description"] == "Weather for a city."


def test_dicts_pass_through():
    builtin = {"type": "web_search_preview"}
    assert openai_definition(builtin) is builtin
