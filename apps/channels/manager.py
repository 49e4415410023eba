"""The channel manager: every platform's messages get the same rules.

For each inbound message: connect codes first (``/connect CODE``, Telegram's ``/start CODE``),
then the chat and user allow-lists, then the sender must be a connected identity (a stranger
or a revoked one gets the connect hint and starts nothing), then commands, then a chat turn on
the thread of (provider, workspace, chat, topic) for that user, or, in a group chat whose
operator chose ``session.group_chats: shared``, on the chat's one shared thread with the
sender's name in the message. While a conversation's run is active its follow-ups wait in a
bounded queue and run next, in order.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async

from apps.channels import connections
from apps.channels import conversations, questions, turns
from apps.channels.base import ChannelAdapter, ChatRef, InboundAction, InboundMessage
from apps.channels.config import ChannelsSettings, allowed_chats, allowed_users, session_for
from apps.errors import DomainError

logger = logging.getLogger(__name__)

HELP = (
    "Commands:\n"
    "/new — start a fresh conversation\n"
    "/status — what the current run is doing\n"
    "/stop — stop the current run (and drop queued messages)\n"
    "/goal <objective> — set a goal the agent keeps working towards\n"
    "/models — the models this server offers\n"
    "/memory — what the agent remembers about you\n"
    "/connect <code> — connect this account (code from Settings → Connections)\n"
    "/help — this list"
)
CONNECT_COMMANDS = frozenset({"connect", "start"})
COMMANDS = frozenset({"new", "status", "stop", "goal", "help", "models", "memory"})
DEDUP_SIZE = 2048


def parse_command(text: str) -> tuple[str, str] | None:
    """``/goal@my_bot  ship it`` → ("goal", "ship it"); None for ordinary text."""
    stripped = (text or "").strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    head, _, rest = stripped[1:].partition(" ")
    name = head.split("@", 1)[0].lower()
    return (name, rest.strip()) if name.isidentifier() else None


@dataclass
class _Conversation:
    """A user's conversation in one chat/topic: its running turn and what waits behind it."""

    worker: asyncio.Task | None = None
    queue: deque = field(default_factory=deque)


@dataclass
class _Turn:
    message: InboundMessage
    connection: Any
    text: str
    shared: bool = False  # the group chat's shared thread, not the sender's own


