"""A fake Telegram Bot API server on loopback, speaking the real HTTP protocol.

``/bot<token>/<method>`` answers getMe, getUpdates (long polling: waits up to ``timeout``
seconds for an update; an ``offset`` confirms and forgets the updates before it, as Telegram
does), sendMessage, editMessageText, sendDocument and getFile, and Bot API 10.1's Rich Messages
(sendRichMessage, editMessageText with ``rich_message``; ``rich_supported = False`` answers
as an older server does); ``/file/bot<token>/<path>``
serves file downloads. Requests arrive form-encoded or multipart, as python-telegram-bot
sends them. A wrong token answers 401 like the real API; ``fail_next`` makes the next
requests answer 502 (an outage).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

BOT_ID = 9000


@dataclass
class ChatMessage:
    chat_id: int
    message_id: int
    text: str = ""
    document: tuple[str, bytes] | None = None
    reply_to: int | None = None
    thread_id: int | None = None
    edits: list[str] = field(default_factory=list)
    buttons: list[tuple[str, str]] = field(default_factory=list)  # (text, callback_data) of its inline keyboard
    rich: str | None = None  # the Markdown of a Rich Message, once it is one


class FakeTelegram:
    def __init__(self, token: str = "123:TEST", username: str = "deerflow_bot") -> None:
        self.token = token
        self.username = username
        self.updates: list[dict] = []
        self.sent: list[ChatMessage] = []
        self.files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, bytes)
        self.get_updates_offsets: list[int | None] = []
        self.handled_updates: list[dict] = []  # every update handed to the bot, in order
        self.fail_next = 0
        self.fail_method: dict[str, int] = {}  # method -> how many of its next calls answer 502
        self.rich_supported = True
        self.webhook: tuple[str, str] | None = None  # (url, secret) once setWebhook was called
        self.answered_callbacks: list[str] = []  # callback query ids the bot acknowledged
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(100)
        self._new_update = asyncio.Event()
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- server -----------------------------------------------------------------------------

    async def start(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def settings(self) -> dict[str, Any]:
        return {"enabled": True, "bot_token": self.token, "base_url": f"http://127.0.0.1:{self.port}/bot",
                "base_file_url": f"http://127.0.0.1:{self.port}/file/bot", "allowed_private_networks": ["127.0.0.0/8"],
                "poll_timeout": 1, "edit_interval": 0}

    # -- what a user does -------------------------------------------------------------------

    def _message(self, *, text: str, user_id: int, chat_id: int | None, chat_type: str, first_name: str,
                 caption: str | None = None, thread_id: int | None = None, **extra: Any) -> dict:
        chat_id = chat_id if chat_id is not None else user_id
        chat = {"id": chat_id, "type": chat_type}
        if chat_type == "private":
            chat["first_name"] = first_name
        else:
            chat["title"] = "Team chat"
        message = {"message_id": next(self._message_ids), "date": int(time.time()), "chat": chat,
                   "from": {"id": user_id, "is_bot": False, "first_name": first_name}}
        if text:
            message["text"] = text
        if caption is not None:
            message["caption"] = caption
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        message.update(extra)
        return message

    def user_says(self, text: str, *, user_id: int = 501, chat_id: int | None = None, chat_type: str = "private",
                  first_name: str = "Ann", **extra: Any) -> dict:
        message = self._message(text=text, user_id=user_id, chat_id=chat_id, chat_type=chat_type, first_name=first_name, **extra)
        self.updates.append({"update_id": next(self._update_ids), "message": message})
        self._new_update.set()
        return message

    async def push(self, update: dict, *, secret: str | None = None) -> int:
        """Deliver an update to the registered webhook as Telegram does; the HTTP status."""
        import aiohttp

        assert self.webhook is not None, "no webhook registered"
        url, registered = self.webhook
        headers = {"X-Telegram-Bot-Api-Secret-Token": registered if secret is None else secret}
        async with aiohttp.ClientSession() as session, session.post(url, json=update, headers=headers) as response:
            return response.status

    def user_update(self, text: str, **kwargs: Any) -> dict:
        """An update as the user's message makes it, not queued for getUpdates (webhook mode)."""
        user_id = kwargs.pop("user_id", 501)
        message = self._message(text=text, user_id=user_id, chat_id=kwargs.pop("chat_id", None),
                                chat_type=kwargs.pop("chat_type", "private"), first_name=kwargs.pop("first_name", "Ann"), **kwargs)
        return {"update_id": next(self._update_ids), "message": message}

    def user_sends_document(self, name: str, data: bytes, *, caption: str = "", user_id: int = 501, size: int | None = None) -> dict:
        file_id = f"doc-{len(self.files) + 1}"
        self.files[file_id] = (f"documents/{name}", data)
        document = {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_name": name, "mime_type": "text/plain",
                    "file_size": len(data) if size is None else size}
        return self.user_says("", user_id=user_id, caption=caption, document=document)

    def user_sends_photo(self, data: bytes, *, caption: str = "", user_id: int = 501) -> dict:
        file_id = f"photo-{len(self.files) + 1}"
        self.files[file_id] = (f"photos/{file_id}.jpg", data)
        sizes = [{"file_id": f"{file_id}-small", "file_unique_id": "small", "width": 90, "height": 90, "file_size": 10},
                 {"file_id": file_id, "file_unique_id": f"u{file_id}", "width": 800, "height": 600, "file_size": len(data)}]
        return self.user_says("", user_id=user_id, caption=caption, photo=sizes)

    def user_presses(self, message: ChatMessage, text: str, *, user_id: int = 501, first_name: str = "Ann") -> dict:
        """A tap on one of ``message``'s inline buttons (by its text): a callback_query update."""
        data = next(d for label, d in message.buttons if label == text)
        query = {"id": str(next(self._update_ids) + 7_000_000), "chat_instance": "ci-1", "data": data,
                 "from": {"id": user_id, "is_bot": False, "first_name": first_name},
                 "message": {**self._result_message(message), "chat": {"id": message.chat_id, "type": "private" if message.chat_id > 0 else "supergroup"}}}
        self.updates.append({"update_id": next(self._update_ids), "callback_query": query})
        self._new_update.set()
        return query

    def with_buttons(self, chat_id: int) -> list[ChatMessage]:
        return [m for m in self.sent if m.chat_id == chat_id and m.buttons]

    def texts(self, chat_id: int) -> list[str]:
        """The bot's messages in a chat as the user sees them now (edits applied)."""
        return [m.text for m in self.sent if m.chat_id == chat_id and m.document is None]

    async def wait_for(self, predicate, timeout: float = 20.0) -> None:
        """Until ``predicate()`` holds (a bound on a hang, not a timed assertion)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"fake Telegram: condition not met; sent so far: {[(m.text, m.edits) for m in self.sent]}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=0.5)
            except asyncio.TimeoutError:
                pass

    # -- the Bot API ---------------------------------------------------------------------------

    @staticmethod
    def _ok(result: Any) -> web.Response:
        return web.json_response({"ok": True, "result": result})

    @staticmethod
    def _error(status: int, description: str) -> web.Response:
        return web.json_response({"ok": False, "error_code": status, "description": description}, status=status)

    async def _params(self, request: web.Request) -> tuple[dict[str, Any], dict[str, tuple[str, bytes]]]:
        params: dict[str, Any] = {}
        uploads: dict[str, tuple[str, bytes]] = {}
        if request.content_type == "application/json":
            return dict(await request.json()), uploads
        if request.content_type == "multipart/form-data":
            reader = await request.multipart()
            async for part in reader:
                if part.filename:
                    uploads[part.name] = (part.filename, bytes(await part.read()))
                else:
                    params[part.name] = (await part.read()).decode()
        else:
            params = dict(await request.post())
        decoded = {}
        for key, value in params.items():
            try:
                decoded[key] = json.loads(value) if isinstance(value, str) else value
            except ValueError:
                decoded[key] = value
        return decoded, uploads

    def _result_message(self, msg: ChatMessage) -> dict:
        result = {"message_id": msg.message_id, "date": int(time.time()), "chat": {"id": msg.chat_id, "type": "private"},
                  "from": {"id": BOT_ID, "is_bot": True, "first_name": "DeerFlow", "username": self.username}}
        if msg.document is None:
            result["text"] = msg.text
        else:
            result["document"] = {"file_id": f"out-{msg.message_id}", "file_unique_id": f"o{msg.message_id}",
                                  "file_name": msg.document[0]}
        return result

    async def _api(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return self._error(401, "Unauthorized")
        if self.fail_next > 0:
            self.fail_next -= 1
            return self._error(502, "Bad Gateway")
        method = request.match_info["method"]
        if self.fail_method.get(method):
            self.fail_method[method] -= 1
            return self._error(502, "Bad Gateway")
        params, uploads = await self._params(request)
        if method == "getMe":
            return self._ok({"id": BOT_ID, "is_bot": True, "first_name": "DeerFlow", "username": self.username,
                             "can_join_groups": True, "can_read_all_group_messages": False, "supports_inline_queries": False})
        if method == "getUpdates":
            if self.webhook is not None:
                return self._error(409, "Conflict: can't use getUpdates method while webhook is active")
            return await self._get_updates(params)
        if method == "setWebhook":
            self.webhook = (str(params["url"]), str(params.get("secret_token") or ""))
            return self._ok(True)
        if method == "deleteWebhook":
            self.webhook = None
            return self._ok(True)
        if method == "sendMessage":
            msg = ChatMessage(chat_id=int(params["chat_id"]), message_id=next(self._message_ids), text=str(params["text"]),
                              reply_to=(params.get("reply_parameters") or {}).get("message_id"), thread_id=params.get("message_thread_id"),
                              buttons=[(b["text"], b["callback_data"]) for row in (params.get("reply_markup") or {}).get("inline_keyboard", [])
                                       for b in row])
            self.sent.append(msg)
            self._changed.set()
            return self._ok(self._result_message(msg))
        if method == "sendRichMessage":
            if not self.rich_supported:
                return self._error(404, "Not Found: method not found")
            markdown = str(params["rich_message"]["markdown"])
            msg = ChatMessage(chat_id=int(params["chat_id"]), message_id=next(self._message_ids), text=markdown, rich=markdown,
                              reply_to=(params.get("reply_parameters") or {}).get("message_id"), thread_id=params.get("message_thread_id"))
            self.sent.append(msg)
            self._changed.set()
            return self._ok(self._result_message(msg))
        if method == "editMessageText" and "rich_message" in params:
            if not self.rich_supported:
                return self._error(400, "Bad Request: message text is empty")
            for msg in self.sent:
                if msg.chat_id == int(params["chat_id"]) and msg.message_id == int(params["message_id"]):
                    msg.text = msg.rich = str(params["rich_message"]["markdown"])
                    msg.edits.append(msg.text)
                    self._changed.set()
                    return self._ok(self._result_message(msg))
            return self._error(400, "Bad Request: message to edit not found")
        if method == "editMessageText":
            for msg in self.sent:
                if msg.chat_id == int(params["chat_id"]) and msg.message_id == int(params["message_id"]):
                    if msg.text == params["text"]:
                        return self._error(400, "Bad Request: message is not modified")
                    msg.text = str(params["text"])
                    msg.edits.append(msg.text)
                    self._changed.set()
                    return self._ok(self._result_message(msg))
            return self._error(400, "Bad Request: message to edit not found")
        if method == "sendDocument":
            filename, data = uploads["document"]
            msg = ChatMessage(chat_id=int(params["chat_id"]), message_id=next(self._message_ids), document=(filename, data))
            self.sent.append(msg)
            self._changed.set()
            return self._ok(self._result_message(msg))
        if method == "answerCallbackQuery":
            self.answered_callbacks.append(str(params["callback_query_id"]))
            self._changed.set()
            return self._ok(True)
        if method == "getFile":
            file_id = str(params["file_id"])
            if file_id not in self.files:
                return self._error(400, "Bad Request: invalid file_id")
            path, data = self.files[file_id]
            return self._ok({"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": len(data), "file_path": path})
        return self._error(404, f"Not Found: method {method}")

    async def _get_updates(self, params: dict[str, Any]) -> web.Response:
        offset = params.get("offset")
        self.get_updates_offsets.append(offset)
        if isinstance(offset, int):
            self.updates = [u for u in self.updates if u["update_id"] >= offset]  # confirmed: forgotten
        timeout = float(params.get("timeout") or 0)
        deadline = time.monotonic() + timeout
        while not self.updates and time.monotonic() < deadline:
            self._new_update.clear()
            try:
                await asyncio.wait_for(self._new_update.wait(), timeout=max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
        for update in self.updates:
            if update not in self.handled_updates:
                self.handled_updates.append(update)
        return self._ok(list(self.updates))

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return web.Response(status=401)
        path = request.match_info["path"]
        for stored_path, data in self.files.values():
            if stored_path == path:
                return web.Response(body=data)
        return web.Response(status=404)
