import os
from pathlib import Path

import pytest
import yaml


@pytest.fixture
def uploads_config(tmp_path, monkeypatch):
    """Run with the test config plus an ``uploads:`` section (the real loader reads it)."""

    def apply(**section):
        base = yaml.safe_load(Path(os.environ["DEER_FLOW_CONFIG_PATH"]).read_text())
        base["uploads"] = section
        path = tmp_path / "config-uploads.yaml"
        path.write_text(yaml.safe_dump(base))
        monkeypatch.setenv("DEER_FLOW_CONFIG_PATH", str(path))
        return path

    return apply


@pytest.fixture
def thread_of(user_client):
    def make(client=None, thread_id=None):
        body = {"thread_id": thread_id} if thread_id else {}
        response = (client or user_client).post("/api/threads", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()["thread_id"]

    return make


def make_pdf(text: str) -> bytes:
    """A minimal valid one-page PDF showing ``text`` (Helvetica, no compression)."""
    stream = b"BT /F1 18 Tf 20 100 Td (" + text.encode("latin-1") + b") Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def read_body(response) -> bytes:
    """The whole body of a streamed (async under ASGI) response, from sync test code."""
    from asgiref.sync import async_to_sync

    if not response.streaming:
        return response.content
    if not getattr(response, "is_async", False):
        return b"".join(response.streaming_content)

    async def collect():
        return b"".join([chunk async for chunk in response.streaming_content])

    return async_to_sync(collect)()
