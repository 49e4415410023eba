"""Slack: a slack-bolt ``AsyncApp`` that turns mentions and direct messages into inbound
messages, and the Web API for answers.

Two ways in. Socket Mode (the default) needs no public URL: the worker opens the websocket
that ``apps.connections.open`` hands out and acks each envelope; the SDK reconnects on its
own after an outage. The Events API (``mode: events``) is a Django route that passes the
raw request to ``handle_http``: bolt checks the ``X-Slack-Signature`` HMAC before anything
runs, so a forged request is a 401 and reaches no listener.

Where a conversation lives: a channel mention is answered in the Slack thread of the
triggering message (the thread ts is the topic, so every later mention in that thread
continues the same agent thread); a direct message is answered in the DM, in its thread when
it was sent in one. The chat is ``(team, channel)``, so two workspaces never share one.

Files: inbound ``url_private`` links are fetched with the bot token only from Slack's file
host (or the configured API host in tests): the token must never go to a host the event
named. Outbound files use the files upload v2 flow (get URL, post bytes, complete).
"""

from __future__ import annotations

import logging
import os
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from apps.channels.base import (
    Capabilities, ChannelAdapter, ChatRef, Choice, InboundAction, InboundFile, InboundMessage, SentMessage,
)
from apps.channels.registry import register

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://slack.com/api/"
FILE_HOSTS = frozenset({"files.slack.com"})
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
# Slack redelivers an event that was not acked in time, and a DM mention arrives both as
# ``message.im`` and ``app_mention``: remember recent (channel, ts) pairs to answer once.
_SEEN_MAX = 512
# Message subtypes that are a person writing; edits, joins, bot posts and the like are not.
_USER_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
_COMMAND_WORDS = frozenset({"connect", "new", "status", "stop", "goal", "help"})
# The buttons of a question or approval (block actions): action ids dfq_0, dfq_1, ...
_CHOICE_ACTION = re.compile(r"^dfq_\d+$")


def _setting(settings: Mapping[str, Any], key: str, env: str | None = None) -> str:
    value = settings.get(key)
    if value in (None, "") and env:
        value = os.environ.get(env, "")
    return str(value or "").strip()


