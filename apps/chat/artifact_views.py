"""Artifact routes: stream a thread file (byte ranges, forced attachments), replace an
output text file, and download a run's presented files as one ZIP.

Bodies are async iterators that read the file in chunks on a worker thread: under ASGI a
synchronous iterator would be read whole into memory before the first byte is sent, and
reads must not block the event loop.
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator
from typing import BinaryIO
from urllib.parse import quote

from django.http import StreamingHttpResponse
from django.utils.decorators import method_decorator
from django.utils.http import http_date
from django.views.decorators.clickjacking import xframe_options_sameorigin
from drf_spectacular.utils import OpenApiTypes, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.chat import api_types as types
from apps.chat import artifacts
from apps.errors import InvalidRequest, RangeNotSatisfiable
from apps.runs.selectors import run_get_for_user
from apps.threads.selectors import thread_get_for_user
from deerflow_site.json_input import StrictJSONParser

CHUNK = 256 * 1024
# The chat's file viewer frames PDFs from this route, so these responses (and only these) may
# be framed by our own pages; every other page keeps X-Frame-Options: DENY.
FRAME_ANCESTORS = "frame-ancestors 'self'"


async def _file_chunks(fh: BinaryIO, start: int, length: int) -> AsyncIterator[bytes]:
    """``length`` bytes from ``start`` of an open file, which is closed at the end (or when
    the client goes away and the server closes the iterator)."""
    try:
        await asyncio.to_thread(fh.seek, start)
        remaining = length
        while remaining > 0:
            chunk = await asyncio.to_thread(fh.read, min(CHUNK, remaining))
            if not chunk:
                break  # the file shrank while being sent
            remaining -= len(chunk)
            yield chunk
    finally:
        await asyncio.to_thread(fh.close)


def _disposition(kind: str, filename: str) -> str:
    ascii_name = filename.encode("ascii", "ignore").decode().replace('"', "").replace("\\", "") or "download"
    return f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename)}"


@method_decorator(xframe_options_sameorigin, name="dispatch")
class ThreadArtifactView(APIView):
    parser_classes = [StrictJSONParser]
    token_scopes = {"GET": "threads:read", "PUT": "threads:write"}

    @extend_schema(responses={(200, "application/octet-stream"): OpenApiTypes.BINARY})
    def get(self, request, thread_id, artifact_path):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        artifact = artifacts.artifact_get(thread=thread, path=artifact_path)
        try:
            byte_range = artifacts.parse_range(request.META.get("HTTP_RANGE"), artifact.size)
        except RangeNotSatisfiable as exc:
            # Caught here only to add the header RFC 9110 asks for; the body is the usual detail.
            return Response({"detail": exc.detail}, status=416, headers={"Content-Range": f"bytes */{exc.size}"})
        start, end = byte_range if byte_range else (0, artifact.size - 1)
        length = max(0, end - start + 1)
        fh = io.BytesIO(artifact.data) if artifact.data is not None else artifact.real.open("rb")
        response = StreamingHttpResponse(_file_chunks(fh, start, length), status=206 if byte_range else 200,
                                         content_type=artifact.content_type)
        response["Content-Length"] = str(length)
        response["Accept-Ranges"] = "bytes"
        response["Last-Modified"] = http_date(artifact.mtime)
        response["X-Content-Type-Options"] = "nosniff"
        if byte_range:
            response["Content-Range"] = f"bytes {start}-{end}/{artifact.size}"
        forced = request.query_params.get("download", "").lower() in {"1", "true", "yes"}
        if forced or artifacts.is_active_content(artifact.content_type):
            response["Content-Disposition"] = _disposition("attachment", artifact.name)
            # Even if something renders it anyway, it runs with no origin and no scripts.
            response["Content-Security-Policy"] = f"sandbox; default-src 'none'; {FRAME_ANCESTORS}"
        else:
            response["Content-Disposition"] = _disposition("inline", artifact.name)
            response["Content-Security-Policy"] = FRAME_ANCESTORS
        return response

    @extend_schema(request=types.ArtifactReplace, responses=types.ArtifactReplaced)
    def put(self, request, thread_id, artifact_path):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        body = request.data
        if not isinstance(body, dict):
            raise InvalidRequest("the request body must be a JSON object {content, expected_sha256}")
        result = artifacts.artifact_replace(thread=thread, path=artifact_path, content=body.get("content"),
                                            expected_sha256=body.get("expected_sha256"))
        return Response(result)


class RunArtifactArchiveView(APIView):
    token_scopes = {"GET": "runs:read"}

    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, thread_id, run_id):
        thread = thread_get_for_user(user=request.user, thread_id=thread_id)
        run = run_get_for_user(user=request.user, thread_id=thread.pk, run_id=run_id)
        archive = artifacts.run_archive_build(thread=thread, run=run)
        fh = archive.path.open("rb")
        # Unlinked while open: the ZIP leaves the disk when the response is done or abandoned.
        os.unlink(archive.path)
        response = StreamingHttpResponse(_file_chunks(fh, 0, archive.size),
                                         content_type="application/zip")
        response["Content-Length"] = str(archive.size)
        response["Content-Disposition"] = _disposition("attachment", archive.filename)
        response["X-Archive-Files"] = str(archive.files)
        return response
