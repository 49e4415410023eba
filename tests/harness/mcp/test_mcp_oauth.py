"""OAuth client credentials against a local token endpoint, through the SSRF guard."""

import asyncio
import json
import secrets
import time

from harness.mcp import get_mcp_tools, mcp_status
from tests.harness.mcp.conftest import app
from tests.harness.mcp.servers import serve_http


class TokenIssuer:
    """ASGI: ``POST /token`` issues short-lived tokens for one client; every other path needs
    a live one. Counts what happened so the test can tell a refresh from a 401 retry."""

    def __init__(self, inner, lifetime: float = 1.0):
        self.inner, self.lifetime = inner, lifetime
        self.tokens: dict[str, float] = {}
        self.grants: list[dict] = []
        self.rejected = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.inner(scope, receive, send)
        if scope["path"] == "/token":
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            from urllib.parse import parse_qs

            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            self.grants.append(form)
            if form.get("grant_type") == "refresh_token":
                if form.get("refresh_token") != "rt-1":
                    return await self._reply(send, 400, {"error": "invalid_grant"})
            elif form.get("client_id") != "deerflow" or form.get("client_secret") != "s3cret":
                return await self._reply(send, 401, {"error": "invalid_client"})
            token = secrets.token_hex(8)
            self.tokens[token] = time.monotonic() + self.lifetime
            return await self._reply(send, 200, {"access_token": token, "token_type": "bearer", "expires_in": self.lifetime})
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        token = auth.removeprefix("Bearer ")
        if self.tokens.get(token, 0) < time.monotonic():
            self.rejected += 1
            return await self._reply(send, 401, {"error": "invalid_token"})
        return await self.inner(scope, receive, send)

    async def _reply(self, send, status, body):
        data = json.dumps(body).encode()
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})


async def test_client_credentials_token_is_fetched_and_refreshed_on_expiry(ext, monkeypatch):
    issuers = []
    url, stop = serve_http(auth_check=lambda inner: issuers.append(TokenIssuer(inner)) or issuers[-1])
    issuer = issuers[0]
    monkeypatch.setenv("DF_TEST_OAUTH_SECRET", "s3cret")
    try:
        token_url = url.removesuffix("/mcp") + "/token"
        ext.write({"secure": {"type": "http", "url": url, "oauth": {
            "token_url": token_url, "client_id": "deerflow", "client_secret": "$DF_TEST_OAUTH_SECRET",
            "scope": "mcp.read", "refresh_skew_seconds": 0}}})
        tools = {t.name: t for t in await asyncio.to_thread(get_mcp_tools, app_config=app())}
        assert await tools["add"].ainvoke({"a": 1, "b": 2}) == "sum=3"
        fetched = len(issuer.grants)
        assert fetched >= 1 and issuer.grants[0]["grant_type"] == "client_credentials" and issuer.grants[0]["scope"] == "mcp.read"
        # let the token expire: the next request must fetch a new one before sending
        deadline = min(issuer.tokens.values())
        while time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert await tools["add"].ainvoke({"a": 2, "b": 2}) == "sum=4"
        assert len(issuer.grants) > fetched
        assert issuer.rejected == 0  # refreshed ahead of use, not after a 401
    finally:
        stop()


async def test_a_wrong_client_secret_is_reported_for_that_server(ext, monkeypatch):
    url, stop = serve_http(auth_check=lambda inner: TokenIssuer(inner))
    try:
        ext.write({"secure": {"type": "http", "url": url, "oauth": {
            "token_url": url.removesuffix("/mcp") + "/token", "client_id": "deerflow", "client_secret": "wrong"}}})
        assert await asyncio.to_thread(get_mcp_tools, app_config=app()) == ()
        state = next(s for s in mcp_status() if s["name"] == "secure")
        assert state["status"] == "error" and "token endpoint answered 401" in state["last_error"]
    finally:
        stop()


async def test_the_refresh_token_grant(ext):
    issuers = []
    url, stop = serve_http(auth_check=lambda inner: issuers.append(TokenIssuer(inner, lifetime=60)) or issuers[-1])
    try:
        ext.write({"secure": {"type": "http", "url": url, "oauth": {
            "token_url": url.removesuffix("/mcp") + "/token", "grant_type": "refresh_token", "refresh_token": "rt-1"}}})
        tools = {t.name: t for t in await asyncio.to_thread(get_mcp_tools, app_config=app())}
        assert await tools["add"].ainvoke({"a": 3, "b": 4}) == "sum=7"
        assert issuers[0].grants[0] == {"grant_type": "refresh_token", "refresh_token": "rt-1"}
    finally:
        stop()