@register
class SlackAdapter(ChannelAdapter):
    provider = "slack"
    display_name = "Slack"
    # chat.update is a Tier 3 method (about 50 a minute per workspace): one edit every 1.5 s
    # keeps a streaming answer well inside it even with several conversations at once.
    capabilities = Capabilities(edit=True, edit_interval=1.5, max_text=3900, files_out=True)

    credential_fields = ("bot_token", "app_token")

    def __init__(self, settings: Mapping[str, Any], sink, hooks=None) -> None:
        super().__init__(settings, sink, hooks)
        self.bot_token = _setting(settings, "bot_token", "SLACK_BOT_TOKEN")
        self.app_token = _setting(settings, "app_token", "SLACK_APP_TOKEN")
        self.signing_secret = _setting(settings, "signing_secret", "SLACK_SIGNING_SECRET")
        self.mode = self.mode_of(settings)
        self.api_url = _setting(settings, "api_base_url") or DEFAULT_API_URL
        if not self.api_url.endswith("/"):
            self.api_url += "/"
        self.ping_interval = float(settings.get("ping_interval") or 10)
        self.slash_command = self.slash_command_of(settings)
        interval = settings.get("edit_interval")
        if isinstance(interval, (int, float)) and not isinstance(interval, bool) and interval >= 0:
            # An operator on a quiet workspace (or a test) may edit faster than the default.
            self.capabilities = replace(type(self).capabilities, edit_interval=float(interval))
        self.max_file_bytes = int(settings.get("max_file_bytes") or 100 * 1024 * 1024)
        self.bot_user_id = ""
        self._seen: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._app = None
        self._handler = None

    # -- configuration -----------------------------------------------------------------------

    @staticmethod
    def mode_of(settings: Mapping[str, Any]) -> str:
        return "events" if str(settings.get("mode") or "socket").strip().lower() == "events" else "socket"

    @staticmethod
    def slash_command_of(settings: Mapping[str, Any]) -> str:
        return "/" + str(settings.get("slash_command") or "deerflow").strip().lstrip("/")

    @classmethod
    def connect_hint(cls, code: str, *, bot_name: str = "", settings: Mapping[str, Any] | None = None) -> tuple[str, str]:
        # Slack's client takes every message that starts with "/" for a slash command, so
        # "/connect CODE" typed into a DM never reaches the bot: it goes through ours instead.
        command = cls.slash_command_of(settings or {})
        return "", f"In Slack, send {command} connect {code} (or DM the bot: @{bot_name or 'DeerFlow'} /connect {code})"

    @classmethod
    def missing_settings(cls, settings: Mapping[str, Any]) -> list[str]:
        missing = []
        if not _setting(settings, "bot_token", "SLACK_BOT_TOKEN"):
            missing.append("bot_token (SLACK_BOT_TOKEN)")
        if cls.mode_of(settings) == "socket":
            if not _setting(settings, "app_token", "SLACK_APP_TOKEN"):
                missing.append("app_token (SLACK_APP_TOKEN, an xapp- token with connections:write)")
        elif not _setting(settings, "signing_secret", "SLACK_SIGNING_SECRET"):
            missing.append("signing_secret (SLACK_SIGNING_SECRET, needed for mode: events)")
        return missing

    # -- lifecycle ---------------------------------------------------------------------------

    def _build_app(self):
        from slack_bolt.async_app import AsyncApp
        from slack_sdk.web.async_client import AsyncWebClient

        client = AsyncWebClient(token=self.bot_token, base_url=self.api_url)
        app = AsyncApp(
            client=client,
            # Socket Mode envelopes are authenticated by the app token's socket; over HTTP bolt
            # verifies the signature first and answers 401 without running a listener.
            signing_secret=self.signing_secret or "socket-mode-unused",
            request_verification_enabled=self.mode == "events",
            # Listeners run after the ack, so a long answer never makes Slack redeliver.
            process_before_response=False,
            logger=log,
        )
        app.event("app_mention")(self._on_event)
        app.event("message")(self._on_event)
        app.command(self.slash_command)(self._on_command)
        app.action(_CHOICE_ACTION)(self._on_choice)
        return app

    @property
    def app(self):
        if self._app is None:
            self._app = self._build_app()
        return self._app

    async def start(self) -> None:
        auth = await self.app.client.auth_test()
        self.bot_user_id = auth.get("user_id") or ""
        if self.mode != "socket":
            log.info("slack: Events API mode, waiting for requests on /api/channels/slack/events")
            await self.hooks.connected(bot_name=auth.get("user") or "")
            return
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        self._handler = AsyncSocketModeHandler(self.app, self.app_token, ping_interval=self.ping_interval)
        # The SDK retries apps.connections.open and the websocket on its own (every
        # ping_interval seconds) and reconnects when Slack drops the socket.
        await self._handler.connect_async()
        log.info("slack: Socket Mode connected as %s", self.bot_user_id or "(unknown bot user)")
        await self.hooks.connected(bot_name=auth.get("user") or "")

    async def stop(self) -> None:
        handler, self._handler = self._handler, None
        if handler is not None:
            await handler.close_async()
        app, self._app = self._app, None
        if app is not None and getattr(app.client, "session", None) is not None:
            await app.client.session.close()

    async def handle_http(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, dict[str, str], str]:
        """One Events API request, as bolt answers it: (status, headers, body)."""
        from slack_bolt.request.async_request import AsyncBoltRequest

        response = await self.app.async_dispatch(AsyncBoltRequest(body=body.decode("utf-8", "replace"), headers=dict(headers)))
        flat = {k: v[0] if isinstance(v, list) else v for k, v in (response.headers or {}).items()}
        return response.status, flat, response.body

    # -- inbound -----------------------------------------------------------------------------

    def _first_time(self, channel: str, ts: str) -> bool:
        key = (channel, ts)
        if key in self._seen:
            return False
        self._seen[key] = None
        while len(self._seen) > _SEEN_MAX:
            self._seen.popitem(last=False)
        return True

    def translate(self, event: Mapping[str, Any], *, team: str) -> InboundMessage | None:
        """The inbound message an event stands for, or None when it is not one to answer."""
        kind = event.get("type")
        channel, ts, user = event.get("channel"), event.get("ts"), event.get("user")
        if not isinstance(channel, str) or not isinstance(ts, str) or not isinstance(user, str):
            return None
        if event.get("bot_id") or user == self.bot_user_id or event.get("subtype") not in _USER_SUBTYPES:
            return None
        is_direct = event.get("channel_type") == "im" or channel.startswith("D")
        if kind == "message" and not is_direct:
            return None  # channel traffic is answered only when it mentions the bot (app_mention)
        if kind not in ("message", "app_mention"):
            return None
        text = event.get("text") if isinstance(event.get("text"), str) else ""
        mentioned = is_direct or kind == "app_mention" or f"<@{self.bot_user_id}" in text
        text = _MENTION.sub(lambda m: "" if m.group(1) == self.bot_user_id else m.group(0), text).strip()
        thread_ts = event.get("thread_ts") if isinstance(event.get("thread_ts"), str) else ""
        # A channel mention opens (or continues) the Slack thread under the triggering message.
        topic = thread_ts or ("" if is_direct else ts)
        profile = event.get("user_profile") if isinstance(event.get("user_profile"), Mapping) else {}
        name = profile.get("display_name") or profile.get("real_name") or user
        files = tuple(f for f in (self._inbound_file(raw) for raw in event.get("files") or ()) if f is not None)
        return InboundMessage(
            chat=ChatRef(provider=self.provider, workspace=team, chat=channel, topic=topic),
            sender_id=user, sender_name=str(name), text=text, message_id=ts, is_direct=is_direct,
            mentioned=mentioned, files=files, extra={"thread_ts": topic},
        )

    def _inbound_file(self, raw: Any) -> InboundFile | None:
        if not isinstance(raw, Mapping):
            return None
        url = raw.get("url_private_download") or raw.get("url_private")
        if not isinstance(url, str) or not url:
            return None  # an external or tombstoned file: nothing we may fetch
        size = raw.get("size") if isinstance(raw.get("size"), int) else None
        name = str(raw.get("name") or raw.get("title") or raw.get("id") or "file")

        async def read() -> bytes:
            return await self.download(url)

        return InboundFile(name=name, size=size, content_type=raw.get("mimetype"), read=read)

    async def _on_event(self, event: dict, body: dict) -> None:
        team = body.get("team_id") or event.get("team") or ""
        await self.hooks.event()
        try:
            message = self.translate(event, team=str(team))
        except Exception as exc:  # a malformed event is logged and dropped; the envelope is already acked
            log.warning("slack: could not read event %s", body.get("event_id"), exc_info=True)
            await self.hooks.error(f"malformed event {body.get('event_id')}: {type(exc).__name__}")
            return
        if message is None or not self._first_time(message.chat.chat, message.message_id):
            return
        try:
            await self.sink(message)
        except Exception:
            log.exception("slack: handling message %s in %s failed", message.message_id, message.chat.chat)

    async def _on_command(self, ack, command: dict) -> None:
        """``/deerflow <text>``: the channel commands (connect, new, status, stop, goal, help)
        or a question, as if the text had been sent to the bot with a leading slash."""
        text = str(command.get("text") or "").strip()
        await ack()
        user, channel = command.get("user_id"), command.get("channel_id")
        if not isinstance(user, str) or not isinstance(channel, str):
            return
        await self.hooks.event()
        # A slash command is private between the person and the app (Slack shows the text to
        # no one else), so it is a direct exchange: the answer goes to the DM with the bot
        # (posting to a user id opens it), never into the channel it was typed in. That is
        # also what makes "/deerflow connect CODE" safe to type anywhere.
        chat = channel if channel.startswith("D") else user
        message = InboundMessage(
            chat=ChatRef(provider=self.provider, workspace=str(command.get("team_id") or ""), chat=chat, topic=""),
            sender_id=user, sender_name=str(command.get("user_name") or user),
            text=f"/{text}" if text and text.split()[0].lower() in _COMMAND_WORDS else text,
            # trigger_id dedups Slack's retries of one command
            message_id=str(command.get("trigger_id") or ""), is_direct=True, mentioned=True,
        )
        try:
            await self.sink(message)
        except Exception:
            log.exception("slack: handling %s in %s failed", self.slash_command, channel)

    async def download(self, url: str) -> bytes:
        from harness.config import get_app_config
        from harness.net.guard import GuardError, GuardPolicy, guarded_fetch

        host = urlsplit(url).hostname or ""
        allowed = FILE_HOSTS | {urlsplit(self.api_url).hostname or ""}
        if host not in allowed:
            raise ValueError(f"slack: refusing to send the bot token to {host or 'a URL without a host'}")
        policy = GuardPolicy.from_networks(get_app_config().web.allowed_private_networks)
        try:
            response = await guarded_fetch(url, policy=policy, headers={"Authorization": f"Bearer {self.bot_token}"},
                                           max_bytes=self.max_file_bytes, timeout=60)
        except GuardError as exc:
            raise ValueError(f"slack: could not download the file: {exc}") from None
        if response.status_code != 200 or response.content_type.startswith("text/html"):
            # Without files:read Slack answers with its sign-in page instead of the file.
            raise ValueError(f"slack: the file could not be downloaded (HTTP {response.status_code}); "
                             "does the app have the files:read scope?")
        return response.content

    # -- outbound ----------------------------------------------------------------------------

    async def send_text(self, chat: ChatRef, text: str, *, reply_to: str | None = None) -> SentMessage:
        response = await self.app.client.chat_postMessage(channel=chat.chat, text=text, thread_ts=chat.topic or None)
        return SentMessage(chat=chat, message_id=str(response["ts"]))

    async def edit_text(self, sent: SentMessage, text: str) -> None:
        await self.app.client.chat_update(channel=sent.chat.chat, ts=sent.message_id, text=text)

    async def send_file(self, chat: ChatRef, name: str, data: bytes, *, content_type: str | None = None,
                        reply_to: str | None = None) -> SentMessage:
        response = await self.app.client.files_upload_v2(channel=chat.chat, thread_ts=chat.topic or None,
                                                         filename=name, title=name, content=data)
        files = response.get("files") or [{}]
        return SentMessage(chat=chat, message_id=str(files[0].get("id") or ""))

    # -- buttons (questions and approvals) ---------------------------------------------------

    async def send_choices(self, chat: ChatRef, text: str, choices: list[Choice], *, reply_to: str | None = None) -> SentMessage:
        blocks = [{"type": "section", "text": {"type": "plain_text", "text": text[:2900]}},
                  {"type": "actions", "block_id": "dfq", "elements": [
                      {"type": "button", "action_id": f"dfq_{n}", "value": choice.data,
                       "text": {"type": "plain_text", "text": choice.label[:75]}} for n, choice in enumerate(choices)]}]
        response = await self.app.client.chat_postMessage(channel=chat.chat, text=text, blocks=blocks, thread_ts=chat.topic or None)
        return SentMessage(chat=chat, message_id=str(response["ts"]))

    async def _on_choice(self, ack, body: dict, action: dict) -> None:
        """A block button pressed (Socket Mode ``interactive`` envelope, or the form-encoded
        ``payload`` bolt verified on the HTTP route): acked at once, handled after."""
        await ack()
        await self.hooks.event()
        user = body.get("user") if isinstance(body.get("user"), Mapping) else {}
        channel = body.get("channel") if isinstance(body.get("channel"), Mapping) else {}
        message = body.get("message") if isinstance(body.get("message"), Mapping) else {}
        if not isinstance(user.get("id"), str) or not isinstance(channel.get("id"), str) or not isinstance(action.get("value"), str):
            log.warning("slack: a block action without user, channel or value was ignored")
            return
        team = (body.get("team") or {}).get("id") if isinstance(body.get("team"), Mapping) else user.get("team_id")
        pressed = InboundAction(
            chat=ChatRef(provider=self.provider, workspace=str(team or ""), chat=channel["id"], topic=str(message.get("thread_ts") or "")),
            sender_id=user["id"], sender_name=str(user.get("name") or user.get("username") or user["id"]), data=action["value"],
            message_id=f"act-{action.get('action_ts') or ''}-{user['id']}", reply_to=str(message.get("ts") or ""))
        try:
            await self.sink(pressed)
        except Exception:
            log.exception("slack: handling a button press in %s failed", channel["id"])
