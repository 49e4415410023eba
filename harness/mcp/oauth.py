"""OAuth bearer tokens for HTTP/SSE MCP servers (client_credentials and refresh_token grants).

The token endpoint is called through the SSRF guard like the server itself, the token is
cached until ``expires_in`` minus the configured skew, and a 401 from the server triggers
one refresh and retry: a revoked token heals without waiting for its expiry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator

import httpx

from harness.config.extensions import McpOAuthConfig
from harness.net.guard import GuardPolicy, guarded_client


class OAuthError(Exception):
    pass


class OAuthTokenAuth(httpx.Auth):
    def __init__(self, config: McpOAuthConfig, policy: GuardPolicy, timeout: float = 20.0) -> None:
        self.config = config
        self.policy = policy
        self.timeout = timeout
        self._token: str | None = None
        self._type = config.default_token_type
        self._expires_at = 0.0
        self._refresh_token = config.refresh_token
        self._lock: asyncio.Lock | None = None
        self.fetches = 0

    def _valid(self) -> bool:
        return self._token is not None and time.monotonic() < self._expires_at - self.config.refresh_skew_seconds

    async def token(self, *, force: bool = False) -> str:
        # The lock is created on first use so it belongs to the loop the MCP sessions run on.
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if force or not self._valid():
                await self._fetch()
            return f"{self._type} {self._token}"

    async def _fetch(self) -> None:
        cfg = self.config
        form = {"grant_type": cfg.grant_type, **cfg.extra_token_params}
        if cfg.grant_type == "refresh_token":
            form["refresh_token"] = self._refresh_token or ""
        for key in ("client_id", "client_secret", "scope", "audience"):
            value = getattr(cfg, key)
            if value:
                form[key] = value
        async with guarded_client(self.policy, timeout=self.timeout) as client:
            try:
                response = await client.post(cfg.token_url, data=form, headers={"Accept": "application/json"})
            except httpx.HTTPError as exc:
                raise OAuthError(f"token endpoint unreachable: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise OAuthError(f"token endpoint answered {response.status_code}")
        try:
            body = response.json()
            token = body[cfg.token_field]
        except (ValueError, KeyError, TypeError):
            raise OAuthError(f"token endpoint response has no '{cfg.token_field}'") from None
        self.fetches += 1
        self._token = str(token)
        self._type = str(body.get(cfg.token_type_field) or cfg.default_token_type)
        if self._type.lower() == "bearer":
            self._type = "Bearer"
        expires_in = body.get(cfg.expires_in_field)
        self._expires_at = time.monotonic() + (float(expires_in) if isinstance(expires_in, int | float) else 3600.0)
        if body.get("refresh_token"):
            self._refresh_token = str(body["refresh_token"])

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        request.headers["Authorization"] = await self.token()
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = await self.token(force=True)
            yield request
