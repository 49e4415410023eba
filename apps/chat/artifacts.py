"""Thread artifacts: resolving a requested virtual path safely, streaming it (with byte
ranges), replacing an output text file atomically, and a run's bounded artifact ZIP.

A requested path is refused before it touches the disk unless it is a plain virtual path
under ``/mnt/user-data``: no NUL, no ``.`` or ``..`` segments, no over-long names, no
staging files. Symlinks are then followed the way the agent's sandbox follows them
(``harness.sandbox.paths.VirtualFS``); one that leads out of the thread's directories is
refused with 403.
"""

from __future__ import annotations

import fcntl
import hashlib
import mimetypes
import os
import re
import secrets
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apps.errors import (Conflict, Forbidden, InvalidRequest, NotFound, PayloadTooLarge, RangeNotSatisfiable,
                         UnsupportedMediaType)
from apps.runs.reservations import Kind as ReservationKind, thread_reserved
from apps.runs.selectors import run_answer_events
from harness.config import get_app_config, thread_user_data_dir
from harness.sandbox.errors import SandboxPathError
from harness.sandbox.paths import MAX_NAME_BYTES, MAX_PATH_BYTES, OUTPUTS, USER_DATA, VirtualFS
from harness.skills.zipread import MemberRefused, read_member

from harness.uploads import STAGING_SUFFIX, is_staging_name

# Served as attachments whatever the request says: a browser would run their scripts with
# this site's origin.
ACTIVE_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "image/svg+xml"})
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


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


