"""The tool set a lead agent gets: sandbox tools, built-ins and tools from config.yaml.

MCP tools come from ``harness.mcp`` (``extensions_config.json``); subagent tools plug in
through ``extra_tools``. Names must be unique; a config
tool that cannot be loaded is an error naming the entry, not a silently missing tool.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from harness.config import AppConfig, get_app_config
from harness.config import class_path

logger = logging.getLogger(__name__)


class ToolLoadError(ValueError):
    pass


def load_config_tool(entry: Any, config: AppConfig | None = None) -> BaseTool:
    """A ``tools:`` entry: ``use`` names a BaseTool instance, a BaseTool subclass
    (instantiated with the entry's extra keys) or a plain function (wrapped). A class with
    a ``from_app_config(app, **extra)`` classmethod is built through it, for tools that
    read a config section of their own (the web tools read ``web:``)."""
    try:
        obj = class_path.resolve(entry.use)
    except class_path.ClassPathError as exc:
        raise ToolLoadError(f"tool '{entry.name}': {exc}") from None
    extra = dict(entry.model_extra or {})
    if isinstance(obj, BaseTool):
        tool = obj
    elif isinstance(obj, type) and issubclass(obj, BaseTool):
        try:
            factory = getattr(obj, "from_app_config", None)
            tool = factory(config or get_app_config(), **extra) if callable(factory) else obj(**extra)
        except Exception as exc:
            raise ToolLoadError(f"tool '{entry.name}' ({entry.use}) could not be created: {exc}") from exc
    elif callable(obj):
        tool = StructuredTool.from_function(obj)
    else:
        raise ToolLoadError(f"tool '{entry.name}': {entry.use} is not a tool, tool class or function")
    if tool.name != entry.name:
        tool = tool.model_copy(update={"name": entry.name})
    return tool


def _sandbox_tools() -> list[BaseTool]:
    try:
        from harness.tools.sandbox_tools import get_sandbox_tools
    except ImportError:
        logger.warning("sandbox tools are not available in this build")
        return []
    return list(get_sandbox_tools())


def _builtin_tools(include_clarification: bool, include_view_image: bool) -> list[BaseTool]:
    try:
        from harness.tools.builtins import get_builtin_tools
    except ImportError:
        logger.warning("built-in tools are not available in this build")
        return []
    return list(get_builtin_tools(include_clarification=include_clarification, include_view_image=include_view_image))


def _mcp_tools(config: AppConfig) -> list[BaseTool]:
    from harness.mcp import get_mcp_tools

    return list(get_mcp_tools(app_config=config))


def get_available_tools(
    *,
    config: AppConfig | None = None,
    groups: Iterable[str] | None = None,
    include_sandbox: bool = True,
    include_builtins: bool = True,
    include_view_image: bool = True,
    non_interactive: bool = False,
    extra_tools: Sequence[BaseTool] = (),
    include_mcp: bool = True,
) -> list[BaseTool]:
    """``groups`` limits config tools to those groups (a custom agent's tool groups);
    ``non_interactive`` (scheduled or channel runs nobody watches) drops
    ``ask_clarification`` because no one could answer it."""
    cfg = config or get_app_config()
    tools: list[BaseTool] = []
    if include_sandbox:
        tools += _sandbox_tools()
    if include_builtins:
        tools += _builtin_tools(not non_interactive, include_view_image)
    wanted = set(groups) if groups is not None else None
    for entry in cfg.tools:
        if wanted is None or entry.group in wanted:
            tools.append(load_config_tool(entry, cfg))
    if cfg.memory.enabled and cfg.memory.tool_mode:
        from harness.memory.tools import memory_tools

        tools += memory_tools()
    if cfg.skill_evolution.enabled:
        from harness.tools.skill_manage import skill_manage_tool

        tools.append(skill_manage_tool)
    tools += list(extra_tools)
    if include_mcp:
        tools += _mcp_tools(cfg)
    if non_interactive:
        tools = [t for t in tools if t.name != "ask_clarification"]
    unique: dict[str, BaseTool] = {}
    for tool in tools:
        if tool.name in unique:
            logger.warning("tool name %r is defined twice; keeping the first", tool.name)
            continue
        unique[tool.name] = tool
    return list(unique.values())
