"""A fake Feishu Open API: tenant token, bot info, messages, cards, uploads, resources and
the long-connection endpoint with a websocket speaking the SDK's protobuf frames."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import time
import uuid

from aiohttp import WSMsgType, web
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from lark_oapi.ws.pb.pbbp2_pb2 import Frame

from tests.apps.channels.fake_platform import FakePlatform

TOKEN = "t-fake-tenant-token"
BOT_OPEN_ID = "ou_bot"


def message_event(*, text: str = "hello", chat_type: str = "p2p", message_id: str = "om_in_1", chat_id: str = "oc_chat",
                  sender: str = "ou_alice", message_type: str = "text", content: dict | None = None,
                  mentions: list | None = None, token: str = "vtoken", thread_id: str | None = None) -> dict:
    """An im.message.receive_v1 event in the shape Feishu sends (schema 2.0)."""
    message = {"message_id": message_id, "root_id": "", "parent_id": "", "create_time": "1700000000000",
               "chat_id": chat_id, "chat_type": chat_type, "message_type": message_type,
               "content": json.dumps(content if content is not None else {"text": text}, ensure_ascii=False)}
    if mentions:
        message["mentions"] = mentions
    if thread_id:
        message["thread_id"] = thread_id
    return {"schema": "2.0",
            "header": {"event_id": uuid.uuid4().hex, "event_type": "im.message.receive_v1", "create_time": "1700000000000",
                       "token": token, "app_id": "cli_test", "tenant_key": "tenant_1"},
            "event": {"sender": {"sender_id": {"open_id": sender, "union_id": "on_x", "user_id": "u_x"},
                                 "sender_type": "user", "tenant_key": "tenant_1"},
                      "message": message}}


def card_action_event(value: dict, *, operator: str = "ou_alice", chat_id: str = "oc_chat", message_id: str = "om_card",
                      token: str = "vtoken") -> dict:
    """A card.action.trigger callback (a card button pressed), schema 2.0."""
    return {"schema": "2.0",
            "header": {"event_id": uuid.uuid4().hex, "event_type": "card.action.trigger", "create_time": "1700000000000",
                       "token": token, "app_id": "cli_test", "tenant_key": "tenant_1"},
            "event": {"operator": {"tenant_key": "tenant_1", "open_id": operator, "union_id": "on_x", "user_id": "u_x"},
                      "token": "c-token", "action": {"tag": "button", "value": value},
                      "host": "im_message", "context": {"open_message_id": message_id, "open_chat_id": chat_id}}}


def encrypt(encrypt_key: str, plaintext: str) -> str:
    """Feishu's scheme: AES-256-CBC, key = SHA-256(encrypt key), random IV prefixed, base64."""
    key = hashlib.sha256(encrypt_key.encode()).digest()
    iv = os.urandom(16)
    padder = padding.PKCS7(128).padder()
    data = padder.update(plaintext.encode()) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return base64.b64encode(iv + encryptor.update(data) + encryptor.finalize()).decode()


def signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()


class FakeFeishu(FakePlatform):
    def __init__(self) -> None:
        super().__init__()
        self.to_push: asyncio.Queue[dict] = asyncio.Queue()
        self.acks: list[dict] = []
        self.acked = asyncio.Event()
        self.resources = {"img_key_1": (b"\x89PNG fake image", "photo.png"), "file_key_1": (b"%PDF-1.4 fake", "report.pdf")}
        self.counter = 0
        self.current_ws: web.WebSocketResponse | None = None
        self.current_pusher: asyncio.Task | None = None
        self.json_route("POST", "/open-apis/auth/v3/tenant_access_token/internal",
                        {"code": 0, "msg": "ok", "tenant_access_token": TOKEN, "expire": 7200})
        self.json_route("GET", "/open-apis/bot/v3/info", {"code": 0, "msg": "ok", "bot": {"open_id": BOT_OPEN_ID, "app_name": "DeerFlow"}})
        self.json_route("POST", "/open-apis/im/v1/messages/{mid}/reply", lambda r: self._sent())
        self.json_route("POST", "/open-apis/im/v1/messages", lambda r: self._sent())
        self.patch_answer = {"code": 0, "msg": "ok", "data": {}}
        self.json_route("PATCH", "/open-apis/im/v1/messages/{mid}", lambda r: self.patch_answer)
        self.json_route("POST", "/open-apis/im/v1/images", {"code": 0, "msg": "ok", "data": {"image_key": "img_out_1"}})
        self.json_route("POST", "/open-apis/im/v1/files", {"code": 0, "msg": "ok", "data": {"file_key": "file_out_1"}})
        self.route("GET", "/open-apis/im/v1/messages/{mid}/resources/{key}", self._resource)
        self.json_route("POST", "/callback/ws/endpoint", lambda r: {
            "code": 0, "msg": "ok",
            "data": {"URL": f"ws{self.url[4:]}/ws?device_id=dev_1&service_id=7",
                     "ClientConfig": {"ReconnectCount": -1, "ReconnectInterval": 1, "ReconnectNonce": 0, "PingInterval": 120}}})
        self.route("GET", "/ws", self._ws)

    def _sent(self) -> dict:
        self.counter += 1
        return {"code": 0, "msg": "ok", "data": {"message_id": f"om_out_{self.counter}"}}

    async def _resource(self, request: web.Request) -> web.Response:
        data, name = self.resources[request.match_info["key"]]
        return web.Response(body=data, headers={"Content-Disposition": f'attachment; filename="{name}"'},
                            content_type="application/octet-stream")

    async def drop(self) -> None:
        """An outage: the server closes the long connection (after it stops feeding it)."""
        self.current_pusher.cancel()
        await self.current_ws.close()

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.current_ws = ws

        async def push() -> None:
            while True:
                event = await self.to_push.get()
                frame = Frame(SeqID=1, LogID=1, service=7, method=1, payload=json.dumps(event).encode())
                for key, value in {"type": "event", "message_id": event["header"]["event_id"], "sum": "1", "seq": "0",
                                   "trace_id": "trace_1"}.items():
                    header = frame.headers.add()
                    header.key, header.value = key, value
                await ws.send_bytes(frame.SerializeToString())

        pusher = self.current_pusher = asyncio.create_task(push())
        try:
            async for msg in ws:
                if msg.type != WSMsgType.BINARY:
                    continue
                frame = Frame()
                frame.ParseFromString(msg.data)
                if frame.method == 1:  # a data frame coming back is the client's acknowledgement
                    self.acks.append(json.loads(frame.payload))
                    self.acked.set()
        finally:
            pusher.cancel()
        return ws


def signed_headers(encrypt_key: str, body: bytes) -> dict[str, str]:
    timestamp, nonce = str(int(time.time())), uuid.uuid4().hex
    return {"headers": {"X-Lark-Request-Timestamp": timestamp, "X-Lark-Request-Nonce": nonce,
                        "X-Lark-Signature": signature(timestamp, nonce, encrypt_key, body)}}
