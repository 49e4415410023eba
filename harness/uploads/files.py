"""Thread uploads: staged, size-checked writes into ``user-data/uploads`` with Markdown
companions for office documents, plus the listing, deletion and the startup sweep.

How a request is written (all or nothing):
  1. every file is checked (name, emptiness, per-file and per-request caps) before any byte
     lands in the thread directory;
  2. each file is copied in chunks from Django's upload temp file into a hidden
     ``.upload-<random>.part`` beside its destination, counting bytes as it goes (a client
     that lied about a size is caught here);
  3. only when every file is staged are they renamed into place with ``os.replace``, so a
     reader (the agent, a listing, a concurrent upload of the same name) sees either the old
     file or the whole new one, never a prefix. A failure removes every staging file.
Conversion runs afterwards on one worker thread per request; a document that cannot be
converted stays uploaded and its entry says why (``markdown_error``).

The server's upload routes and the embedded ``DeerFlowClient`` both write through here, so a
file uploaded either way lands, lists and deletes the same. A ``thread`` is anything with the
owner's id as ``owner_id`` and the thread id as ``pk`` (the Thread row, or ``ThreadRef``).
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.config import deer_flow_home, get_app_config, thread_user_data_dir
from harness.errors import Conflict, Forbidden, InvalidRequest, NotFound, PayloadTooLarge
from harness.sandbox.quota import QuotaExceeded, quota_for, quota_message
from harness.uploads import STAGING_SUFFIX, is_staging_name

logger = logging.getLogger(__name__)

VIRTUAL_UPLOADS = "/mnt/user-data/uploads"
# Staging files are dot-files: the uploads middleware, the listing and the artifact route skip
# them, so a half-written upload is never shown to anyone.
MAX_NAME_BYTES = 255
# The listing and limits routes sit where a file name would: files cannot take these names.
RESERVED_NAMES = frozenset({"list", "limits"})
COPY_CHUNK = 1024 * 1024
# A staging file untouched this long at startup belongs to a dead process; a live upload
# writes (and so touches) its staging file at least once per chunk.
SWEEP_MIN_AGE_SECONDS = 60

# Only the formats markitdown reads without network access or extra services; the legacy
# binary .doc/.ppt formats are not among them.
_CONVERTERS = {
    ".pdf": "PdfConverter",
    ".docx": "DocxConverter",
    ".xlsx": "XlsxConverter",
    ".xls": "XlsConverter",
    ".pptx": "PptxConverter",
}


def upload_limits() -> dict[str, int]:
    cfg = get_app_config().uploads
    return {"max_files": cfg.max_files, "max_file_size": cfg.max_file_size, "max_total_size": cfg.max_total_size}


def _quota(thread):
    return quota_for(thread.owner_id, thread.pk, get_app_config().sandbox)


def _check_quota(thread, size: int) -> None:
    """Uploads share the sandbox's disk quota: refuse what would not fit, before writing."""
    try:
        _quota(thread).check_write(size)
    except QuotaExceeded as exc:
        # The harness words it for the model; the API client gets the same facts.
        raise PayloadTooLarge(str(exc).removeprefix("Error: ")) from None


def uploads_dir(thread) -> Path:
    return thread_user_data_dir(thread.owner_id, thread.pk) / "uploads"


def _safe_uploads_dir(thread) -> Path:
    directory = uploads_dir(thread)
    if directory.is_symlink():
        # Only a command on the host could have put a link here; never write, list or
        # delete through it.
        raise Forbidden("this thread's uploads directory is a symbolic link; refused")
    return directory


