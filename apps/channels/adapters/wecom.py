"""WeCom (WeChat Work) application messages.

WeCom pushes each message to ``/api/channels/wecom/callback`` (``apps/channels/callbacks.py``), signed
and AES-encrypted (``wecom_crypto.py``); the view verifies, decrypts and bridges the message's
fields here. Answers go out through the message-send API of the same application, files
through its media upload; inbound files are fetched with ``media/get``. Application messages
cannot be edited, so an answer is sent once it is complete.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

import httpx

from apps.channels.base import Capabilities, ChannelAdapter, ChatRef, InboundFile, InboundMessage, SentMessage
from apps.channels.common import PlatformError, consume_webhooks, guard_policy, is_image
from apps.channels.registry import register
from harness.net import GuardError, guarded_client

log = logging.getLogger(__name__)

API = "https://qyapi.weixin.qq.com"
TEXT_BYTES = 2048  # the send API's limit for a text or markdown body
IMAGE_BYTES = 10 * 1024 * 1024
FILE_BYTES = 20 * 1024 * 1024
_EXPIRED_TOKEN = {40014, 42001}  # invalid / expired access_token: fetch a new one and retry once


def split_bytes(text: str, limit: int = TEXT_BYTES) -> list[str]:
    """Pieces of at most ``limit`` UTF-8 bytes, cut between characters (and at a newline when one is near)."""
    pieces: list[str] = []
    while text:
        encoded = text.encode()
        if len(encoded) <= limit:
            pieces.append(text)
            break
        cut = len(encoded[:limit].decode("utf-8", "ignore"))
        newline = text.rfind("\n", 0, cut)
        if newline > cut // 2:
            cut = newline + 1
        pieces.append(text[:cut])
        text = text[cut:]
    return pieces or [""]


@register
class WeComAdapter(ChannelAdapter):
    provider = "wecom"
    display_name = "WeCom"
    # media/get serves what WeCom accepted: files up to 20 MB.
    capabilities = Capabilities(edit=False, edit_interval=1.0, max_text=4000, files_out=True, max_file_in=FILE_BYTES)
    credential_fields = ("corp_id", "agent_id", "secret", "token", "encoding_aes_key")

    def __init__(self, settings: Mapping[str, Any], sink: Any, hooks: Any = None) -> None:
        super().__init__(settings, sink, hooks)
        self.base = str(settings.get("api_base") or API).rstrip("/")
        self.policy = guard_policy(settings)
        self.reply_format = "text" if settings.get("reply_format") == "text" else "markdown"
        self._token: tuple[str, float] | None = None
        self._task: asyncio.Task | None = None

    @classmethod
    def missing_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        missing = super().missing_settings(settings)
        if settings.get("encoding_aes_key") and len(str(settings["encoding_aes_key"])) != 43:
            missing.append("encoding_aes_key (the 43 characters WeCom shows)")
        return missing

    async def start(self) -> None:
        self._task = asyncio.create_task(consume_webhooks(self.provider, self.handle_webhook_payload))
        await self.hooks.connected()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    # --- receiving ---------------------------------------------------------------------------

    async def handle_webhook_payload(self, payload: dict[str, Any]) -> None:
        message = self.translate(payload.get("fields") or {})
        if message is not None:
            await self.hooks.event()
            await self.sink(message)

    def translate(self, fields: Mapping[str, str]) -> InboundMessage | None:
        kind, sender = fields.get("MsgType", ""), fields.get("FromUserName", "")
        if not sender or not kind:
            log.warning("wecom: message without sender or type ignored")
            return None
        if kind == "event":
            log.debug("wecom: event %s ignored", fields.get("Event"))
            return None
        text, files = "", []
        if kind == "text":
            text = fields.get("Content", "")
        elif kind in ("image", "voice", "video", "file") and fields.get("MediaId"):
            default = {"image": "image.jpg", "voice": f"voice.{fields.get('Format') or 'amr'}", "video": "video.mp4"}.get(kind, "file")
            files.append(self._media(fields["MediaId"], fields.get("FileName") or default))
            text = fields.get("Recognition", "")  # WeCom's transcript of a voice message, when enabled
        elif kind == "location":
            text = f"[location] {fields.get('Label', '')} ({fields.get('Location_X', '')}, {fields.get('Location_Y', '')})"
        elif kind == "link":
            text = f"[link] {fields.get('Title', '')} {fields.get('Url', '')}".strip()
        else:
            log.info("wecom: %s message not supported; ignored", kind)
            return None
        chat = ChatRef(provider=self.provider, workspace=fields.get("ToUserName", "") or str(self.settings.get("corp_id", "")),
                       chat=sender)
        return InboundMessage(chat=chat, sender_id=sender, sender_name="", text=text.strip(),
                              message_id=fields.get("MsgId") or f"{sender}-{fields.get('CreateTime', '')}",
                              is_direct=True, mentioned=True, files=tuple(files),
                              extra={"agent_id": fields.get("AgentID", "")})

    def _media(self, media_id: str, name: str) -> InboundFile:
        async def read() -> bytes:
            response = await self._call("GET", "/cgi-bin/media/get", "media download", params={"media_id": media_id}, raw=True)
            return response.content

        return InboundFile(name=name, size=None, content_type=None, read=read)

    # --- answering ---------------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage:
        sent = None
        for piece in split_bytes(text):
            sent = await self._send(chat, self.reply_format, {"content": piece})
        return sent

    async def send_file(self, chat: ChatRef, name: str, data: bytes, *, content_type: str | None = None,
                        reply_to: str | None = None) -> SentMessage:
        kind = "image" if is_image(name, content_type) and len(data) <= IMAGE_BYTES else "file"
        if len(data) > FILE_BYTES:
            raise PlatformError(f"wecom accepts files up to {FILE_BYTES // (1024 * 1024)} MB; {name} is {len(data):,} bytes")
        if len(data) < 5:
            raise PlatformError("wecom refuses files under 5 bytes")
        answer = await self._call("POST", "/cgi-bin/media/upload", "media upload", params={"type": kind},
                                  files={"media": (name, data, content_type or "application/octet-stream")})
        return await self._send(chat, kind, {"media_id": answer["media_id"]})

    async def _send(self, chat: ChatRef, kind: str, body: dict[str, Any]) -> SentMessage:
        payload = {"touser": chat.chat, "msgtype": kind, "agentid": int(self.settings["agent_id"]), kind: body}
        answer = await self._call("POST", "/cgi-bin/message/send", "message send", json=payload)
        if answer.get("invaliduser"):
            raise PlatformError(f"wecom message send: user {answer['invaliduser']} is outside the app's visible range")
        return SentMessage(chat=chat, message_id=str(answer.get("msgid", "")))

    # --- HTTP ----------------------------------------------------------------------------------

    async def _access_token(self) -> str:
        if self._token and self._token[1] > time.time():
            return self._token[0]
        answer = await self._request("GET", "/cgi-bin/gettoken", "access token",
                                     params={"corpid": self.settings["corp_id"], "corpsecret": self.settings["secret"]})
        self._token = (answer["access_token"], time.time() + int(answer.get("expires_in", 7200)) - 300)
        return self._token[0]

    async def _call(self, method: str, path: str, what: str, *, params: dict | None = None, raw: bool = False,
                    **kwargs: Any) -> Any:
        for attempt in (1, 2):
            token = await self._access_token()
            try:
                return await self._request(method, path, what, params={**(params or {}), "access_token": token}, raw=raw, **kwargs)
            except _ExpiredToken:
                self._token = None
                if attempt == 2:
                    raise PlatformError(f"wecom {what}: the access token was refused twice") from None

    async def _request(self, method: str, path: str, what: str, *, params: dict, raw: bool = False, **kwargs: Any) -> Any:
        try:
            async with guarded_client(self.policy) as client:
                response = await client.request(method, f"{self.base}{path}", params=params, **kwargs)
        except GuardError as exc:
            raise PlatformError(f"wecom {what} refused: {exc}") from None
        except httpx.HTTPError as exc:
            raise PlatformError(f"wecom {what} failed: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise PlatformError(f"wecom {what} failed: HTTP {response.status_code}")
        is_json = response.headers.get("content-type", "").startswith(("application/json", "text/plain"))
        if raw and not is_json:
            return response  # media bytes; errors come back as JSON instead
        try:
            answer = response.json()
        except ValueError:
            raise PlatformError(f"wecom {what} answered something that is not JSON") from None
        code = answer.get("errcode", 0)
        if code in _EXPIRED_TOKEN:
            raise _ExpiredToken()
        if code:
            raise PlatformError(f"wecom {what} failed: errcode {code}: {answer.get('errmsg', '')}")
        return answer


class _ExpiredToken(Exception):
    pass

