"""Each tool's model-facing schema is built once, not at every model call.

A chat model's ``bind_tools`` turns every ``BaseTool`` into its OpenAI-style definition on
each call: pydantic schema generation plus ``$ref`` resolution, for two dozen tools, every
step of every run. Profiles put it at a tenth of a plain run's CPU. The definition depends only
on the tool's name, description and argument schema, so the innermost ``wrap_model_call``
hands the model the cached definitions instead. Providers accept those (a definition passes
through ``convert_to_openai_tool`` unchanged, and Anthropic's and Google's converters read it),
and tool calls are still routed by name to the real tools.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

_MAX_ENTRIES = 1024
_cache: OrderedDict[tuple, tuple[Any, dict]] = OrderedDict()


def _key(tool: BaseTool) -> tuple | None:
    schema = tool.args_schema
    if schema is None or isinstance(schema, type):
        ref: Any = schema
    elif isinstance(schema, dict):
        ref = id(schema)  # the dict itself is kept in the entry, so its id is not reused
    else:
        return None
    # A custom tool (OpenAI's free-form grammar tools) converts differently; leave it be.
    if (getattr(tool, "metadata", None) or {}).get("type") == "custom_tool":
        return None
    return (type(tool), tool.name, tool.description, ref, bool(getattr(tool, "response_format", None) == "content_and_artifact"))


def openai_definition(tool: Any) -> Any:
    """The cached definition of a ``BaseTool``; anything else is returned as it is."""
    if not isinstance(tool, BaseTool):
        return tool
    key = _key(tool)
    if key is None:
        return tool
    hit = _cache.get(key)
    if hit is not None:
        _cache.move_to_end(key)
        return hit[1]
    definition = convert_to_openai_tool(tool)
    _cache[key] = (tool.args_schema, definition)
    if len(_cache) > _MAX_ENTRIES:
        _cache.popitem(last=False)
    return definition


def _with_definitions(request: Any) -> Any:
    if not request.tools or all(isinstance(t, dict) for t in request.tools):
        return request
    return request.override(tools=[openai_definition(t) for t in request.tools])


class ToolSchemaCacheMiddleware(AgentMiddleware):
    """Last in the chain: every other middleware has already chosen the request's tools."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(_with_definitions(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(_with_definitions(request))
