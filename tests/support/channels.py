"""Driving the channel manager end to end in tests, for every adapter's tests.

``FakeAdapter`` is a platform in memory: what the manager sends and edits is recorded, and
``say()`` delivers a message as the platform would. With the ``channel_kit`` fixture (see
tests/apps/channels/conftest.py) the manager starts real runs through
``start_run()`` on the scripted agent, so a test sees what a user would see in the chat.

An adapter's own tests replace ``FakeAdapter`` with the real adapter pointed at a fake
platform server, and use ``make_manager`` to wire it the same way the worker does.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

from apps.channels.base import Capabilities, ChannelAdapter, ChatRef, InboundFile, InboundMessage, SentMessage
from apps.channels.config import ChannelsSettings
from apps.channels.manager import ChannelManager


@dataclass
class Outbound:
    kind: str  # "send" | "edit" | "file"
    chat: ChatRef
    message_id: str
    text: str = ""
    name: str = ""
    data: bytes = b""
    reply_to: str | None = None


class FakeAdapter(ChannelAdapter):
    provider = "fake"
    display_name = "Fake"
    capabilities = Capabilities(edit=True, edit_interval=0.0, max_text=200, files_out=True, max_file_in=1000)

    def __init__(self, settings, sink, hooks=None) -> None:
        super().__init__(settings, sink, hooks)
        self.outbound: list[Outbound] = []
        self.texts: dict[str, str] = {}  # message id -> its current text, as a user sees it
        self._ids = itertools.count(1)
        self._inbound = itertools.count(1)
        self.changed = asyncio.Event()

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send_text(self, chat, text, *, reply_to=None) -> SentMessage:
        mid = f"out-{next(self._ids)}"
        self.outbound.append(Outbound("send", chat, mid, text=text, reply_to=reply_to))
        self.texts[mid] = text
        return SentMessage(chat=chat, message_id=mid)

    async def edit_text(self, sent, text) -> None:
        self.outbound.append(Outbound("edit", sent.chat, sent.message_id, text=text))
        self.texts[sent.message_id] = text

    async def send_file(self, chat, name, data, *, content_type=None, reply_to=None) -> SentMessage:
        mid = f"out-{next(self._ids)}"
        self.outbound.append(Outbound("file", chat, mid, name=name, data=data, reply_to=reply_to))
        return SentMessage(chat=chat, message_id=mid)

    # -- the platform side -------------------------------------------------------------------

    def message(self, text: str, *, sender: str = "u-1", sender_name: str = "Ann", chat: str | None = None, topic: str = "",
                workspace: str = "", direct: bool = True, mentioned: bool | None = None,
                files: tuple[InboundFile, ...] = (), message_id: str | None = None) -> InboundMessage:
        return InboundMessage(
            chat=ChatRef(provider=self.provider, workspace=workspace, chat=chat or (f"dm-{sender}" if direct else "group-1"), topic=topic),
            sender_id=sender, sender_name=sender_name, text=text,
            message_id=message_id or f"in-{next(self._inbound)}", is_direct=direct,
            mentioned=direct if mentioned is None else mentioned, files=files)

    async def say(self, text: str, **kwargs: Any) -> InboundMessage:
        message = self.message(text, **kwargs)
        await self.sink(message)
        return message

    def final_texts(self, chat: str | None = None) -> list[str]:
        """Every message the bot left in the chat, in order, with edits applied."""
        seen: dict[str, None] = {}
        for out in self.outbound:
            if out.kind == "send" and (chat is None or out.chat.chat == chat):
                seen[out.message_id] = None
        return [self.texts[mid] for mid in seen]

    def files(self) -> list[Outbound]:
        return [o for o in self.outbound if o.kind == "file"]


def inbound_file(name: str, data: bytes, *, size: int | None = None, content_type: str | None = None) -> InboundFile:
    async def read() -> bytes:
        return data

    return InboundFile(name=name, size=len(data) if size is None else size, content_type=content_type, read=read)


def make_settings(provider: str = "fake", *, queue_size: int = 5, public_url: str = "", **provider_settings: Any) -> ChannelsSettings:
    return ChannelsSettings(enabled=True, queue_size=queue_size, connect_code_ttl=600, public_url=public_url,
                            providers={provider: {"enabled": True, **provider_settings}})


def make_manager(adapter_cls: type[ChannelAdapter] = FakeAdapter, settings: ChannelsSettings | None = None,
                 adapter_settings: dict | None = None, hooks=None) -> tuple[ChannelManager, ChannelAdapter]:
    """A manager with one adapter wired as the worker wires it (its sink is the manager)."""
    settings = settings or make_settings(adapter_cls.provider, **(adapter_settings or {}))
    manager = ChannelManager(settings)
    adapter = adapter_cls(settings.provider(adapter_cls.provider), manager.sink_for(adapter_cls.provider), hooks)
    manager.adapters[adapter_cls.provider] = adapter
    return manager, adapter


@dataclass
class ChannelKit:
    manager: ChannelManager
    adapter: FakeAdapter
    codes: list = field(default_factory=list)

    async def connect(self, user, *, sender: str = "u-1", sender_name: str = "Ann", workspace: str = "") -> str:
        """Bind ``sender`` to ``user`` the way a person does: a code from the web, sent to the bot."""
        from channels.db import database_sync_to_async

        from apps.channels.connections import connect_code_issue

        issued = await database_sync_to_async(connect_code_issue)(user=user, provider=self.adapter.provider, ttl_seconds=600)
        await self.adapter.say(f"/connect {issued.code}", sender=sender, sender_name=sender_name, workspace=workspace)
        return issued.code


class RunningAdapter:
    """``async with RunningAdapter(MyAdapter, settings, hooks) as bot``: the adapter started and
    wired to a manager as the worker does; on exit the turns finish and both are closed."""

    def __init__(self, adapter_cls: type[ChannelAdapter], adapter_settings: dict, hooks=None) -> None:
        self.manager, self.adapter = make_manager(adapter_cls, adapter_settings=adapter_settings, hooks=hooks)

    async def __aenter__(self):
        await self.adapter.start()
        return self

    async def __aexit__(self, *exc):
        await self.manager.idle()
        await self.adapter.stop()
        await self.manager.close()
