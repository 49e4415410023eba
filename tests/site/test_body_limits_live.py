"""Under the real server (Daphne, started as `make run` starts it): big request bodies never
grow the server's memory with their size, and the ones over a limit are refused with 413.

RSS is sampled from /proc while each request is sent; the bound (64 MiB) is generous against
the 200 MiB or 99 MiB body, and small against what buffering a body in memory costs.
"""

from __future__ import annotations

import http.client
import json
import threading
from urllib.parse import urlsplit

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
MiB = 1024 * 1024
BOUND = 64 * MiB
BLOCK = bytes(range(256)) * 256  # 64 KiB, not all one byte


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) * 1024


class PeakRSS:
    """The highest RSS of a process while the block runs."""

    def __init__(self, pid: int):
        self.pid = pid
        self.before = self.peak = rss_bytes(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_bytes(self.pid))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes(self.pid))
        print(f"RSS before {self.before / MiB:.0f} MiB, peak {self.peak / MiB:.0f} MiB")

    @property
    def growth(self) -> int:
        return self.peak - self.before


def body_of(size: int, head: bytes = b"", tail: bytes = b""):
    yield head
    left = size
    while left:
        piece = BLOCK[: min(len(BLOCK), left)]
        left -= len(piece)
        yield piece
    yield tail


def send(url: str, path: str, chunks, *, length: int | None, headers: dict | None = None) -> tuple[int | None, dict]:
    """POST a body streamed from ``chunks`` (chunked when ``length`` is None); the status and
    JSON answer, or (None, {}) when the server closed the connection without one."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if length is not None:
        all_headers["Content-Length"] = str(length)
    try:
        conn.request("POST", path, body=chunks, headers=all_headers, encode_chunked=length is None)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused early; the answer may still be readable below
    try:
        response = conn.getresponse()
        body = response.read()
        return response.status, json.loads(body) if body.startswith(b"{") else {}
    except (ConnectionError, http.client.HTTPException):
        return None, {}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = start_live_server(tmp_path_factory.mktemp("body-limits"), config_text=CONFIG)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def token(live):
    return live.create_user_token("bodies")


@pytest.mark.parametrize("path", ["/api/health", "/api/threads/t1/uploads", "/accounts/login/"])
def test_anonymous_200mib_post_is_refused_without_growing_memory(live, path):
    size = 200 * MiB
    with PeakRSS(live.process.pid) as rss:
        status, answer = send(live.url, path, body_of(size), length=size)
    assert status == 413, (status, answer)
    assert "bytes" in answer["detail"]
    assert rss.growth < BOUND, f"server RSS grew by {rss.growth / MiB:.0f} MiB"


@pytest.mark.parametrize("credentials", [{"Cookie": "sessionid=forged0123456789abcdefghijklmnop"},
                                         {"Cookie": "access_token=forged0123456789abcdefghijklmnop"},
                                         {"Authorization": "Bearer dfp_" + "A" * 43}, {"Authorization": "Basic YWxpY2U6cHc="}],
                         ids=["forged-cookie", "forged-access-token", "bad-token", "basic"])
def test_forged_credentials_get_the_anonymous_limit(live, credentials):
    size = 200 * MiB
    with PeakRSS(live.process.pid) as rss:
        status, answer = send(live.url, "/api/threads/t1/uploads", body_of(size), length=size,
                              headers={**credentials, "Content-Type": "multipart/form-data; boundary=x"})
    assert status == 413, (status, answer)
    assert "without credentials" in answer["detail"]
    assert rss.growth < BOUND, f"server RSS grew by {rss.growth / MiB:.0f} MiB"


# access_token: the session cookie's copy that DeerFlow's frontend sends alone from its server.
@pytest.mark.parametrize("cookie_name", ["sessionid", "access_token"])
def test_a_real_session_gets_past_the_anonymous_limit(live, cookie_name):
    cookie = live.shell("from django.test import Client; from apps.accounts.models import User\n"
                        "u, _ = User.objects.get_or_create(username='session-user')\n"
                        "c = Client(); c.force_login(u); print(c.cookies['sessionid'].value)")
    body = json.dumps({"metadata": {"note": "x" * MiB}}).encode()
    status, answer = send(live.url, "/api/threads", [body], length=len(body), headers={"Cookie": f"{cookie_name}={cookie}"})
    # Admitted to Django, which asks for the CSRF token a session's POST needs.
    assert status == 403 and "CSRF" in answer["detail"], (status, answer)


def test_anonymous_chunked_body_is_counted_as_it_arrives(live):
    with PeakRSS(live.process.pid) as rss:
        status, answer = send(live.url, "/api/health", body_of(200 * MiB), length=None)
    assert status == 413, (status, answer)
    assert rss.growth < BOUND, f"server RSS grew by {rss.growth / MiB:.0f} MiB"


def test_authenticated_99mib_upload_costs_constant_memory(live, token):
    auth = {"Authorization": f"Bearer {token}"}
    tid = httpx.post(f"{live.url}/api/threads", json={}, headers=auth).json()["thread_id"]
    boundary = "deerflowlimits0123456789"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="big.bin"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    size = 99 * MiB
    with PeakRSS(live.process.pid) as rss:
        status, answer = send(live.url, f"/api/threads/{tid}/uploads", body_of(size, head, tail), length=len(head) + size + len(tail),
                              headers={**auth, "Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert status == 200, answer
    assert answer["files"][0]["size"] == size
    assert rss.growth < BOUND, f"server RSS grew by {rss.growth / MiB:.0f} MiB"


@pytest.mark.parametrize("route", ["/api/threads", "/api/threads/{tid}/runs/wait"])
def test_10mb_json_body_is_413_naming_the_limit(live, token, route):
    auth = {"Authorization": f"Bearer {token}"}
    tid = httpx.post(f"{live.url}/api/threads", json={}, headers=auth).json()["thread_id"]
    body = json.dumps({"metadata": {"note": "x" * (10 * MiB)}}).encode()
    response = httpx.post(live.url + route.format(tid=tid), content=body, headers={**auth, "Content-Type": "application/json"}, timeout=60)
    assert response.status_code == 413, response.text
    assert str(4 * MiB) in response.json()["detail"]
    # The server still serves the caller afterwards.
    assert httpx.get(f"{live.url}/api/threads/{tid}", headers=auth).status_code == 200


def test_bodies_within_the_limits_still_work(live, token):
    auth = {"Authorization": f"Bearer {token}"}
    # A 1 MiB JSON body is under the 4 MiB cap: it is read whole and reaches the view, which
    # measures all of it (thread metadata has a smaller cap of its own, 64 KiB).
    response = httpx.post(f"{live.url}/api/threads", json={"metadata": {"note": "x" * MiB}}, headers=auth, timeout=60)
    assert response.status_code == 413 and "would be 1048587 bytes" in response.json()["detail"], response.text
    response = httpx.post(f"{live.url}/api/threads", json={"metadata": {"note": "x" * (60 * 1024)}}, headers=auth, timeout=60)
    assert response.status_code == 200, response.text
    assert len(response.json()["metadata"]["note"]) == 60 * 1024
    login = httpx.get(f"{live.url}/accounts/login/")
    assert login.status_code == 200
