"""The contract between a platform adapter and the channel manager.

An adapter turns platform events into ``InboundMessage`` values and hands them to the sink it
was given; the manager answers through ``send_text``/``edit_text``/``send_file`` on the same
adapter. Nothing here knows about Django rows: plain data crosses, so an adapter can be driven
in a test by a fake platform server and a list as its sink.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class InboundFile:
    """A file attached to a message. Its bytes are fetched only if the manager accepts it."""

    name: str
    size: int | None  # as the platform reports it, so an oversize file is refused unread
    content_type: str | None
    read: Callable[[], Awaitable[bytes]]


@dataclass(frozen=True)
class ChatRef:
    """Where a conversation lives on the platform; the key the manager maps to a thread.

    ``workspace`` is the team/guild/tenant for platforms that have one ("" otherwise);
    ``topic`` is a forum topic, a Slack thread ts, an issue number, ... ("" for none).
    """

    provider: str
    workspace: str
    chat: str
    topic: str = ""


@dataclass(frozen=True)
class InboundMessage:
    chat: ChatRef
    sender_id: str  # the platform's stable user id: what a ChannelConnection binds
    sender_name: str
    text: str  # with the bot's own mention removed
    message_id: str  # the platform's id, used for dedup and for replying to it
    is_direct: bool  # a one-to-one chat with the bot
    mentioned: bool  # the bot was addressed (always true in a direct chat)
    files: tuple[InboundFile, ...] = ()
    # Platform extras an adapter wants back when replying (never persisted).
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Choice:
    """One answer a question offers (a button, or a numbered line where there are none).
    ``data`` is what the platform hands back when it is pressed: at most 64 bytes (Telegram's
    callback_data limit), opaque to adapters."""

    label: str
    data: str


@dataclass(frozen=True)
class InboundAction:
    """A button the bot offered was pressed (Telegram callback_query, Slack block action, ...).

    Adapters hand it to the same sink as messages; the manager checks who pressed it and
    whether the question is still open (apps/channels/questions.py)."""

    chat: ChatRef
    sender_id: str
    sender_name: str
    data: str  # the pressed Choice's data
    message_id: str  # the press's own id (platforms redeliver: it is handled once)
    reply_to: str = ""  # the message the button was on


@dataclass(frozen=True)
class SentMessage:
    """A message the bot sent, so it can be edited while the answer streams."""

    chat: ChatRef
    message_id: str


@dataclass(frozen=True)
class Capabilities:
    edit: bool = True  # the answer streams by editing one message
    edit_interval: float = 1.0  # seconds between edits, inside the platform's rate limits
    max_text: int = 4000  # longer answers are split into several messages
    files_out: bool = True
    # The largest inbound file the platform lets a bot download (bytes); None: no platform cap.
    # The manager refuses bigger ones with a reply naming the limit, before reading them.
    max_file_in: int | None = None


class AdapterHooks:
    """What an adapter reports through and resumes from. The worker hands each adapter one
    backed by the database (``ChannelStatus``); this default does nothing, for tests."""

    async def connected(self, *, bot_name: str = "") -> None:
        """Receiving works (again); ``bot_name`` is the bot's @name when the platform says."""

    async def event(self) -> None:
        """A platform event arrived (recorded as the channel's last event, coarsely)."""

    async def error(self, message: str) -> None:
        """Something failed (an outage being retried, a malformed payload): shown to admins."""

    async def load_cursor(self) -> dict[str, Any]:
        """Where receiving stopped last time (e.g. Telegram's update offset), {} at first."""
        return {}

    async def save_cursor(self, cursor: dict[str, Any]) -> None:
        """Remember where receiving is, so a restarted worker resumes there."""

    async def login_required(self, qr_content: str, detail: str) -> None:
        """The platform wants a person to log the bot in by scanning a QR code that encodes
        ``qr_content`` (WeChat); shown to administrators until ``connected`` is reported."""


InboundSink = Callable[[InboundMessage | InboundAction], Awaitable[None]]


class ChannelAdapter(abc.ABC):
    """One platform. Subclasses set ``provider``/``display_name`` and register themselves."""

    provider: ClassVar[str]
    display_name: ClassVar[str]
    capabilities: ClassVar[Capabilities] = Capabilities()
    # The settings an operator must provide (shown by the providers API), e.g. ("bot_token",).
    credential_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: Mapping[str, Any], sink: InboundSink, hooks: AdapterHooks | None = None) -> None:
        self.settings = settings
        self.sink = sink
        self.hooks = hooks or AdapterHooks()

    @classmethod
    def missing_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        """Names of required settings that are absent: the reason a channel stays off."""
        return [name for name in cls.credential_fields if not settings.get(name)]

    @classmethod
    def connect_hint(cls, code: str, *, bot_name: str = "", settings: Mapping[str, Any] | None = None) -> tuple[str, str]:
        """(url, instruction) shown beside a connect code. ``url`` opens the bot with the code
        filled in where the platform has such links ("" otherwise)."""
        return "", f"Send this message to the {cls.display_name} bot: /connect {code}"

    @abc.abstractmethod
    async def start(self) -> None:
        """Connect (polling, socket, gateway) and begin delivering messages to ``sink``.

        Returns once receiving has started; outages are retried inside with backoff.
        """

    @abc.abstractmethod
    async def stop(self) -> None:
        """Disconnect; safe to call twice."""

    async def direct_chat(self, external_id: str, workspace: str = "") -> ChatRef:
        """The one-to-one chat with a connected identity, for messages the bot starts itself
        (scheduled results). Where a user's DM has its own id, adapters override this."""
        return ChatRef(provider=self.provider, workspace=workspace, chat=external_id)

    @abc.abstractmethod
    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage: ...

    async def edit_text(self, sent: SentMessage, text: str) -> None:
        """Replace a sent message's text. Adapters without ``capabilities.edit`` never get this."""
        raise NotImplementedError(f"{self.provider} does not edit messages")

    async def send_file(self, chat: ChatRef, name: str, data: bytes, *, content_type: str | None = None,
                        reply_to: str | None = None) -> SentMessage:
        raise NotImplementedError(f"{self.provider} does not send files")

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice], *,
                           reply_to: str | None = None) -> SentMessage:
        """A question with answers to pick. Platforms with buttons override this; elsewhere
        the answers are numbered lines and the person replies with the number."""
        lines = [text, "", *(f"{n}. {choice.label}" for n, choice in enumerate(choices, 1)), "", "Reply with the number."]
        return await self.send_text(chat, "\n".join(lines), reply_to=reply_to)

    # -- how an answer streams (defaults: one message edited, then the finished text) ------

    def edit_interval_for(self, chat: ChatRef) -> float:
        """Seconds between streamed edits in this chat (a platform may pace groups slower)."""
        return self.capabilities.edit_interval

    async def begin_answer(self, chat: ChatRef, placeholder: str, *, reply_to: str | None = None) -> SentMessage | None:
        """The message an answer streams into (``edit_text`` updates it), or None: the answer
        is sent once finished. Adapters with their own streaming surface (DingTalk's AI card)
        override this."""
        if not self.capabilities.edit:
            return None
        return await self.send_text(chat, placeholder, reply_to=reply_to)

    async def finish_answer(self, chat: ChatRef, sent: SentMessage | None, text: str, *, reply_to: str | None = None) -> bool:
        """Deliver the whole final answer in the platform's own form (Telegram's rich
        messages, a finalized AI card); True when done. False (the default, or a form the
        platform refused) leaves it to the manager: ``sent`` edited, the rest sent in chunks."""
        return False
