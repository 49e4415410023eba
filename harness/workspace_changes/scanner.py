"""A snapshot of a thread's ``workspace`` and ``outputs``: paths, sizes, mtimes and hashes.

Built to be cheap on every run of a thread holding thousands of files:

- one ``os.scandir`` walk, stat only (never following a link, so nothing outside the thread's
  directories is read or stat'ed through one);
- an entry whose size and mtime match the previous snapshot's is that entry again: no read,
  no hash. Only new or touched files are read, once each (sample, hash and text together);
- the walk stops at ``max_scanned_files`` and says so, and the text kept for later diffs has a
  budget, so a huge tree costs a bounded amount of time and memory.

Blocking file IO: callers run it on a worker thread, never on the event loop.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat as stat_mod
from dataclasses import replace
from pathlib import Path

from harness.config.browser import BROWSER_FRAMES_DIRNAME
from harness.config.guards import TOOL_RESULTS_DIRNAME
from harness.workspace_changes.types import BINARY, LARGE, SENSITIVE, SYMLINK, FileEntry, Limits, Root, Snapshot

# Tool caches and dependency trees, not the user's work; a run that installs packages would
# otherwise "change" thousands of files. The tool_output guard's saved results are the agent's
# scratch, not outputs to deliver: counted, they would fail every run with a long tool result.
EXCLUDED_DIR_NAMES = frozenset({".git", ".hg", ".svn", ".cache", ".venv", "venv", "__pycache__", "node_modules",
                                ".next", ".mypy_cache", ".pytest_cache", TOOL_RESULTS_DIRNAME, BROWSER_FRAMES_DIRNAME})
BINARY_EXTENSIONS = frozenset({".7z", ".avif", ".bmp", ".class", ".db", ".dll", ".dmg", ".doc", ".docx", ".exe", ".gif",
                               ".gz", ".ico", ".jar", ".jpeg", ".jpg", ".mov", ".mp3", ".mp4", ".o", ".pdf", ".png", ".ppt",
                               ".pptx", ".pyc", ".so", ".sqlite", ".tar", ".webp", ".xls", ".xlsx", ".zip"})
# A file whose name looks like it holds a secret is listed, never read: no hash, no diff.
SENSITIVE_PATTERNS = (".env", ".env.*", "*api_key*", "*apikey*", "*.key", "*.pem", "*credential*", "*password*",
                      "*private_key*", "*secret*", "*token*", "id_rsa*", "id_ed25519*")
SAMPLE_BYTES = 4096


def is_sensitive(virtual_path: str) -> bool:
    parts = [p.lower() for p in virtual_path.split("/") if p]
    return any(fnmatch.fnmatch(part, pattern) for part in parts for pattern in SENSITIVE_PATTERNS)


def looks_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A sample may end inside a multi-byte character; only an error before the last few
        # bytes means the file is not UTF-8 text.
        return exc.start < len(sample) - 3
    return False


def decode_text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def scan(roots: list[Root], *, limits: Limits | None = None, previous: Snapshot | None = None,
         keep_text: bool = True) -> Snapshot:
    """``previous``: an earlier snapshot of the same roots, whose unchanged entries are reused.

    ``keep_text=True`` is the pre-run side of a diff: the text of small text files is kept,
    within ``limits.max_text_bytes`` (reused entries count too, so a thread's snapshot never
    grows past it). ``keep_text=False`` is the after side: text is read only for files new or
    changed since ``previous``; an unchanged entry is ``previous``'s own object, so it costs no
    memory of its own.
    """
    limits = limits or Limits()
    known = previous.files if previous is not None else {}
    files: dict[str, FileEntry] = {}
    budget = [limits.max_text_bytes]
    for root in roots:
        stack = [(str(root.host_path), root.virtual_prefix.rstrip("/"))]
        while stack:
            host_dir, virtual_dir = stack.pop()
            try:
                with os.scandir(host_dir) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue  # the root does not exist yet, or a directory vanished mid-walk
            for entry in entries:
                virtual = f"{virtual_dir}/{entry.name}"
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat_mod.S_ISDIR(st.st_mode):
                    if entry.name not in EXCLUDED_DIR_NAMES:
                        stack.append((entry.path, virtual))
                    continue
                if len(files) >= limits.max_scanned_files:
                    return Snapshot(files=files, truncated=True)
                if stat_mod.S_ISLNK(st.st_mode):
                    files[virtual] = _link_entry(root, entry.path, virtual, st)
                    continue
                if not stat_mod.S_ISREG(st.st_mode):
                    continue  # sockets, fifos: nothing a run delivers
                before = known.get(virtual)
                if before is not None and not before.symlink and before.size == st.st_size and before.mtime_ns == st.st_mtime_ns:
                    files[virtual] = _reused(before, budget) if keep_text else before
                    continue
                made = _file_entry(root, entry.path, virtual, st, limits, budget)
                if made is not None:
                    files[virtual] = made
    return Snapshot(files=files)


def _reused(entry: FileEntry, budget: list[int]) -> FileEntry:
    if entry.text is None:
        return entry
    if budget[0] >= len(entry.text):
        budget[0] -= len(entry.text)
        return entry
    return replace(entry, text=None)


def _link_entry(root: Root, host: str, virtual: str, st: os.stat_result) -> FileEntry:
    try:
        target = os.readlink(host)
    except OSError:
        target = None
    return FileEntry(path=virtual, root=root.name, size=st.st_size, mtime_ns=st.st_mtime_ns, symlink=True,
                     symlink_target=target, sensitive=is_sensitive(virtual), reason=SYMLINK)


def _file_entry(root: Root, host: str, virtual: str, st: os.stat_result, limits: Limits,
                budget: list[int]) -> FileEntry | None:
    """``budget``: the snapshot's remaining text allowance, spent by the text kept here."""
    size, mtime = st.st_size, st.st_mtime_ns
    if is_sensitive(virtual):
        return FileEntry(path=virtual, root=root.name, size=size, mtime_ns=mtime, sensitive=True, reason=SENSITIVE)
    by_name = Path(virtual).suffix.lower() in BINARY_EXTENSIONS
    try:
        if size <= limits.max_file_bytes_for_diff:
            # Small: one read gives the sample, the hash and the text.
            with open(host, "rb") as fh:
                data = fh.read(limits.max_file_bytes_for_diff + 1)
            binary = by_name or looks_binary(data[:SAMPLE_BYTES])
            digest = hashlib.sha256(data).hexdigest()
            text = None if binary else decode_text(data)
            if not binary and text is None:
                binary = True  # not UTF-8 after all: a diff would be noise
            if text is not None:
                if budget[0] < len(text):
                    text = None  # over the snapshot's allowance: compared by hash, no diff
                else:
                    budget[0] -= len(text)
            return FileEntry(path=virtual, root=root.name, size=size, mtime_ns=mtime, sha256=digest, binary=binary,
                             text=text, reason=BINARY if binary else None)
        with open(host, "rb") as fh:
            binary = by_name or looks_binary(fh.read(SAMPLE_BYTES))
            digest = None
            if size <= limits.max_hash_bytes:
                fh.seek(0)
                h = hashlib.sha256()
                for chunk in iter(lambda: fh.read(1024 * 1024), b""):
                    h.update(chunk)
                digest = h.hexdigest()
    except OSError:
        return None  # gone, or unreadable: not part of what the run produced
    return FileEntry(path=virtual, root=root.name, size=size, mtime_ns=mtime, sha256=digest, binary=binary,
                     reason=BINARY if binary else LARGE)
