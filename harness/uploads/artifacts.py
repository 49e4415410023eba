"""Reading a thread's artifact: a requested virtual path resolved safely, its bytes and type.

A requested path is refused before it touches the disk unless it is a plain virtual path
under ``/mnt/user-data``: no NUL, no ``.`` or ``..`` segments, no over-long names, no
staging files. Symlinks are then followed the way the agent's sandbox follows them
(``harness.sandbox.paths.VirtualFS``); one that leads out of the thread's directories is
refused (Forbidden). ``x.skill/SKILL.md`` reads that member of a skill archive.

The artifact route and the embedded ``DeerFlowClient.get_artifact`` both read through here.
A ``thread`` has the owner's id as ``owner_id`` and the thread id as ``pk``.
"""

from __future__ import annotations

import mimetypes
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config import thread_user_data_dir
from harness.errors import Forbidden, InvalidRequest, NotFound, PayloadTooLarge
from harness.sandbox.errors import SandboxPathError
from harness.sandbox.paths import MAX_NAME_BYTES, MAX_PATH_BYTES, USER_DATA, VirtualFS
from harness.skills.zipread import MemberRefused, read_member
from harness.uploads import is_staging_name

# A file inside a ``.skill`` archive is read whole; skill files are small, this bounds a bomb.
SKILL_MEMBER_MAX_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Artifact:
    virtual: str
    real: Path  # the file on disk (for a member of a .skill archive: the archive)
    size: int
    content_type: str
    mtime: float
    data: bytes | None = None  # the content of a .skill archive member

    @property
    def name(self) -> str:
        """The name the user asked for (a link keeps its own name in downloads)."""
        return self.virtual.rsplit("/", 1)[-1]


def _fs(thread) -> VirtualFS:
    return VirtualFS(thread_user_data_dir(thread.owner_id, thread.pk), skills_dir=None)


def normalize_artifact_path(raw: Any) -> str:
    """``mnt/user-data/outputs/a.md`` (as it appears in the URL) -> ``/mnt/user-data/outputs/a.md``."""
    if not isinstance(raw, str) or not raw.strip("/"):
        raise InvalidRequest("an artifact path is required, e.g. mnt/user-data/outputs/report.md")
    if "\x00" in raw:
        raise InvalidRequest("artifact paths must not contain NUL bytes")
    if "\\" in raw:
        raise InvalidRequest("artifact paths use '/' as the separator")
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise InvalidRequest(f"artifact paths must be at most {MAX_PATH_BYTES} bytes")
    if raw.startswith("/"):
        # The route already ate one '/': a second one is an absolute host path.
        raise InvalidRequest("artifact paths are virtual paths such as mnt/user-data/outputs/report.md, not absolute host paths")
    parts = raw.split("/")
    for part in parts:
        if part in {".", ".."}:
            raise InvalidRequest("artifact paths must not contain '.' or '..' segments")
        if part == "":
            raise InvalidRequest("artifact paths must not contain empty segments ('//')")
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise InvalidRequest(f"a name in the artifact path is longer than {MAX_NAME_BYTES} bytes")
    virtual = "/" + raw
    if not virtual.startswith(USER_DATA + "/"):
        raise InvalidRequest(f"artifacts live under {USER_DATA}/ (workspace, uploads or outputs)")
    if is_staging_name(parts[-1]):
        raise NotFound(f"No artifact at {virtual}")
    return virtual


def _resolve(thread, virtual: str):
    try:
        return _fs(thread).resolve(virtual)
    except SandboxPathError as exc:
        # Lexical problems were refused above, so what is left is a link leading outside.
        raise Forbidden(str(exc).removeprefix("Error: ")) from None


def artifact_get(*, thread, path: Any) -> Artifact:
    virtual = normalize_artifact_path(path)
    member = _skill_member(thread, virtual)
    if member is not None:
        return member
    resolved = _resolve(thread, virtual)
    real = resolved.real
    if is_staging_name(real.name):  # a link to a staging file is no way round the rule
        raise NotFound(f"No artifact at {virtual}")
    try:
        stat = real.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"No artifact at {virtual}") from None
    if not os.path.isfile(real):
        raise InvalidRequest(f"{virtual} is a directory, not a file")
    content_type = mimetypes.guess_type(real.name)[0] or "application/octet-stream"
    return Artifact(virtual=virtual, real=real, size=stat.st_size, content_type=content_type, mtime=stat.st_mtime)


def _skill_member(thread, virtual: str) -> Artifact | None:
    """``.../x.skill/SKILL.md`` where ``x.skill`` is a file: that member of the ZIP archive, so
    a skill package can be previewed before it is installed. None for any other path."""
    parts = virtual.split("/")
    for i, part in enumerate(parts[:-1]):
        if not part.lower().endswith(".skill"):
            continue
        archive_virtual = "/".join(parts[: i + 1])
        archive = _resolve(thread, archive_virtual).real
        if not archive.is_file():
            return None  # a directory that happens to be named x.skill
        name = "/".join(parts[i + 1 :])
        try:
            with zipfile.ZipFile(archive) as bundle:
                try:
                    info = bundle.getinfo(name)
                except KeyError:
                    raise NotFound(f"{archive_virtual} has no file {name}") from None
                if info.is_dir():
                    raise InvalidRequest(f"{name} is a directory inside {archive_virtual}, not a file")
                # Bounded as it inflates: a member that lies about its size, fails its CRC or
                # uses a method without an output bound is refused, never inflated whole.
                data = read_member(bundle, info, max_bytes=SKILL_MEMBER_MAX_BYTES)
        except MemberRefused as exc:
            if exc.rule == "archive.member_too_large":
                raise PayloadTooLarge(f"{name} in {archive_virtual} is larger than {SKILL_MEMBER_MAX_BYTES} bytes") from None
            raise InvalidRequest(f"{archive_virtual} is not a readable skill archive: {exc}") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError) as exc:
            raise InvalidRequest(f"{archive_virtual} is not a readable skill archive ({exc})") from None
        content_type = mimetypes.guess_type(parts[-1])[0] or "application/octet-stream"
        return Artifact(virtual=virtual, real=archive, size=len(data), content_type=content_type,
                        mtime=archive.stat().st_mtime, data=data)
    return None
