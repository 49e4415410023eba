"""LangChain tools standing in for MCP tools: the agent sees the MCP schema, the call runs
on the MCP loop under the server's ``tool_call_timeout``, and local paths in the result are
translated for the calling thread."""

# No ``from __future__ import annotations``: LangChain finds the ``config`` parameter to
# inject by its evaluated annotation.

from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from harness.config.extensions import McpServerConfig
from harness.config.paths import thread_user_data_dir
from harness.mcp.paths import translate_content
from harness.mcp.runtime import DEFAULT_TOOL_CALL_TIMEOUT, McpRuntime
from harness.tools._context import DEFAULT_USER_ID

ROUTING_KEY = "deerflow_mcp_routing"


def _scope(config: RunnableConfig | None) -> tuple[str, str]:
    """(user id, thread id) of the calling run; "" for a call outside a thread."""
    configurable = (config or {}).get("configurable") or {}
    return str(configurable.get("user_id") or DEFAULT_USER_ID), str(configurable.get("thread_id") or "")


def _user_data(config: RunnableConfig | None) -> Path | None:
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if not thread_id:
        return None
    try:
        return thread_user_data_dir(configurable.get("user_id") or DEFAULT_USER_ID, str(thread_id))
    except (ValueError, OSError):
        return None


def _flatten(content: Any) -> Any:
    # Text-only results become one string, like every other tool's, so output budgets and
    # secret masking downstream see plain text; images and resources stay blocks.
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(str(b.get("text", "")) for b in content)
    return content


def wrap_tool(runtime: McpRuntime, server: str, config: McpServerConfig, tool: BaseTool) -> BaseTool:
    timeout = float(config.tool_call_timeout or DEFAULT_TOOL_CALL_TIMEOUT)
    name = tool.name

    async def call(config: RunnableConfig, **arguments: Any) -> tuple[Any, Any]:
        try:
            content, artifact = await runtime.run(runtime.call(server, name, arguments, timeout, _scope(config)))
        except RuntimeError as exc:
            raise ToolException(f"Error: {exc}") from None
        return _flatten(translate_content(content, _user_data(config))), artifact

    routing = config.effective_routing(name)
    hint = routing.model_dump() if routing.mode == "prefer" and routing.keywords else None
    return StructuredTool(name=name, description=tool.description or f"{name} (MCP server {server})",
                          args_schema=tool.args_schema, coroutine=call, response_format="content_and_artifact",
                          handle_tool_error=True,
                          metadata={**(tool.metadata or {}), "mcp_server": server, ROUTING_KEY: hint})
