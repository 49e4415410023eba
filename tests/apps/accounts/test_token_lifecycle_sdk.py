"""The token life cycle as a user lives it, on a live Daphne server: sign in through allauth,
mint a token through /api/tokens/ (session + CSRF), use it with the official langgraph-sdk
client, narrow it, revoke it (401) and let one expire (401)."""

from __future__ import annotations

import re

import httpx
import pytest
from langgraph_sdk import get_sync_client

from harness.testing import LoopbackOpenAIServer, loopback_config_text
from tests.support.live import start_live_server

pytestmark = [pytest.mark.slow]

PASSWORD = "Correct-Horse-42-battery"
USER = {"messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with LoopbackOpenAIServer(["Hi from the loopback model."], loop=True) as model:
        server = start_live_server(tmp_path_factory.mktemp("accounts-live"), config_text=loopback_config_text(model.base_url, timeout=30, extra_yaml="sandbox:\n  use: local\n"),
                                   extra_env={"DEERFLOW_ALLOW_SIGNUP": "true"})
        try:
            yield server
        finally:
            server.stop()


def _browser_session(live, username: str) -> httpx.Client:
    """Sign up like a browser (the server allows sign-up by DEERFLOW_ALLOW_SIGNUP)."""
    browser = httpx.Client(base_url=live.url, follow_redirects=False)
    page = browser.get("/accounts/signup/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    signed = browser.post("/accounts/signup/", data={"csrfmiddlewaretoken": token, "username": username, "email": f"{username}@example.com", "password1": PASSWORD, "password2": PASSWORD})
    assert signed.status_code == 302, signed.text[:500]
    return browser


def _mint(browser: httpx.Client, **body) -> dict:
    response = browser.post("/api/tokens/", json=body, headers={"X-CSRFToken": browser.cookies["csrftoken"]})
    assert response.status_code == 201, response.text
    return response.json()


def _sdk(live, token: str):
    return get_sync_client(url=f"{live.url}/api", headers={"Authorization": f"Bearer {token}"})


def _status(call) -> int:
    with pytest.raises(httpx.HTTPStatusError) as err:
        call()
    return err.value.response.status_code


def test_token_life_cycle_with_the_langgraph_sdk(live):
    browser = _browser_session(live, "owner")
    full = _mint(browser, name="script", scopes=["threads:read", "threads:write", "runs:read", "runs:create", "runs:cancel"])
    sdk = _sdk(live, full["token"])

    thread = sdk.threads.create(metadata={"by": "token"})
    result = sdk.runs.wait(thread["thread_id"], "lead_agent", input=USER)
    assert result["messages"][-1]["content"] == "Hi from the loopback model."
    assert sdk.threads.get(thread["thread_id"])["metadata"]["by"] == "token"

    # A read-only token reads the same thread but cannot start a run on it.
    reader = _sdk(live, _mint(browser, name="reader", scopes=["threads:read", "runs:read"])["token"])
    assert reader.threads.get(thread["thread_id"])["thread_id"] == thread["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as err:
        reader.runs.create(thread["thread_id"], "lead_agent", input=USER)
    assert err.value.response.status_code == 403
    assert err.value.response.json() == {"detail": "this token lacks the 'runs:create' scope"}
    # It follows a run with the SDK's join_stream (a GET: a read), and cannot cancel one.
    run = sdk.runs.create(thread["thread_id"], "lead_agent", input=USER)
    sdk.runs.join(thread["thread_id"], run["run_id"])
    events = [part.event for part in reader.runs.join_stream(thread["thread_id"], run["run_id"])]
    assert events[0] == "metadata" and events[-1] == "end"
    with pytest.raises(httpx.HTTPStatusError) as err:
        reader.runs.cancel(thread["thread_id"], run["run_id"])
    assert err.value.response.json() == {"detail": "this token lacks the 'runs:cancel' scope"}

    # The token cannot manage tokens; the browser session can, and revoking is immediate.
    assert httpx.get(f"{live.url}/api/tokens/", headers={"Authorization": f"Bearer {full['token']}"}).status_code == 403
    assert browser.delete(f"/api/tokens/{full['id']}/", headers={"X-CSRFToken": browser.cookies["csrftoken"]}).status_code == 204
    assert _status(lambda: sdk.threads.get(thread["thread_id"])) == 401
    listed = browser.get("/api/tokens/").json()["tokens"]
    assert [t["name"] for t in listed] == ["reader"] and listed[0]["last_used_at"] is not None


def test_an_expired_token_is_refused(live):
    browser = _browser_session(live, "expiring")
    issued = _mint(browser, name="short", scopes=["threads:read", "threads:write"], expires_in_days=1)
    sdk = _sdk(live, issued["token"])
    assert sdk.threads.create()["thread_id"]
    live.shell(
        "from datetime import timedelta; from django.utils import timezone; from apps.accounts.models import PersonalAccessToken\n"
        f"PersonalAccessToken.objects.filter(pk={issued['id']}).update(expires_at=timezone.now() - timedelta(seconds=1))"
    )
    assert _status(lambda: sdk.threads.create()) == 401
