"""The sandbox interface and the host-side file operations both built-in providers share.

File operations run in the server process on the host and are confined by
:class:`~harness.sandbox.paths.VirtualFS`: a path is resolved and checked, then opened by
walking from the boundary directory one component at a time with ``O_NOFOLLOW``, so a
symlink swapped in after the check (by a command running in parallel) makes the open fail
instead of following it out of the sandbox. Only ``execute_command`` differs by provider.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.sandbox import locks
from harness.sandbox.command import CommandPolicy
from harness.sandbox.errors import SandboxError, SandboxPathError
from harness.sandbox.paths import WORKSPACE, ResolvedPath, VirtualFS
from harness.sandbox.process import CommandResult
from harness.sandbox.search import compile_glob, has_magic
from harness.uploads import is_staging_name

MAX_READ_BYTES = 10 * 1024 * 1024
MAX_GREP_FILE_BYTES = 5 * 1024 * 1024
MAX_LINE_CHARS = 500
# Listed but not descended into by ls/glob/grep: large and rarely what the model wants.
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".pytest_cache"})


@dataclass(frozen=True)
class DirEntry:
    path: str  # virtual
    is_dir: bool
    size: int
    depth: int
    is_symlink: bool = False


@dataclass(frozen=True)
class GrepMatch:
    path: str  # virtual
    line_number: int
    line: str


def looks_binary(data: bytes) -> bool:
    sample = data[:8192]
    if b"\x00" in sample:
        return True
    text = sample.decode("utf-8", errors="replace")
    # A truncated multi-byte character at the sample's end is not evidence of binary.
    return text.count("\ufffd") > max(4, len(text) // 10)


def _os_error(exc: OSError, virtual: str) -> SandboxError:
    code = exc.errno
    if code == errno.ENOENT:
        return SandboxError(f"Error: {virtual} does not exist. Check the path with the ls or glob tool.")
    if code == errno.EISDIR:
        return SandboxError(f"Error: {virtual} is a directory, not a file. Use the ls tool to see its contents.")
    if code in (errno.ELOOP, errno.ENOTDIR):
        return SandboxPathError(f"Error: {virtual} passes through a symbolic link or a non-directory; access refused.")
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        return SandboxError(f"Error: permission denied for {virtual}.")
    if code == errno.ENAMETOOLONG:
        return SandboxPathError(f"Error: the path {virtual} is too long. Use a shorter name.")
    if code == errno.ENOSPC:
        return SandboxError("Error: no space left on the device.")
    return SandboxError(f"Error: cannot access {virtual}: {exc.strerror or exc}.")


class Sandbox(ABC):
    """One thread's sandbox. Paths in and out are virtual paths."""

    def __init__(self, sandbox_id: str, user_id: str, thread_id: str, fs: VirtualFS):
        self.id = sandbox_id
        self.user_id = user_id
        self.thread_id = thread_id
        self.fs = fs

    # -- commands ----------------------------------------------------------------------

    @abstractmethod
    def execute_command(self, command: str, env: Mapping[str, str] | None = None, timeout: float | None = None,
                        cancel: threading.Event | None = None) -> CommandResult:
        """Run ``command`` with bash in the workspace; ``env`` adds request-scoped variables.

        Setting ``cancel`` from another thread kills the command's process group (used when
        the run is cancelled while the command is still going).
        """

    #: Told to the model on a timeout: whether a backgrounded process survives the call.
    background_processes_survive = True
    #: Limits, disk quota and environment of commands; the provider sets it from its config.
    policy: CommandPolicy = CommandPolicy()
    toolbox: Path | None = None  # the toolbox virtualenv on the host (provider.toolbox_dir)

    # -- helpers -----------------------------------------------------------------------

    def resolve(self, path: str, *, write: bool = False) -> ResolvedPath:
        return self.fs.resolve(path, write=write)

    @contextmanager
    def path_lock(self, path: str) -> Iterator[ResolvedPath]:
        """Hold the write lock of ``path`` (resolved for writing) for a read-modify-write."""
        resolved = self.resolve(path, write=True)
        with locks.path_lock(self.id, str(resolved.real)):
            yield resolved

    def _open(self, resolved: ResolvedPath, flags: int, mode: int = 0o644, make_parents: bool = False) -> int:
        boundary = resolved.root.boundary
        parts = resolved.real.relative_to(boundary).parts
        if not parts:
            raise SandboxError(f"Error: {resolved.virtual} is a directory, not a file.")
        dir_fd = os.open(boundary, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in parts[:-1]:
                dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                try:
                    next_fd = os.open(part, dir_flags, dir_fd=dir_fd)
                except FileNotFoundError:
                    if not make_parents:
                        raise
                    try:
                        os.mkdir(part, 0o755, dir_fd=dir_fd)
                    except FileExistsError:
                        pass
                    next_fd = os.open(part, dir_flags, dir_fd=dir_fd)
                os.close(dir_fd)
                dir_fd = next_fd
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)

    def _read_resolved(self, resolved: ResolvedPath, max_bytes: int) -> bytes:
        try:
            fd = self._open(resolved, os.O_RDONLY)
        except OSError as exc:
            raise _os_error(exc, resolved.virtual) from None
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise SandboxError(f"Error: {resolved.virtual} is a directory, not a file. Use the ls tool to see its contents.")
            if not stat.S_ISREG(info.st_mode):
                raise SandboxError(f"Error: {resolved.virtual} is not a regular file.")
            if info.st_size > max_bytes:
                raise SandboxError(
                    f"Error: {resolved.virtual} is {info.st_size} bytes, more than the {max_bytes}-byte limit for reading "
                    "it whole. Use bash (head, tail, sed -n 'A,Bp', grep) to look at parts of it."
                )
            return fh.read(max_bytes + 1)[:max_bytes]

    # -- files -------------------------------------------------------------------------

    def read_bytes(self, path: str, max_bytes: int = MAX_READ_BYTES) -> bytes:
        return self._read_resolved(self.resolve(path), max_bytes)

    def read_file(self, path: str) -> str:
        """The file as text; a binary file is an error the model can act on."""
        resolved = self.resolve(path)
        data = self._read_resolved(resolved, MAX_READ_BYTES)
        if looks_binary(data):
            raise SandboxError(
                f"Error: {resolved.virtual} is a binary file ({len(data)} bytes) and cannot be read as text. "
                "Use bash (file, xxd | head, python) to inspect it, or view_image for an image."
            )
        return data.decode("utf-8", errors="replace")

    def write_file(self, path: str, content: str | bytes, append: bool = False) -> int:
        """Write (or append) and return the number of bytes written; parents are created."""
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        with self.path_lock(path) as resolved:
            return self._write_locked(resolved, data, append)

    def _check_quota(self, resolved: ResolvedPath, size: int, append: bool) -> None:
        quota = self.policy.quota
        if quota is None or not quota.enabled:
            return
        try:
            current = 0 if append else os.lstat(resolved.real).st_size
        except OSError:
            current = 0
        if size - current > 0:
            quota.check_write(size - current)

    def _write_locked(self, resolved: ResolvedPath, data: bytes, append: bool) -> int:
        self._check_quota(resolved, len(data), append)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
        try:
            fd = self._open(resolved, flags, make_parents=True)
        except OSError as exc:
            raise _os_error(exc, resolved.virtual) from None
        with os.fdopen(fd, "wb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SandboxError(f"Error: {resolved.virtual} is not a regular file.")
            fh.write(data)
        return len(data)

    def str_replace(self, path: str, old: str, new: str, replace_all: bool = False) -> int:
        """Replace ``old`` once (it must be unique) or everywhere; returns the count replaced."""
        if not old:
            raise SandboxError("Error: old_str is empty. Give the exact text to replace; use write_file to create a file.")
        with self.path_lock(path) as resolved:
            data = self._read_resolved(resolved, MAX_READ_BYTES)
            if looks_binary(data):
                raise SandboxError(f"Error: {resolved.virtual} is a binary file; str_replace edits text files only.")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise SandboxError(f"Error: {resolved.virtual} is not valid UTF-8 text; edit it with bash instead.") from None
            count = text.count(old)
            if count == 0:
                raise SandboxError(
                    f"Error: old_str was not found in {resolved.virtual}. It must match exactly, including whitespace "
                    "and indentation; read the file again to see its current content."
                )
            if count > 1 and not replace_all:
                raise SandboxError(
                    f"Error: old_str appears {count} times in {resolved.virtual}. Include more surrounding lines so it "
                    "matches exactly one place, or set replace_all to true to replace every occurrence."
                )
            updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            self._write_locked(resolved, updated.encode("utf-8"), append=False)
            return count if replace_all else 1

    # -- directories and search --------------------------------------------------------

    def _dir(self, path: str) -> ResolvedPath:
        resolved = self.resolve(path)
        if not resolved.real.exists():
            raise SandboxError(f"Error: {resolved.virtual} does not exist.")
        return resolved

    def list_dir(self, path: str = WORKSPACE, max_depth: int = 2, max_entries: int = 500) -> tuple[list[DirEntry], bool]:
        """Entries below ``path`` up to ``max_depth`` levels; (entries, truncated)."""
        resolved = self._dir(path)
        if not resolved.real.is_dir():
            raise SandboxError(f"Error: {resolved.virtual} is a file, not a directory. Use read_file to read it.")
        entries: list[DirEntry] = []

        def walk(host: Path, virtual: str, depth: int) -> bool:
            try:
                items = sorted(os.scandir(host), key=lambda e: e.name)
            except OSError:
                return True
            for item in items:
                if is_staging_name(item.name):  # a file still being uploaded is not there yet
                    continue
                if len(entries) >= max_entries:
                    return False
                is_link = item.is_symlink()
                is_dir = item.is_dir(follow_symlinks=False)
                try:
                    size = 0 if is_dir else item.stat(follow_symlinks=False).st_size
                except OSError:
                    size = 0
                child = f"{virtual.rstrip('/')}/{item.name}"
                entries.append(DirEntry(child, is_dir, size, depth, is_link))
                if is_dir and depth < max_depth and item.name not in SKIP_DIRS:
                    if not walk(Path(item.path), child, depth + 1):
                        return False
            return True

        complete = walk(resolved.real, resolved.virtual, 1)
        return entries, not complete

    def _split_pattern(self, pattern: str, path: str) -> tuple[str, str]:
        """An absolute pattern carries its own root: its longest prefix without wildcards."""
        if not pattern.startswith("/"):
            return path, pattern
        parts = pattern.split("/")
        for i, part in enumerate(parts):
            if has_magic(part):
                return "/".join(parts[:i]) or "/", "/".join(parts[i:])
        return "/".join(parts[:-1]) or "/", parts[-1]

    def _walk(self, resolved: ResolvedPath) -> Iterator[tuple[str, Path, bool]]:
        """(relative path, host path, is_dir) below a directory, without following links."""
        base = resolved.real
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            rel_dir = Path(dirpath).relative_to(base).as_posix()
            prefix = "" if rel_dir == "." else rel_dir + "/"
            for d in dirnames:
                yield prefix + d, Path(dirpath) / d, True
            for f in sorted(filenames):
                if not is_staging_name(f):
                    yield prefix + f, Path(dirpath) / f, False

    def glob(self, pattern: str, path: str = WORKSPACE, max_results: int = 200) -> tuple[list[str], bool]:
        """Virtual paths matching ``pattern`` (``**`` for any depth); (matches, truncated)."""
        if not pattern or "\x00" in pattern:
            raise SandboxError("Error: the glob pattern is empty. Try '**/*.py' or '*.md'.")
        root_path, rel_pattern = self._split_pattern(pattern, path)
        resolved = self._dir(root_path)
        if not resolved.real.is_dir():
            raise SandboxError(f"Error: {resolved.virtual} is a file, not a directory.")
        try:
            regex = compile_glob(rel_pattern)
        except (ValueError, re.error) as exc:
            raise SandboxError(f"Error: invalid glob pattern {pattern!r}: {exc}.") from None
        matches: list[str] = []
        for rel, _host, is_dir in self._walk(resolved):
            if regex.match(rel):
                if len(matches) >= max_results:
                    return matches, True
                matches.append(f"{resolved.virtual.rstrip('/')}/{rel}" + ("/" if is_dir else ""))
        return matches, False

    def grep(self, pattern: str, path: str = WORKSPACE, glob: str | None = None, ignore_case: bool = False,
             max_results: int = 100) -> tuple[list[GrepMatch], bool]:
        """Lines matching the regex ``pattern`` in one file or a tree; (matches, truncated)."""
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise SandboxError(f"Error: invalid regular expression {pattern!r}: {exc}. Escape special characters such as ( [ . * with a backslash.") from None
        resolved = self._dir(path)
        if resolved.real.is_file():
            data = self._read_resolved(resolved, MAX_READ_BYTES)
            if looks_binary(data):
                raise SandboxError(f"Error: {resolved.virtual} is a binary file; grep searches text files only.")
            return self._grep_lines(regex, [(resolved.virtual, data)], max_results)
        filter_regex = compile_glob(glob) if glob else None
        files = []
        for rel, host, is_dir in self._walk(resolved):
            if is_dir or host.is_symlink():
                continue
            if filter_regex is not None:
                # "*.py" filters by file name at any depth; "src/*.py" by relative path.
                target = rel if "/" in glob else rel.rsplit("/", 1)[-1]
                if not filter_regex.match(target):
                    continue
            files.append((f"{resolved.virtual.rstrip('/')}/{rel}", host))

        def contents() -> Iterator[tuple[str, bytes]]:
            for virtual, host in files:
                try:
                    if host.stat().st_size > MAX_GREP_FILE_BYTES:
                        continue
                    data = host.read_bytes()
                except OSError:
                    continue
                if not looks_binary(data):
                    yield virtual, data

        return self._grep_lines(regex, contents(), max_results)

    @staticmethod
    def _grep_lines(regex: re.Pattern[str], files, max_results: int) -> tuple[list[GrepMatch], bool]:
        matches: list[GrepMatch] = []
        for virtual, data in files:
            for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                if regex.search(line):
                    if len(matches) >= max_results:
                        return matches, True
                    if len(line) > MAX_LINE_CHARS:
                        line = line[:MAX_LINE_CHARS] + " […]"
                    matches.append(GrepMatch(virtual, number, line))
        return matches, False
