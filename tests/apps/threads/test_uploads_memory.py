"""A 50 MB upload goes through the real view without the file ever being held in memory."""

from __future__ import annotations

import hashlib
import tracemalloc

import pytest
from django.core.handlers.wsgi import WSGIRequest
from django.test import RequestFactory
from rest_framework.test import force_authenticate

from apps.threads.upload_views import ThreadUploadsView
from harness.config import thread_user_data_dir

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SIZE = 50 * 1024 * 1024
BOUNDARY = "deerflowboundary7MA4YWxkTrZu0gW"


def write_multipart(path, size: int) -> tuple[int, str]:
    """A multipart body with one ``files`` part of ``size`` bytes, written to disk in chunks."""
    digest = hashlib.sha256()
    block = bytes(range(256)) * 4096  # 1 MiB, not all one byte
    with path.open("wb") as out:
        out.write(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="big.bin"\r\n'
                  f"Content-Type: application/octet-stream\r\n\r\n".encode())
        left = size
        while left:
            piece = block[: min(len(block), left)]
            digest.update(piece)
            out.write(piece)
            left -= len(piece)
        out.write(f"\r\n--{BOUNDARY}--\r\n".encode())
    return path.stat().st_size, digest.hexdigest()


def test_50mb_upload_is_streamed_with_small_peak_memory(user, tmp_path, thread_of):
    tid = thread_of()
    body_path = tmp_path / "body.multipart"
    length, sha = write_multipart(body_path, SIZE)
    view = ThreadUploadsView.as_view()
    with body_path.open("rb") as stream:
        environ = RequestFactory()._base_environ(
            PATH_INFO=f"/api/threads/{tid}/uploads", REQUEST_METHOD="POST",
            CONTENT_TYPE=f"multipart/form-data; boundary={BOUNDARY}", CONTENT_LENGTH=str(length),
        )
        environ["wsgi.input"] = stream
        request = WSGIRequest(environ)
        force_authenticate(request, user)
        tracemalloc.start()
        try:
            baseline = tracemalloc.get_traced_memory()[0]
            response = view(request, thread_id=tid)
            peak = tracemalloc.get_traced_memory()[1] - baseline
        finally:
            tracemalloc.stop()
    assert response.status_code == 200, response.data
    assert response.data["files"][0]["size"] == SIZE
    stored = thread_user_data_dir(user.pk, tid) / "uploads" / "big.bin"
    digest = hashlib.sha256()
    with stored.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    assert digest.hexdigest() == sha
    # Chunks of a few MiB at most are ever alive at once; the file is 50 MiB.
    assert peak < 8 * 1024 * 1024, f"peak Python memory during the upload: {peak / 2**20:.1f} MiB"
    print(f"50 MiB upload: peak Python allocation {peak / 2**20:.2f} MiB")
