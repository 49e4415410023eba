"""The shapes of a workspace snapshot and of a run's change record.

Field names follow DeerFlow's ``workspace_changes`` payload (version 1), so its frontend and
scripts read ours unchanged; see docs/api.md for the wire shape.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

EVENT_TYPE = "workspace_changes"
EVENT_CATEGORY = "workspace"
METADATA_KEY = "workspace_changes"
VERSION = 1

# Why a changed file carries no diff.
BINARY, LARGE, SENSITIVE, TRUNCATED, SYMLINK = "binary", "large", "sensitive", "truncated", "symlink"


@dataclass(frozen=True)
class Limits:
    max_files: int = 200  # changed files listed in the record; the summary still counts them all
    max_scanned_files: int = 5000  # files looked at per snapshot; past it the record says truncated
    max_file_bytes_for_diff: int = 256 * 1024  # a larger text file is compared by hash only
    max_diff_bytes_per_file: int = 64 * 1024  # one file's diff is cut past this, with a marker
    max_total_diff_bytes: int = 1024 * 1024  # all the run's diffs together
    max_hash_bytes: int = 64 * 1024 * 1024  # a larger file is compared by size and mtime
    max_text_bytes: int = 4 * 1024 * 1024  # text a pre-run snapshot keeps for the diffs after

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Root:
    name: str  # "workspace" or "outputs"
    host_path: Path
    virtual_prefix: str  # /mnt/user-data/<name>


@dataclass(frozen=True)
class FileEntry:
    path: str  # virtual
    root: str
    size: int
    mtime_ns: int
    sha256: str | None = None
    binary: bool = False
    sensitive: bool = False
    symlink: bool = False
    symlink_target: str | None = None
    text: str | None = None  # kept only when small, textual and within the snapshot's budget
    reason: str | None = None  # why no diff can be made from this side


@dataclass(frozen=True)
class Snapshot:
    files: dict[str, FileEntry] = field(default_factory=dict)
    truncated: bool = False  # more files than max_scanned_files
