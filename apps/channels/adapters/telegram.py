"""Telegram, through python-telegram-bot's ``Bot`` (Bot API over HTTPS).

Long polling (``getUpdates``) with the offset kept in the channel's cursor, so a restarted
worker resumes after the last update it handled instead of answering it twice; or, with
``mode: webhook``, a listener in the worker that Telegram pushes updates to (secret checked). Answers stream
by editing one message (``editMessageText``) at most once a second in private chats and once
every 3 s in groups (Telegram allows a bot about 20 messages a minute per group); an
``edit_interval`` setting replaces both. With ``rich_messages: true`` the final answer
replaces the streamed text as a Rich Message (Bot API 10.1: the agent's Markdown rendered by
Telegram, up to 32768 characters); a server that refuses it gets the plain text instead.
Photos and documents come in through ``getFile`` + the file URL (never shown: it carries the
token); presented files go out with ``sendDocument``. In groups the bot answers when
mentioned (@name), when replied to, or for a command addressed to it.

Every Bot API request goes through the SSRF guard's transport (``harness.net.guard``);
``allowed_private_networks`` opens a private Bot API server (a self-hosted one, or tests).
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Mapping
from typing import Any

from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, InputFile, Message, ReplyParameters, Update
from telegram.error import (BadRequest, EndPointNotFound, Forbidden, InvalidToken, NetworkError, RetryAfter, TelegramError,
                            TimedOut)
from telegram.request import HTTPXRequest
from telegram.warnings import PTBUserWarning

from apps.channels.base import (
    Capabilities, ChannelAdapter, ChatRef, Choice, InboundAction, InboundFile, InboundMessage, SentMessage,
)
from apps.channels.registry import register
from harness.net.guard import GuardedTransport, GuardPolicy

logger = logging.getLogger(__name__)

DOWNLOAD_LIMIT = 20_000_000  # the hosted Bot API serves files up to 20 MB to bots
BACKOFF_MAX = 60.0
# Messages, and presses of the inline keyboards questions and approvals carry.
ALLOWED_UPDATES = ["message", "callback_query"]
PRIVATE_EDIT_INTERVAL = 1.0
GROUP_EDIT_INTERVAL = 3.0  # groups: about 20 bot messages a minute
MAX_RICH_MESSAGE = 32768


def _retry_seconds(exc: RetryAfter) -> float:
    wait = exc.retry_after
    return wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)


def _int_or_none(value: str) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@register
class TelegramAdapter(ChannelAdapter):
    provider = "telegram"
    display_name = "Telegram"
    capabilities = Capabilities(edit=True, edit_interval=1.0, max_text=4096, files_out=True, max_file_in=DOWNLOAD_LIMIT)
    credential_fields = ("bot_token",)

    def __init__(self, settings: Mapping[str, Any], sink, hooks=None) -> None:
        super().__init__(settings, sink, hooks)
        interval = settings.get("edit_interval")
        # None: DeerFlow's per-chat-type pace (edit_interval_for); a number paces every chat.
        self.edit_interval: float | None = None
        if isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval >= 0:
            self.edit_interval = float(interval)
            self.capabilities = Capabilities(edit=True, edit_interval=float(interval), max_text=4096, files_out=True,
                                             max_file_in=DOWNLOAD_LIMIT)
        self.rich_messages = bool(settings.get("rich_messages"))
        self.poll_timeout = int(settings.get("poll_timeout", 30))
        self.bot: Bot | None = None
        self.username = ""
        self.bot_id: int | None = None
        self.offset: int | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False
        # Webhook mode (optional): Telegram pushes updates instead of the worker polling.
        self.webhook = settings.get("mode") == "webhook"
        self._webhook_runner = None
        self.webhook_port: int | None = None

    @classmethod
    def missing_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        missing = super().missing_settings(settings)
        if settings.get("mode") == "webhook":
            missing += [name for name in ("webhook_url", "webhook_secret") if not settings.get(name)]
        return missing

    @classmethod
    def connect_hint(cls, code: str, *, bot_name: str = "", settings=None) -> tuple[str, str]:
        name = bot_name or str((settings or {}).get("bot_username") or "").lstrip("@")
        if name:
            return (f"https://t.me/{name}?start={code}",
                    f"Open the link to start @{name} with the code filled in, or send it: /connect {code}")
        return "", f"Send this message to the Telegram bot: /connect {code}"

    def _make_bot(self) -> Bot:
        policy = GuardPolicy.from_networks(self.settings.get("allowed_private_networks") or [])

        def request(read_timeout: float) -> HTTPXRequest:
            return HTTPXRequest(connection_pool_size=8, read_timeout=read_timeout,
                                httpx_kwargs={"transport": GuardedTransport(policy), "trust_env": False})

        kwargs: dict[str, Any] = {}
        if self.settings.get("base_url"):
            kwargs["base_url"] = str(self.settings["base_url"])
        if self.settings.get("base_file_url"):
            kwargs["base_file_url"] = str(self.settings["base_file_url"])
        return Bot(str(self.settings["bot_token"]), request=request(20.0), get_updates_request=request(self.poll_timeout + 10.0),
                   **kwargs)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        self._stopping = False
        self.bot = self._make_bot()
        cursor = await self.hooks.load_cursor()
        self.offset = cursor.get("offset") if isinstance(cursor.get("offset"), int) else None
        try:
            await self._initialize()
        except (InvalidToken, Forbidden):
            raise  # a wrong token does not get better by retrying: the worker marks the channel off
        except TelegramError as exc:  # an outage at start: keep trying in the background
            if self.webhook:
                raise  # the webhook cannot be registered: the worker reports the channel off
            await self.hooks.error(f"Bot API unreachable at start ({exc}); retrying")
        if self.webhook:
            await self._start_webhook()
            return
        if self.bot_id is not None:
            # A webhook left registered (an earlier webhook setup) makes getUpdates fail with 409.
            await self.bot.delete_webhook()
        self._task = asyncio.create_task(self._poll_forever(), name="telegram-poll")

    async def _initialize(self) -> None:
        assert self.bot is not None
        await self.bot.initialize()
        me = self.bot.bot
        self.username, self.bot_id = me.username or "", me.id
        await self.hooks.connected(bot_name=self.username)

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        if self._webhook_runner is not None:
            await self._webhook_runner.cleanup()
            self._webhook_runner = None
        if self.bot is not None:
            try:
                await self.bot.shutdown()
            except Exception:
                pass

    async def _poll_forever(self) -> None:
        assert self.bot is not None
        delay = 1.0
        while not self._stopping:
            try:
                if self.bot_id is None:
                    await self._initialize()
                raw_updates = await self._get_updates()
                if delay > 1.0:
                    await self.hooks.connected(bot_name=self.username)
                delay = 1.0
            except asyncio.CancelledError:
                raise
            except RetryAfter as exc:
                await asyncio.sleep(min(_retry_seconds(exc), BACKOFF_MAX))
                continue
            except (InvalidToken, Forbidden) as exc:
                await self.hooks.error(f"the Bot API refused the token: {exc}; polling stopped")
                return
            except (TimedOut, NetworkError, TelegramError) as exc:
                await self.hooks.error(f"getUpdates failed ({type(exc).__name__}: {exc}); retrying in {delay:.0f}s")
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
                continue
            for raw in raw_updates:
                update_id = raw.get("update_id") if isinstance(raw, dict) else None
                if isinstance(update_id, int):
                    self.offset = max(self.offset or 0, update_id + 1)
                await self._handle_raw(raw)
            if raw_updates:
                await self.hooks.save_cursor({"offset": self.offset})

    async def _handle_raw(self, raw: Any) -> None:
        """One update as JSON, from polling or the webhook. Malformed: logged, recorded and
        acknowledged (the caller moves on), never raised."""
        update_id = raw.get("update_id") if isinstance(raw, dict) else None
        if not isinstance(update_id, int):
            await self.hooks.error(f"an update without an update_id was skipped: {str(raw)[:200]}")
            return
        await self.hooks.event()
        try:
            message = self._inbound(Update.de_json(raw, self.bot))
        except Exception as exc:
            logger.warning("Telegram update %s could not be read: %s", update_id, exc)
            await self.hooks.error(f"update {update_id} could not be read: {type(exc).__name__}: {exc}")
            return
        if isinstance(message, InboundAction):
            await self._acknowledge(message.message_id)
        if message is not None:
            await self.sink(message)

    # -- webhook mode ------------------------------------------------------------------------

    async def _start_webhook(self) -> None:
        """Telegram POSTs updates to ``webhook_url``; this worker listens on ``webhook_listen``
        (host:port, behind your TLS proxy) and accepts only requests carrying the secret."""
        from aiohttp import web

        assert self.bot is not None
        secret = str(self.settings["webhook_secret"])
        host, _, port = str(self.settings.get("webhook_listen") or "127.0.0.1:8443").rpartition(":")

        async def receive(request: web.Request) -> web.Response:
            if request.headers.get("X-Telegram-Bot-Api-Secret-Token", "") != secret:
                return web.json_response({"detail": "bad or missing X-Telegram-Bot-Api-Secret-Token"}, status=401)
            try:
                raw = await request.json()
            except ValueError:
                await self.hooks.error("a webhook delivery was not JSON; acknowledged and skipped")
                return web.json_response({"ok": True})
            await self._handle_raw(raw)
            return web.json_response({"ok": True})

        app = web.Application(client_max_size=2 * 1024 * 1024)
        app.router.add_post(str(self.settings.get("webhook_path") or "/telegram/webhook"), receive)
        self._webhook_runner = web.AppRunner(app)
        await self._webhook_runner.setup()
        site = web.TCPSite(self._webhook_runner, host or "127.0.0.1", int(port or 8443))
        await site.start()
        self.webhook_port = site._server.sockets[0].getsockname()[1]
        await self.bot.set_webhook(url=str(self.settings["webhook_url"]), secret_token=secret, allowed_updates=ALLOWED_UPDATES)

    async def _get_updates(self) -> list:
        """Updates as JSON, each parsed on its own: one malformed update must not make the
        whole batch unreadable (and so stall the offset on it forever)."""
        assert self.bot is not None
        params: dict[str, Any] = {"timeout": self.poll_timeout, "allowed_updates": ALLOWED_UPDATES}
        if self.offset is not None:
            params["offset"] = self.offset
        with warnings.catch_warnings():
            # PTB suggests get_updates for this endpoint; the raw list is the point here.
            warnings.simplefilter("ignore", PTBUserWarning)
            result = await self.bot.do_api_request("getUpdates", api_kwargs=params, read_timeout=self.poll_timeout + 10.0)
        return result if isinstance(result, list) else []

    # -- inbound -----------------------------------------------------------------------------

    def _mentioned(self, message: Message, text: str) -> bool:
        name = f"@{self.username}".lower() if self.username else ""
        if name and name in text.lower():
            return True
        reply = message.reply_to_message
        return bool(reply and reply.from_user and self.bot_id and reply.from_user.id == self.bot_id)

    def _strip_mention(self, text: str) -> str:
        if not self.username:
            return text
        import re

        return re.sub(rf"@{re.escape(self.username)}\b", "", text, flags=re.IGNORECASE).strip()

    def _inbound(self, update: Update) -> InboundMessage | InboundAction | None:
        if update.callback_query is not None:
            return self._pressed(update.callback_query)
        message = update.message
        if message is None or message.from_user is None or message.from_user.is_bot:
            return None
        chat = message.chat
        text = message.text or message.caption or ""
        direct = chat.type == "private"
        mentioned = direct or self._mentioned(message, text)
        topic = str(message.message_thread_id) if message.is_topic_message and message.message_thread_id else ""
        files: list[InboundFile] = []
        if message.photo:
            photo = message.photo[-1]  # the largest size
            files.append(self._file(photo.file_id, f"photo_{photo.file_unique_id}.jpg", photo.file_size, "image/jpeg"))
        if message.document:
            doc = message.document
            files.append(self._file(doc.file_id, doc.file_name or f"document_{doc.file_unique_id}", doc.file_size, doc.mime_type))
        user = message.from_user
        return InboundMessage(
            chat=ChatRef(provider=self.provider, workspace="", chat=str(chat.id), topic=topic),
            sender_id=str(user.id), sender_name=user.full_name or user.username or str(user.id),
            text=self._strip_mention(text), message_id=str(message.message_id), is_direct=direct, mentioned=mentioned,
            files=tuple(files), extra={"chat_title": chat.title or ""})

    def _file(self, file_id: str, name: str, size: int | None, content_type: str | None) -> InboundFile:
        async def read() -> bytes:
            assert self.bot is not None
            remote = await self.bot.get_file(file_id)
            return bytes(await remote.download_as_bytearray())

        return InboundFile(name=name, size=size, content_type=content_type, read=read)

    # -- outbound ----------------------------------------------------------------------------

    def _target(self, chat: ChatRef, reply_to: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"chat_id": int(chat.chat)}
        if chat.topic and _int_or_none(chat.topic) is not None:
            kwargs["message_thread_id"] = int(chat.topic)
        if reply_to and _int_or_none(reply_to) is not None:
            kwargs["reply_parameters"] = ReplyParameters(message_id=int(reply_to), allow_sending_without_reply=True)
        return kwargs

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage:
        assert self.bot is not None
        sent = await self._retrying(lambda: self.bot.send_message(text=text, **self._target(chat, reply_to)))
        return SentMessage(chat=chat, message_id=str(sent.message_id))

    async def edit_text(self, sent: SentMessage, text: str) -> None:
        assert self.bot is not None
        try:
            await self.bot.edit_message_text(text=text, chat_id=int(sent.chat.chat), message_id=int(sent.message_id))
        except BadRequest as exc:
            if "not modified" not in str(exc).lower():
                raise

    def edit_interval_for(self, chat: ChatRef) -> float:
        if self.edit_interval is not None:
            return self.edit_interval
        return GROUP_EDIT_INTERVAL if chat.chat.startswith("-") else PRIVATE_EDIT_INTERVAL  # groups have negative ids

    async def finish_answer(self, chat: ChatRef, sent: SentMessage | None, text: str, *, reply_to: str | None = None) -> bool:
        """The final answer as a Rich Message: the streamed message turned into it, or a new one."""
        if not self.rich_messages or not 0 < len(text) <= MAX_RICH_MESSAGE:
            return False
        assert self.bot is not None
        rich = {"markdown": text}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PTBUserWarning)
                if sent is not None:
                    await self._retrying(lambda: self.bot.do_api_request("editMessageText", api_kwargs={
                        "chat_id": int(sent.chat.chat), "message_id": int(sent.message_id), "rich_message": rich}))
                else:
                    target = self._target(chat, reply_to)
                    if "reply_parameters" in target:
                        target["reply_parameters"] = target["reply_parameters"].to_dict()
                    await self._retrying(lambda: self.bot.do_api_request("sendRichMessage", api_kwargs={**target, "rich_message": rich}))
        except (BadRequest, EndPointNotFound) as exc:
            # An older Bot API server, or Markdown Telegram would not render: plain text instead.
            logger.info("Telegram refused a rich message in chat %s (%s); sending plain text", chat.chat, exc)
            return False
        return True

    async def send_file(self, chat: ChatRef, name: str, data: bytes, *, content_type: str | None = None,
                        reply_to: str | None = None) -> SentMessage:
        assert self.bot is not None
        sent = await self._retrying(lambda: self.bot.send_document(document=InputFile(data, filename=name),
                                                                   **self._target(chat, reply_to)))
        return SentMessage(chat=chat, message_id=str(sent.message_id))

    async def _retrying(self, send, attempts: int = 3):
        """A send waits out Telegram's flood control once or twice instead of losing the answer."""
        for attempt in range(attempts):
            try:
                return await send()
            except RetryAfter as exc:
                if attempt == attempts - 1:
                    raise
                await asyncio.sleep(min(_retry_seconds(exc), 30.0))
            except (TimedOut, NetworkError):
                if attempt == attempts - 1:
                    raise
                await asyncio.sleep(1.0 + attempt)
        raise RuntimeError("unreachable")

    # -- buttons (questions and approvals) ---------------------------------------------------

    def _pressed(self, query: CallbackQuery) -> InboundAction | None:
        message = query.message
        if query.from_user is None or query.from_user.is_bot or message is None or not query.data:
            return None
        topic = str(message.message_thread_id) if getattr(message, "is_topic_message", False) and message.message_thread_id else ""
        user = query.from_user
        return InboundAction(chat=ChatRef(provider=self.provider, workspace="", chat=str(message.chat.id), topic=topic),
                             sender_id=str(user.id), sender_name=user.full_name or user.username or str(user.id),
                             data=str(query.data), message_id=f"cb-{query.id}", reply_to=str(message.message_id))

    async def _acknowledge(self, press_id: str) -> None:
        """Telegram shows a spinner on the button until the press is answered."""
        assert self.bot is not None
        try:
            await self.bot.answer_callback_query(press_id.removeprefix("cb-"))
        except TelegramError as exc:  # an old press (over 15 minutes) cannot be answered: harmless
            logger.info("Telegram: callback %s not acknowledged: %s", press_id, exc)

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice], *, reply_to: str | None = None) -> SentMessage:
        assert self.bot is not None
        keyboard = InlineKeyboardMarkup([[InlineKeyboardButton(choice.label, callback_data=choice.data)] for choice in choices])
        sent = await self._retrying(lambda: self.bot.send_message(text=text[:4096], reply_markup=keyboard,
                                                                  **self._target(chat, reply_to)))
        return SentMessage(chat=chat, message_id=str(sent.message_id))
