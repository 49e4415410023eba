"""The sandbox tools the model uses to run commands and work with files.

Each tool resolves its sandbox from the runtime (see ``_context``), takes virtual paths,
and returns plain text. Anything that goes wrong — a bad path, a missing file, a timeout,
a non-zero exit — comes back as a result the model can read and act on, never as an
exception that would end the run.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from langchain.tools import ToolRuntime, tool

# Tools declare ``ToolRuntime[Any, Any]``: a bare ``ToolRuntime`` types its context as None,
# and pydantic then warns while validating a run's context, printing the context (request
# secrets included) into the logs.
from langchain_core.tools import BaseTool

from harness.config.app_config import SandboxConfig
from harness.sandbox import SandboxError, SandboxUnavailable, get_sandbox_provider
from harness.sandbox.paths import WORKSPACE
from harness.sandbox.process import CommandResult
from harness.tools._context import get_sandbox, masked, request_secrets, skill_secrets
from harness.tools.file_access import READ, WRITE, declare_thread_files

MAX_GLOB_RESULTS = 200
DEFAULT_GREP_RESULTS = 100
MAX_GREP_RESULTS = 500
MAX_LS_ENTRIES = 500


def _sandbox_config() -> SandboxConfig:
    config = getattr(get_sandbox_provider(), "config", None)
    return config if isinstance(config, SandboxConfig) else SandboxConfig()


def guarded(runtime: ToolRuntime[Any, Any], action: Callable[[], str]) -> str:
    """Run ``action`` and turn every expected failure into a result for the model."""
    try:
        return masked(runtime, action())
    except SandboxUnavailable:
        # The operator's to fix (engine down, image missing), not the model's: the tool-error
        # middleware reports it as such ("tell the user"), so the model does not retry.
        raise
    except SandboxError as exc:
        return masked(runtime, str(exc))
    except OSError as exc:
        return masked(runtime, f"Error: {exc.strerror or exc}")
    except ValueError as exc:
        return masked(runtime, f"Error: {exc}")


def _human_size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


def format_command_result(result: CommandResult, secrets: dict[str, str], *, background_survives: bool) -> str:
    body = result.output.render(secrets).rstrip("\n")
    if result.cancelled:
        return "Error: the command was cancelled and stopped." + (f"\nOutput before it was stopped:\n{body}" if body else "")
    if result.timed_out:
        if background_survives:
            advice = (
                "Run long-lived processes such as servers or watchers in the background, e.g. "
                f"`nohup CMD > {WORKSPACE}/CMD.log 2>&1 &`, then check the log in a later command."
            )
        else:
            advice = (
                "Background processes end when the command that started them ends in this sandbox, so split the "
                "work into shorter steps or bound it, e.g. `timeout 120 CMD`."
            )
        head = (
            f"Error: the command did not finish within {result.timeout:g} seconds and was stopped "
            f"(it and every process it started were killed). {advice}"
        )
        return f"{head}\nOutput before it was stopped:\n{body}" if body else head
    if result.limit_message:
        # The limit leads, so the model reads why before it reads a bare "Killed".
        if result.exit_code is None:
            return f"{result.limit_message}\nOutput before it was stopped:\n{body}" if body else result.limit_message
        return f"{result.limit_message}\n{body or '(no output)'}\n[exit code: {result.exit_code}]"
    return f"{body or '(no output)'}\n[exit code: {result.exit_code}]"


@tool("bash", parse_docstring=True)
def bash_tool(description: str, command: str, runtime: ToolRuntime[Any, Any]) -> str:
    """Run a bash command in this thread's sandbox and return its output (stdout and stderr together) and exit code.

    The working directory is /mnt/user-data/workspace. Your files are under /mnt/user-data/workspace
    (scratch work), /mnt/user-data/uploads (files the user uploaded) and /mnt/user-data/outputs
    (deliverables for the user); skills are read-only under /mnt/skills. Standard input is empty, so
    interactive programs get end-of-file: pass flags such as `-y` instead. Commands are stopped after a
    time limit, so never wait on a server or watcher in the foreground: start it in the background
    (`CMD > log 2>&1 &`) or bound it (`timeout 60 CMD`). Long output keeps its beginning and end only;
    redirect it to a file and search that if needed.

    Args:
        description: One short sentence saying what this command is for.
        command: The bash command line to run, e.g. `python3 analyze.py --input /mnt/user-data/uploads/data.csv`.
    """
    return _run_bash(command, runtime, None)


def _run_bash(command: str, runtime: ToolRuntime[Any, Any], cancel: threading.Event | None) -> str:
    def run() -> str:
        sandbox = get_sandbox(runtime)
        secrets = request_secrets(runtime)
        if not command or not command.strip():
            return "Error: the command is empty."
        if "\x00" in command:
            return "Error: the command contains a NUL byte."
        # Only what an active skill declared reaches the command; all of it is masked.
        bound = skill_secrets(runtime)
        result = sandbox.execute_command(command, env=bound or None, timeout=_sandbox_config().bash_command_timeout,
                                         cancel=cancel)
        return format_command_result(result, secrets, background_survives=sandbox.background_processes_survive)

    return guarded(runtime, run)


async def _abash(description: str, command: str, runtime: ToolRuntime[Any, Any]) -> str:
    # The async path exists for cancellation: when the run is cancelled the awaiting task
    # goes away at once, and setting the event makes the watchdog kill the command's
    # process group instead of leaving it running until its timeout.
    cancel = threading.Event()
    try:
        return await asyncio.to_thread(_run_bash, command, runtime, cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise


bash_tool.coroutine = _abash


@tool("ls", parse_docstring=True)
def ls_tool(description: str, runtime: ToolRuntime[Any, Any], path: str = WORKSPACE) -> str:
    """List a directory as a tree, two levels deep. Directories end with '/', files show their size.

    Args:
        description: One short sentence saying why you list this directory.
        path: Absolute directory path, e.g. /mnt/user-data/uploads or /mnt/skills. Defaults to /mnt/user-data/workspace.
    """

    def run() -> str:
        sandbox = get_sandbox(runtime)
        entries, truncated = sandbox.list_dir(path, max_depth=2, max_entries=MAX_LS_ENTRIES)
        root = sandbox.resolve(path).virtual
        if not entries:
            return f"{root}/ (empty directory)"
        lines = [f"{root.rstrip('/')}/"]
        for entry in entries:
            name = entry.path.rsplit("/", 1)[-1]
            indent = "  " * entry.depth
            if entry.is_symlink:
                lines.append(f"{indent}{name} (symlink)")
            elif entry.is_dir:
                lines.append(f"{indent}{name}/")
            else:
                lines.append(f"{indent}{name} ({_human_size(entry.size)})")
        if truncated:
            lines.append(f"[listing stopped after {MAX_LS_ENTRIES} entries; list a subdirectory or use glob to narrow it]")
        return "\n".join(lines)

    return guarded(runtime, run)


@tool("glob", parse_docstring=True)
def glob_tool(description: str, pattern: str, runtime: ToolRuntime[Any, Any], path: str = WORKSPACE) -> str:
    """Find files and directories whose path matches a glob pattern.

    `*` matches within one directory level, `**/` any number of levels, `?` one character,
    `[abc]` a set and `{a,b}` alternatives. Patterns are relative to `path` unless absolute.
    Examples: `**/*.py`, `*.{csv,xlsx}`, `/mnt/skills/**/SKILL.md`. Directories are shown with a trailing '/'.

    Args:
        description: One short sentence saying what you are looking for.
        pattern: The glob pattern.
        path: Directory to search below. Defaults to /mnt/user-data/workspace.
    """

    def run() -> str:
        sandbox = get_sandbox(runtime)
        matches, truncated = sandbox.glob(pattern, path, max_results=MAX_GLOB_RESULTS)
        if not matches:
            return f"No paths match {pattern!r} under {sandbox.resolve(path).virtual}."
        note = f"\n[only the first {MAX_GLOB_RESULTS} matches are shown; use a narrower pattern]" if truncated else ""
        return "\n".join(matches) + note

    return guarded(runtime, run)


@tool("grep", parse_docstring=True)
def grep_tool(
    description: str,
    pattern: str,
    runtime: ToolRuntime[Any, Any],
    path: str = WORKSPACE,
    glob: str | None = None,
    case_insensitive: bool = False,
    max_results: int = DEFAULT_GREP_RESULTS,
) -> str:
    """Search file contents with a regular expression (Python syntax) and return matching lines as `path:line: text`.

    Searches one file, or every text file below a directory (binary files, .git and node_modules are skipped).

    Args:
        description: One short sentence saying what you are looking for.
        pattern: Regular expression to search for, e.g. `def main` or `TODO|FIXME`.
        path: A file or directory. Defaults to /mnt/user-data/workspace.
        glob: Only search files whose name matches this glob, e.g. `*.py` or `*.{md,txt}`.
        case_insensitive: Ignore letter case when matching.
        max_results: Maximum number of matching lines to return (at most 500).
    """

    def run() -> str:
        sandbox = get_sandbox(runtime)
        limit = max(1, min(int(max_results or DEFAULT_GREP_RESULTS), MAX_GREP_RESULTS))
        matches, truncated = sandbox.grep(pattern, path, glob=glob, ignore_case=case_insensitive, max_results=limit)
        if not matches:
            return f"No matches for {pattern!r} in {sandbox.resolve(path).virtual}."
        lines = [f"{m.path}:{m.line_number}: {m.line}" for m in matches]
        if truncated:
            lines.append(f"[stopped after {limit} matches; narrow the pattern, path or glob to see the rest]")
        return "\n".join(lines)

    return guarded(runtime, run)


def _slice_lines(text: str, start_line: int | None, end_line: int | None, limit: int, virtual: str) -> str:
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if total == 0:
        return "(empty file)"
    start = 1 if start_line is None else int(start_line)
    end = total if end_line is None else int(end_line)
    if start < 1:
        raise SandboxError("Error: start_line starts at 1.")
    if start > total:
        raise SandboxError(f"Error: start_line {start} is past the end of {virtual}, which has {total} lines.")
    if end < start:
        raise SandboxError(f"Error: end_line ({end}) is before start_line ({start}).")
    end = min(end, total)
    chosen = lines[start - 1:end]
    out, size, shown_end = [], 0, start - 1
    for line in chosen:
        if size + len(line) > limit:
            break
        out.append(line)
        size += len(line)
        shown_end += 1
    if shown_end == start - 1:  # a single line longer than the whole budget
        return (chosen[0][:limit] + f"\n[line {start} is longer than {limit} characters and was cut; "
                "use bash (cut, python) to read the rest of it]")
    body = "".join(out)
    if shown_end < end:
        body += (f"\n[output limit reached: showed lines {start}-{shown_end} of {total}; "
                 f"call read_file with start_line={shown_end + 1} to continue]")
    return body


@tool("read_file", parse_docstring=True)
def read_file_tool(description: str, path: str, runtime: ToolRuntime[Any, Any], start_line: int | None = None,
                   end_line: int | None = None) -> str:
    """Read a text file. Give start_line and end_line (1-based, inclusive) to read part of a long file.

    Very long files are cut at a size limit with a note telling you which line to continue from.

    Args:
        description: One short sentence saying why you read this file.
        path: Absolute path of the file, e.g. /mnt/user-data/uploads/report.md.
        start_line: First line to return (1-based). Defaults to the first line.
        end_line: Last line to return (inclusive). Defaults to the last line.
    """

    def run() -> str:
        sandbox = get_sandbox(runtime)
        text = sandbox.read_file(path)
        return _slice_lines(text, start_line, end_line, _sandbox_config().read_file_max_chars, sandbox.resolve(path).virtual)

    return guarded(runtime, run)


@tool("write_file", parse_docstring=True)
def write_file_tool(description: str, path: str, content: str, runtime: ToolRuntime[Any, Any], append: bool = False) -> str:
    """Write text to a file, replacing its content, or add to its end with append=true. Missing parent directories are created.

    Write working files under /mnt/user-data/workspace and files meant for the user under
    /mnt/user-data/outputs. To change part of an existing file prefer str_replace.

    Args:
        description: One short sentence saying what you write.
        path: Absolute path of the file, e.g. /mnt/user-data/outputs/summary.md.
        content: The complete text to write (or to append).
        append: Add the content to the end of the file instead of replacing it.
    """

    def run() -> str:
        sandbox = get_sandbox(runtime)
        written = sandbox.write_file(path, content, append=append)
        verb = "Appended" if append else "Wrote"
        return f"{verb} {written} bytes to {sandbox.resolve(path).virtual}."

    return guarded(runtime, run)


@tool("str_replace", parse_docstring=True)
def str_replace_tool(description: str, path: str, old_str: str, new_str: str, runtime: ToolRuntime[Any, Any],
                     replace_all: bool = False) -> str:
    """Replace exact text in a file. old_str must match the file exactly, including whitespace and indentation.

    By default old_str must occur exactly once (add surrounding lines to make it unique);
    set replace_all to replace every occurrence.

    Args:
        description: One short sentence saying what you change.
        path: Absolute path of the file to edit.
        old_str: The exact text to find.
        new_str: The text to put in its place (may be empty to delete old_str).
        replace_all: Replace every occurrence instead of requiring exactly one.
    """

    def run() -> str:
        sandbox = get_sandbox(runtime)
        count = sandbox.str_replace(path, old_str, new_str, replace_all=replace_all)
        noun = "occurrence" if count == 1 else "occurrences"
        return f"Replaced {count} {noun} in {sandbox.resolve(path).virtual}."

    return guarded(runtime, run)


# Calls of one message that touch the thread's files keep the message's order (file_access).
for _tool, _access in ((bash_tool, WRITE), (ls_tool, READ), (glob_tool, READ), (grep_tool, READ), (read_file_tool, READ),
                       (write_file_tool, WRITE), (str_replace_tool, WRITE)):
    declare_thread_files(_tool, _access)


def get_sandbox_tools() -> list[BaseTool]:
    return [bash_tool, ls_tool, glob_tool, grep_tool, read_file_tool, write_file_tool, str_replace_tool]


__all__ = ["get_sandbox_tools", "format_command_result", "guarded"]
