"""A thread's files: uploads (upload, list, delete, limits) and artifacts (bytes + MIME),
written and read through the same code as the server's routes (``harness.uploads``), in the
same place: ``DEER_FLOW_HOME/users/{user_id}/threads/{thread_id}/user-data``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.uploads.artifacts import artifact_get
from harness.uploads.files import IncomingFile, ThreadRef, delete_upload, list_uploads, upload_files, upload_limits

COPY_CHUNK = 1024 * 1024


class _LocalFile:
    """A file on this machine, read the way the upload writer reads a request's parts."""

    def __init__(self, path: Path):
        self.path = path
        self.size = path.stat().st_size

    def chunks(self, chunk_size: int = COPY_CHUNK) -> Iterator[bytes]:
        with self.path.open("rb") as fh:
            while chunk := fh.read(chunk_size):
                yield chunk


class FilesMixin:
    def _thread_ref(self, thread_id: str) -> ThreadRef:
        return ThreadRef(owner_id=self.user_id, pk=self._thread_id(thread_id))

    def upload_files(self, thread_id: str, files: list[str | os.PathLike]) -> dict[str, Any]:
        """Copy local files into the thread's uploads (all or none); PDF and Office documents
        get a Markdown companion. ``{success, files, message, skipped_files}``."""
        paths = [Path(f) for f in files]
        for path in paths:
            if not path.is_file():
                raise FileNotFoundError(f"No file at {path}")
        incoming = [IncomingFile(name=path.name, file=_LocalFile(path)) for path in paths]
        return upload_files(thread=self._thread_ref(thread_id), files=incoming)

    def list_uploads(self, thread_id: str) -> dict[str, Any]:
        """``{files, count, quota}``."""
        return list_uploads(thread=self._thread_ref(thread_id))

    def delete_upload(self, thread_id: str, filename: str) -> dict[str, Any]:
        return delete_upload(thread=self._thread_ref(thread_id), filename=filename)

    def get_upload_limits(self) -> dict[str, int]:
        return upload_limits()

    def get_artifact(self, thread_id: str, path: str) -> tuple[bytes, str]:
        """The file's bytes and MIME type, as ``GET /api/threads/{id}/artifacts/{path}`` serves
        them. ``path`` is a virtual path (``/mnt/user-data/outputs/report.md``, with or without
        the leading slash); ``x.skill/SKILL.md`` reads inside a skill archive."""
        artifact = artifact_get(thread=self._thread_ref(thread_id), path=path.lstrip("/"))
        data = artifact.data if artifact.data is not None else artifact.real.read_bytes()
        return data, artifact.content_type