def validate_upload_name(name: Any) -> str:
    """A plain file name the uploads directory can hold, or InvalidRequest saying why."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidRequest("a file name is required")
    if "\x00" in name:
        raise InvalidRequest("file names must not contain NUL bytes")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in name):
        raise InvalidRequest("file names must be valid Unicode: this one holds a lone UTF-16 surrogate")
    if "/" in name or "\\" in name:
        raise InvalidRequest(f"{name!r} is not a plain file name: remove the directory part")
    if name in {".", ".."}:
        raise InvalidRequest(f"{name!r} is not a file name")
    if name.startswith("."):
        # Dot-files are hidden from the agent and the listing, so they would vanish silently.
        raise InvalidRequest(f"{name!r} starts with '.': hidden files cannot be uploaded, rename it")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise InvalidRequest(f"file names must be at most {MAX_NAME_BYTES} bytes; {name[:40]!r}... is longer")
    if any(not ch.isprintable() for ch in name):
        raise InvalidRequest(f"{name!r} contains control characters")
    return name


def _deduplicated(names: list[str]) -> list[str]:
    """Second and later uses of a name in one request become ``stem_1.ext``, ``stem_2.ext`` ..."""
    taken = set(names)
    seen: set[str] = set()
    result = []
    for name in names:
        if name not in seen:
            seen.add(name)
            result.append(name)
            continue
        stem, dot, ext = name.rpartition(".") if "." in name.lstrip(".") else (name, "", "")
        n = 1
        while True:
            candidate = f"{stem}_{n}{dot}{ext}"
            if candidate not in taken and len(candidate.encode()) <= MAX_NAME_BYTES:
                break
            n += 1
        taken.add(candidate)
        seen.add(candidate)
        result.append(candidate)
    return result


def companion_name(name: str) -> str | None:
    """``report.pdf`` -> ``report.pdf.md``: never the name of the user's own ``report.md``."""
    if Path(name).suffix.lower() not in _CONVERTERS:
        return None
    return f"{name}.md" if len(f"{name}.md".encode()) <= MAX_NAME_BYTES else None


def _artifact_url(thread_id: str, virtual_path: str) -> str:
    return f"/api/threads/{thread_id}/artifacts{quote(virtual_path)}"


def _file_entry(thread_id: str, path: Path, stat: os.stat_result | None = None) -> dict[str, Any]:
    stat = stat or path.stat()
    virtual = f"{VIRTUAL_UPLOADS}/{path.name}"
    return {
        "filename": path.name,
        "size": stat.st_size,
        "path": virtual,
        "virtual_path": virtual,
        "artifact_url": _artifact_url(thread_id, virtual),
        "extension": path.suffix.lower(),
        "modified": stat.st_mtime,
    }


def _add_companion(entry: dict[str, Any], thread_id: str, directory: Path) -> None:
    name = companion_name(entry["filename"])
    if name and (directory / name).is_file():
        virtual = f"{VIRTUAL_UPLOADS}/{name}"
        entry.update({"markdown_file": name, "markdown_path": virtual, "markdown_virtual_path": virtual,
                      "markdown_artifact_url": _artifact_url(thread_id, virtual)})


# --- conversion ------------------------------------------------------------------------------

_markitdown_converters: dict[str, Any] = {}


def _converter_for(extension: str):
    """The one markitdown converter for this format (no guessing: a corrupt PDF must fail,
    not come back as its raw bytes through the plain-text fallback)."""
    name = _CONVERTERS[extension]
    if name not in _markitdown_converters:
        from markitdown import converters  # imported on first use: it takes seconds

        _markitdown_converters[name] = getattr(converters, name)()
    return _markitdown_converters[name]


def convert_to_markdown(path: Path) -> str:
    from markitdown import StreamInfo

    extension = path.suffix.lower()
    with path.open("rb") as fh:
        result = _converter_for(extension).convert(fh, StreamInfo(extension=extension, filename=path.name, local_path=str(path)))
    text = result.markdown or ""
    if not text.strip():
        raise ValueError("the document has no extractable text")
    return text


def _write_companion(source: Path, name: str) -> None:
    text = convert_to_markdown(source)
    staging = source.parent / f".upload-{secrets.token_hex(8)}{STAGING_SUFFIX}"
    try:
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, source.parent / name)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


