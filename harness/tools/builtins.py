"""Built-in tools that are not file or shell work: presenting files, viewing images and
asking the user a question.

``present_files`` and ``view_image`` return a LangGraph ``Command`` that updates the
thread state (``artifacts``, ``viewed_images``) along with the tool message;
``ask_clarification`` is intercepted by the agent's clarification middleware before it
runs, so its body only matters when no middleware is installed.
"""

from __future__ import annotations

import base64
import os
from typing import Any

from langchain.tools import ToolRuntime, tool

# Tools declare ``ToolRuntime[Any, Any]``: a bare ``ToolRuntime`` types its context as None,
# and pydantic then warns while validating a run's context, printing the context (request
# secrets included) into the logs.
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.types import Command

from harness.sandbox import SandboxError
from harness.sandbox.paths import OUTPUTS
from harness.tools._context import get_sandbox, masked
from harness.tools.file_access import READ, declare_thread_files
from harness.tools.skill_review import review_skill_package_tool

MAX_PRESENTED_FILES = 50
MAX_IMAGE_BYTES = 8 * 1024 * 1024
_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _image_mime(data: bytes) -> str | None:
    for signature, mime in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _error_command(runtime: ToolRuntime[Any, Any], tool_name: str, text: str) -> Command:
    message = ToolMessage(content=masked(runtime, text), tool_call_id=runtime.tool_call_id or "", name=tool_name, status="error")
    return Command(update={"messages": [message]})


@tool("present_files", parse_docstring=True)
def present_files_tool(filepaths: list[str], runtime: ToolRuntime[Any, Any]) -> Command:
    """Show finished files to the user so they can open or download them.

    Only files under /mnt/user-data/outputs can be presented: write or copy your deliverables
    there first. Call this once the files are complete.

    Args:
        filepaths: Absolute paths of the files, e.g. ["/mnt/user-data/outputs/report.md"].
    """
    try:
        sandbox = get_sandbox(runtime)
    except SandboxError as exc:
        return _error_command(runtime, "present_files", str(exc))
    if not filepaths:
        return _error_command(runtime, "present_files", "Error: no files given. Pass the paths of files under /mnt/user-data/outputs.")
    if len(filepaths) > MAX_PRESENTED_FILES:
        return _error_command(runtime, "present_files", f"Error: at most {MAX_PRESENTED_FILES} files can be presented at once.")
    outputs_host = sandbox.fs.host_dir("outputs")
    presented: list[str] = []
    problems: list[str] = []
    for raw in filepaths:
        try:
            resolved = sandbox.resolve(raw)
        except SandboxError as exc:
            problems.append(f"{raw}: {str(exc).removeprefix('Error: ')}")
            continue
        if outputs_host not in resolved.real.parents:
            problems.append(f"{resolved.virtual}: only files under {OUTPUTS} can be presented; copy it there first")
        elif not resolved.real.is_file():
            state = "is a directory" if resolved.real.is_dir() else "does not exist"
            problems.append(f"{resolved.virtual}: {state}")
        else:
            presented.append(f"{OUTPUTS}/{resolved.real.relative_to(outputs_host).as_posix()}")
    if problems:
        # All or nothing: a half-presented set is harder for the model to reason about.
        return _error_command(runtime, "present_files", "Error: nothing was presented.\n" + "\n".join(f"- {p}" for p in problems))
    presented = list(dict.fromkeys(presented))
    message = ToolMessage(
        content="Presented to the user: " + ", ".join(presented),
        tool_call_id=runtime.tool_call_id or "",
        name="present_files",
    )
    return Command(update={"artifacts": presented, "messages": [message]})


@tool("view_image", parse_docstring=True)
def view_image_tool(image_path: str, runtime: ToolRuntime[Any, Any]) -> Command:
    """Look at an image file (PNG, JPEG, GIF or WebP); it is shown to you with your next reply.

    Args:
        image_path: Absolute path of the image, e.g. /mnt/user-data/uploads/chart.png.
    """
    try:
        sandbox = get_sandbox(runtime)
        resolved = sandbox.resolve(image_path)
        data = sandbox.read_bytes(image_path, max_bytes=MAX_IMAGE_BYTES)
    except SandboxError as exc:
        return _error_command(runtime, "view_image", str(exc))
    except OSError as exc:
        return _error_command(runtime, "view_image", f"Error: {exc.strerror or exc}")
    mime = _image_mime(data)
    if mime is None:
        ext = os.path.splitext(resolved.virtual)[1] or "no extension"
        return _error_command(
            runtime, "view_image",
            f"Error: {resolved.virtual} ({ext}) is not a PNG, JPEG, GIF or WebP image. Convert it first, e.g. with Python's PIL if available.",
        )
    encoded = base64.b64encode(data).decode("ascii")
    message = ToolMessage(
        content=f"Loaded {resolved.virtual} ({mime}, {len(data)} bytes); it is attached to your next turn.",
        tool_call_id=runtime.tool_call_id or "",
        name="view_image",
    )
    return Command(update={"viewed_images": {resolved.virtual: {"base64": encoded, "mime_type": mime}}, "messages": [message]})


@tool("ask_clarification", parse_docstring=True)
def ask_clarification_tool(
    question: str,
    options: list[str] | None = None,
    fields: list[dict[str, Any]] | None = None,
    context: str | None = None,
) -> str:
    """Ask the user a question and wait for the answer before continuing.

    Use it when the request is ambiguous, information only the user has is missing, or an
    action is risky enough to confirm. Do not use it for things you can find out yourself.
    For several values at once, pass `fields` to show a small form.

    Args:
        question: The question, phrased for the user.
        options: Choices the user can pick from, when the answer is one of a few options.
        fields: Form fields, each an object with `name`, `label`, `type` (text, textarea, number, select, multi_select, checkbox or date), optional `options` (for select types) and optional `required`.
        context: Why you are asking, shown with the question.
    """
    return f"Asked the user: {question} — wait for their answer."


# Both look at the thread's files, so they run after the earlier writes of their message.
declare_thread_files(present_files_tool, READ)
declare_thread_files(view_image_tool, READ)


def get_builtin_tools(*, include_clarification: bool = True, include_view_image: bool = True) -> list[BaseTool]:
    tools: list[BaseTool] = [present_files_tool]
    if include_view_image:
        tools.append(view_image_tool)
    if include_clarification:
        tools.append(ask_clarification_tool)
    tools.append(review_skill_package_tool)
    return tools


__all__ = ["get_builtin_tools"]
