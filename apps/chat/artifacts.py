"""Thread artifacts on the server: streaming one (with byte ranges), replacing an output text
file atomically, and a run's bounded artifact ZIP.

Resolving a requested path safely and reading it (``artifact_get``) is
``harness.uploads.artifacts``, which the embedded client reads through too.
"""

from __future__ import annotations

import fcntl
import hashlib
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
from harness.config import get_app_config
from harness.sandbox.errors import SandboxPathError
from harness.sandbox.paths import OUTPUTS
from harness.uploads import STAGING_SUFFIX
from harness.uploads.artifacts import Artifact, _fs, artifact_get, normalize_artifact_path  # noqa: F401  (re-exported)

# Served as attachments whatever the request says: a browser would run their scripts with
# this site's origin.
ACTIVE_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "image/svg+xml"})
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


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
