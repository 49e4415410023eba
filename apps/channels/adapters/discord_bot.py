"""Discord through discord.py's gateway client.

The bot answers direct messages and messages that mention it in a guild channel. In a guild,
the answer goes into a thread started from the user's message; a thread started from a
message has that message's id, so the first mention and every follow-up inside the thread
map to the same conversation (``ChatRef.topic`` = that id). Inside a thread the bot started,
follow-ups need no mention. Answers stream by editing one message, at most once per
``edit_interval`` (Discord allows about five edits per five seconds per channel).

Outbound REST and the gateway are discord.py's own; ``api_base`` / ``gateway_url`` point them
at a proxy (or a fake in tests). Attachment downloads come from URLs in messages, so they go
through the SSRF guard.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Mapping
from typing import Any

import discord
import discord.gateway
import discord.http
import yarl

from apps.channels.base import (
    Capabilities, ChannelAdapter, ChatRef, Choice, InboundAction, InboundFile, InboundMessage, SentMessage,
)
from apps.channels.common import PlatformError, direct_chat_hint, download, guard_policy, run_with_backoff
from apps.channels.registry import register

log = logging.getLogger(__name__)

FILE_LIMIT = 10 * 1024 * 1024  # what a bot may upload to a server without boosts
DOWNLOAD_LIMIT = 50 * 1024 * 1024
THREAD_NAME_LIMIT = 100


class _Client(discord.Client):
    def __init__(self, adapter: DiscordAdapter, intents: discord.Intents) -> None:
        super().__init__(intents=intents, guild_ready_timeout=1.0)
        self.adapter = adapter

    async def on_ready(self) -> None:
        log.info("discord: connected as %s (%s guilds)", self.user, len(self.guilds))
        await self.adapter.hooks.connected(bot_name=str(self.user.name if self.user else ""))

    async def on_message(self, message: discord.Message) -> None:
        inbound = self.adapter.translate(message)
        if inbound is not None:
            await self.adapter.hooks.event()
            await self.adapter.sink(inbound)

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        """A button of a question or approval (a message component) was pressed."""
        pressed = self.adapter.pressed(interaction)
        if pressed is None:
            return
        try:
            await interaction.response.defer()  # within 3 s, or Discord shows "interaction failed"
        except Exception as exc:  # the press still counts; Discord just shows it failed
            log.info("discord: interaction %s not acknowledged: %s", interaction.id, exc)
        await self.adapter.hooks.event()
        await self.adapter.sink(pressed)


@register
class DiscordAdapter(ChannelAdapter):
    provider = "discord"
    display_name = "Discord"
    capabilities = Capabilities(edit=True, edit_interval=1.2, max_text=2000, files_out=True, max_file_in=DOWNLOAD_LIMIT)
    credential_fields = ("bot_token",)

    @classmethod
    def connect_hint(cls, code: str, *, bot_name: str = "", settings: Mapping[str, Any] | None = None) -> tuple[str, str]:
        return direct_chat_hint(cls.display_name, code)

    def __init__(self, settings: Mapping[str, Any], sink: Any, hooks: Any = None) -> None:
        super().__init__(settings, sink, hooks)
        self.policy = guard_policy(settings)
        self.threads = settings.get("reply_in_thread", True) is not False
        self.client: _Client | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._known_threads: set[int] = set()

    # --- connection --------------------------------------------------------------------------

    async def start(self) -> None:
        # discord.py keeps its endpoints in class attributes: one Discord bot per process.
        if self.settings.get("api_base"):
            discord.http.Route.BASE = str(self.settings["api_base"]).rstrip("/")
        if self.settings.get("gateway_url"):
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(str(self.settings["gateway_url"]))
        self._stopping.clear()
        self.client = self._new_client()
        self._task = asyncio.create_task(run_with_backoff("discord", self._run_once, self._stopping, on_error=self.hooks.error))

    def _new_client(self) -> _Client:
        intents = discord.Intents.none()
        intents.guilds = intents.guild_messages = intents.dm_messages = True
        # Privileged (enable it on the Developer Portal): without it, a message reaches the bot
        # with its text only when it mentions the bot or is a direct message.
        intents.message_content = self.settings.get("message_content_intent", True) is not False
        return _Client(self, intents)

    async def _run_once(self) -> None:
        if self.client is None or self.client.is_closed():
            self.client = self._new_client()  # a closed client cannot log in again
        # discord.py resumes and reconnects by itself; this returns on a fatal error (bad token,
        # refused intents) or a stop, and run_with_backoff decides whether to try again.
        await self.client.start(str(self.settings["bot_token"]))

    async def stop(self) -> None:
        self._stopping.set()
        if self.client is not None:
            await self.client.close()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def _ready_client(self) -> _Client:
        if self.client is None:
            raise PlatformError("discord: the adapter is not started")
        return self.client

    # --- receiving ---------------------------------------------------------------------------

    def translate(self, message: discord.Message) -> InboundMessage | None:
        client = self._ready_client()
        me = client.user
        if me is None or message.author.bot or message.author.id == me.id:
            return None
        if message.type not in (discord.MessageType.default, discord.MessageType.reply):
            return None  # joins, pins, thread-created notices ...
        is_direct = message.guild is None
        channel = message.channel
        in_own_thread = isinstance(channel, discord.Thread) and channel.owner_id == me.id
        mentioned = is_direct or in_own_thread or any(user.id == me.id for user in message.mentions)
        text = message.content
        for token in (f"<@{me.id}>", f"<@!{me.id}>"):
            text = text.replace(token, "")
        # Discord user and channel ids are global snowflakes: the workspace stays "" so a user
        # connected in a DM is the same identity in every guild (the guild id rides in extra).
        if is_direct:
            chat = ChatRef(provider=self.provider, workspace="", chat=str(channel.id))
        elif isinstance(channel, discord.Thread):
            chat = ChatRef(provider=self.provider, workspace="", chat=str(channel.parent_id), topic=str(channel.id))
        else:
            # The thread the answer will start from this message gets this message's id.
            chat = ChatRef(provider=self.provider, workspace="", chat=str(channel.id), topic=str(message.id) if self.threads else "")
        files = tuple(self._attachment(a) for a in message.attachments)
        return InboundMessage(chat=chat, sender_id=str(message.author.id),
                              sender_name=message.author.display_name or message.author.name, text=text.strip(),
                              message_id=str(message.id), is_direct=is_direct, mentioned=mentioned, files=files,
                              extra={"channel_id": str(channel.id), "guild_id": str(message.guild.id) if message.guild else ""})

    def _attachment(self, attachment: discord.Attachment) -> InboundFile:
        async def read() -> bytes:
            return await download(self.policy, attachment.url, limit=DOWNLOAD_LIMIT, what="discord attachment")

        return InboundFile(name=attachment.filename, size=attachment.size, content_type=attachment.content_type, read=read)

    # --- answering ---------------------------------------------------------------------------

    async def direct_chat(self, external_id: str, workspace: str = "") -> ChatRef:
        # A DM channel has its own id: open (or find) it for the user.
        try:
            channel = await self._ready_client().http.start_private_message(int(external_id))
        except discord.HTTPException as exc:
            raise PlatformError(f"discord could not open a DM with {external_id}: {exc.status} {exc.text}") from None
        return ChatRef(provider=self.provider, workspace="", chat=str(channel["id"]))

    async def _target(self, chat: ChatRef, reply_to: str | None, first_line: str) -> tuple[int, discord.MessageReference | None]:
        """The channel to post in, opening the conversation's thread on the first answer."""
        if not chat.topic:
            reference = discord.MessageReference(message_id=int(reply_to), channel_id=int(chat.chat),
                                                 fail_if_not_exists=False) if reply_to else None
            return int(chat.chat), reference
        thread_id = int(chat.topic)
        client = self._ready_client()
        if thread_id not in self._known_threads and client.get_channel(thread_id) is None:
            name = (first_line.strip() or "DeerFlow")[:THREAD_NAME_LIMIT]
            try:
                await client.http.start_thread_with_message(int(chat.chat), thread_id, name=name, auto_archive_duration=1440)
            except discord.HTTPException as exc:
                if exc.code != 160004:  # "a thread has already been created for this message"
                    raise PlatformError(f"discord thread creation failed: {exc.status} {exc.text}") from None
        self._known_threads.add(thread_id)
        return thread_id, None

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage:
        channel_id, reference = await self._target(chat, reply_to, text.splitlines()[0] if text else "")
        channel = self._ready_client().get_partial_messageable(channel_id)
        try:
            sent = await channel.send(text or "…", reference=reference, allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException as exc:
            raise PlatformError(f"discord send failed: {exc.status} {exc.text}") from None
        return SentMessage(chat=chat, message_id=str(sent.id))

    async def edit_text(self, sent: SentMessage, text: str) -> None:
        channel_id = int(sent.chat.topic or sent.chat.chat)
        message = self._ready_client().get_partial_messageable(channel_id).get_partial_message(int(sent.message_id))
        try:
            await message.edit(content=text or "…", allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException as exc:
            raise PlatformError(f"discord edit failed: {exc.status} {exc.text}") from None

    async def send_file(self, chat: ChatRef, name: str, data: bytes, *, content_type: str | None = None,
                        reply_to: str | None = None) -> SentMessage:
        if len(data) > FILE_LIMIT:
            raise PlatformError(f"discord accepts files up to {FILE_LIMIT // (1024 * 1024)} MB; {name} is {len(data):,} bytes")
        channel_id, reference = await self._target(chat, reply_to, name)
        channel = self._ready_client().get_partial_messageable(channel_id)
        try:
            sent = await channel.send(file=discord.File(io.BytesIO(data), filename=name), reference=reference)
        except discord.HTTPException as exc:
            raise PlatformError(f"discord file upload failed: {exc.status} {exc.text}") from None
        return SentMessage(chat=chat, message_id=str(sent.id))

    # --- buttons (questions and approvals) ------------------------------------------------

    def pressed(self, interaction: discord.Interaction) -> InboundAction | None:
        data = interaction.data or {}
        if interaction.type != discord.InteractionType.component or not isinstance(data.get("custom_id"), str):
            return None
        if interaction.user is None or interaction.user.bot or interaction.channel_id is None:
            return None
        channel = interaction.channel
        if isinstance(channel, discord.Thread):
            chat = ChatRef(provider=self.provider, workspace="", chat=str(channel.parent_id), topic=str(channel.id))
        else:
            chat = ChatRef(provider=self.provider, workspace="", chat=str(interaction.channel_id))
        return InboundAction(chat=chat, sender_id=str(interaction.user.id),
                             sender_name=interaction.user.display_name or interaction.user.name, data=data["custom_id"],
                             message_id=f"ix-{interaction.id}", reply_to=str(interaction.message.id) if interaction.message else "")

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice], *, reply_to: str | None = None) -> SentMessage:
        channel_id, reference = await self._target(chat, reply_to, text.splitlines()[0] if text else "")
        view = discord.ui.View(timeout=None)
        for choice in choices[:25]:  # five rows of five: Discord's limit
            view.add_item(discord.ui.Button(label=choice.label[:80], custom_id=choice.data, style=discord.ButtonStyle.secondary))
        channel = self._ready_client().get_partial_messageable(channel_id)
        try:
            sent = await channel.send(text[:2000] or "…", view=view, reference=reference, allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException as exc:
            raise PlatformError(f"discord send failed: {exc.status} {exc.text}") from None
        return SentMessage(chat=chat, message_id=str(sent.id))