# --- writes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadRef:
    """A thread by its owner and id, for callers without a Thread row (the embedded client)."""

    owner_id: str
    pk: str


@dataclass
class IncomingFile:
    """What the view hands over: a name and a Django UploadedFile (or any object with
    ``size`` and ``chunks()``)."""

    name: str
    file: Any


def _check_request(files: list[IncomingFile]) -> None:
    limits = upload_limits()
    if not files:
        raise InvalidRequest("no files: send one or more multipart parts named 'files'")
    if len(files) > limits["max_files"]:
        raise PayloadTooLarge(f"{len(files)} files in one request; at most {limits['max_files']} are allowed")
    total = 0
    for item in files:
        validate_upload_name(item.name)
        if item.name in RESERVED_NAMES:
            raise InvalidRequest(f"{item.name!r} is a reserved name in the uploads API; rename the file")
        size = int(item.file.size or 0)
        if size == 0:
            raise InvalidRequest(f"{item.name!r} is empty: upload a file with content")
        if size > limits["max_file_size"]:
            raise PayloadTooLarge(f"{item.name!r} is {size} bytes; the limit per file is {limits['max_file_size']} bytes")
        total += size
    if total > limits["max_total_size"]:
        raise PayloadTooLarge(f"the files add up to {total} bytes; the limit per request is {limits['max_total_size']} bytes")


def _stage(item: IncomingFile, directory: Path, max_file_size: int) -> Path:
    staging = directory / f".upload-{secrets.token_hex(8)}{STAGING_SUFFIX}"
    written = 0
    try:
        with staging.open("xb") as out:
            for chunk in item.file.chunks(COPY_CHUNK):
                written += len(chunk)
                if written > max_file_size:
                    raise PayloadTooLarge(f"{item.name!r} is larger than the limit per file ({max_file_size} bytes)")
                out.write(chunk)
        if written == 0:
            raise InvalidRequest(f"{item.name!r} is empty: upload a file with content")
        return staging
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def upload_files(*, thread, files: list[IncomingFile]) -> dict[str, Any]:
    """Write the request's files into the thread's uploads, then convert documents."""
    _check_request(files)
    _check_quota(thread, sum(int(f.file.size or 0) for f in files))
    limits = upload_limits()
    directory = _safe_uploads_dir(thread)
    directory.mkdir(parents=True, exist_ok=True)
    names = _deduplicated([f.name for f in files])
    for name in names:
        if (directory / name).is_dir() and not (directory / name).is_symlink():
            raise Conflict(f"a directory named {name!r} is in the uploads; rename the file or remove the directory")
    staged: list[tuple[Path, str]] = []
    try:
        for item, name in zip(files, names):
            staged.append((_stage(item, directory, limits["max_file_size"]), name))
        total = sum(p.stat().st_size for p, _ in staged)
        if total > limits["max_total_size"]:
            raise PayloadTooLarge(f"the files add up to {total} bytes; the limit per request is {limits['max_total_size']} bytes")
        # Declared sizes can be wrong: the staged files are on disk now, so the quota sees them.
        usage = _quota(thread).usage()
        if usage.exceeded():
            raise PayloadTooLarge(quota_message(usage, stopped=False).removeprefix("Error: "))
        for staging, name in staged:
            os.replace(staging, directory / name)
    except BaseException:
        for staging, _ in staged:
            staging.unlink(missing_ok=True)
        raise

    # A companion made from the file this upload replaced describes old content: drop it
    # before converting again (or not at all, when conversion is off or fails).
    for name in names:
        companion = companion_name(name)
        if companion and companion not in names:
            (directory / companion).unlink(missing_ok=True)
    entries = [_file_entry(thread.pk, directory / name) for name in names]
    notes = []
    if get_app_config().uploads.convert_documents:
        notes = _convert_all(thread.pk, directory, entries)
    renamed = [f"{f.name} -> {n}" for f, n in zip(files, names) if f.name != n]
    message = f"Uploaded {len(entries)} file{'s' if len(entries) != 1 else ''}"
    if renamed:
        message += "; renamed duplicates: " + ", ".join(renamed)
    if notes:
        message += "; " + "; ".join(notes)
    return {"success": True, "files": entries, "message": message, "skipped_files": []}