class ChannelManager:
    def __init__(self, settings: ChannelsSettings, adapters: Mapping[str, ChannelAdapter] | None = None) -> None:
        self.settings = settings
        self.adapters: dict[str, ChannelAdapter] = dict(adapters or {})
        self._conversations: dict[tuple, _Conversation] = {}
        self._seen: OrderedDict[tuple, None] = OrderedDict()
        self._tasks: set[asyncio.Task] = set()

    # -- entry point (the adapters' sink) --------------------------------------------------

    def sink_for(self, provider: str):
        async def sink(message: InboundMessage) -> None:
            await self.handle(message)
        return sink

    async def handle(self, message: InboundMessage) -> None:
        try:
            await self._handle(message)
        except Exception:  # one bad message must never stop the worker
            logger.exception("Channel %s: message %s could not be handled", message.chat.provider, message.message_id)

    async def _handle(self, message: InboundMessage) -> None:
        adapter = self.adapters.get(message.chat.provider)
        if adapter is None or await self._already_handled(message):
            return
        if isinstance(message, InboundAction):
            await self._action(adapter, message)
            return
        if not (message.is_direct or message.mentioned):
            return  # group chatter not addressed to the bot
        command = parse_command(message.text)
        if command and command[0] in CONNECT_COMMANDS and command[1]:
            if not message.is_direct:
                # Others in the chat saw the code: whoever sent it first would be bound to this
                # user's account. It is used up, and the person is told to connect privately.
                await database_sync_to_async(connections.connect_code_discard)(provider=message.chat.provider, code_text=command[1])
                await self._reply(adapter, message, "Send connect codes only in a private chat with me: others here could "
                                                    "read it. That code no longer works; create a new one in Settings → Connections.")
                return
            await self._connect(adapter, message, command[1])
            return
        provider_settings = self.settings.provider(message.chat.provider)
        allowed = allowed_chats(provider_settings)
        if allowed and not message.is_direct and message.chat.chat not in allowed:
            logger.info("Channel %s: chat %s is not in allowed_chats; ignored", message.chat.provider, message.chat.chat)
            return
        users = allowed_users(provider_settings)
        if users and message.sender_id not in users:
            # Checked after connect codes, as DeerFlow does: binding an account is not talking.
            logger.info("Channel %s: sender %s is not in allowed_users; ignored", message.chat.provider, message.sender_id)
            return
        connection = await database_sync_to_async(connections.connection_for_sender)(
            provider=message.chat.provider, external_id=message.sender_id, workspace=message.chat.workspace)
        if connection is None:
            await self._reply(adapter, message, self.connect_hint(adapter))
            return
        if command and command[0] in COMMANDS:
            await self._command(adapter, message, connection, *command)
            return
        if command and command[0] in CONNECT_COMMANDS:
            await self._reply(adapter, message, "You are connected already; /help lists the commands.")
            return
        if not message.text.strip() and not message.files:
            return
        await self._enqueue(adapter, _Turn(message, connection, message.text, self._shared(message)))

    def _shared(self, message: InboundMessage) -> bool:
        return not message.is_direct and session_for(self.settings, message.chat.provider).group_chats == "shared"

    async def _already_handled(self, message: InboundMessage) -> bool:
        return self._duplicate(message)

    def _duplicate(self, message: InboundMessage) -> bool:
        """Platforms redeliver (a reconnect, a retried webhook): each message is handled once."""
        key = (message.chat.provider, message.chat.workspace, message.chat.chat, message.message_id)
        if not message.message_id:
            return False
        if key in self._seen:
            return True
        self._seen[key] = None
        while len(self._seen) > DEDUP_SIZE:
            self._seen.popitem(last=False)
        return False

    # -- connecting ------------------------------------------------------------------------

    def connect_hint(self, adapter: ChannelAdapter) -> str:
        where = f"{self.settings.public_url}/settings/connections" if self.settings.public_url else "Settings → Connections"
        return (f"Connect your account first: open {where} on the DeerFlow server, create a "
                f"{adapter.display_name} code and send it here as /connect <code>.")

    async def _connect(self, adapter: ChannelAdapter, message: InboundMessage, code: str) -> None:
        connection = await database_sync_to_async(connections.connect_code_consume)(
            provider=message.chat.provider, code_text=code, external_id=message.sender_id,
            workspace=message.chat.workspace, display_name=message.sender_name)
        if connection is None:
            await self._reply(adapter, message, "That code is not valid (unknown, used or expired). "
                                                "Create a new one in Settings → Connections.")
            return
        username = await database_sync_to_async(lambda: connection.user.get_username())()
        await self._reply(adapter, message, f"Connected to DeerFlow as {username}. Send a message to start; /help lists the commands.")

    # -- commands ----------------------------------------------------------------------------

    async def _command(self, adapter: ChannelAdapter, message: InboundMessage, connection, name: str, arg: str) -> None:
        chat = message.chat
        shared = self._shared(message)
        if name == "help":
            await self._reply(adapter, message, HELP)
        elif name == "models":
            await self._reply(adapter, message, await database_sync_to_async(conversations.models_text)())
        elif name == "memory":
            user = await database_sync_to_async(lambda: connection.user)()
            await self._reply(adapter, message, await database_sync_to_async(conversations.memory_text)(user=user))
        elif name == "new":
            state = self._conversations.get(self._key(connection, chat, shared))
            if state is not None and state.worker is not None and not state.worker.done():
                await self._reply(adapter, message, "A run is still going here: /stop it first, or wait for it.")
                return
            await self._thread(connection, chat, shared=shared, fresh=True)
            await self._reply(adapter, message, "Started a new conversation" + (" for everyone here." if shared else "."))
        elif name == "status":
            thread = await database_sync_to_async(conversations.current_thread)(connection=connection, chat=chat, shared=shared)
            text = await database_sync_to_async(conversations.run_status_text)(thread=thread)
            state = self._conversations.get(self._key(connection, chat, shared))
            if state is not None and state.queue:
                text += f"\n{len(state.queue)} message(s) queued."
            await self._reply(adapter, message, text)
        elif name == "stop":
            state = self._conversations.get(self._key(connection, chat, shared))
            dropped = len(state.queue) if state else 0
            if state:
                state.queue.clear()
            thread = await database_sync_to_async(conversations.current_thread)(connection=connection, chat=chat, shared=shared)
            stopped = await database_sync_to_async(conversations.stop_active_run)(thread=thread)
            text = "Stopped the current run." if stopped else "Nothing is running."
            if dropped:
                text += f" Dropped {dropped} queued message(s)."
            await self._reply(adapter, message, text)
        elif name == "goal":
            await self._goal(adapter, message, connection, arg)

    async def _goal(self, adapter: ChannelAdapter, message: InboundMessage, connection, objective: str) -> None:
        chat = message.chat
        shared = self._shared(message)
        if not objective:
            thread = await database_sync_to_async(conversations.current_thread)(connection=connection, chat=chat, shared=shared)
            goal = await database_sync_to_async(conversations.read_goal)(thread=thread)
            text = f"Current goal: {goal['objective']} ({goal.get('status', 'active')})" if goal else \
                "No goal set. Use /goal <objective> to set one."
            await self._reply(adapter, message, text)
            return
        state = self._conversations.get(self._key(connection, chat, shared))
        if state is not None and state.worker is not None and not state.worker.done():
            await self._reply(adapter, message, "A run is going: set the goal once it has finished (or /stop it).")
            return
        thread, _ = await self._thread(connection, chat, shared=shared)
        try:
            await database_sync_to_async(conversations.set_goal)(thread=thread, objective=objective)
        except DomainError as exc:
            await self._reply(adapter, message, f"The goal was not set: {exc.detail}")
            return
        await self._reply(adapter, message, f"Goal set: {objective}")
        # The objective is also the next turn, so the agent starts on it right away.
        await self._enqueue(adapter, _Turn(message, connection, objective, shared))

    # -- chat turns --------------------------------------------------------------------------

    @staticmethod
    def _key(connection, chat: ChatRef, shared: bool = False) -> tuple:
        # A shared group thread is one conversation: every member's turns queue behind each other.
        owner = "shared" if shared else connection.user_id
        return (owner, chat.provider, chat.workspace, chat.chat, chat.topic)

    async def _thread(self, connection, chat: ChatRef, *, shared: bool, chat_title: str = "", fresh: bool = False):
        """(thread, the user its runs run as): the sender's own, or the group's shared one."""
        if shared:
            return await database_sync_to_async(conversations.shared_thread)(
                connection=connection, chat=chat, chat_title=chat_title, fresh=fresh)
        thread = await database_sync_to_async(conversations.conversation_thread)(
            connection=connection, chat=chat, chat_title=chat_title, fresh=fresh)
        return thread, await database_sync_to_async(lambda: connection.user)()

    async def _enqueue(self, adapter: ChannelAdapter, turn: _Turn) -> None:
        key = self._key(turn.connection, turn.message.chat, turn.shared)
        state = self._conversations.setdefault(key, _Conversation())
        if state.worker is not None and not state.worker.done():
            if len(state.queue) >= self.settings.queue_size:
                await self._reply(adapter, turn.message, f"Still working, and {len(state.queue)} message(s) are already "
                                                         "waiting: this one was not queued. Try again when the run is done.")
                return
            state.queue.append(turn)
            await self._reply(adapter, turn.message, f"Queued: it runs after the current one ({len(state.queue)} waiting).")
            return
        state.queue.append(turn)
        state.worker = asyncio.create_task(self._drain(adapter, key, state), name=f"channel-turns-{key}")
        self._tasks.add(state.worker)
        state.worker.add_done_callback(self._tasks.discard)

    async def _drain(self, adapter: ChannelAdapter, key: tuple, state: _Conversation) -> None:
        try:
            while state.queue:
                turn = state.queue.popleft()
                try:
                    await self._run_turn(adapter, turn)
                except Exception as exc:
                    logger.exception("Channel %s: a turn failed", turn.message.chat.provider)
                    await self._reply(adapter, turn.message, f"Something went wrong: {type(exc).__name__}. Try again.")
        finally:
            if not state.queue and self._conversations.get(key) is state:
                del self._conversations[key]

    async def _run_turn(self, adapter: ChannelAdapter, turn: _Turn) -> None:
        message, chat = turn.message, turn.message.chat
        chat_title = message.extra.get("chat_title", "") if message.extra else ""
        thread, user = await self._thread(turn.connection, chat, shared=turn.shared, chat_title=chat_title or message.sender_name)
        text = turn.text
        if message.files:
            saved = await turns.receive_files(adapter, chat, thread, message.files, message.message_id or None)
            if not saved and not text.strip():
                return
            if saved:
                note = "Uploaded: " + ", ".join(saved)
                text = f"{text}\n\n({note})" if text.strip() else f"({note})"
        if await self._answer(adapter, turn, thread, user):
            return
        if turn.shared:
            text = f"[{message.sender_name or message.sender_id}] {text}"  # who said what, in the shared thread
        session = session_for(self.settings, chat.provider, message.sender_id)
        try:
            run_id = await turns.start_when_free(user, thread, text, session.assistant_id, chat,
                                                 context=session.context, config=session.config)
        except DomainError as exc:
            await self._reply(adapter, message, f"The run could not start: {exc.detail}")
            return
        await turns.follow_run(adapter, chat, run_id, reply_to=message.message_id or None)

    # -- questions and approvals (questions.py) ---------------------------------------------

    async def _action(self, adapter: ChannelAdapter, action: InboundAction) -> None:
        """A pressed button: refused unless its sender is the person asked, stale unless the
        thread still waits for that very question; otherwise answered in the conversation's
        turn order, like a typed reply."""
        parsed = questions.parse(action.data)
        if parsed is None:
            return
        user_id, digest, index = parsed
        reply = InboundMessage(chat=action.chat, sender_id=action.sender_id, sender_name=action.sender_name, text="",
                               message_id=action.reply_to, is_direct=True, mentioned=True,
                               extra={questions.ANSWER_KEY: {"digest": digest, "index": index}})
        connection = await database_sync_to_async(connections.connection_for_sender)(
            provider=action.chat.provider, external_id=action.sender_id, workspace=action.chat.workspace)
        if connection is None or connection.user_id != user_id:
            await self._reply(adapter, reply, questions.NOT_YOURS)
            return
        thread = await database_sync_to_async(conversations.current_thread)(connection=connection, chat=action.chat)
        pending = await database_sync_to_async(questions.pending_input)(thread=thread)
        if not questions.still_open(pending, digest):
            await self._reply(adapter, reply, questions.STALE)
            return
        await self._enqueue(adapter, _Turn(reply, connection, ""))

    async def _answer(self, adapter: ChannelAdapter, turn: _Turn, thread, user) -> bool:
        """When the thread waits for a person, this turn is the answer (a pressed button, or
        the typed reply); True when it was taken as one."""
        message = turn.message
        pressed = (message.extra or {}).get(questions.ANSWER_KEY)
        pending = await database_sync_to_async(questions.pending_input)(thread=thread)
        if pressed is None and pending is None:
            return False
        if pressed is not None:
            found = questions.value_for_index(pending, pressed["index"]) if questions.still_open(pending, pressed["digest"]) else None
            if found is None:
                await self._reply(adapter, message, questions.STALE)
                return True
            value, label = found
            await self._reply(adapter, message, f"Answer: {label}")
        else:
            value = questions.value_from_text(pending, turn.text)
            if value is None:
                await self._reply(adapter, message, questions.retry_hint(pending))
                return True
        try:
            run_id = await database_sync_to_async(questions.resume)(user=user, thread_id=thread.pk, pending=pending, value=value)
        except DomainError:
            await self._reply(adapter, message, questions.STALE)
            return True
        await turns.follow_run(adapter, message.chat, run_id, reply_to=message.message_id or None)
        return True

    async def _reply(self, adapter: ChannelAdapter, message: InboundMessage, text: str) -> None:
        for chunk in turns.split_text(text, adapter.capabilities.max_text):
            await adapter.send_text(message.chat, chunk, reply_to=message.message_id or None)

    async def idle(self) -> None:
        """Wait until every conversation's turns are done (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
