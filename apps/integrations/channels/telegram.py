"""Telegram, through python-telegram-bot's ``Bot`` (Bot API over HTTPS).

Long polling (``getUpdates``) with the offset kept in the channel's cursor, so a restarted
worker resumes after the last update it handled instead of answering it twice. Answers stream
by editing one message (``editMessageText``) at most once per ``edit_interval`` seconds (1 s in
private chats; groups get 3 s: Telegram allows a bot about 20 messages a minute there).
Photos and documents come in through ``getFile`` + the file URL (never shown: it carries the
token); presented files go out with ``sendDocument``. In groups the bot answers when
mentioned (@name), when replied to, or for a command addressed to it.

Every Bot API request goes through the SSRF guard's transport (``harness.net.guard``);
``allowed_private_networks`` opens a private Bot API server (a self-hosted one, or tests).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from telegram import Bot, InputFile, Message, ReplyParameters, Update
from telegram.error import BadRequest, Forbidden, InvalidToken, NetworkError, RetryAfter, TelegramError, TimedOut
from telegram.request import HTTPXRequest

from apps.integrations.channels.base import Capabilities, ChannelAdapter, ChatRef, InboundFile, InboundMessage, SentMessage
from apps.integrations.channels.registry import register
from harness.net.guard import GuardedTransport, GuardPolicy

logger = logging.getLogger(__name__)

DOWNLOAD_LIMIT = 20_000_000  # the hosted Bot API serves files up to 20 MB to bots
BACKOFF_MAX = 60.0


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
        if isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval >= 0:
            self.capabilities = Capabilities(edit=True, edit_interval=float(interval), max_text=4096, files_out=True,
                                             max_file_in=DOWNLOAD_LIMIT)
        self.poll_timeout = int(settings.get("poll_timeout", 30))
        self.bot: Bot | None = None
        self.username = ""
        self.bot_id: int | None = None
        self.offset: int | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False

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
            await self.hooks.error(f"Bot API unreachable at start ({exc}); retrying")
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
                updates = await self.bot.get_updates(offset=self.offset, timeout=self.poll_timeout,
                                                     allowed_updates=["message"])
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
            for update in updates:
                self.offset = update.update_id + 1
                await self.hooks.event()
                try:
                    message = self._inbound(update)
                except Exception as exc:  # malformed: logged and acknowledged (the offset moves on)
                    logger.warning("Telegram update %s could not be read: %s", update.update_id, exc)
                    await self.hooks.error(f"update {update.update_id} could not be read: {exc}")
                    continue
                if message is not None:
                    await self.sink(message)
            if updates:
                await self.hooks.save_cursor({"offset": self.offset})

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

    def _inbound(self, update: Update) -> InboundMessage | None:
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


