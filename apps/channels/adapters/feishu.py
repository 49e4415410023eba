"""Feishu / Lark through lark-oapi.

Events arrive over lark-oapi's long-connection websocket client (the default: no public URL
needed) or, with ``mode: webhook``, through ``/api/channels/feishu/events`` (see
``apps.channels.callbacks``), which verifies and decrypts them with the SDK's own
dispatcher and bridges them here. Answers are interactive cards patched as the text streams.

The SDK's HTTP client is synchronous (``requests``, its token fetch included), so every Open
API call runs in a worker thread; the websocket client owns its own event loop (it keeps one
in a module global), so it runs on a thread of its own and hands messages back to ours.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import io
import json
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any

from apps.channels.base import (
    Capabilities,
    ChannelAdapter,
    ChatRef,
    Choice,
    InboundAction,
    InboundFile,
    InboundMessage,
    SentMessage,
)
from apps.channels.common import Backoff, PlatformError, consume_webhooks, direct_chat_hint, is_image
from apps.channels.registry import register

log = logging.getLogger(__name__)

# lark-oapi takes seconds to import (it loads every API of the platform). The web process only
# needs this class's name and settings (the Connections page), so the SDK is imported when an
# adapter is built in the worker; a missing SDK still keeps the channel off at import.
if importlib.util.find_spec("lark_oapi") is None:
    raise ImportError("the lark-oapi package is not installed")


@functools.cache
def _lark() -> Any:
    import lark_oapi

    return lark_oapi


@functools.cache
def _im() -> Any:
    import lark_oapi.api.im.v1 as im

    return im


DOMAINS = {"feishu": "https://open.feishu.cn", "lark": "https://open.larksuite.com"}
# File types the upload API names; anything else is sent as a generic "stream".
_FILE_TYPES = {"opus": "opus", "mp4": "mp4", "pdf": "pdf", "doc": "doc", "docx": "doc", "xls": "xls",
               "xlsx": "xls", "ppt": "ppt", "pptx": "ppt"}
_MENTION_KEY = re.compile(r"@_user_\d+")


def base_url(settings: Mapping[str, Any]) -> str:
    """``base_url`` wins (a private deployment, or a fake server in tests); else ``domain``."""
    if settings.get("base_url"):
        return str(settings["base_url"]).rstrip("/")
    return DOMAINS[str(settings.get("domain") or "feishu").lower()]


def card(text: str) -> str:
    """One markdown element; ``update_multi`` lets the card be patched for every viewer."""
    return json.dumps({"config": {"wide_screen_mode": True, "update_multi": True},
                       "elements": [{"tag": "markdown", "content": text or " "}]}, ensure_ascii=False)


def _check(resp: Any, what: str) -> Any:
    if not resp.success():
        raise PlatformError(f"feishu {what} failed: code {resp.code}: {resp.msg}")
    return resp


@functools.cache
def _ws_client_class() -> type:
    class _WsClient(_lark().ws.Client):
        """The SDK's client, telling the adapter when a connection is up."""

        def __init__(self, adapter: FeishuAdapter, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._adapter = adapter

        async def _connect(self) -> None:
            await super()._connect()
            if self._conn is not None:
                self._adapter._notify(self._adapter.hooks.connected(bot_name=self._adapter.bot_name))

    return _WsClient


@register
class FeishuAdapter(ChannelAdapter):
    provider = "feishu"
    display_name = "Feishu / Lark"
    # Card patches are limited to about 5 per second per message; once a second stays well inside.
    # The resource download API serves files up to 100 MB.
    capabilities = Capabilities(edit=True, edit_interval=1.0, max_text=8000, files_out=True, max_file_in=100 * 1024 * 1024)
    credential_fields = ("app_id", "app_secret")

    @classmethod
    def connect_hint(cls, code: str, *, bot_name: str = "", settings: Mapping[str, Any] | None = None) -> tuple[str, str]:
        return direct_chat_hint(cls.display_name, code)

    def __init__(self, settings: Mapping[str, Any], sink: Any, hooks: Any = None) -> None:
        super().__init__(settings, sink, hooks)
        self.client = (_lark().Client.builder().app_id(str(settings.get("app_id", ""))).app_secret(str(settings.get("app_secret", "")))
                       .domain(base_url(settings)).log_level(_lark().LogLevel.WARNING).build())
        self.bot_open_id: str | None = None
        self.bot_name = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ws_thread: threading.Thread | None = None
        self._ws_loop: asyncio.AbstractEventLoop | None = None
        self._ws_client: Any = None
        self._webhook_task: asyncio.Task | None = None
        self._stopping = threading.Event()

    @classmethod
    def missing_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        missing = super().missing_settings(settings)
        if str(settings.get("domain") or "feishu").lower() not in DOMAINS:
            missing.append("domain (feishu or lark)")
        if settings.get("mode", "websocket") not in ("websocket", "webhook"):
            missing.append("mode (websocket or webhook)")
        return missing

    # --- receiving ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping.clear()
        try:
            self.bot_open_id = await asyncio.to_thread(self._fetch_bot_open_id)
        except Exception as exc:  # without it any @mention counts; Feishu only delivers those in groups anyway
            log.warning("feishu: bot info unavailable (%s); any mention will count as addressing the bot", exc)
        if self.settings.get("mode", "websocket") == "webhook":
            self._webhook_task = asyncio.create_task(consume_webhooks(self.provider, self.handle_webhook_payload))
            await self.hooks.connected(bot_name=self.bot_name)
            return
        self._ws_thread = threading.Thread(target=self._run_ws, name="feishu-ws", daemon=True)
        self._ws_thread.start()

    async def stop(self) -> None:
        self._stopping.set()
        if self._webhook_task is not None:
            self._webhook_task.cancel()
            self._webhook_task = None
        ws_loop, client, thread = self._ws_loop, self._ws_client, self._ws_thread
        if ws_loop is not None and client is not None and not ws_loop.is_closed():
            client._auto_reconnect = False  # the SDK has no public stop; this keeps it from redialling
            try:
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(client._disconnect(), ws_loop))
            except Exception as exc:
                log.debug("feishu: disconnect: %s", exc)
            ws_loop.call_soon_threadsafe(ws_loop.stop)
        if thread is not None:
            await asyncio.to_thread(thread.join, 10)
        self._ws_thread = self._ws_loop = self._ws_client = None

    def _run_ws(self) -> None:
        import lark_oapi.ws.client as ws_module

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        ws_module.loop = loop  # the SDK schedules everything on this module-level loop
        self._ws_loop = loop
        handler = (_lark().EventDispatcherHandler.builder("", "").register_p2_im_message_receive_v1(self._on_event)
                   .register_p2_card_action_trigger(self.on_card_action).build())
        backoff = Backoff()
        while not self._stopping.is_set():
            self._ws_client = _ws_client_class()(self, str(self.settings["app_id"]), str(self.settings["app_secret"]),
                                        event_handler=handler, domain=base_url(self.settings), log_level=_lark().LogLevel.WARNING)
            self._ws_client.on_reconnecting = lambda: self._notify(self.hooks.error("long connection lost; reconnecting"))
            try:
                self._ws_client.start()  # runs until the loop is stopped; reconnects by itself
            except Exception as exc:
                if self._stopping.is_set():
                    break
                log.warning("feishu: long connection failed: %s", exc)
                self._notify(self.hooks.error(f"long connection failed, retrying: {exc}"))
                self._stopping.wait(backoff.next_delay())
        # The SDK leaves its ping loop and cache sweeper pending; end them before closing.
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()

    def _on_event(self, data: Any) -> None:
        """Called by the SDK on its loop: translate, then run the sink on ours without waiting,
        so the frame is acknowledged at once and the platform does not redeliver it."""
        message = self.translate(data)
        if message is not None:
            self._notify(self._deliver(message))

    def _notify(self, coro: Any) -> None:
        """Run ``coro`` on the adapter's loop from the SDK's thread, without waiting for it."""
        if self._loop is not None and not self._loop.is_closed():
            asyncio.run_coroutine_threadsafe(coro, self._loop)
        else:
            coro.close()

    async def _deliver(self, message: InboundMessage | InboundAction) -> None:
        await self.hooks.event()
        await self.sink(message)

    async def handle_webhook_payload(self, payload: dict[str, Any]) -> None:
        if "card_action" in payload:  # a button press the callback route verified
            pressed = self.pressed(payload["card_action"])
            if pressed is not None:
                await self._deliver(pressed)
            return
        data = _lark().JSON.unmarshal(payload["event_json"], _im().P2ImMessageReceiveV1)
        message = self.translate(data)
        if message is not None:
            await self._deliver(message)

    def _fetch_bot_open_id(self) -> str | None:
        request = (_lark().BaseRequest.builder().http_method(_lark().HttpMethod.GET).uri("/open-apis/bot/v3/info")
                   .token_types({_lark().AccessTokenType.TENANT}).build())
        resp = self.client.request(request)
        if not resp.success():
            raise PlatformError(f"code {resp.code}: {resp.msg}")
        bot = json.loads(resp.raw.content).get("bot") or {}
        self.bot_name = bot.get("app_name") or ""
        return bot.get("open_id")

    def translate(self, data: Any) -> InboundMessage | None:
        """A receive event as plain data; ``None`` for what is not a user's message (logged)."""
        event = getattr(data, "event", None)
        msg = getattr(event, "message", None)
        sender = getattr(event, "sender", None)
        if msg is None or sender is None or sender.sender_id is None or not msg.chat_id:
            log.warning("feishu: malformed message event ignored")
            return None
        if sender.sender_type not in (None, "user"):
            return None  # the bot's own and other apps' messages
        try:
            content = json.loads(msg.content or "{}")
        except ValueError:
            log.warning("feishu: message %s has unreadable content", msg.message_id)
            content = {}
        text, files = self._content(msg.message_id, msg.message_type or "", content)
        mentioned = False
        for mention in msg.mentions or ():
            open_id = getattr(mention.id, "open_id", None) if mention.id else None
            is_bot = open_id == self.bot_open_id if self.bot_open_id else True
            mentioned = mentioned or is_bot
            text = text.replace(mention.key or "\0", "" if is_bot else f"@{mention.name or ''}")
        text = _MENTION_KEY.sub("", text).strip()
        is_direct = msg.chat_type == "p2p"
        chat = ChatRef(provider=self.provider, workspace=sender.tenant_key or "", chat=msg.chat_id,
                       topic=msg.thread_id or "")
        return InboundMessage(chat=chat, sender_id=sender.sender_id.open_id or "", sender_name="",
                              text=text, message_id=msg.message_id or "", is_direct=is_direct,
                              mentioned=is_direct or mentioned, files=tuple(files),
                              extra={"root_id": msg.root_id or "", "chat_type": msg.chat_type or ""})

    def _content(self, message_id: str, kind: str, content: dict[str, Any]) -> tuple[str, list[InboundFile]]:
        files: list[InboundFile] = []
        if kind == "text":
            return str(content.get("text", "")), files
        if kind == "image" and content.get("image_key"):
            files.append(self._resource(message_id, content["image_key"], "image", f"{content['image_key']}.png"))
        elif kind in ("file", "audio", "media") and content.get("file_key"):
            files.append(self._resource(message_id, content["file_key"], "file", content.get("file_name") or content["file_key"]))
        elif kind == "post":
            # Rich text: {"title", "content": [[{"tag": "text"|"img"|"at"|"a", ...}]]}; some
            # deliveries wrap it per locale ({"zh_cn": {...}}).
            body = content if "content" in content else next(iter(content.values()), {}) if content else {}
            parts = [body.get("title", "")] if body.get("title") else []
            for line in body.get("content") or []:
                words = []
                for node in line:
                    if node.get("tag") in ("text", "a"):
                        words.append(node.get("text", ""))
                    elif node.get("tag") == "at":
                        words.append(node.get("user_id", ""))
                    elif node.get("tag") == "img" and node.get("image_key"):
                        files.append(self._resource(message_id, node["image_key"], "image", f"{node['image_key']}.png"))
                parts.append("".join(words))
            return "\n".join(parts), files
        return "", files

    def _resource(self, message_id: str, key: str, kind: str, name: str) -> InboundFile:
        def download() -> bytes:
            request = _im().GetMessageResourceRequest.builder().message_id(message_id).file_key(key).type(kind).build()
            resp = _check(self.client.im.v1.message_resource.get(request), "file download")
            return resp.file.read()

        async def read() -> bytes:
            return await asyncio.to_thread(download)

        # The event does not carry the size: the manager caps what it reads.
        return InboundFile(name=name, size=None, content_type="image/png" if kind == "image" else None, read=read)

    # --- answering ---------------------------------------------------------------------------

    async def direct_chat(self, external_id: str, workspace: str = "") -> ChatRef:
        # The send API addresses a person by open_id directly; no chat id is needed.
        return ChatRef(provider=self.provider, workspace=workspace, chat=external_id)

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage:
        return await asyncio.to_thread(self._send, chat, "interactive", card(text), reply_to)

    async def edit_text(self, sent: SentMessage, text: str) -> None:
        def patch() -> None:
            request = (_im().PatchMessageRequest.builder().message_id(sent.message_id)
                       .request_body(_im().PatchMessageRequestBody.builder().content(card(text)).build()).build())
            _check(self.client.im.v1.message.patch(request), "card update")

        await asyncio.to_thread(patch)

    async def send_file(self, chat: ChatRef, name: str, data: bytes, *, content_type: str | None = None,
                        reply_to: str | None = None) -> SentMessage:
        def upload_and_send() -> SentMessage:
            if is_image(name, content_type):
                body = _im().CreateImageRequestBody.builder().image_type("message").image(io.BytesIO(data)).build()
                resp = _check(self.client.im.v1.image.create(_im().CreateImageRequest.builder().request_body(body).build()), "image upload")
                return self._send(chat, "image", json.dumps({"image_key": resp.data.image_key}), reply_to)
            file_type = _FILE_TYPES.get(name.rsplit(".", 1)[-1].lower(), "stream") if "." in name else "stream"
            body = _im().CreateFileRequestBody.builder().file_type(file_type).file_name(name).file(io.BytesIO(data)).build()
            resp = _check(self.client.im.v1.file.create(_im().CreateFileRequest.builder().request_body(body).build()), "file upload")
            return self._send(chat, "file", json.dumps({"file_key": resp.data.file_key}), reply_to)

        return await asyncio.to_thread(upload_and_send)

    def _send(self, chat: ChatRef, msg_type: str, content: str, reply_to: str | None) -> SentMessage:
        if reply_to:
            body = (_im().ReplyMessageRequestBody.builder().msg_type(msg_type).content(content)
                    .reply_in_thread(bool(chat.topic)).build())
            resp = _check(self.client.im.v1.message.reply(
                _im().ReplyMessageRequest.builder().message_id(reply_to).request_body(body).build()), "reply")
        else:
            id_type = "open_id" if chat.chat.startswith("ou_") else "chat_id"  # a person (direct_chat) or a chat
            body = _im().CreateMessageRequestBody.builder().receive_id(chat.chat).msg_type(msg_type).content(content).build()
            resp = _check(self.client.im.v1.message.create(
                _im().CreateMessageRequest.builder().receive_id_type(id_type).request_body(body).build()), "send")
        return SentMessage(chat=chat, message_id=resp.data.message_id)

    # --- buttons (questions and approvals) ------------------------------------------------

    def on_card_action(self, data: Any) -> Any:
        """card.action.trigger from the long connection (the SDK's loop): handed to ours, and
        answered at once with a toast (Feishu wants an answer within 3 s)."""
        from lark_oapi.event.callback.model.p2_card_action_trigger import P2CardActionTriggerResponse

        event = getattr(data, "event", None)
        header = getattr(data, "header", None)
        pressed = self.pressed({
            "open_id": getattr(getattr(event, "operator", None), "open_id", None),
            "tenant_key": getattr(getattr(event, "operator", None), "tenant_key", None) or getattr(header, "tenant_key", None),
            "value": getattr(getattr(event, "action", None), "value", None),
            "chat_id": getattr(getattr(event, "context", None), "open_chat_id", None),
            "message_id": getattr(getattr(event, "context", None), "open_message_id", None),
            "event_id": getattr(header, "event_id", None)})
        if pressed is not None:
            self._notify(self._deliver(pressed))
        return P2CardActionTriggerResponse({"toast": {"type": "info", "content": "Got it"}})

    def pressed(self, action: Mapping[str, Any]) -> InboundAction | None:
        value = action.get("value") if isinstance(action.get("value"), Mapping) else {}
        if not all(isinstance(action.get(k), str) and action.get(k) for k in ("open_id", "chat_id", "event_id")) \
                or not isinstance(value.get("dfq"), str):
            log.warning("feishu: a card action without operator, chat or choice was ignored")
            return None
        # The press names the chat, not a topic: a question asked inside a topic is answered
        # by replying there with its number (docs/channels.md).
        return InboundAction(chat=ChatRef(provider=self.provider, workspace=str(action.get("tenant_key") or ""), chat=action["chat_id"]),
                             sender_id=action["open_id"], sender_name="", data=value["dfq"], message_id=f"card-{action['event_id']}",
                             reply_to=str(action.get("message_id") or ""))

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice], *, reply_to: str | None = None) -> SentMessage:
        buttons = [{"tag": "button", "type": "default", "text": {"tag": "plain_text", "content": choice.label},
                    "value": {"dfq": choice.data}} for choice in choices]
        content = json.dumps({"config": {"wide_screen_mode": True, "update_multi": True},
                              "elements": [{"tag": "markdown", "content": text or " "}, {"tag": "action", "actions": buttons}]},
                             ensure_ascii=False)
        return await asyncio.to_thread(self._send, chat, "interactive", content, reply_to)
