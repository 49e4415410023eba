"""How large a request body may be, decided from its headers before any body byte is kept.

Three limits, all settings (docs/configuration.md):

- a request that carries no credentials at all (no ``Authorization`` header, no session
  cookie) may send ``DEERFLOW_MAX_ANONYMOUS_BODY`` bytes: enough for the sign-in and sign-up
  forms, too little to matter however many arrive;
- a multipart body (an upload) with credentials may send the uploads limit of config.yaml
  (``uploads.max_total_size``) plus the multipart framing;
- any other body (JSON, forms) with credentials may send ``DEERFLOW_MAX_JSON_BODY`` bytes,
  which is also Django's DATA_UPLOAD_MAX_MEMORY_SIZE: such bodies are parsed in memory.

``body_limit`` only looks at the credentials. Before it accepts more than the anonymous limit,
the server (deerflow_site/server/daphne_server.py) has them checked off the event loop
(``credentials_valid``) and holds the body back meanwhile, so a forged cookie buys nothing.

Both the server (deerflow_site/server/daphne_server.py, while the body arrives) and RequestGuard (the
ASGI layer in front of Django, for any server) use ``body_limit``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable
from urllib.parse import unquote_to_bytes

# Multipart boundaries and part headers on top of the file bytes.
UPLOAD_FRAMING_ALLOWANCE = 1024 * 1024
_FALLBACK_UPLOAD_MAX = 200 * 1024 * 1024


@dataclass(frozen=True)
class BodyLimit:
    max_bytes: int
    detail: str


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    headers: dict[bytes, bytes] = {}
    for name, value in raw:
        name = name.lower()
        if name in headers:
            headers[name] += (b"; " if name == b"cookie" else b", ") + value
        else:
            headers[name] = value
    return headers


def _session_cookie_names() -> tuple[bytes, ...]:
    """Django's session cookie, and the copy DeerFlow's frontend sends alone from its server
    side (``access_token``, apps/accounts/deerflow_cookies.py): both name the same session."""
    from django.conf import settings

    from apps.accounts.deerflow_cookies import ACCESS_TOKEN_COOKIE

    return settings.SESSION_COOKIE_NAME.encode(), ACCESS_TOKEN_COOKIE.encode()


def _has_credentials(headers: dict[bytes, bytes]) -> bool:
    if headers.get(b"authorization"):
        return True
    names = _session_cookie_names()
    return any(part.strip().split(b"=", 1)[0] in names for part in headers.get(b"cookie", b"").split(b";"))


def anonymous_limit() -> BodyLimit:
    from django.conf import settings

    limit = settings.DEERFLOW_MAX_ANONYMOUS_BODY
    return BodyLimit(limit, f"request bodies without credentials are limited to {limit} bytes; sign in or send a token")


def credentials_valid(raw_headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether the request's credentials are real: a bearer token that authenticates, else a
    session cookie whose session has a user. Blocking (database): call it off the event loop.
    The server asks before it accepts more than the anonymous limit, so a forged cookie buys
    nothing."""
    from django.conf import settings
    from django.db import connections

    headers = _headers(raw_headers)
    try:
        authorization = headers.get(b"authorization")
        if authorization is not None:
            from apps.accounts.selectors import TokenRejected, token_authenticate

            scheme, _, raw = authorization.partition(b" ")
            if scheme.lower() != b"bearer":
                return False
            try:
                token_authenticate(raw=raw.strip().decode("ascii"))
            except (TokenRejected, UnicodeDecodeError):
                return False
            return True
        from importlib import import_module

        from django.contrib.auth import SESSION_KEY

        names = _session_cookie_names()
        for part in headers.get(b"cookie", b"").split(b";"):
            name, _, value = part.strip().partition(b"=")
            if name in names:
                store = import_module(settings.SESSION_ENGINE).SessionStore(value.decode("latin-1"))
                if SESSION_KEY in store.load():
                    return True
        return False
    finally:
        # A pool thread of the server's, not a request thread: hold no connection between calls.
        connections.close_all()


def _upload_max() -> int:
    from harness.config import get_app_config

    try:
        return get_app_config().uploads.max_total_size
    except Exception:  # noqa: BLE001 - a broken config.yaml must not break every request; the run path reports it
        return _FALLBACK_UPLOAD_MAX


def body_limit(raw_headers: Iterable[tuple[bytes, bytes]]) -> BodyLimit:
    from django.conf import settings

    headers = _headers(raw_headers)
    if not _has_credentials(headers):
        return anonymous_limit()
    content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    if content_type == b"multipart/form-data":
        limit = _upload_max()
        return BodyLimit(limit + UPLOAD_FRAMING_ALLOWANCE, f"uploads are limited to {limit} bytes per request")
    limit = settings.DEERFLOW_MAX_JSON_BODY
    return BodyLimit(limit, f"request bodies are limited to {limit} bytes (uploads: use multipart/form-data)")


def too_large_body(detail: str) -> bytes:
    return json.dumps({"detail": detail}).encode()


def query_string_problem(query_string: bytes) -> str | None:
    """Why a query string cannot be taken as text, or None. Django would turn bytes that are not
    UTF-8 into U+FFFD silently; the caller should learn that what it sent is not what we read."""
    try:
        unquote_to_bytes(query_string.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError:
        return "the query string is not valid UTF-8 once percent-decoded"
    return None


class RequestGuard:
    """ASGI layer in front of Django: a body declared (Content-Length) or counted (chunked)
    past its limit is answered with 413 without the application reading it, and a query string
    that is not UTF-8 with 422. Whatever server runs the application, no body larger than its
    limit reaches Django."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        problem = query_string_problem(scope.get("query_string", b""))
        if problem:
            return await _answer(send, 422, problem)
        limit = body_limit(scope.get("headers", []))
        declared = dict((name.lower(), value) for name, value in scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit.max_bytes:
            return await _answer(send, 413, limit.detail)
        state = {"received": 0, "over": False, "started": False}

        async def counted_receive():
            if state["over"]:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                state["received"] += len(message.get("body", b""))
                if state["received"] > limit.max_bytes:
                    # Django stops reading at a disconnect; the 413 is sent below.
                    state["over"] = True
                    return {"type": "http.disconnect"}
            return message

        async def tracked_send(message):
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        await self.app(scope, counted_receive, tracked_send)
        if state["over"] and not state["started"]:
            await _answer(send, 413, limit.detail)


async def _answer(send, status: int, detail: str) -> None:
    body = too_large_body(detail)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