def is_active_content(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() in ACTIVE_CONTENT_TYPES


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The (start, end inclusive) of a single ``bytes=`` range, or None to send everything.

    Malformed headers and multi-range requests are ignored (RFC 9110 lets a server do so and
    answer 200 with the whole file); a well-formed range that misses the file raises
    RangeNotSatisfiable (416).
    """
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or not spec or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    first, last = first.strip(), last.strip()
    if not dash or (first and not first.isdigit()) or (last and not last.isdigit()) or (not first and not last):
        return None
    if not first:  # suffix: the last N bytes
        length = int(last)
        if length == 0 or size == 0:
            raise RangeNotSatisfiable(f"the range {header!r} selects no bytes of a {size}-byte file", size)
        return max(0, size - length), size - 1
    start = int(first)
    end = int(last) if last else size - 1
    if last and end < start:
        return None  # invalid byte-range-spec: ignore the header
    if start >= size:
        raise RangeNotSatisfiable(f"the range {header!r} starts beyond the end of a {size}-byte file", size)
    return start, min(end, size - 1)


# --- replacing an output text file ------------------------------------------------------------


def _sha256_file(fh) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1024 * 1024), b""):
        digest.update(chunk)
    return digest.hexdigest()


def artifact_replace(*, thread, path: Any, content: Any, expected_sha256: Any) -> dict[str, Any]:
    """Replace an existing UTF-8 text file under outputs if it still has ``expected_sha256``."""
    if not isinstance(content, str):
        raise InvalidRequest("content must be a string (the new text of the file)")
    if not isinstance(expected_sha256, str) or not _SHA256.fullmatch(expected_sha256):
        raise InvalidRequest("expected_sha256 must be the 64-hex-digit SHA-256 of the content you edited")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest("content is not valid Unicode text (it holds lone surrogates)") from None
    limit = get_app_config().uploads.artifact_edit_max_bytes
    if len(data) > limit:
        raise PayloadTooLarge(f"the new content is {len(data)} bytes; artifact edits are limited to {limit} bytes")
    artifact = artifact_get(thread=thread, path=path)
    if artifact.data is not None:
        raise Forbidden(f"{artifact.virtual} is inside a .skill archive; edit the files before packaging instead")
    outputs_root = _fs(thread).host_dir("outputs")
    if outputs_root not in artifact.real.parents:
        raise Forbidden(f"only files under {OUTPUTS} can be edited; {artifact.virtual} is not")
    # A run's tools write these files: the edit and a run never overlap.
    with thread_reserved(thread=thread, kind=ReservationKind.ARTIFACT_WRITE,
                         run_busy_detail=f"Thread {thread.pk} has an active run; edit its files when the run has finished"):
        return _replace_checked(artifact, data, expected_sha256, limit)


def _replace_checked(artifact, data: bytes, expected_sha256: str, limit: int) -> dict:
    real = artifact.real
    while True:
        fh = open(real, "rb")
        try:
            # Lock the file we opened, then check it is still the one at the path: a writer
            # that waited on the lock of a file another writer has since replaced starts over.
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                if os.fstat(fh.fileno()).st_ino != os.stat(real).st_ino:
                    continue
            except FileNotFoundError:
                raise NotFound(f"No artifact at {artifact.virtual}") from None
            current = fh.read(limit + 1)
            if len(current) > limit:
                raise PayloadTooLarge(f"{artifact.virtual} is larger than {limit} bytes and cannot be edited here")
            try:
                current.decode("utf-8")
            except UnicodeDecodeError:
                raise UnsupportedMediaType(f"{artifact.virtual} is not a UTF-8 text file and cannot be edited as text") from None
            current_sha = hashlib.sha256(current).hexdigest()
            if current_sha != expected_sha256.lower():
                raise Conflict(f"{artifact.virtual} changed since you read it (its SHA-256 is now {current_sha}); reload and edit again")
            _atomic_write(real, data, os.fstat(fh.fileno()).st_mode & 0o7777)
            return {"path": artifact.virtual, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        finally:
            fh.close()


def _atomic_write(target: Path, data: bytes, mode: int) -> None:
    staging = target.parent / f".artifact-{secrets.token_hex(8)}{STAGING_SUFFIX}"
    try:
        fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(staging, target)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


# --- a run's artifact archive -------------------------------------------------------------------


def run_presented_paths(*, run) -> list[str]:
    """The output paths the run's successful ``present_files`` calls showed the user, in order.

    Read from the run's journal: the tool call's ``filepaths`` count only when the matching
    tool result says they were presented (the tool is all-or-nothing).
    """
    calls: dict[str, list[str]] = {}
    presented: list[str] = []
    for event_type, content in run_answer_events(run_id=str(run.pk)):
        if event_type == "llm.ai.response":
            for call in content.get("tool_calls") or []:
                if isinstance(call, dict) and call.get("name") == "present_files":
                    paths = (call.get("args") or {}).get("filepaths")
                    if isinstance(paths, list):
                        calls[str(call.get("id"))] = [p for p in paths if isinstance(p, str)]
        elif content.get("name") == "present_files":
            paths = calls.get(str(content.get("tool_call_id")))
            text = content.get("content")
            if paths and isinstance(text, str) and text.startswith("Presented to the user"):
                presented.extend(paths)
    return list(dict.fromkeys(presented))


@dataclass
class Archive:
    path: Path  # a temporary ZIP file; the caller deletes it after sending
    filename: str
    size: int
    files: int


def run_archive_build(*, thread, run) -> Archive:
    cfg = get_app_config().uploads
    fs = _fs(thread)
    outputs_root = fs.host_dir("outputs")
    members: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    total = 0
    for raw in run_presented_paths(run=run):
        try:
            resolved = fs.resolve(raw)
        except SandboxPathError:
            continue  # a link that now leads outside: never packed
        real = resolved.real
        if outputs_root not in real.parents or not real.is_file() or real in seen:
            continue  # deleted or replaced by a directory since it was presented
        seen.add(real)
        members.append((real, real.relative_to(outputs_root).as_posix()))
        total += real.stat().st_size
        if len(members) > cfg.archive_max_files:
            raise PayloadTooLarge(f"the run presented more than {cfg.archive_max_files} files; the archive is limited to that many")
        if total > cfg.archive_max_bytes:
            raise PayloadTooLarge(f"the run's files add up to more than {cfg.archive_max_bytes} bytes, the archive limit")
    if not members:
        raise NotFound(f"Run {run.pk} presented no files that still exist")
    fd, name = tempfile.mkstemp(prefix="deerflow-archive-", suffix=".zip")
    os.close(fd)
    try:
        with zipfile.ZipFile(name, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for real, arcname in members:
                archive.write(real, arcname)
        return Archive(path=Path(name), filename=f"run-{run.pk}-artifacts.zip", size=os.path.getsize(name), files=len(members))
    except BaseException:
        os.unlink(name)
        raise
