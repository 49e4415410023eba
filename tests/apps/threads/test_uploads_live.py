"""Under Daphne (the production ASGI path): the startup sweep runs, a 50 MB upload arrives
whole, and artifacts stream with ranges.

Server memory is printed here; tests/site/test_body_limits_live.py asserts it (the server,
deerflow_site/server/daphne_server.py, streams bodies to the app), and test_uploads_memory.py asserts
what the upload view adds in-process (a 2 MiB peak for 50 MiB)."""

from __future__ import annotations

import os
import time

import httpx
import pytest

from tests.support.live import start_live_server

pytestmark = pytest.mark.slow

CONFIG = """\
config_version: 1
models: []
sandbox:
  use: local
"""


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def test_daphne_sweeps_streams_uploads_and_serves_ranges(tmp_path):
    home = tmp_path / "home"
    leftover = home / "users" / "1" / "threads" / "old" / "user-data" / "uploads" / ".upload-0badc0de.part"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"crashed mid-upload")
    past = time.time() - 3600
    os.utime(leftover, (past, past))
    server = start_live_server(home, config_text=CONFIG)
    try:
        assert not leftover.exists(), "the startup sweep left a staging file behind"
        token = server.create_user_token("carol")
        client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=120)
        tid = client.post("/api/threads", json={}).json()["thread_id"]
        assert client.get(f"/api/threads/{tid}/uploads/limits").json()["max_file_size"] == 100 * 1024 * 1024

        big = tmp_path / "big.bin"
        block = os.urandom(1024 * 1024)
        with big.open("wb") as out:
            for _ in range(50):
                out.write(block)
        before = rss_kib(server.process.pid)
        with big.open("rb") as fh:
            response = client.post(f"/api/threads/{tid}/uploads", files={"files": ("big.bin", fh, "application/octet-stream")})
        grown = rss_kib(server.process.pid) - before
        assert response.status_code == 200, response.text
        assert response.json()["files"][0]["size"] == 50 * 1024 * 1024
        print(f"Daphne RSS growth during a 50 MiB upload: {grown / 1024:.0f} MiB")

        url = response.json()["files"][0]["artifact_url"]
        part = client.get(url, headers={"Range": "bytes=1048576-1048675"})
        assert part.status_code == 206 and part.content == block[:100]
        assert part.headers["content-range"] == f"bytes 1048576-1048675/{50 * 1024 * 1024}"
        assert client.get(url, headers={"Range": f"bytes={50 * 1024 * 1024}-"}).status_code == 416
        with client.stream("GET", url) as whole:
            assert whole.headers["content-length"] == str(50 * 1024 * 1024)
            first = next(whole.iter_bytes(65536))
            assert first == block[: len(first)]
        empty = client.post(f"/api/threads/{tid}/uploads", files={"files": ("x.txt", b"")})
        assert empty.status_code == 422 and "is empty" in empty.json()["detail"]
    finally:
        server.stop()