def _convert_all(thread_id: str, directory: Path, entries: list[dict[str, Any]]) -> list[str]:
    """Convert the documents among ``entries`` on one worker thread for the whole request:
    conversions never run on the caller's thread (which may be an event loop's) and one
    request cannot occupy more than one core with them."""
    jobs = [(e, companion_name(e["filename"])) for e in entries]
    jobs = [(e, name) for e, name in jobs if name]
    if not jobs:
        return []
    notes = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="upload-convert") as worker:
        futures = [(entry, name, worker.submit(_write_companion, directory / entry["filename"], name)) for entry, name in jobs]
        for entry, name, future in futures:
            try:
                future.result()
            except Exception as exc:  # a broken document: keep the upload, say why there is no companion
                reason = f"{type(exc).__name__}: {exc}".strip()[:300]
                logger.info("Converting %s failed: %s", entry["filename"], reason)
                entry["markdown_error"] = f"could not convert to Markdown ({reason})"
                notes.append(f"{entry['filename']} was not converted to Markdown ({reason})")
                continue
            _add_companion(entry, thread_id, directory)
    return notes


def delete_upload(*, thread, filename: str) -> dict[str, Any]:
    name = validate_upload_name(filename)
    directory = _safe_uploads_dir(thread)
    path = directory / name
    if path.is_symlink() or not path.is_file():
        raise NotFound(f"No uploaded file named {name!r}")
    path.unlink()
    removed = [name]
    companion = companion_name(name)
    if companion and (directory / companion).is_file():
        (directory / companion).unlink()
        removed.append(companion)
    return {"success": True, "message": f"Deleted {', '.join(removed)}"}


# --- reads -----------------------------------------------------------------------------------


def list_uploads(*, thread) -> dict[str, Any]:
    directory = _safe_uploads_dir(thread)
    if not directory.is_dir():
        return {"files": [], "count": 0, "quota": _quota(thread).usage().as_dict()}
    entries = []
    for item in sorted(os.scandir(directory), key=lambda e: e.name):
        if item.name.startswith(".") or not item.is_file(follow_symlinks=False):
            continue
        entry = _file_entry(thread.pk, Path(item.path), item.stat(follow_symlinks=False))
        _add_companion(entry, thread.pk, directory)
        entries.append(entry)
    return {"files": entries, "count": len(entries), "quota": _quota(thread).usage().as_dict()}


# --- startup ---------------------------------------------------------------------------------

_USER_DATA_SUBDIRS = ("uploads", "outputs", "workspace")


def sweep_staging_files(*, home: Path | None = None, min_age_seconds: float = SWEEP_MIN_AGE_SECONDS) -> int:
    """Delete staging files a crashed process left behind; returns how many.

    Only our own names (``.upload-*.part``, ``.artifact-*.part``) directly inside a thread's
    user-data directories, and only ones nobody has written to for ``min_age_seconds`` (another
    process may be mid-upload while this one starts).
    """
    root = (home or deer_flow_home()) / "users"
    if not root.is_dir():
        return 0
    cutoff = time.time() - min_age_seconds
    removed = 0
    for sub in _USER_DATA_SUBDIRS:
        for path in root.glob(f"*/threads/*/user-data/{sub}/.*.part"):
            try:
                if is_staging_name(path.name) and path.is_file() and not path.is_symlink() and path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except OSError as exc:
                logger.warning("Could not remove leftover staging file %s: %s", path, exc)
    if removed:
        logger.info("Removed %d leftover upload staging file(s)", removed)
    return removed
