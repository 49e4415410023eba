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
