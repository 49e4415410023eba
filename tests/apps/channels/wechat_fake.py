"""A fake iLink (WeChat bot) server on loopback, speaking the protocol over real HTTP.

QR login: ``get_bot_qrcode`` hands out a code and ``get_qrcode_status`` answers ``wait``
until ``scan()``, then ``confirmed`` with a bot token. ``getupdates`` long-polls (briefly: it
asks for 1 s with ``longpolling_timeout_ms``) and pages by ``get_updates_buf``, so a client
that resumes from a saved buffer gets only what is newer; a wrong or expired token answers
``errcode -14``. ``sendmessage`` needs the context token of the user's latest message.
Media: the CDN serves and accepts AES-128-ECB encrypted bytes; ``getuploadurl`` hands out
an upload parameter, the CDN upload answers the download one in ``x-encrypted-param``.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import time
from typing import Any

from aiohttp import web

from apps.channels.adapters.wechat import FILE, IMAGE, TEXT, decrypt, encrypt
from tests.apps.channels.fake_platform import FakePlatform, json_answer

TOKEN = "ilink-token-1"


class FakeILink(FakePlatform):
    def __init__(self) -> None:
        super().__init__()
        self.token = TOKEN
        self.scanned = False
        self.qrcodes = 0
        self.inbox: list[tuple[int, dict]] = []  # (sequence, message) the bot has still to fetch
        self.sent: list[dict] = []  # every sendmessage "msg"
        self.uploads: dict[str, bytes] = {}  # upload param -> the encrypted bytes the bot put on the CDN
        self.cdn: dict[str, bytes] = {}  # path -> encrypted bytes a user's media is stored as
        self.context: dict[str, str] = {}  # user -> their latest context token
        self._seq = itertools.count(1)
        self._new = asyncio.Event()
        self._changed = asyncio.Event()
        self.route("GET", "/ilink/bot/get_bot_qrcode", self._qrcode)
        self.route("GET", "/ilink/bot/get_qrcode_status", self._qrcode_status)
        self.route("POST", "/ilink/bot/getupdates", self._getupdates)
        self.route("POST", "/ilink/bot/sendmessage", self._sendmessage)
        self.route("POST", "/ilink/bot/getuploadurl", self._getuploadurl)
        self.route("POST", "/c2c/upload", self._upload)
        self.route("GET", "/cdn/{name}", self._cdn)

    def settings(self, **overrides: Any) -> dict[str, Any]:
        return {"enabled": True, "bot_token": self.token, "base_url": self.url, "cdn_base_url": f"{self.url}/c2c",
                "allowed_networks": ["127.0.0.0/8"], "polling_timeout": 1, "polling_retry_delay": 0.2,
                "qrcode_poll_interval": 0.1, **overrides}

    # -- what a user does ---------------------------------------------------------------------

    def user_sends(self, text: str = "", *, user: str = "wx_ann@im.wechat", items: list[dict] | None = None) -> dict:
        seq = next(self._seq)
        self.context[user] = f"ctx-{user}-{seq}"
        message = {"message_id": 7000 + seq, "from_user_id": user, "to_user_id": "bot@im.bot", "message_type": 1,
                   "message_state": 2, "context_token": self.context[user], "create_time_ms": int(time.time() * 1000),
                   "item_list": ([{"type": TEXT, "text_item": {"text": text}}] if text else []) + (items or [])}
        self.inbox.append((seq, message))
        self._new.set()
        return message

    def media_item(self, kind: int, data: bytes, key: bytes, *, name: str = "") -> dict:
        """A picture or file as a user's phone posts it: encrypted on the CDN, keyed in the item."""
        path = f"m{len(self.cdn) + 1}"
        self.cdn[path] = encrypt(data, key)
        media = {"full_url": f"{self.url}/cdn/{path}", "encrypt_query_param": path}
        if kind == IMAGE:
            return {"type": IMAGE, "image_item": {"media": {**media, "aes_key": base64.b64encode(key.hex().encode()).decode()}}}
        return {"type": FILE, "file_item": {"media": media, "file_name": name, "len": str(len(data))}, "aeskey": key.hex()}

    def scan(self) -> None:
        self.scanned = True

    def texts(self, user: str = "wx_ann@im.wechat") -> list[str]:
        return [item["text_item"]["text"] for msg in self.sent if msg["to_user_id"] == user
                for item in msg["item_list"] if item["type"] == TEXT]

    def received_file(self, msg: dict) -> tuple[str, bytes]:
        """(name, bytes) of a file or picture the bot sent, decrypted as the phone does."""
        item = msg["item_list"][0]
        payload = item.get("file_item") or item.get("image_item")
        key = bytes.fromhex(base64.b64decode(payload["media"]["aes_key"]).decode())
        encrypted = self.uploads[payload["media"]["encrypt_query_param"]]
        return payload.get("file_name", ""), decrypt(encrypted, key)

    async def wait_for(self, predicate, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"fake iLink: condition not met; sent so far: {self.sent}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=0.5)
            except TimeoutError:
                pass

    # -- the API --------------------------------------------------------------------------------

    def _authorized(self, request: web.Request) -> bool:
        return (request.headers.get("Authorization") == f"Bearer {self.token}"
                and request.headers.get("AuthorizationType") == "ilink_bot_token")

    async def _qrcode(self, request: web.Request) -> web.Response:
        self.qrcodes += 1
        self._changed.set()
        code = f"qr-{self.qrcodes}"
        return json_answer({"ret": 0, "qrcode": code, "qrcode_img_content": f"https://liteapp.weixin.qq.com/q/{code}?bot_type=3"})

    async def _qrcode_status(self, request: web.Request) -> web.Response:
        if not self.scanned:
            return json_answer({"ret": 0, "status": "wait"})
        return json_answer({"ret": 0, "status": "confirmed", "bot_token": self.token, "ilink_bot_id": "bot@im.bot"})

    async def _getupdates(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return json_answer({"ret": -1, "errcode": -14, "errmsg": "session timeout"})
        body = await request.json()
        after = int(body["get_updates_buf"].removeprefix("buf-") or 0) if body.get("get_updates_buf") else 0
        deadline = time.monotonic() + 1.0
        while not [m for s, m in self.inbox if s > after] and time.monotonic() < deadline:
            self._new.clear()
            try:
                await asyncio.wait_for(self._new.wait(), timeout=max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                break
        fresh = [(s, m) for s, m in self.inbox if s > after]
        buffer = f"buf-{fresh[-1][0]}" if fresh else body.get("get_updates_buf", "")
        return json_answer({"ret": 0, "msgs": [m for _, m in fresh], "get_updates_buf": buffer, "longpolling_timeout_ms": 1000})

    async def _sendmessage(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return json_answer({"ret": -1, "errcode": -14, "errmsg": "session timeout"})
        msg = (await request.json())["msg"]
        if msg.get("context_token") != self.context.get(msg["to_user_id"]):
            return json_answer({"ret": -2, "errcode": -2, "errmsg": "invalid context_token"})
        self.sent.append(msg)
        self._changed.set()
        return json_answer({"ret": 0})

    async def _getuploadurl(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return json_answer({"ret": -1, "errcode": -14, "errmsg": "session timeout"})
        body = await request.json()
        return json_answer({"ret": 0, "upload_param": f"up-{body['filekey']}"})

    async def _upload(self, request: web.Request) -> web.Response:
        param = request.query["encrypted_query_param"]
        download = f"dl-{len(self.uploads) + 1}"
        self.uploads[download] = await request.read()
        assert param.startswith("up-") and request.query["filekey"]
        return web.Response(status=200, headers={"x-encrypted-param": download})

    async def _cdn(self, request: web.Request) -> web.Response:
        data = self.cdn.get(request.match_info["name"])
        return web.Response(body=data) if data is not None else web.Response(status=404)
