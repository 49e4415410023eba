"""WeChat through Tencent's iLink bot API (the protocol DeerFlow's WeChat channel speaks).

Receiving is long polling: ``POST /ilink/bot/getupdates`` with the last ``get_updates_buf``
holds the request up to ``polling_timeout`` seconds (35 by default, or what the server asks
for in ``longpolling_timeout_ms``); the buffer is the channel's cursor, saved after each batch
is handled, so a restarted worker resumes there. A failed poll waits ``polling_retry_delay``
(5 s) before the next.

Logging in: a ``bot_token`` from config.yaml, or, with ``qrcode_login_enabled``, a QR code.
``GET /ilink/bot/get_bot_qrcode`` hands out a code, which the worker reports as the
channel's status (the Connections page shows it to administrators, to scan with WeChat);
``GET /ilink/bot/get_qrcode_status`` is polled every ``qrcode_poll_interval`` s (2) until it
says ``confirmed`` with the bot token, for at most ``qrcode_poll_timeout`` s (180), then a
fresh code is fetched. The token is kept in ``state_dir`` (a 0600 file), so a restart does
not ask again; when iLink says it expired (errcode -14) the login starts over.

Replies: ``/ilink/bot/sendmessage`` needs the ``context_token`` of the user's last message,
so the bot can answer only people who wrote to it (the tokens are kept with the login).
iLink cannot edit a message: the finished answer is sent once. Pictures and files travel
through the WeChat CDN encrypted with AES-128-ECB: inbound ones are fetched and decrypted,
outbound ones encrypted with a fresh key, uploaded (``getuploadurl`` then the CDN) and sent as
image or file items. Every request passes the SSRF guard; ``allowed_networks`` opens a
private network (tests use loopback).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from apps.channels.base import Capabilities, ChannelAdapter, ChatRef, InboundFile, InboundMessage, SentMessage
from apps.channels.common import PlatformError, download, guard_policy, guess_type, is_image
from apps.channels.registry import register
from harness.net import GuardError, guarded_client

log = logging.getLogger(__name__)

BASE_URL = "https://ilinkai.weixin.qq.com"
CDN_BASE_URL = "https://novac2c.cdn.weixin.qq.com/c2c"
CHANNEL_VERSION = "1.0"
API_TIMEOUT = 15.0
CDN_TIMEOUT = 30.0
TOKEN_EXPIRED = -14  # iLink's errcode for a bot token that no longer works
TEXT, IMAGE, VOICE, FILE, VIDEO = 1, 2, 3, 4, 5  # item types in a message's item_list
UPLOAD_IMAGE, UPLOAD_FILE = 1, 3  # media types for getuploadurl
USER_MESSAGE, BOT_MESSAGE, FINISHED = 1, 2, 2
DEFAULT_FILE_EXTENSIONS = frozenset({
    ".txt", ".md", ".pdf", ".csv", ".json", ".yaml", ".yml", ".xml", ".html", ".log", ".zip", ".doc", ".docx", ".xls",
    ".xlsx", ".ppt", ".pptx", ".rtf", ".py", ".js", ".ts", ".tsx", ".jsx", ".java", ".go", ".rs", ".c", ".cpp", ".h",
    ".hpp", ".sql", ".sh", ".bat", ".ps1", ".toml", ".ini", ".conf"})
LOGIN_ENDED = frozenset({"expired", "canceled", "cancelled", "invalid", "failed"})


# --- the CDN's AES-128-ECB ---------------------------------------------------------------------

def encrypt(data: bytes, key: bytes) -> bytes:
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()  # noqa: S305 - the platform's format
    return encryptor.update(padder.update(data) + padder.finalize()) + encryptor.finalize()


def decrypt(data: bytes, key: bytes) -> bytes:
    decryptor = Cipher(algorithms.AES(key), modes.ECB()).decryptor()  # noqa: S305 - the platform's format
    unpadder = padding.PKCS7(128).unpadder()
    return unpadder.update(decryptor.update(data) + decryptor.finalize()) + unpadder.finalize()


def _key16(raw: bytes) -> bytes | None:
    """16 raw bytes, or the 32 hex digits of them (iLink sends keys both ways)."""
    if len(raw) == 16:
        return raw
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None
    return key if len(key) == 16 else None


def media_key(*payloads: Any) -> bytes | None:
    """A media item's AES key: ``aeskey`` (hex) on the item, or ``aes_key`` (base64 of the raw
    key or of its hex) on the item or its ``media``."""
    for payload in payloads:
        if not isinstance(payload, Mapping):
            continue
        hexed = payload.get("aeskey")
        if isinstance(hexed, str) and hexed.strip():
            key = _key16(hexed.encode())
            if key:
                return key
        encoded = payload.get("aes_key")
        if isinstance(encoded, str) and encoded.strip():
            try:
                key = _key16(base64.b64decode(encoded + "=" * (-len(encoded) % 4)))
            except ValueError:
                key = None
            if key:
                return key
        found = media_key(payload.get("media"))
        if found:
            return found
    return None


def client_version(version: str) -> str:
    """``iLink-App-ClientVersion``: major.minor.patch packed into one number, a byte each."""
    parts = [int(p) if p.strip().isdigit() else 0 for p in (version.split(".") + ["0", "0"])[:3]]
    major, minor, patch = (max(0, min(p, 255)) for p in parts)
    return str((major << 16) | (minor << 8) | patch)


def _seconds(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if number > 0 and number != float("inf") else default


def _bytes_limit(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


@register
class WeChatAdapter(ChannelAdapter):
    provider = "wechat"
    display_name = "WeChat"
    capabilities = Capabilities(edit=False, edit_interval=1.0, max_text=4000, files_out=True, max_file_in=50 * 1024 * 1024)
    credential_fields = ("bot_token",)

    @classmethod
    def missing_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        # A QR login stands in for the token.
        return [] if settings.get("bot_token") or settings.get("qrcode_login_enabled") else ["bot_token"]

    def __init__(self, settings: Mapping[str, Any], sink: Any, hooks: Any = None) -> None:
        super().__init__(settings, sink, hooks)
        self.base = str(settings.get("base_url") or BASE_URL).rstrip("/")
        self.cdn_base = str(settings.get("cdn_base_url") or CDN_BASE_URL).rstrip("/")
        self.version = str(settings.get("channel_version") or CHANNEL_VERSION)
        self.polling_timeout = _seconds(settings.get("polling_timeout"), 35.0)
        self.retry_delay = _seconds(settings.get("polling_retry_delay"), 5.0)
        self.qr_interval = _seconds(settings.get("qrcode_poll_interval"), 2.0)
        self.qr_timeout = _seconds(settings.get("qrcode_poll_timeout"), 180.0)
        self.qr_login = bool(settings.get("qrcode_login_enabled"))
        self.qr_bot_type = settings.get("qrcode_bot_type") or 3
        self.respect_server_timeout = settings.get("respect_server_longpoll_timeout", True) is not False
        self.max_image_in = _bytes_limit(settings.get("max_inbound_image_bytes"), 20 * 1024 * 1024)
        self.max_image_out = _bytes_limit(settings.get("max_outbound_image_bytes"), 20 * 1024 * 1024)
        self.max_file_in = _bytes_limit(settings.get("max_inbound_file_bytes"), 50 * 1024 * 1024)
        self.max_file_out = _bytes_limit(settings.get("max_outbound_file_bytes"), 50 * 1024 * 1024)
        extensions = settings.get("allowed_file_extensions")
        self.extensions = frozenset(e.lower() if str(e).startswith(".") else f".{str(e).lower()}" for e in extensions
                                    if str(e).strip()) if isinstance(extensions, list) and extensions else DEFAULT_FILE_EXTENSIONS
        self.policy = guard_policy(settings)
        self.configured_token = str(settings.get("bot_token") or "").strip()
        self.token = self.configured_token
        self.bot_id = str(settings.get("ilink_bot_id") or "").strip()
        self.state_path = self._state_path(settings.get("state_dir"))
        self.context_tokens: dict[str, str] = {}  # chat (the user's iLink id) -> the token a reply needs
        self.buffer = ""  # get_updates_buf: where receiving is
        self.server_timeout: float | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task | None = None

    @staticmethod
    def _state_path(configured: Any) -> Path:
        if isinstance(configured, str) and configured.strip():
            return Path(configured).expanduser() / "wechat-auth.json"
        from harness.config.paths import deer_flow_home

        return deer_flow_home() / "channels" / "wechat" / "auth.json"

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        self._stopping.clear()
        state = await asyncio.to_thread(self._read_state)
        if not self.token and state.get("bot_token"):
            self.token, self.bot_id = str(state["bot_token"]), str(state.get("ilink_bot_id") or self.bot_id)
        self.context_tokens.update({str(k): str(v) for k, v in (state.get("context_tokens") or {}).items()})
        cursor = await self.hooks.load_cursor()
        self.buffer = cursor.get("get_updates_buf") if isinstance(cursor.get("get_updates_buf"), str) else ""
        self._task = asyncio.create_task(self._poll_forever(), name="wechat-poll")

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _pause(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    async def _poll_forever(self) -> None:
        reported = False
        while not self._stopping.is_set():
            try:
                if not self.token:
                    if not self.qr_login:
                        await self.hooks.error("the bot token expired or is missing; set channels.wechat.bot_token "
                                               "(or qrcode_login_enabled) and restart the channels worker")
                        return
                    await self._login_by_qr()
                    reported = False
                    continue
                if not reported:
                    await self.hooks.connected(bot_name=self.bot_id)
                    reported = True
                await self._poll_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # an outage, a refused login: try again after the delay
                log.warning("wechat: %s", exc)
                await self.hooks.error(f"{type(exc).__name__}: {exc}; retrying in {self.retry_delay:.0f}s")
                await self._pause(self.retry_delay)

    async def _poll_once(self) -> None:
        wait = self.server_timeout if self.respect_server_timeout and self.server_timeout else self.polling_timeout
        data = await self._post("/ilink/bot/getupdates", {"get_updates_buf": self.buffer}, timeout=max(wait + 5.0, 10.0))
        if data.get("ret") not in (0, None):
            if data.get("errcode") == TOKEN_EXPIRED:
                await self._forget_login()
                return
            raise PlatformError(f"iLink getupdates failed: ret={data.get('ret')} errcode={data.get('errcode')} "
                                f"errmsg={data.get('errmsg')}")
        timeout_ms = data.get("longpolling_timeout_ms")
        if isinstance(timeout_ms, (int, float)) and timeout_ms > 0:
            self.server_timeout = timeout_ms / 1000.0
        for raw in data.get("msgs") or []:
            try:
                await self._handle(raw)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # one bad message must not strand the rest of the batch
                log.exception("wechat: a message could not be handled")
                await self.hooks.error(f"a message could not be handled: {type(exc).__name__}: {exc}")
        # Saved after the batch: a crash mid-batch fetches it again rather than skipping it.
        new_buffer = data.get("get_updates_buf")
        if isinstance(new_buffer, str) and new_buffer != self.buffer:
            self.buffer = new_buffer
            await self.hooks.save_cursor({"get_updates_buf": new_buffer})

    async def _forget_login(self) -> None:
        log.warning("wechat: iLink says the bot token expired")
        await self.hooks.error("iLink says the bot token expired" + ("; a new QR login starts" if self.qr_login else ""))
        self.token, self.buffer = "", ""
        await self.hooks.save_cursor({})
        await asyncio.to_thread(self._write_state, {"status": "expired"})

    # --- QR login ----------------------------------------------------------------------------------

    async def _login_by_qr(self) -> None:
        answer = await self._get("/ilink/bot/get_bot_qrcode", {"bot_type": self.qr_bot_type})
        qrcode = str(answer.get("qrcode") or "").strip()
        if not qrcode:
            raise PlatformError("iLink get_bot_qrcode answered without a qrcode")
        # What the phone scans: the image content iLink gives (a link), else the code itself.
        content = str(answer.get("qrcode_img_content") or "").strip() or qrcode
        await self.hooks.login_required(content, "Scan the QR code with WeChat to log the bot in")
        deadline = time.monotonic() + self.qr_timeout
        while time.monotonic() < deadline and not self._stopping.is_set():
            status = await self._get("/ilink/bot/get_qrcode_status", {"qrcode": qrcode})
            state = str(status.get("status") or "").strip().lower()
            if state == "confirmed":
                token = str(status.get("bot_token") or "").strip()
                if not token:
                    raise PlatformError("iLink confirmed the QR login without a bot_token")
                self.token = token
                self.bot_id = str(status.get("ilink_bot_id") or self.bot_id).strip()
                await asyncio.to_thread(self._write_state, {"status": "confirmed"})
                return
            if state in LOGIN_ENDED:
                raise PlatformError(f"the WeChat QR login ended: {state}; a new code follows")
            await self._pause(self.qr_interval)
        if not self._stopping.is_set():
            raise PlatformError("nobody scanned the WeChat QR code in time; a new code follows")

    # --- state kept across restarts (a 0600 file: it holds the bot token) ---------------------

    def _read_state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_state(self, changes: dict[str, Any]) -> None:
        data = {**self._read_state(), **changes, "updated_at": int(time.time()),
                "context_tokens": dict(self.context_tokens)}
        if self.token and self.token != self.configured_token:
            data["bot_token"], data["ilink_bot_id"] = self.token, self.bot_id
        elif not self.token:
            data.pop("bot_token", None)
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_name(f".{self.state_path.name}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, self.state_path)

    # --- receiving -------------------------------------------------------------------------------

    async def _handle(self, raw: Any) -> None:
        if not isinstance(raw, Mapping) or raw.get("message_type") != USER_MESSAGE:
            return  # the bot's own messages come back too
        sender = str(raw.get("from_user_id") or raw.get("ilink_user_id") or "").strip()
        if not sender:
            return
        await self.hooks.event()
        context_token = str(raw.get("context_token") or "").strip()
        if context_token and self.context_tokens.get(sender) != context_token:
            self.context_tokens[sender] = context_token
            await asyncio.to_thread(self._write_state, {})
        message_id = str(raw.get("message_id") or raw.get("msg_id") or raw.get("client_id") or "").strip()
        items = [item for item in raw.get("item_list") or [] if isinstance(item, Mapping)]
        text = "\n".join(str(item["text_item"].get("text") or "").strip() for item in items
                         if item.get("type") == TEXT and isinstance(item.get("text_item"), Mapping)).strip()
        files = [f for index, item in enumerate(items) if (f := self._file(item, message_id or "msg", index))]
        # iLink bots talk one to one: every chat is a direct chat with its sender.
        await self.sink(InboundMessage(chat=ChatRef(provider=self.provider, workspace="", chat=sender), sender_id=sender,
                                       sender_name=sender, text=text, message_id=message_id, is_direct=True, mentioned=True,
                                       files=tuple(files)))

    def _file(self, item: Mapping[str, Any], message_id: str, index: int) -> InboundFile | None:
        kind = item.get("type")
        payload = item.get("image_item") if kind == IMAGE else item.get("file_item") if kind == FILE else None
        if not isinstance(payload, Mapping) or not isinstance(payload.get("media"), Mapping):
            return None
        url = str(payload["media"].get("full_url") or "").strip()
        key = media_key(item, payload)
        if not url or key is None:
            log.warning("wechat: a %s in message %s has no download URL or key; skipped", "picture" if kind == IMAGE else "file",
                        message_id)
            return None
        safe_id = message_id.replace("/", "_")
        if kind == IMAGE:
            name, limit, size = f"wechat-image-{safe_id}-{index}.jpg", self.max_image_in, None
        else:
            name = Path(str(payload.get("file_name") or "")).name or f"wechat-file-{safe_id}-{index}.bin"
            if Path(name).suffix.lower() not in self.extensions:
                log.warning("wechat: file %s refused: its type is not in allowed_file_extensions", name)
                return None
            limit = self.max_file_in
            size = int(payload["len"]) if str(payload.get("len") or "").isdigit() else None

        async def read() -> bytes:
            encrypted = await self._download(url, limit + 16)
            data = decrypt(encrypted, key)
            if len(data) > limit:
                raise PlatformError(f"wechat {name} is over {limit:,} bytes")
            return data

        return InboundFile(name=name, size=size, content_type=guess_type(name), read=read)

    # --- answering -------------------------------------------------------------------------------

    def _context(self, chat: ChatRef) -> str:
        token = self.context_tokens.get(chat.chat)
        if not token:
            raise PlatformError(f"wechat cannot message {chat.chat}: they have not written to the bot yet")
        return token

    async def _send_items(self, chat: ChatRef, items: list[dict[str, Any]], prefix: str) -> SentMessage:
        client_id = f"{prefix}_{int(time.time() * 1000)}_{secrets.token_hex(2)}"
        message = {"from_user_id": "", "to_user_id": chat.chat, "client_id": client_id, "message_type": BOT_MESSAGE,
                   "message_state": FINISHED, "context_token": self._context(chat), "item_list": items}
        self._check(await self._post("/ilink/bot/sendmessage", {"msg": message}), "sendmessage")
        return SentMessage(chat=chat, message_id=client_id)

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage:
        return await self._send_items(chat, [{"type": TEXT, "text_item": {"text": text}}], "deerflow")

    async def send_file(self, chat: ChatRef, name: str, data: bytes, *, content_type: str | None = None,
                        reply_to: str | None = None) -> SentMessage:
        picture = is_image(name, content_type)
        limit = self.max_image_out if picture else self.max_file_out
        if len(data) > limit:
            raise PlatformError(f"it is {len(data):,} bytes; WeChat files can be at most {limit:,} here")
        if not picture and Path(name).suffix.lower() not in self.extensions:
            raise PlatformError("its type is not in channels.wechat.allowed_file_extensions")
        key = secrets.token_bytes(16)
        filekey = f"deerflow-{secrets.token_hex(8)}{Path(name).suffix}"
        encrypted = encrypt(data, key)
        upload = self._check(await self._post("/ilink/bot/getuploadurl", {
            "filekey": filekey, "media_type": UPLOAD_IMAGE if picture else UPLOAD_FILE, "to_user_id": chat.chat,
            "rawsize": len(data), "rawfilemd5": hashlib.md5(data).hexdigest(),  # noqa: S324 - the platform's checksum
            "filesize": len(encrypted), "aeskey": key.hex(), "no_need_thumb": True}), "getuploadurl")
        url = str(upload.get("upload_full_url") or "").strip()
        param = str(upload.get("upload_param") or "").strip()
        if not url:
            if not param:
                raise PlatformError("iLink getuploadurl answered without an upload URL")
            url = f"{self.cdn_base}/upload?encrypted_query_param={quote(param, safe='')}&filekey={quote(filekey, safe='')}"
        param = await self._upload(url, encrypted) or param
        media = {"aes_key": base64.b64encode(key.hex().encode()).decode(), "encrypt_type": 1, "encrypt_query_param": param}
        if picture:
            item = {"type": IMAGE, "image_item": {"media": media, "mid_size": len(encrypted)}}
        else:
            item = {"type": FILE, "file_item": {"media": media, "file_name": name,
                                                "md5": hashlib.md5(data).hexdigest(), "len": str(len(data))}}  # noqa: S324
        return await self._send_items(chat, [item], "deerflow_file")

    # --- HTTP ------------------------------------------------------------------------------------

    def _headers(self, *, auth: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "iLink-App-ClientVersion": client_version(self.version),
                   # A random uin per request, as iLink's own clients send.
                   "X-WECHAT-UIN": base64.b64encode(str(secrets.randbits(32)).encode()).decode()}
        if self.settings.get("ilink_app_id"):
            headers["iLink-App-Id"] = str(self.settings["ilink_app_id"])
        if self.settings.get("route_tag"):
            headers["SKRouteTag"] = str(self.settings["route_tag"])
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
            headers["AuthorizationType"] = "ilink_bot_token"
        return headers

    @staticmethod
    def _check(answer: dict[str, Any], what: str) -> dict[str, Any]:
        if answer.get("ret") not in (0, None):
            raise PlatformError(f"iLink {what} failed: ret={answer.get('ret')} errcode={answer.get('errcode')} "
                                f"errmsg={answer.get('errmsg') or answer.get('msg')}")
        return answer

    async def _request(self, method: str, url: str, what: str, *, timeout: float, **kwargs: Any):
        try:
            async with guarded_client(self.policy, timeout=timeout) as client:
                response = await client.request(method, url, **kwargs)
        except GuardError as exc:
            raise PlatformError(f"wechat {what} refused: {exc}") from None
        except Exception as exc:
            raise PlatformError(f"wechat {what} failed: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise PlatformError(f"wechat {what} failed: HTTP {response.status_code}")
        return response

    @staticmethod
    def _json(response, what: str) -> dict[str, Any]:
        try:
            answer = response.json()
        except ValueError:
            raise PlatformError(f"wechat {what} answered with something other than JSON") from None
        return answer if isinstance(answer, dict) else {}

    async def _post(self, path: str, body: dict[str, Any], *, timeout: float = API_TIMEOUT) -> dict[str, Any]:
        response = await self._request("POST", f"{self.base}{path}", path, timeout=timeout, headers=self._headers(auth=True),
                                       json={**body, "base_info": {"channel_version": self.version}})
        return self._json(response, path)

    async def _get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        response = await self._request("GET", f"{self.base}{path}", path, timeout=API_TIMEOUT, headers=self._headers(auth=False),
                                       params=params)
        return self._json(response, path)

    async def _download(self, url: str, limit: int) -> bytes:
        return await download(self.policy, url, limit=limit, what="wechat media")

    async def _upload(self, url: str, data: bytes) -> str:
        response = await self._request("POST", url, "CDN upload", timeout=CDN_TIMEOUT, content=data,
                                       headers={"Content-Type": "application/octet-stream"})
        return response.headers.get("x-encrypted-param", "")
