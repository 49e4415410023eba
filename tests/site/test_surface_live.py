"""What a client of the real server (Daphne, DJANGO_DEBUG on as under `make run`) sees when it
is refused: websocket close codes as docs/api.md promises them, and no debug pages."""

from __future__ import annotations

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.support.live import start_live_server

pytestmark = pytest.mark.slow

CONFIG = """\
config_version: 1
models: []
sandbox:
  use: local
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = start_live_server(tmp_path_factory.mktemp("surface"), config_text=CONFIG)
    yield server
    server.stop()


def session_cookie(live, username: str) -> str:
    return live.shell(
        "from django.test import Client; from apps.accounts.models import User\n"
        f"u, _ = User.objects.get_or_create(username={username!r})\n"
        "c = Client(); c.force_login(u); print(c.cookies['sessionid'].value)"
    )


def close_code(live, thread_id: str, cookie: str | None) -> int:
    url = live.url.replace("http://", "ws://") + f"/ws/threads/{thread_id}/"
    headers = {"Cookie": f"sessionid={cookie}"} if cookie else {}
    with connect(url, origin=live.url, additional_headers=headers, open_timeout=10) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    return closed.value.rcvd.code


def test_websocket_refusals_close_with_the_documented_codes(live):
    owner = session_cookie(live, "ws-owner")
    intruder = session_cookie(live, "ws-intruder")
    tid = live.shell("from apps.accounts.models import User; from apps.threads.services import thread_create\n"
                     "print(thread_create(owner=User.objects.get(username='ws-owner')).pk)")
    assert close_code(live, tid, None) == 4401
    assert close_code(live, tid, intruder) == 4404


def test_unknown_urls_show_no_debug_page(live):
    page = httpx.get(f"{live.url}/no/such/page")
    assert page.status_code == 404
    assert "URLconf" not in page.text and "api/threads" not in page.text and "DEBUG = True" not in page.text
    assert "DeerFlow" in page.text
    api = httpx.get(f"{live.url}/api/no/such/route")
    assert api.status_code == 404
    assert api.json() == {"detail": "Not found."}
