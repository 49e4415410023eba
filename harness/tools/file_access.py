"""Which tools touch the thread's files, and how: the declaration the tool-call order reads.

A model can ask for several tool calls in one message, and LangGraph runs them at the same
time. Calls that touch the thread's files (``/mnt/user-data/…``: the sandbox tools,
``present_files``, ``view_image``) must behave as if run in the message's order, so each such
tool declares its access in its ``metadata``: ``"read"`` (looks at files: ``ls``,
``read_file``, ``present_files``…) or ``"write"`` (may change them: ``write_file``,
``str_replace``, ``bash``). ``ToolCallOrderMiddleware`` (harness/agents/middlewares) runs a
call after the earlier calls of its message it conflicts with (a write and anything else);
reads among themselves, and tools that declare nothing (web search, the subagent ``task``,
MCP tools, memory), stay parallel.

A tool from elsewhere (config.yaml ``tools:``, an extension) declares itself the same way::

    declare_thread_files(my_tool, WRITE)
"""

from __future__ import annotations

from typing import Any

THREAD_FILES_KEY = "deerflow_thread_files"
READ = "read"
WRITE = "write"
ACCESS = (READ, WRITE)


def declare_thread_files(tool: Any, access: str) -> Any:
    """Mark ``tool`` (a ``BaseTool``) as reading or writing the thread's files; returns it."""
    if access not in ACCESS:
        raise ValueError(f"thread file access must be one of {ACCESS}, not {access!r}")
    tool.metadata = {**(tool.metadata or {}), THREAD_FILES_KEY: access}
    return tool


def thread_file_access(tool: Any) -> str | None:
    """``"read"``, ``"write"`` or None (the tool does not touch the thread's files)."""
    metadata = getattr(tool, "metadata", None)
    value = metadata.get(THREAD_FILES_KEY) if isinstance(metadata, dict) else None
    return value if value in ACCESS else None


def conflicts(a: str | None, b: str | None) -> bool:
    """Two calls must keep their order when both touch files and one of them may write."""
    return a is not None and b is not None and WRITE in (a, b)


__all__ = ["ACCESS", "READ", "THREAD_FILES_KEY", "WRITE", "conflicts", "declare_thread_files", "thread_file_access"]
